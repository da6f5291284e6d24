"""The ``compoenv`` command: demo, generate, services, graph."""

from __future__ import annotations

import json
import math
import sys
import time
from collections import Counter
from dataclasses import fields
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
@click.option("--world-model", default=None, envvar="COMPOENV_WORLD_MODEL",
              help="Who answers spec-only tools: offline (default), endpoint, "
                   "endpoint:<base_url>, transformers:<path>.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def demo(num: int, seed: int, mode: str, min_hops: int, max_hops: int, world_model: str | None,
         as_json: bool) -> None:
    """Compose verified tasks, run the oracle and a random agent on each, print a summary."""
    from compoenv.agents import OracleAgent, RandomAgent
    from compoenv.compose import Composer, ComposerConfig
    from compoenv.env import CompoWorldEnv
    from compoenv.rollout import run_episode

    _check_world_model(world_model)
    start = time.perf_counter()
    composer = Composer(config=ComposerConfig(min_hops=min_hops, max_hops=max_hops,
                                              world_model=world_model))
    tasks = list(composer.generate(num, seed=seed))
    env = CompoWorldEnv(tasks, mode=mode, max_steps=12, world_model=world_model)
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
@click.option("--num", default=100, show_default=True, help="Tasks to compose.")
@click.option("--seed", default=0, show_default=True, help="Generation seed.")
@click.option("--min-hops", default=2, show_default=True)
@click.option("--max-hops", default=4, show_default=True)
@click.option("--min-services", default=2, show_default=True)
@click.option("--motifs", default=None, help="Comma-separated motifs to compose with.")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Worker processes (Ray actors with --ray)  [default: 1; all CPUs with --ray]")
@click.option("--ray", "ray_address", default=None, metavar="ADDRESS",
              help="Compose on Ray: a cluster address, or 'local' to start one here.")
@click.option("--split", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=None,
              help="Also write <out>.train.jsonl / <out>.test.jsonl, test on unseen service "
                   "combinations holding about this fraction of the tasks.")
@click.option("--distractors", default=0, show_default=True,
              help="Unrelated services recorded per task (listed in gateway mode).")
@click.option("--world-model", default=None, envvar="COMPOENV_WORLD_MODEL",
              help="Who answers spec-only tools: offline (default), endpoint, "
                   "endpoint:<base_url>, transformers:<path>.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON on stdout.")
