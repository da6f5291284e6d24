"""``compoenv services``, ``compoenv graph`` and ``compoenv library``: what the libraries hold,
how their tools join, and their index files.

    compoenv services                      # every service with its tools (a table)
    compoenv services crm email --json     # those services, tools with descriptions, as JSON
    compoenv services --library ./apis     # with the services of a library folder too
    compoenv graph --png graph.png --services-only
    compoenv library index ./apis          # write or bring up to date ./apis/index.json
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from compoenv.cli.common import OutputPath, library_option

__all__ = ["services", "graph", "library"]


@click.command()
@click.argument("names", nargs=-1)
@click.option("--json", "as_json", is_flag=True,
              help="Print services and their tools (with descriptions) as JSON.")
@library_option
def services(names: tuple[str, ...], as_json: bool) -> None:
    """List the registered services (or the NAMES given) with their tools."""
    from compoenv.registry import Registry

    registry = Registry.default()
    chosen = [registry.info(n).name for n in names] if names else registry.names()
    if as_json:  # descriptions of tools: every service listed is built
        click.echo(json.dumps([_describe(registry.get(n)) for n in chosen], indent=2))
        return
    tools = registry.signatures(chosen)  # from library indexes: nothing is built
    by_service: dict[str, list[Any]] = {}
    for signature in tools:
        by_service.setdefault(signature.service, []).append(signature)
    table = Table(title=f"{len(chosen)} services, {len(tools)} tools", show_lines=True)
    for col in ("service", "domain", "kind", "tools (* writes)"):
        table.add_column(col)
    for name in chosen:
        info, listed = registry.info(name), by_service.get(name, [])
        listing = ", ".join(t.name + ("" if t.read_only else "*") for t in listed)
        renamed = registry.renamed.get(name)
        note = f"\n[dim]{renamed.original} of {renamed.file}[/dim]" if renamed else ""
        table.add_row(f"[bold]{name}[/bold]\n{info.description}{note}", info.domain,
                      _KINDS.get(info.kind, info.kind), f"{len(listed)}: {listing}")
    Console().print(table)


_KINDS = {"class": "implemented", "python": "implemented", "spec": "spec"}


def _describe(cls: Any) -> dict[str, Any]:
    specs = cls.tool_specs().values()
    return {"name": cls.name, "domain": cls.domain, "version": cls.version,
            "kind": "spec" if "_spec_tools" in cls.__dict__ else "implemented",
            "description": cls.description(),
            "tools": [{"name": s.name, "qualified_name": s.qualified_name,
                       "read_only": s.read_only, "simulated": s.simulated,
                       "description": s.description,
                       "required": list(s.parameters.get("required", ()))} for s in specs]}


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Dump nodes and edges as JSON.")
@click.option("--png", type=OutputPath(), default=None,
              help="Draw the graph into this PNG file (needs matplotlib).")
@click.option("--services-only", is_flag=True,
              help="With --png: draw services, joined by the interfaces their tools share.")
@library_option
def graph(as_json: bool, png: str | None, services_only: bool) -> None:
    """Show the tool-dependency graph of the registry (statistics, JSON or a drawing)."""
    from compoenv.graph import ToolGraph
    from compoenv.registry import Registry

    if services_only and not png:
        raise click.BadParameter("only applies to a drawing: add --png FILE",
                                 param_hint="'--services-only'")
    registry = Registry.default()
    tool_graph = ToolGraph(registry.signatures(), registry.related, registry.spec,
                           registry.scope)
    if png:
        _draw_graph(tool_graph, png, services_only)
        click.echo(png, err=as_json)
    if as_json:
        click.echo(json.dumps(tool_graph.to_json(), indent=2))
    elif not png:
        click.echo(json.dumps(tool_graph.stats(), indent=2))


@click.group()
def library() -> None:
    """Library folders: spec files and Python service modules, described by index.json."""


@library.command("index")
@click.argument("folders", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--trust-code", is_flag=True, default=None,
              help="Import the folders' Python modules to index them (that runs their code); "
                   "without it a folder that holds one is refused. Also: "
                   "COMPOENV_TRUST_CODE=1.")
def index(folders: tuple[Path, ...], trust_code: bool | None) -> None:
    """Write (or bring up to date) the index.json of each library folder in FOLDERS."""
    from compoenv.library import open_library, write_index

    trust = True if trust_code else None  # else: COMPOENV_TRUST_CODE decides
    for folder in folders:
        start = time.perf_counter()
        path = write_index(folder, trust_code=trust)
        seconds = time.perf_counter() - start
        opened = open_library(folder, trust_code=trust)  # the index just written: read
        tools = sum(len(s.tools) for s in opened.services)
        click.echo(f"{path}: {len(opened.services)} services, {tools} tools ({seconds:.2f} s)")


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
