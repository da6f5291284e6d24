"""``compoenv export``: tasks and SFT trajectories as the JSONL that OpenRLHF's trainers read.

    compoenv export openrlhf --tasks tasks.jsonl -o prompts.jsonl [--tokenizer PATH] [--mode direct]
    compoenv export openrlhf-sft --sft sft.jsonl -o openrlhf_sft.jsonl

``openrlhf`` writes one prompt per task for ``openrlhf.cli.train_ppo_ray`` with
``--data.input_key prompt --data.label_key label``: with ``--tokenizer`` the prompt is the text
of the tokenizer's chat template (messages and tools, generation prompt added); without it the
prompt stays a message list for ``--data.apply_chat_template``, which renders no ``tools``, so
the tool listing goes into the system message. The label is the task JSON that
``rl/openrlhf_agent.py`` builds each episode from. ``openrlhf-sft`` turns the trajectories of
``compoenv sft`` into ``messages`` records for ``openrlhf.cli.train_sft --data.multiturn``
(which also renders no ``tools``), tool calls written as the ``<tool_call>`` text the prompts
ask for. Registered in ``compoenv.cli`` with
``main.add_command(export)``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from compoenv.actions import ToolCall, render_calls
from compoenv.env import MODES, CompoWorldEnv
from compoenv.prompts import tools_block
from compoenv.registry import RegistryError
from compoenv.task import Task, TaskFileError, iter_tasks

__all__ = ["export", "prompt_record", "sft_record", "with_tool_listing"]


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
        prompt = tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True,
                                               tokenize=False)
        if tools and prompt == tokenizer.apply_chat_template(  # the template ignores tools
                messages, add_generation_prompt=True, tokenize=False):
            prompt = tokenizer.apply_chat_template(with_tool_listing(messages, tools),
                                                   add_generation_prompt=True, tokenize=False)
    return {"prompt": prompt, "label": task.to_json(), "task_id": task.id, "mode": mode}


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


def _jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as exc:
                raise click.ClickException(f"{path}:{number}: invalid JSON ({exc.msg} at column "
                                           f"{exc.colno})") from None


@click.group("export")
def export() -> None:
    """Write compoenv tasks and trajectories in the formats training frameworks read."""


@export.command("openrlhf")
@click.option("--tasks", "tasks_path", required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Task JSONL (compoenv generate).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--tokenizer", default=None, metavar="PATH",
              help="Render prompts with this tokenizer's chat template (a local path or hub "
                   "name); default: keep messages for --data.apply_chat_template.")
@click.option("--mode", type=click.Choice(MODES), default="direct", show_default=True,
              help="Tool listing; the RL run needs COMPOENV_MODE set to the same.")
def openrlhf(tasks_path: Path, output: Path, tokenizer: str | None, mode: str) -> None:
    """Prompt JSONL for openrlhf.cli.train_ppo_ray (keys: prompt, label)."""
    tok = None
    if tokenizer is not None:
        try:
            from transformers import AutoTokenizer

            tok = AutoTokenizer.from_pretrained(tokenizer)
        except (ImportError, OSError, ValueError) as exc:
            raise click.ClickException(f"cannot load tokenizer {tokenizer!r}: {exc}") from None
        if not getattr(tok, "chat_template", None):
            raise click.ClickException(f"tokenizer {tokenizer!r} has no chat template; drop "
                                       "--tokenizer to export messages instead")
    env = CompoWorldEnv(mode=mode)
    count = 0
    with open(output, "w", encoding="utf-8") as fh:
        try:
            for count, task in enumerate(iter_tasks(tasks_path), 1):
                try:
                    record = prompt_record(task, mode, tok, env)
                except RegistryError as exc:
                    raise click.ClickException(f"{tasks_path}: task {count} ({task.id}): "
                                               f"{exc}") from None
                fh.write(json.dumps(record) + "\n")
        except TaskFileError as exc:
            raise click.ClickException(str(exc)) from None
    keys = "--data.input_key prompt --data.label_key label" + (
        "" if tok else " --data.apply_chat_template")
    click.echo(f"{count} prompts -> {output} (OpenRLHF: {keys}; COMPOENV_MODE={mode})",
               err=True)


@export.command("openrlhf-sft")
@click.option("--sft", "sft_path", required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Trajectory JSONL (compoenv sft).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--calls", type=click.Choice(["text", "structured"]), default="text",
              show_default=True, help="Tool calls as <tool_call> text in the assistant turns, or "
                                      "as OpenAI tool_calls for the chat template to render.")
def openrlhf_sft(sft_path: Path, output: Path, calls: str) -> None:
    """Multi-turn SFT JSONL for openrlhf.cli.train_sft (key: messages)."""
    count = 0
    with open(output, "w", encoding="utf-8") as fh:
        for number, record in _jsonl(sft_path):
            try:
                fh.write(json.dumps(sft_record(record, calls)) + "\n")
            except ValueError as exc:
                raise click.ClickException(f"{sft_path}:{number}: {exc}") from None
            count += 1
    click.echo(f"{count} trajectories -> {output} (OpenRLHF: --data.multiturn "
               "--data.apply_chat_template --data.input_key messages)", err=True)
