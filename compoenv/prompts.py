"""The text an agent reads: system prompt, tool listing, and the reset observation."""

from __future__ import annotations

import json
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
    lines = [
        "You are a capable assistant that completes the user's request by calling tools.",
        f"You act for {user.name} <{user.email}>, based in {user.city}. "
        f"Today is {world.today:%A, %Y-%m-%d}.",
        "Look values up with tools instead of guessing them. Several tool calls may go in one "
        "reply; they run in order, and each result comes back as a JSON envelope "
        '{"success": true, "data": ...} or {"success": false, "error": {...}}.',
        "When the request is complete, reply with a final message that contains no tool call "
        "and states every value the user asked for.",
    ]
    if mode == "gateway":
        lines.insert(3, _GATEWAY_NOTE)
    return "\n".join(lines)


def tools_block(tools: Sequence[dict[str, Any]]) -> str:
    """The tool listing in the Hermes/Qwen convention that tool-calling models are trained on."""
    # a description from a spec cannot close the listing or open a turn
    listing = neutralise("\n".join(json.dumps(t, separators=(",", ":")) for t in tools))
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
