"""``compoenv lint``: flag tasks no person would ask for, rule by rule.

    compoenv lint tasks.jsonl --show 20
    compoenv lint tasks.jsonl --rule L101 --rule L204 --json

Exit status: 0 when no task has a finding, 1 when some do, 2 for a usage error or a task
file that cannot be read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from compoenv.cli.common import library_option

__all__ = ["lint"]


class _InputError(click.ClickException):
    """A task file that cannot be linted: one ``Error:`` line, exit status 2 (1 means
    findings)."""

    exit_code = 2


@click.command()
@click.argument("tasks", metavar="TASKS.jsonl", type=click.Path(path_type=Path))
@click.option("--rule", "rules", multiple=True, metavar="ID",
              help="Run only this rule (repeat, or separate ids by commas); default: all.")
@click.option("--show", type=click.IntRange(min=0), default=10, show_default=True,
              help="Findings to print, first ones first.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON on stdout.")
@library_option
def lint(tasks: Path, rules: tuple[str, ...], show: int, as_json: bool) -> None:
    """Lint the tasks of TASKS.jsonl: wording no person would write, argument flows no
    request would make. Exits 1 when any task has a finding."""
    from compoenv.compose.lint import RULES_BY_ID, lint_tasks, select_rules
    from compoenv.task import TaskFileError, iter_tasks

    ids = [i for group in rules for i in group.split(",") if i.strip()] or None
    try:
        chosen = select_rules(ids)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--rule'") from None
    try:
        report = lint_tasks(iter_tasks(tasks), rules=[r.id for r in chosen])
    except TaskFileError as exc:
        raise _InputError(str(exc)) from None
    data = {"file": str(tasks), **report.to_dict(show)}
    if as_json:
        click.echo(json.dumps(data, indent=2))
    else:
        console = Console()
        console.print(_rule_table(data, RULES_BY_ID))
        if data["shown"]:
            console.print(_finding_table(data, len(report.findings)))
    click.get_current_context().exit(1 if report.findings else 0)


def _rule_table(data: dict[str, Any], rules: dict[str, Any]) -> Table:
    table = Table(title=f"{data['file']}: {data['flagged']} of {data['tasks']} tasks flagged "
                        f"({100 * data['share']:.1f}%, {data['seconds']} s)")
    for name in ("rule", "what", "findings", "tasks"):
        table.add_column(name, justify="right" if name in ("findings", "tasks") else "left")
    by_task = data["tasks_by_rule"]
    for rule_id, count in data["findings"].items():
        table.add_row(rule_id, rules[rule_id].name, str(count), str(by_task.get(rule_id, 0)))
    return table


def _finding_table(data: dict[str, Any], total: int) -> Table:
    table = Table(title=f"first {len(data['shown'])} of {total} findings")
    for name in ("task", "rule", "where", "finding"):
        table.add_column(name, overflow="fold")
    for f in data["shown"]:
        table.add_row(f["task"], f["rule"], f["where"], f["message"])
    return table
