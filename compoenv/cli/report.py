"""``compoenv report``: one static HTML page comparing evaluation runs.

    compoenv report runs/A runs/B -o report.html [--tasks tasks.jsonl]

A comparison table, plots (mean rubric score by capability, hops and domain; pass^k and
pass@k curves; tool calls per episode) and a trajectory viewer (each episode's messages, tool calls and
results, and its rubric criteria, described when ``--tasks`` gives the task file).
"""

from __future__ import annotations

import click

from compoenv.cli.common import OutputPath, require

__all__ = ["report"]


@click.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("-o", "--out", required=True, type=OutputPath(),
              help="The HTML file to write.")
@click.option("--tasks", "tasks_path", type=click.Path(exists=True, dir_okay=False),
              default=None, help="The tasks the runs played: adds criteria descriptions.")
def report(runs: tuple[str, ...], out: str, tasks_path: str | None) -> None:
    """Write one static HTML page comparing evaluation runs (compoenv eval -o folders)."""
    require("matplotlib", "viz", "compoenv report")
    from compoenv.evaluation.report import load_run, write_report
    from compoenv.task import load_tasks

    try:
        loaded = [load_run(folder) for folder in runs]
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    tasks = ({t.id: t.model_dump(mode="json") for t in load_tasks(tasks_path)}
             if tasks_path else None)
    path = write_report(loaded, out, tasks)
    click.echo(f"{len(loaded)} run(s) -> {path}")
