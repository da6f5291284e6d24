"""``compoenv generate``: compose verified tasks into a JSONL file, the same for any workers.

    compoenv generate --num 1000 --seed 0 --min-hops 3 --max-hops 5 --workers 2 -o tasks.jsonl
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from compoenv.cli.common import (composer_config, composer_options, library_option, output_option,
                                 registry_factory)

__all__ = ["generate"]


@click.command()
@click.option("--num", type=click.IntRange(min=1), default=100, show_default=True,
              help="Tasks to compose.")
@composer_options
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Worker processes (Ray actors with --ray)  [default: 1; all CPUs with --ray]")
@click.option("--ray", "ray_address", default=None, metavar="ADDRESS",
              help="Compose on Ray: a cluster address, or 'local' to start one here.")
@click.option("--split", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=None,
              help="Also write <out>.train.jsonl / <out>.test.jsonl, test on unseen service "
                   "combinations holding about this fraction of the tasks.")
@click.option("--curriculum", is_flag=True,
              help="Order the written set from easy to hard (by each task's difficulty).")
@output_option("The task JSONL file to write.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON on stdout.")
@library_option
def generate(num: int, workers: int | None, ray_address: str | None, split: float | None,
             curriculum: bool, output: Path, as_json: bool, **flags: Any) -> None:
    """Compose NUM verified tasks into a JSONL file; the same file for any number of workers."""
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)

    from compoenv.compose.parallel import generate_parallel
    from compoenv.compose.taskset import split_by_combination, summarize
    from compoenv.task import save_tasks

    from compoenv.cli.common import difficulty_mix
    from compoenv.compose.difficulty import curriculum as easy_to_hard

    seed = flags.pop("seed")
    mix = difficulty_mix(flags.get("difficulty")) if flags.get("scenarios") != "none" else None
    config = composer_config(**flags)
    if not (config.scenarios or config.derive):
        mix = None  # levels are drawn for scenario tasks only
    workers = workers if workers is not None or ray_address else 1
    by_tool: Counter[tuple[str, str]] = Counter()
    err = Console(stderr=True)
    bar = Progress(TextColumn("composing"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("tasks · {task.fields[attempted]} seeds"), TimeElapsedColumn(),
                   TimeRemainingColumn(), console=err, transient=True, disable=not err.is_terminal)
    start = time.perf_counter()
    with bar:
        job = bar.add_task("compose", total=num, attempted=0)
        try:
            tasks, rejections = generate_parallel(
                num, seed, config, registry_factory=registry_factory(), workers=workers,
                ray_address=ray_address,
                progress=lambda done, tried: bar.update(job, completed=done, attempted=tried),
                rejections_by_tool=by_tool, mix=mix)
        except RuntimeError as exc:  # too many rejected seeds for these settings
            raise click.ClickException(str(exc)) from None
    if curriculum:
        tasks = easy_to_hard(tasks)
    save_tasks(tasks, output)
    summary: dict[str, Any] = {"tasks": len(tasks), "output": str(output),
                               "seconds": round(time.perf_counter() - start, 3),
                               "workers": workers, **summarize(tasks, rejections, by_tool)}
    if split is not None:
        try:
            train, test = split_by_combination(tasks, test_fraction=split, seed=seed)
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
        summary["split"] = {}
        for name, part in (("train", train), ("test", test)):
            path = f"{str(output).removesuffix('.jsonl')}.{name}.jsonl"
            summary["split"][name] = {"output": path, "tasks": save_tasks(part, path),
                                      "combinations": len({frozenset(t.services) for t in part})}
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        Console().print(_summary_table(summary))


def _summary_table(summary: dict[str, Any]) -> Table:
    table = Table(title=f"{summary['tasks']} tasks -> {summary['output']} "
                        f"({summary['seconds']} s, {summary['attempted']} seeds tried)")
    table.add_column("statistic", style="bold")
    table.add_column("counts")
    for key in ("calls", "long", "services", "rules", "rule_kinds", "decoys", "reports",
                "difficulty", "guidance", "scenarios", "capabilities", "domains",
                "service_usage"):
        table.add_row(key.replace("_", " "),
                      " · ".join(f"{k}: {v}" for k, v in summary.get(key, {}).items()) or "-")
    table.add_row("rejections", _rejections(summary) or "-")
    table.add_row("combinations", f"{summary['combinations']} distinct service sets")
    table.add_row("lint", _lint(summary) or "-")
    for name, part in summary.get("split", {}).items():
        table.add_row(name, f"{part['tasks']} tasks, {part['combinations']} combinations "
                            f"-> {part['output']}")
    return table


def _lint(summary: dict[str, Any]) -> str:
    """``31.0% of tasks flagged · L101: 40 · L204: 12``: the linter's rules that fired."""
    lint = summary.get("lint")
    if not lint:
        return ""
    counts = " · ".join(f"{rule}: {n}" for rule, n in lint["findings"].items() if n)
    return f"{100 * lint['share']:.1f}% of tasks flagged" + (f" · {counts}" if counts else "")


def _rejections(summary: dict[str, Any]) -> str:
    """``dead_end: 12 (crm__get_lead 5, bank__pay 3) · leak: 2``: each reason with the tools at
    fault most often, where the reason names tools."""
    by_tool = summary.get("rejections_by_tool", {})
    parts = []
    for reason, count in summary["rejections"].items():
        tools = ", ".join(f"{t} {c}" for t, c in list(by_tool.get(reason, {}).items())[:3])
        parts.append(f"{reason}: {count}" + (f" ({tools})" if tools else ""))
    return " · ".join(parts)