def generate(num: int, seed: int, min_hops: int, max_hops: int, min_services: int,
             motifs: str | None, workers: int | None, ray_address: str | None,
             split: float | None, distractors: int, world_model: str | None, output: str,
             as_json: bool) -> None:
    """Compose NUM verified tasks into a JSONL file; the same file for any number of workers."""
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)

    from compoenv.compose.parallel import generate_parallel
    from compoenv.compose.taskset import split_by_combination, summarize
    from compoenv.task import save_tasks

    config = _composer_config(min_hops=min_hops, max_hops=max_hops, min_services=min_services,
                              motifs=motifs, distractors=distractors, world_model=world_model)
    workers = workers if workers is not None or ray_address else 1
    err = Console(stderr=True)
    bar = Progress(TextColumn("composing"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("tasks · {task.fields[attempted]} seeds"), TimeElapsedColumn(),
                   TimeRemainingColumn(), console=err, transient=True, disable=not err.is_terminal)
    start = time.perf_counter()
    with bar:
        job = bar.add_task("compose", total=num, attempted=0)
        try:
            tasks, rejections = generate_parallel(
                num, seed, config, workers=workers, ray_address=ray_address,
                progress=lambda done, tried: bar.update(job, completed=done, attempted=tried))
        except RuntimeError as exc:  # too many rejected seeds for these settings
            raise click.ClickException(str(exc)) from None
    save_tasks(tasks, output)
    summary: dict[str, Any] = {"tasks": len(tasks), "output": output,
                               "seconds": round(time.perf_counter() - start, 3),
                               "workers": workers, **summarize(tasks, rejections)}
    if split is not None:
        try:
            train, test = split_by_combination(tasks, test_fraction=split, seed=seed)
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
        summary["split"] = {}
        for name, part in (("train", train), ("test", test)):
            path = f"{output.removesuffix('.jsonl')}.{name}.jsonl"
            summary["split"][name] = {"output": path, "tasks": save_tasks(part, path),
                                      "combinations": len({frozenset(t.services) for t in part})}
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        Console().print(_summary_table(summary))


def _check_world_model(spec: str | None) -> None:
    """Fail early, as a usage error, on a world model that cannot be built."""
    if spec in (None, "", "offline"):
        return
    from compoenv.worldmodel.config import world_model_from

    try:
        world_model_from(spec)
    except (ValueError, ImportError) as exc:
        raise click.BadParameter(str(exc), param_hint="'--world-model'") from None


def _composer_config(**flags: Any) -> Any:
    """A ComposerConfig from CLI flags; flags left unset keep the config's defaults."""
    from compoenv.compose import ComposerConfig

    _check_world_model(flags.get("world_model"))

    motifs = flags.pop("motifs")
    if motifs is not None:
        if "motifs" not in {f.name for f in fields(ComposerConfig)}:
            raise click.BadParameter("motifs are not supported by this composer "
                                     "(ComposerConfig has no 'motifs' field)",
                                     param_hint="'--motifs'")
        flags["motifs"] = tuple(m.strip() for m in motifs.split(",") if m.strip())
    try:
        return ComposerConfig(**flags)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _summary_table(summary: dict[str, Any]) -> Table:
    table = Table(title=f"{summary['tasks']} tasks -> {summary['output']} "
                        f"({summary['seconds']} s, {summary['attempted']} seeds tried)")
    table.add_column("statistic", style="bold")
    table.add_column("counts")
    for key in ("hops", "services", "capabilities", "domains", "service_usage", "rejections"):
        table.add_row(key.replace("_", " "),
                      " · ".join(f"{k}: {v}" for k, v in summary[key].items()) or "-")
    table.add_row("combinations", f"{summary['combinations']} distinct service sets")
    for name, part in summary.get("split", {}).items():
        table.add_row(name, f"{part['tasks']} tasks, {part['combinations']} combinations "
                            f"-> {part['output']}")
    return table


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
@click.option("--png", type=click.Path(dir_okay=False), default=None,
              help="Draw the graph into this PNG file (needs matplotlib).")
@click.option("--services-only", is_flag=True,
              help="With --png: draw services, joined by the interfaces their tools share.")
def graph(as_json: bool, png: str | None, services_only: bool) -> None:
    """Show the tool-dependency graph of the registry (statistics, JSON or a drawing)."""
    from compoenv.graph import ToolGraph
    from compoenv.registry import Registry

    if services_only and not png:
        raise click.BadParameter("only applies to a drawing: add --png FILE",
                                 param_hint="'--services-only'")
    tool_graph = ToolGraph(Registry.default().tools())
    if png:
        _draw_graph(tool_graph, png, services_only)
        click.echo(png, err=as_json)
    if as_json:
        click.echo(json.dumps(tool_graph.to_json(), indent=2))
    elif not png:
        click.echo(json.dumps(tool_graph.stats(), indent=2))


def _draw_graph(tool_graph: Any, path: str, services_only: bool) -> None:
    """Draw the tool graph (tools clustered by service) or its service view into a PNG."""
    try:
        import matplotlib
    except ImportError:
        raise click.ClickException("drawing the graph needs matplotlib: pip install matplotlib "
                                   "(or pip install 'compoenv[viz]')") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import networkx as nx
    from matplotlib.lines import Line2D

    g = tool_graph.graph
    services = sorted({d["service"] for _, d in g.nodes(data=True)})
    tab = plt.get_cmap("tab10" if len(services) <= 10 else "tab20")
    colour = {s: tab(i % tab.N) for i, s in enumerate(services)}
    centre = {s: (math.cos(2 * math.pi * i / len(services)),
                  math.sin(2 * math.pi * i / len(services))) for i, s in enumerate(services)}
    fig, ax = plt.subplots(figsize=(16, 12), dpi=100)
    if services_only:
        view = nx.DiGraph()
        view.add_nodes_from(services)
        for u, v, d in g.edges(data=True):
            su, sv = g.nodes[u]["service"], g.nodes[v]["service"]
            if su != sv:
                view.add_edge(su, sv, **{d["interface"]: view.get_edge_data(su, sv, {})
                                         .get(d["interface"], 0) + 1})
        usage = Counter(d["interface"] for *_, d in g.edges(data=True) if d["cross"])
        itab = plt.get_cmap("tab10" if len(usage) <= 10 else "tab20")
        iface = {n: itab(i % itab.N) for i, (n, _) in enumerate(usage.most_common())}
        edges = list(view.edges(data=True))
        top = [max(d, key=lambda k: (d[k], k)) for *_, d in edges]
        nx.draw_networkx_edges(view, centre, edgelist=[(u, v) for u, v, _ in edges], ax=ax,
                               edge_color=[iface[t] for t in top], node_size=5200, arrowsize=18,
                               width=[1 + math.log2(sum(d.values())) for *_, d in edges],
                               connectionstyle="arc3,rad=0.12", alpha=0.75)
        nx.draw_networkx_edge_labels(view, centre, ax=ax, font_size=7, label_pos=0.3,
                                     connectionstyle="arc3,rad=0.12", bbox={"alpha": 0},
                                     edge_labels={(u, v): "/".join(sorted(d, key=d.get)[::-1])
                                                  for u, v, d in edges})
        sizes = Counter(d["service"] for _, d in g.nodes(data=True))
        nx.draw_networkx_nodes(view, centre, ax=ax, node_size=5200,
                               node_color=[colour[s] for s in services])
        nx.draw_networkx_labels(view, centre, ax=ax, font_size=11, font_weight="bold",
                                labels={s: f"{s}\n{sizes[s]} tools" for s in services})
        handles = [Line2D([], [], color=c, linewidth=3, label=f"{n} ({usage[n]} tool edges)")
                   for n, c in iface.items()]
        title = (f"{len(services)} services, {view.number_of_edges()} service links "
                 "(colour: interface carrying most tool edges; width: tool edges)")
    else:
        pos, angle = {}, {}
        for s in services:
            tools = sorted(n for n, d in g.nodes(data=True) if d["service"] == s)
            for j, name in enumerate(tools):
                angle[name] = 2 * math.pi * j / len(tools) + math.atan2(*centre[s][::-1])
                pos[name] = (2.0 * centre[s][0] + 0.4 * math.cos(angle[name]),
                             2.0 * centre[s][1] + 0.4 * math.sin(angle[name]))
        simple = nx.DiGraph(g)
        many = simple.number_of_edges() > 2000  # arrows are one patch each: lines for big graphs
        arrows = {"arrows": False} if many else {"arrows": True, "arrowsize": 7}
        nx.draw_networkx_edges(simple, pos, ax=ax, width=0.3 if many else 0.6,
                               alpha=0.08 if many else 0.2, **arrows,
                               edge_color=[colour[g.nodes[u]["service"]] for u, _ in simple.edges])
        for read_only, shape in ((True, "o"), (False, "s")):
            nodes = [n for n, d in g.nodes(data=True) if d["read_only"] is read_only]
            nx.draw_networkx_nodes(g, pos, nodelist=nodes, node_shape=shape, node_size=260,
                                   node_color=[colour[g.nodes[n]["service"]] for n in nodes],
                                   edgecolors="black", linewidths=0.6, ax=ax)
        for n, (x, y) in pos.items():  # labels point away from their service's centre
            dx, dy = math.cos(angle[n]), math.sin(angle[n])
            ax.text(x + 0.05 * dx, y + 0.05 * dy, n.split("__", 1)[1], fontsize=8,
                    ha="left" if dx > 0.3 else "right" if dx < -0.3 else "center",
                    va="bottom" if dy > 0.3 else "top" if dy < -0.3 else "center")
        marks = [(colour[s], s, "o") for s in services] + [("grey", "read tool", "o"),
                                                            ("grey", "write tool", "s")]
        handles = [Line2D([], [], color=c, label=label, marker=m, linestyle="", markersize=11)
                   for c, label, m in marks]
        stats = tool_graph.stats()
        title = (f"{stats['tools']} tools, {stats['edges']} typed edges "
                 f"({stats['cross_service_edges']} cross-service), coloured by service")
    ax.legend(handles=handles, title="interface" if services_only else "service",
              loc="upper left", bbox_to_anchor=(1, 1))
    ax.set_title(title, fontsize=14)
    ax.axis("off")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


from compoenv.cli_import import import_  # noqa: E402  (the `compoenv import` commands)

main.add_command(import_)
from compoenv.cli_export import export; main.add_command(export)  # noqa: E402,E702
from compoenv.cli_sft import sft; main.add_command(sft)  # noqa: E402,E702


if __name__ == "__main__":
    sys.exit(main())
