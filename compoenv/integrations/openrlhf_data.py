"""OpenRLHF data records: one prompt per task, and multi-turn SFT records from trajectories.

``prompt_record`` writes a prompt for ``openrlhf.cli.train_ppo_ray`` with ``--data.input_key
prompt --data.label_key label``: with a tokenizer the prompt is the text of its chat template
(messages and tools, generation prompt added); without one it stays a message list for
``--data.apply_chat_template``, which renders no ``tools``, so the tool listing goes into the
system message. The label is the task JSON that ``rl/openrlhf_agent.py`` builds each episode
from. ``sft_record`` turns a ``compoenv sft`` trajectory into a ``messages`` record for
``openrlhf.cli.train_sft --data.multiturn`` (which also renders no ``tools``), tool calls written
as the ``<tool_call>`` text the prompts ask for.
"""

from __future__ import annotations

import json
from typing import Any

from compoenv.actions import ToolCall, render_calls
from compoenv.env import CompoWorldEnv
from compoenv.prompts import tools_block
from compoenv.task import Task

__all__ = ["prompt_record", "sft_record", "template_inputs", "with_tool_listing"]


def with_tool_listing(messages: list[dict[str, Any]],
                      tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with the tool listing appended to the system message (added if missing)."""
    out = [dict(m) for m in messages]
    if not tools or any("<tools>" in str(m.get("content", "")) for m in out[:1]):
        return out
    if out and out[0].get("role") == "system":
        out[0]["content"] = f"{out[0].get('content') or ''}\n\n{tools_block(tools)}"
    else:
        out.insert(0, {"role": "system", "content": tools_block(tools)})
    return out


def prompt_record(task: Task, mode: str = "direct", tokenizer: Any = None,
                  env: CompoWorldEnv | None = None) -> dict[str, Any]:
    """One OpenRLHF prompt line: ``prompt`` (text or messages), ``label`` (the task JSON).

    The system prompt, request and tool listing are the env's own (``reset`` of the task), so
    the prompt is what ``CompoWorldEnv`` would show the agent.

    Args:
        task: The task.
        mode: ``direct`` or ``gateway``; the RL run needs the same ``COMPOENV_MODE``.
        tokenizer: Render the prompt with this tokenizer's chat template (default: messages).
        env: An env in ``mode`` to reuse.
    """
    env = env or CompoWorldEnv(mode=mode)
    _, info = env.reset(options={"task": task})
    messages = [dict(m) for m in info["messages"][:2]]
    tools = info["tools"]
    if tokenizer is None:
        prompt: Any = with_tool_listing(messages, tools)
    else:
        messages, listed = template_inputs(tokenizer, messages, tools)
        prompt = tokenizer.apply_chat_template(messages, tools=listed, add_generation_prompt=True,
                                               tokenize=False)
    return {"prompt": prompt, "label": task.to_json(), "task_id": task.id, "mode": mode}


def template_inputs(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
                    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """The messages and tools to render an episode's opening with ``tokenizer``'s chat
    template: as they are, or, for a template that ignores ``tools`` (it renders the same
    without them), the tool listing in the system message and no tools."""
    if tools and tokenizer.apply_chat_template(
            messages, tools=tools, add_generation_prompt=True, tokenize=False
    ) == tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False):
        return with_tool_listing(messages, tools), None
    return messages, tools


def _calls_as_text(message: dict[str, Any]) -> dict[str, Any]:
    """An assistant message whose ``tool_calls`` are written into its text as Hermes
    ``<tool_call>`` blocks: what the policy emits and the env parses, whatever the template."""
    if message.get("role") != "assistant" or not message.get("tool_calls"):
        return {k: v for k, v in message.items() if k != "tool_calls"}
    calls = []
    for call in message["tool_calls"]:
        arguments = call["function"]["arguments"]
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError:
                raise ValueError(f"tool call {call.get('id')!r} has arguments that are not JSON: "
                                 f"{arguments[:80]!r}") from None
        calls.append(ToolCall(call["function"]["name"], arguments, call.get("id", "")))
    out = {k: v for k, v in message.items() if k != "tool_calls"}
    out["content"] = render_calls(calls, "hermes", str(message.get("content") or ""))
    return out


def sft_record(record: Any, calls: str = "text") -> dict[str, Any]:
    """A ``compoenv sft`` trajectory as an OpenRLHF multi-turn SFT record: ``messages`` only,
    the tool listing in the system message.

    Args:
        record: One trajectory (``tools``, ``messages``, ...).
        calls: ``text`` writes tool calls into the assistant text as ``<tool_call>`` blocks (the
            format the prompts ask for, rendered the same by every template); ``structured``
            keeps OpenAI ``tool_calls`` for the template to render.

    Raises:
        ValueError: The record has no message list, no assistant message, or a broken call.
    """
    if not isinstance(record, dict) or not isinstance(record.get("messages"), list):
        raise ValueError("expected a trajectory object with a 'messages' list "
                         "(the output of `compoenv sft`)")
    messages = record["messages"]
    if not all(isinstance(m, dict) and "role" in m for m in messages):
        raise ValueError("every message needs a 'role'")
    if not any(m["role"] == "assistant" for m in messages):
        raise ValueError("the trajectory has no assistant message to train on")
    if calls == "text":
        messages = [_calls_as_text(m) for m in messages]
    return {"messages": with_tool_listing(messages, record.get("tools") or [])}
