"""``compoenv verify``: whether implemented services are fit for the library, check by check.

    compoenv verify contacts                      # one report line per check, details on failure
    compoenv verify my_service.py --json          # a file defining one Service subclass, as JSON
    compoenv verify crm.json                      # a spec: its implementation, or the spec service
    compoenv verify bank email --check fuzz       # several services, only some checks
    compoenv verify --all --json                  # every implemented service, for CI
    compoenv verify tasks.jsonl                   # a task file: each task against the library
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from compoenv.cli.common import library_option

__all__ = ["verify_command"]


@click.command("verify")
@click.argument("targets", nargs=-1, metavar="SERVICE_OR_FILE...")
@click.option("--all", "every", is_flag=True,
              help="Verify every implemented (not spec-only) service of the libraries.")
@click.option("--check", "checks", multiple=True, metavar="NAME",
              help="Run only this check (repeatable): conventions, schemas, seeding, reads, "
                   "writes, errors, fuzz, composer, worldmodel, consistency.")
@click.option("--spec", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="A spec JSON file the service's tools must agree with "
                                 "(default: the library's spec of the same name, if any).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("-v", "--verbose", is_flag=True, help="Also print the details of passed checks.")
@library_option
def verify_command(targets: tuple[str, ...], every: bool, checks: tuple[str, ...],
                   spec: Path | None, as_json: bool, verbose: bool) -> None:
    """Check that each SERVICE_OR_FILE (a registered service, a .py file defining one Service
    subclass, or a spec .json) is fit for the library, or that the tasks of a task file
    (.jsonl, from compoenv generate) still play on it: their tools exist, the oracle scores
    1.0, an empty run fails. Exit status: 0 when every check passes, 1 when one fails, 2 for
    a usage error."""
    from compoenv.checks import TargetError, check_names, verify_all

    files = [t for t in targets if t.endswith(".jsonl")]
    if files:
        if len(files) != len(targets) or every or checks or spec:
            raise click.UsageError("give task files (.jsonl) alone: --all, --check, --spec "
                                   "and service names verify services")
        _verify_task_files(files, as_json, verbose)
    try:
        names = check_names(checks or None)
    except TargetError as exc:
        raise click.BadParameter(str(exc), param_hint="'--check'") from None
    if every:
        targets += tuple(implemented())
    if not targets:
        raise click.UsageError("name a service or file to verify, or give --all")
    started = time.perf_counter()
    try:
        reports = verify_all(targets, checks=names, spec=spec)
    except TargetError as exc:
        raise click.UsageError(str(exc)) from None
    ok = all(r.ok for r in reports)
    if as_json:
        docs = [r.to_json() for r in reports]
        out: Any = docs[0] if len(docs) == 1 else {
            "ok": ok, "seconds": round(time.perf_counter() - started, 3), "reports": docs}
        click.echo(json.dumps(out, indent=2))
    else:
        for report in reports:
            _print(report.to_json(), verbose)
        if len(reports) > 1:
            passed = sum(r.ok for r in reports)
            click.echo(f"{passed} of {len(reports)} services pass "
                       f"({time.perf_counter() - started:.1f} s)")
    sys.exit(0 if ok else 1)


def _verify_task_files(paths: list[str], as_json: bool, verbose: bool) -> None:
    """Each task of each file checked against the library, as ``compoenv generate`` checks
    the tasks it publishes; exits 0 when every task passes, else 1."""
    from compoenv.compose.records import Rejected
    from compoenv.compose.verify import verify_task
    from compoenv.registry import Registry
    from compoenv.task import TaskFileError
    from compoenv.task_check import load_checked

    registry = Registry.default()
    reports = []
    for path in paths:
        if not Path(path).is_file():
            raise click.BadParameter(f"{path}: no such file", param_hint="'SERVICE_OR_FILE'")
        started = time.perf_counter()
        try:
            tasks = load_checked(path, registry)
        except TaskFileError as exc:
            reports.append({"file": path, "ok": False, "tasks": 0, "failed": [
                {"task": None, "reason": "unplayable", "detail": str(exc)}]})
            continue
        failed = []
        for task in tasks:
            try:
                verify_task(task, registry)
            except Rejected as exc:
                failed.append({"task": task.id, "reason": exc.reason, "detail": exc.detail})
        reports.append({"file": path, "ok": not failed, "tasks": len(tasks), "failed": failed,
                        "seconds": round(time.perf_counter() - started, 3)})
    ok = all(r["ok"] for r in reports)
    if as_json:
        click.echo(json.dumps(reports[0] if len(reports) == 1 else
                              {"ok": ok, "reports": reports}, indent=2))
    else:
        for report in reports:
            verdict = click.style("PASS", fg="green") if report["ok"] \
                else click.style("FAIL", fg="red")
            if report["tasks"]:
                click.echo(f"{verdict} {report['file']}: "
                           f"{report['tasks'] - len(report['failed'])} of {report['tasks']} "
                           f"tasks pass")
            else:
                click.echo(f"{verdict} {report['file']}: its tasks cannot be played on this "
                           f"library")
            shown = report["failed"] if verbose else report["failed"][:12]
            for failure in shown:
                who = f"{failure['task']}: " if failure["task"] else ""
                click.echo(f"  - {who}{failure['reason']}: {failure['detail']}")
            if len(shown) < len(report["failed"]):
                click.echo(f"  ... {len(report['failed']) - len(shown)} more (-v shows all)")
    sys.exit(0 if ok else 1)


def implemented() -> list[str]:
    """The names of the registry's implemented services (spec-only ones are the world model's)."""
    from compoenv.registry import Registry
    from compoenv.worldmodel.base import SimulatedService

    return [c.name for c in Registry.default() if not issubclass(c, SimulatedService)]


def _print(report: dict[str, Any], verbose: bool) -> None:
    verdict = click.style("PASS", fg="green") if report["ok"] else click.style("FAIL", fg="red")
    click.echo(f"{verdict} {report['service']} ({report['seconds']:.1f} s)")
    for check in report["checks"]:
        mark = click.style("ok  ", fg="green") if check["ok"] else click.style("FAIL", fg="red")
        click.echo(f"  {mark} {check['name']:<12} {check['seconds']:6.2f} s")
        shown = check["details"] if verbose or not check["ok"] else []
        for detail in shown[:12]:
            click.echo(f"         - {detail}")
        if len(shown) > 12:
            click.echo(f"         ... {len(shown) - 12} more (--json shows all)")
