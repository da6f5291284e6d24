"""``compoenv doctor``: why the composer uses a service's tools, or why it never does.

    compoenv doctor contacts                 # a report: starts, joins, list motifs, composition
    compoenv doctor crm --tasks 50 --json    # the same, as JSON
    compoenv doctor vet_clinic --library ./mine --sample 500   # how often default tasks use it
"""

from __future__ import annotations

import json
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from compoenv.cli.common import composer_config, composer_options, library_option

__all__ = ["doctor"]


@click.command()
@click.argument("service")
@click.option("--tasks", type=click.IntRange(min=1), default=20, show_default=True,
              help="Tasks to compose that must touch the service.")
@click.option("--sample", type=click.IntRange(min=0), default=200, show_default=True,
              help="Default tasks (as `compoenv generate` composes them with no flags) to "
                   "compose and count those that call the service; 0: skip.")
@click.option("--seed", default=0, show_default=True, help="Generation seed.")
@click.option("--json", "as_json", is_flag=True, help="Print the diagnosis as JSON.")
@library_option
def doctor(service: str, tasks: int, sample: int, seed: int, as_json: bool) -> None:
    """Say why the composer uses SERVICE's tools, or why it never does, and how to fix it,
    and how often default tasks use it."""
    from compoenv.compose.doctor import diagnose

    report = diagnose(service, tasks=tasks, seed=seed, sample=sample,
                      config=_default_config() if sample else None).to_json()
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    console = Console()
    for part in (_starts, _joins, _motifs, _composition):
        console.print(part(report))
    console.print(_verdict(report))
    if report["default"] is not None:
        console.print(_default(report["default"]))


def _default_config() -> Any:
    """The config of ``compoenv generate`` given no composer flags."""
    flags = click.command()(composer_options(lambda **_: None)).make_context("generate", []).params
    flags.pop("seed")
    return composer_config(**flags)


def _default(usage: dict[str, Any]) -> str:
    color = "green" if usage["tasks"] else "red"
    return f"[bold {color}]default tasks:[/bold {color}] {escape(usage['note'])}"


def _short(tool: str) -> str:
    return tool.partition("__")[2] or tool


def _problems(problems: list[dict[str, str]]) -> str:
    return "\n".join(f"{escape(p['what'])}\n  [dim]fix:[/dim] {escape(p['fix'])}"
                     for p in problems)


def _starts(report: dict[str, Any]) -> Table:
    table = Table(title=f"{report['service']}: starts", title_justify="left", show_lines=True)
    table.add_column("tool", style="bold")
    table.add_column("starts a walk")
    for tool in report["tools"]:
        if tool["can_start"]:
            kind = "lists (aggregation, fan-out)" if tool["returns_list"] else "chains"
            text = f"[green]yes[/green]: {kind}"
        else:
            fed = len(tool["joins_in"]) + tool["inner_in"]
            text = "[red]no[/red]: " + _problems(tool["start_problems"])
            if fed:
                text += f"\n[green]reached from {fed} other tools instead[/green]"
        table.add_row(_short(tool["tool"]), text)
    return table


def _joins(report: dict[str, Any]) -> Table:
    table = Table(title="joins with other services (interface and tool)", title_justify="left",
                  show_lines=True)
    for column in ("tool", "in", "out", "own service (in/out)", "examples or fix"):
        table.add_column(column, style="bold" if column == "tool" else None)
    for tool in report["tools"]:
        ins, outs = tool["joins_in"], tool["joins_out"]
        if ins or outs:
            text = "\n".join(_examples(ins, "<-") + _examples(outs, "->"))
        else:
            text = "[red]no joins[/red]\n" + _problems(tool["join_problems"])
        table.add_row(_short(tool["tool"]), str(len(ins)), str(len(outs)),
                      f"{tool['inner_in']}/{tool['inner_out']}", text)
    return table


def _examples(joins: list[dict[str, str]], arrow: str, most: int = 2) -> list[str]:
    """A join of each of the first ``most`` services, and how many services there are."""
    firsts: dict[str, dict[str, str]] = {}
    for join in joins:
        firsts.setdefault(join["tool"].partition("__")[0], join)
    lines = [f"{escape(j['interface'])} {arrow} {escape(j['tool'])}"
             for j in list(firsts.values())[:most]]
    if len(firsts) > most:
        lines[-1] += f" (+{len(firsts) - most} more services)"
    return lines


def _motifs(report: dict[str, Any]) -> Table | str:
    lists = [t for t in report["tools"] if t["returns_list"]]
    if not lists:
        return "[bold]list motifs[/bold]: no tool returns a list"
    table = Table(title="list motifs", title_justify="left", show_lines=True)
    table.add_column("tool", style="bold")
    table.add_column("usable by")
    for tool in lists:
        text = (" · ".join(escape(m) for m in tool["motifs"]) if tool["motifs"]
                else "[red]no motif[/red]: " + _problems(tool["motif_problems"]))
        table.add_row(_short(tool["tool"]), text)
    return table


def _composition(report: dict[str, Any]) -> Table:
    c = report["composition"]
    table = Table(title=f"composition: {c['composed']} of {c['requested']} tasks in "
                        f"{c['attempted']} attempts, each required to touch "
                        f"{report['service']}", title_justify="left", show_lines=True,
                  expand=True)
    table.add_column("what", style="bold")
    table.add_column("")
    for i, text in enumerate(c["examples"], start=1):
        table.add_row(f"example {i}", escape(text))
    table.add_row("reasons", " · ".join(f"{k}: {v}" for k, v in c["reasons"].items()) or "-")
    for r in c["rejections"][:8]:
        kind = "rejected seeds" if r["seed"] else "dropped calls"
        table.add_row(f"{r['reason']} ({kind})",
                      f"{escape(_short(r['tool']))} x{r['count']}: {escape(r['explanation'])}"
                      f"\n  [dim]fix:[/dim] {escape(r['fix'])}")
    return table


def _verdict(report: dict[str, Any]) -> str:
    color = "green" if report["used"] else "red"
    return f"[bold {color}]verdict:[/bold {color}] {escape(report['verdict'])}"
