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
ask for (the records: ``compoenv.integrations.openrlhf_data``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from compoenv.cli.common import library_option, output_option, require
from compoenv.env import MODES, CompoWorldEnv
from compoenv.integrations.openrlhf_data import prompt_record, sft_record
from compoenv.registry import LIBRARY_ENV, Registry
from compoenv.task_check import load_checked

__all__ = ["export"]


def _jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    with open(path, encoding="utf-8", errors="strict") as fh:
        number = 0
        try:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    yield number, json.loads(line)
                except json.JSONDecodeError as exc:
                    raise click.ClickException(f"{path}:{number}: invalid JSON ({exc.msg} at "
                                               f"column {exc.colno})") from None
        except UnicodeDecodeError:
            raise click.ClickException(f"{path}:{number + 1}: not UTF-8 text; expected a JSONL "
                                       f"file") from None


@click.group("export")
def export() -> None:
    """Write compoenv tasks and trajectories in the formats training frameworks read."""


@export.command("openrlhf")
@click.option("--tasks", "tasks_path", required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Task JSONL (compoenv generate).")
@output_option("The prompt JSONL file to write.")
@click.option("--tokenizer", default=None, metavar="PATH",
              help="Render prompts with this tokenizer's chat template (a local path or hub "
                   "name); default: keep messages for --data.apply_chat_template.")
@click.option("--mode", type=click.Choice(MODES), default="direct", show_default=True,
              help="Tool listing; the RL run needs COMPOENV_MODE set to the same.")
@library_option
def openrlhf(tasks_path: Path, output: Path, tokenizer: str | None, mode: str) -> None:
    """Prompt JSONL for openrlhf.cli.train_ppo_ray (keys: prompt, label)."""
    tok = None
    if tokenizer is not None:
        transformers = require("transformers", "llm", "--tokenizer")
        try:
            tok = transformers.AutoTokenizer.from_pretrained(tokenizer)
        except (OSError, ValueError) as exc:
            raise click.ClickException(f"cannot load tokenizer {tokenizer!r}: "
                                       f"{str(exc).splitlines()[0]}") from None
        if not getattr(tok, "chat_template", None):
            raise click.ClickException(f"tokenizer {tokenizer!r} has no chat template; drop "
                                       "--tokenizer to export messages instead")
    registry = Registry.default()
    tasks = load_checked(tasks_path, registry)  # every task playable here, before writing
    if not tasks:
        raise click.ClickException(f"{tasks_path} holds no tasks; nothing to export")
    verified, unverified = _verified(tasks, registry)
    if not verified:
        raise click.ClickException(f"none of the {len(tasks)} tasks of {tasks_path} verifies "
                                   f"(first: {unverified[0]}); {output} was not written")
    env = CompoWorldEnv(mode=mode, registry=registry)
    count = 0
    with open(output, "w", encoding="utf-8") as fh:
        for count, task in enumerate(verified, 1):
            fh.write(json.dumps(prompt_record(task, mode, tok, env)) + "\n")
    for line in unverified[:5]:
        click.echo(f"skipped unverified task {line}", err=True)
    keys = "--data.input_key prompt --data.label_key label" + (
        "" if tok else " --data.apply_chat_template")
    # the trainer's environments must hold the same libraries to play these tasks
    libraries = os.environ.get(LIBRARY_ENV)
    where = f"; {LIBRARY_ENV}={libraries}" if libraries else ""
    click.echo(f"{count} prompts -> {output} (OpenRLHF: {keys}; COMPOENV_MODE={mode}{where}; "
               f"{len(unverified)} unverified tasks skipped)", err=True)


def _verified(tasks: list[Any], registry: Any) -> tuple[list[Any], list[str]]:
    """The tasks that pass verification, and why the others do not (an RL prompt whose rubric
    anything passes, or the oracle cannot pass, teaches the policy nothing true)."""
    from compoenv.compose.records import Rejected
    from compoenv.compose.verify import verify_task

    kept, why = [], []
    for task in tasks:
        try:
            verify_task(task, registry)
        except Rejected as exc:
            why.append(f"{task.id}: {exc}")
        else:
            kept.append(task)
    return kept, why


@export.command("openrlhf-sft")
@click.option("--sft", "sft_path", required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Trajectory JSONL (compoenv sft).")
@output_option("The SFT JSONL file to write.")
@click.option("--calls", type=click.Choice(["text", "structured"]), default="text",
              show_default=True, help="Tool calls as <tool_call> text in the assistant turns, or "
                                      "as OpenAI tool_calls for the chat template to render.")
def openrlhf_sft(sft_path: Path, output: Path, calls: str) -> None:
    """Multi-turn SFT JSONL for openrlhf.cli.train_sft (key: messages)."""
    from pydantic import ValidationError

    from compoenv.trajectory import Trajectory

    lines, failing, seen = [], 0, 0
    for number, record in _jsonl(sft_path):
        seen += 1
        try:
            if not Trajectory.model_validate(record).passed:
                failing += 1  # SFT data is verified, passing trajectories only
                continue
            lines.append(json.dumps(sft_record(record, calls)))
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in first["loc"]) or "(root)"
            raise click.ClickException(f"{sft_path}:{number}: not a trajectory: field "
                                       f"{where!r}: {first['msg']}") from None
        except ValueError as exc:
            raise click.ClickException(f"{sft_path}:{number}: {exc}") from None
    if not lines:
        what = f"none of its {seen} trajectories passes" if seen else "it holds no trajectories"
        raise click.ClickException(f"{sft_path}: {what}; nothing to export")
    if failing:
        click.echo(f"skipped {failing} trajectories that do not pass their rubric", err=True)
    count = len(lines)
    with open(output, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    click.echo(f"{count} trajectories -> {output} (OpenRLHF: --data.multiturn "
               "--data.apply_chat_template --data.input_key messages)", err=True)


@export.command("verl")
@click.option("--tasks", "tasks_path", required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Task JSONL (compoenv generate).")
@output_option("The dataset to write: .parquet (verl's usual) or .jsonl.")
@click.option("--mode", type=click.Choice(MODES), default="direct", show_default=True,
              help="Tools the episodes list (the agent loop plays each row's mode).")
@click.option("--split", type=click.Choice(["train", "test"]), default="train",
              show_default=True, help="Recorded in each row's extra_info.")
@library_option
def verl(tasks_path: Path, output: Path, mode: str, split: str) -> None:
    """verl dataset for compoenv's agent loop (agent_name compoenv, the task in extra_info)."""
    if output.suffix not in (".parquet", ".jsonl", ".json"):
        raise click.ClickException(f"{output}: write a .parquet or .jsonl file")
    try:
        from compoenv.integrations.verl_data import write_verl_dataset
    except ImportError as exc:
        raise click.ClickException(str(exc)) from None
    registry = Registry.default()
    tasks = load_checked(tasks_path, registry)
    verified, unverified = _verified(tasks, registry)
    if not verified:
        raise click.ClickException(f"none of the {len(tasks)} tasks of {tasks_path} verifies; "
                                   f"{output} was not written")
    count = write_verl_dataset(verified, output, mode=mode, split=split)
    click.echo(f"{count} rows -> {output} (verl: data.train_files={output} with "
               f"rl/verl/agent_loop.yaml; {len(unverified)} unverified tasks skipped)", err=True)
