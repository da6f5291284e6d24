"""``compoenv sft``: verified trajectories as SFT data (the oracle's with thoughts, and passing ones).

    compoenv sft -o sft.jsonl                          # 100 composed tasks, oracle trajectories
    compoenv sft --tasks tasks.jsonl --mode gateway -o sft.jsonl --workers 8
    compoenv sft --num 50 --mode gateway --arguments-as string -o sft.jsonl
    compoenv sft --tasks tasks.jsonl --trajectories runs.jsonl -o sft.jsonl --ray auto

Only trajectories that pass the rubric (every required criterion) are written, in the format
of docs/architecture.md; the counts go to stdout (a table, or JSON with ``--json``). In
gateway mode the oracle discovers before it acts (list_services, list_tools of each service it
uses, describe_tool before a tool's first call); ``--arguments-as`` picks the tool-call
arguments' form (JSON objects by default, as the published data has them).
"""

from __future__ import annotations

import json
import time
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from compoenv.cli.common import (composer_config, composer_options, library_option, output_option,
                                 registry_factory)

__all__ = ["sft"]


@click.command()
@output_option("The SFT JSONL file to write.")
@click.option("--tasks", "tasks_path", type=click.Path(exists=True, dir_okay=False),
              default=None, help="Play the oracle on the tasks of this JSONL file.")
@click.option("--num", type=click.IntRange(min=1), default=None,
              help="Compose this many tasks for the oracle [default: 100 unless --tasks or "
                   "--trajectories is given].")
@composer_options
@click.option("--mode", type=click.Choice(["direct", "gateway"]), default="direct",
              show_default=True, help="Tools the trajectories list: the task's, or meta-tools.")
@click.option("--thoughts", type=click.Choice(["reasoning", "content", "none"]),
              default="reasoning", show_default=True,
              help="Where the oracle's thoughts go: reasoning_content, the text before the "
                   "calls, or nowhere.")
@click.option("--discovery/--no-discovery", default=True, show_default=True,
              help="Gateway mode: the oracle lists services, lists the tools of those it uses "
                   "and describes each tool before its first call (or calls straight away).")
@click.option("--arguments-as", "arguments", type=click.Choice(["object", "string"]),
              default="object", show_default=True,
              help="Tool-call arguments as JSON objects (the published format) or as their "
                   "JSON text (the OpenAI form).")
@click.option("--trajectories", "trajectory_paths", multiple=True,
              type=click.Path(exists=True, dir_okay=False),
              help="Also keep the passing trajectories of this JSONL file (any agent's; "
                   "repeatable).")
@click.option("--min-rubric-score", type=click.FloatRange(0, 1), default=None,
              help="With --trajectories: keep only those with at least this rubric score.")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Processes (or Ray actors) for composing and rollouts [default: 1].")
@click.option("--ray", "ray_address", default=None, metavar="ADDRESS",
              help="Compose and roll out on Ray: a cluster address, or 'local'.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON on stdout.")
