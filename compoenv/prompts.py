"""The text an agent reads: system prompt, tool listing, and the reset observation."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Sequence

from compoenv.untrusted import neutralise
from compoenv.world import World

__all__ = ["system_prompt", "tools_block", "reset_observation"]

_GATEWAY_NOTE = (
    "Tools are reached through a gateway: list_services shows the services, list_tools(service) "
    "their tools, describe_tool(tool) a tool's parameters, and call_tool(tool_name, arguments) "
    "runs one. Not every service is relevant to the request."
)


def system_prompt(world: World, mode: str = "direct") -> str:
    """Who the agent works for, today's date, and how an episode ends."""
    user = world.user
    return _system_prompt(user.name, user.email, user.city, world.today, mode)


@lru_cache(maxsize=1024)  # every episode of a task reads the same one
def _system_prompt(name: str, email: str, city: str, today: Any, mode: str) -> str:
    lines = [
        "You are a capable assistant that completes the user's request by calling tools.",
        f"You act for {name} <{email}>, based in {city}. "
        f"Today is {today:%A, %Y-%m-%d}.",
        "Look values up with tools instead of guessing them. Several tool calls may go in one "
        "reply; they run in order, and each result comes back as a JSON envelope "
        '{"success": true, "data": ...} or {"success": false, "error": {...}}.',
        "When the request is complete, reply with a final message that contains no tool call "
        "and states every value the user asked for.",
    ]
    if mode == "gateway":
        lines.insert(3, _GATEWAY_NOTE)
    return "\n".join(lines)


_compact = json.JSONEncoder(separators=(",", ":")).encode  # one encoder, reused
# rendered listings of tuples (the env's shared, read-only listings): id -> (tuple, text); the
# tuple is held so that its id stays its own
_BLOCKS: dict[int, tuple[tuple[dict[str, Any], ...], str]] = {}


def tools_block(tools: Sequence[dict[str, Any]]) -> str:
    """The tool listing in the Hermes/Qwen convention that tool-calling models are trained on.

    A tuple of tools (as the env's listings are: one per set of services, shared and never
    changed) is rendered once; every reset of an episode on those services reuses the text.
    """
    if type(tools) is tuple:
        hit = _BLOCKS.get(id(tools))
        if hit is not None and hit[0] is tools:
            return hit[1]
        text = _render(tools)
        if len(_BLOCKS) >= 1024:
            _BLOCKS.clear()
        _BLOCKS[id(tools)] = (tools, text)
        return text
    return _render(tools)


def _render(tools: Sequence[dict[str, Any]]) -> str:
    # a description from a spec cannot close the listing or open a turn
    listing = neutralise("\n".join(_compact(t) for t in tools))
    return (
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n"
        f"<tools>\n{listing}\n</tools>\n\n"
        "For each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n<tool_call>\n"
        '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
    )


def reset_observation(system: str, tools: Sequence[dict[str, Any]], instruction: str) -> str:
    return f"{system}\n\n{tools_block(tools)}\n\n# Request\n{instruction}"
