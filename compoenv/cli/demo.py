"""``compoenv demo``: compose verified tasks (or load a task file) and play the oracle and a
random agent on each.

    compoenv demo                          # 8 composed tasks, direct mode
    compoenv demo --num 20 --mode gateway
    compoenv demo --tasks tasks.jsonl
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from compoenv.cli.common import composer_config, composer_options, library_option

__all__ = ["demo"]


@click.command()
@click.option("--num", type=click.IntRange(min=1), default=8, show_default=True,
              help="Tasks to compose.")
@click.option("--tasks", "tasks_path", type=click.Path(exists=True, dir_okay=False,
                                                       path_type=Path), default=None,
              help="Play the tasks of this JSONL file instead of composing (with --num: the "
                   "first NUM of them).")
@click.option("--mode", type=click.Choice(["direct", "gateway"]), default="direct",
              show_default=True)
@click.option("--max-steps", type=click.IntRange(min=1), default=None,
              help="Actions per episode  [default: enough for each task's solution, at least 20]")
@composer_options
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_context
@library_option
def demo(ctx: click.Context, num: int, tasks_path: Path | None, mode: str,
         max_steps: int | None, as_json: bool, **flags: Any) -> None:
    """Compose verified tasks, run the oracle and a random agent on each, print a summary."""
    from compoenv.agents import OracleAgent, RandomAgent
    from compoenv.compose import Composer
    from compoenv.env import CompoWorldEnv
    from compoenv.rollout import run_episode
    from compoenv.task_check import load_checked
    from compoenv.registry import Registry

    seed, world_model = flags["seed"], flags["world_model"]
    config = composer_config(**flags)
    start = time.perf_counter()
    rejections: dict[str, int] = {}
    if tasks_path is not None:
        tasks = load_checked(tasks_path, Registry.default())
        if ctx.get_parameter_source("num") == click.core.ParameterSource.COMMANDLINE:
            tasks = tasks[:num]
        if not tasks:
            raise click.ClickException(f"{tasks_path} holds no tasks")
    else:
        composer = Composer(config=config)
        try:
            tasks = list(composer.generate(num, seed=seed))
        except RuntimeError as exc:  # too many rejected seeds for these settings
            raise click.ClickException(str(exc)) from None
        rejections = dict(composer.rejections)
    env = CompoWorldEnv(tasks, mode=mode, max_steps=max_steps, world_model=world_model)
    rows = []
    for i, task in enumerate(tasks):
        oracle = run_episode(env, OracleAgent(), options={"index": i}, source="oracle")
        rand = run_episode(env, RandomAgent(seed=seed + i), options={"index": i}, source="random")
        rows.append({"task": task.id, "services": task.services, "hops": task.hops,
                     "capabilities": task.capabilities, "instruction": task.instruction,
                     "oracle": oracle["meta"]["rubric_score"],
                     "random": rand["meta"]["rubric_score"]})
    summary = {
        "tasks": len(rows), "mode": mode, "seed": seed,
        "oracle_mean": sum(r["oracle"] for r in rows) / len(rows),
        "random_mean": sum(r["random"] for r in rows) / len(rows),
        "rejections": rejections,
        "seconds": round(time.perf_counter() - start, 3), "rows": rows,
    }
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    console = Console()
    table = Table(title=f"CompoWorld demo: {len(rows)} tasks ({mode} mode)")
    for col, just in (("task", "left"), ("services", "left"), ("hops", "right"),
                      ("oracle", "right"), ("random", "right")):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for r in rows:
        table.add_row(r["task"], ", ".join(r["services"]), str(r["hops"]),
                      f"{r['oracle']:.2f}", f"{r['random']:.2f}")
    console.print(table)
    console.print(f"[bold]Example request:[/bold] {rows[0]['instruction']}")
    console.print(f"oracle mean {summary['oracle_mean']:.3f} · random mean "
                  f"{summary['random_mean']:.3f} · rejected seeds {rejections} · "
                  f"{summary['seconds']} s")