@library_option
def sft(output: Any, tasks_path: str | None, num: int | None, mode: str, thoughts: str,
        discovery: bool, arguments: str, trajectory_paths: tuple[str, ...],
        min_rubric_score: float | None, workers: int | None,
        ray_address: str | None, as_json: bool, **flags: Any) -> None:
    """Write verified trajectories (oracle and passing agent runs) as SFT data."""
    from compoenv.registry import Registry
    from compoenv.sft import filter_trajectories, oracle_sft
    from compoenv.task_check import load_checked
    from compoenv.trajectory import call_counts, save_trajectories

    if tasks_path and num is not None:
        raise click.UsageError("give --tasks FILE or --num N, not both")
    if min_rubric_score is not None and not trajectory_paths:
        raise click.BadParameter("only applies to --trajectories", param_hint="'--min-rubric-score'")
    if num is None and not tasks_path and not trajectory_paths:
        num = 100
    seed, world_model = flags.pop("seed"), flags["world_model"]
    config = composer_config(**flags)  # a bad flag or world model is a usage error, up front
    start = time.perf_counter()
    summary: dict[str, Any] = {"output": str(output), "mode": mode, "thoughts": thoughts,
                               "arguments": arguments}
    records: list[dict[str, Any]] = []
    started_ray = _start_ray(ray_address, workers)
    try:
        if tasks_path or num:
            if tasks_path:
                tasks = load_checked(tasks_path, Registry.default())
                if not tasks:
                    raise click.ClickException(f"{tasks_path} holds no tasks; nothing to write")
            else:
                tasks = _compose(num or 0, seed, workers, ray_address, config)
            env_kwargs = {"world_model": world_model} if world_model else {}
            # composed tasks were verified as they were made; a file's are verified here
            kept, counts = oracle_sft(tasks, mode=mode, style=thoughts, workers=workers or 1,
                                      ray_address=ray_address, env_kwargs=env_kwargs,
                                      verify=bool(tasks_path), discover=discovery,
                                      arguments=arguments)
            records += kept
            summary["oracle"] = {"tasks": len(tasks), **counts}
        if trajectory_paths:
            kept, counts = filter_trajectories(trajectory_paths, min_rubric_score)
            if not counts["read"]:
                raise click.ClickException(f"{', '.join(trajectory_paths)}: no trajectories "
                                           f"to read; nothing to write")
            records += kept
            summary["trajectories"] = {"files": list(trajectory_paths), **counts}
    finally:
        if started_ray:
            import ray

            ray.shutdown()
    if not records:
        why = summary.get("oracle", {}).get("unverified") or {}
        first = f" (first: {next(iter(why.values()))})" if why else ""
        raise click.ClickException(f"no verified, passing trajectory to write; {output} was "
                                   f"not written{first}")
    summary["written"] = save_trajectories(records, output, arguments=arguments)
    counts = [call_counts(r["messages"]) for r in records]
    summary["tool_calls"] = sum(n for n, _ in counts)  # discovery calls included
    summary["real_tool_calls"] = sum(real for _, real in counts)
    summary["seconds"] = round(time.perf_counter() - start, 3)
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        Console().print(_table(summary))


def _start_ray(address: str | None, workers: int | None) -> bool:
    """Start (or join) Ray once for composing and rolling out; True if this call started it."""
    if address is None:
        return False
    try:
        import ray
    except ImportError:
        raise click.ClickException("--ray needs Ray: pip install 'compoenv[ray]'") from None
    if ray.is_initialized():
        return False
    if address == "local":
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    else:
        ray.init(address=address, log_to_driver=False)
    return True


def _compose(num: int, seed: int, workers: int | None, ray_address: str | None,
             config: Any) -> list[Any]:
    from compoenv.compose.parallel import generate_parallel

    try:
        tasks, _ = generate_parallel(num, seed, config, registry_factory=registry_factory(),
                                     workers=workers or 1, ray_address=ray_address)
    except RuntimeError as exc:  # too many rejected seeds for these settings
        raise click.ClickException(str(exc)) from None
    return tasks


def _table(summary: dict[str, Any]) -> Table:
    table = Table(title=f"{summary['written']} verified trajectories -> {summary['output']} "
                        f"({summary['seconds']} s, {summary['mode']} mode)")
    table.add_column("source", style="bold")
    table.add_column("counts")
    if "oracle" in summary:
        o = summary["oracle"]
        table.add_row("oracle", f"{o['tasks']} tasks · {len(o['unverified'])} unverified "
                                f"(skipped) · {o['passed']} passed · {o['failed']} failed (not "
                                f"written) · thoughts: {summary['thoughts']}")
    n = summary["written"]
    table.add_row("tool calls", f"{summary['tool_calls']} ({summary['tool_calls'] / n:.1f} a "
                                f"trajectory), {summary['real_tool_calls']} reaching a service's "
                                f"tool ({summary['real_tool_calls'] / n:.1f}) · arguments: "
                                f"{summary['arguments']}")
    if "trajectories" in summary:
        t = summary["trajectories"]
        table.add_row("trajectories", f"{t['read']} read · {t['passed']} passed · "
                                      f"{t['failed']} failed (not written)")
    return table
