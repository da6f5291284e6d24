"""The ``compoenv`` command: demo, generate, services, graph."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from typing import Any

import click
from rich.console import Console
from rich.table import Table

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="compoenv")
def main() -> None:
    """compoenv: compositional tool-use environments for agent RL."""


@main.command()
@click.option("--tasks", "num", default=8, show_default=True, help="Tasks to compose.")
@click.option("--seed", default=0, show_default=True, help="Generation seed.")
@click.option("--mode", type=click.Choice(["direct", "gateway"]), default="direct",
              show_default=True)
@click.option("--min-hops", default=2, show_default=True)
@click.option("--max-hops", default=4, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def demo(num: int, seed: int, mode: str, min_hops: int, max_hops: int, as_json: bool) -> None:
    """Compose verified tasks, run the oracle and a random agent on each, print a summary."""
    from compoenv.agents import OracleAgent, RandomAgent
    from compoenv.compose import Composer, ComposerConfig
    from compoenv.env import CompoWorldEnv
    from compoenv.rollout import run_episode

    start = time.perf_counter()
    composer = Composer(config=ComposerConfig(min_hops=min_hops, max_hops=max_hops))
    tasks = list(composer.generate(num, seed=seed))
    env = CompoWorldEnv(tasks, mode=mode, max_steps=12)
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
        "oracle_mean": sum(r["oracle"] for r in rows) / max(len(rows), 1),
        "random_mean": sum(r["random"] for r in rows) / max(len(rows), 1),
        "rejections": dict(composer.rejections),
        "seconds": round(time.perf_counter() - start, 3), "rows": rows,
    }
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    console = Console()
    table = Table(title=f"CompoWorld demo: {len(rows)} composed tasks ({mode} mode)")
    for col, just in (("task", "left"), ("services", "left"), ("hops", "right"),
                      ("oracle", "right"), ("random", "right")):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for r in rows:
        table.add_row(r["task"], ", ".join(r["services"]), str(r["hops"]),
                      f"{r['oracle']:.2f}", f"{r['random']:.2f}")
    console.print(table)
    console.print(f"[bold]Example request:[/bold] {rows[0]['instruction']}" if rows else "")
    console.print(f"oracle mean {summary['oracle_mean']:.3f} · random mean "
                  f"{summary['random_mean']:.3f} · rejected seeds {dict(composer.rejections)} · "
                  f"{summary['seconds']} s")


@main.command()
@click.option("--num", default=100, show_default=True)
@click.option("--seed", default=0, show_default=True)
@click.option("--min-hops", default=2, show_default=True)
@click.option("--max-hops", default=4, show_default=True)
@click.option("--min-services", default=2, show_default=True)
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def generate(num: int, seed: int, min_hops: int, max_hops: int, min_services: int, output: str,
             as_json: bool) -> None:
    """Compose NUM verified tasks into a JSONL file."""
    from compoenv.compose import Composer, ComposerConfig
    from compoenv.task import save_tasks

    try:
        config = ComposerConfig(min_hops=min_hops, max_hops=max_hops, min_services=min_services)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    composer = Composer(config=config)
    start = time.perf_counter()
    tasks = list(composer.generate(num, seed=seed))
    save_tasks(tasks, output)
    seconds = time.perf_counter() - start
    summary: dict[str, Any] = {
        "tasks": len(tasks), "output": output, "seconds": round(seconds, 3),
        "hops": dict(sorted(Counter(t.hops for t in tasks).items())),
        "services": dict(sorted(Counter(len(t.services) for t in tasks).items())),
        "domains": dict(Counter(t.domain for t in tasks).most_common()),
        "capabilities": dict(Counter(c for t in tasks for c in t.capabilities).most_common()),
        "rejections": dict(composer.rejections.most_common()),
    }
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        Console().print(summary)


@main.command()
def services() -> None:
    """List the registered services and their tools."""
    from compoenv.registry import Registry

    registry = Registry.default()
    table = Table(title=f"{len(registry)} services, {len(registry.tools())} tools")
    for col in ("service", "domain", "tools", "description"):
        table.add_column(col)
    for cls in registry:
        table.add_row(cls.name, cls.domain, str(len(cls.tool_specs())), cls.description())
    Console().print(table)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Dump nodes and edges as JSON.")
def graph(as_json: bool) -> None:
    """Show the tool-dependency graph of the registry."""
    from compoenv.graph import ToolGraph
    from compoenv.registry import Registry

    tool_graph = ToolGraph(Registry.default().tools())
    click.echo(json.dumps(tool_graph.to_json() if as_json else tool_graph.stats(), indent=2))


if __name__ == "__main__":
    sys.exit(main())
