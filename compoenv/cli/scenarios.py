"""``compoenv scenarios``: the jobs long tasks are about, and whether each composes.

    compoenv scenarios                       # every scenario (a table)
    compoenv scenarios --check --seeds 40    # compose 40 seeds each: yield and call counts
    compoenv scenarios --library DIR --json  # scenarios of other files, as JSON
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from compoenv.cli.common import library_option

__all__ = ["scenarios"]


@click.command()
@click.argument("names", nargs=-1)
@click.option("--scenario-file", "paths", multiple=True, type=click.Path(path_type=Path),
              help="Scenario files or folders to read instead of the built-in ones.")
@click.option("--check", is_flag=True,
              help="Compose --seeds tasks of each scenario and report yield and call counts.")
@click.option("--seeds", type=click.IntRange(min=1), default=30, show_default=True,
              help="Seeds per scenario with --check.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@library_option
def scenarios(names: tuple[str, ...], paths: tuple[Path, ...], check: bool, seeds: int,
              as_json: bool) -> None:
    """List the scenarios (or the NAMES given): declared ones and jobs derived for services no
    declared scenario acts on; domain, services, stages, rule kinds."""
    from compoenv.registry import Registry
    from compoenv.scenarios import ScenarioError, ScenarioRegistry

    from compoenv.compose.derive import derive_jobs, service_jobs

    try:
        registry = Registry.default()
        declared = ScenarioRegistry.from_paths(paths) if paths else ScenarioRegistry.default()
        # and the jobs derived for the services no declared scenario acts on (a library's)
        own = [] if paths else service_jobs(registry)
        derived = [] if paths else derive_jobs(registry, [*declared, *own])
        pool = ScenarioRegistry([*declared, *own, *derived])
        chosen = [pool.get(n) for n in names] if names else list(pool)
        for scenario in chosen:
            scenario.check(registry)
    except ScenarioError as exc:
        raise click.ClickException(str(exc)) from None
    made, theirs = {s.name for s in derived}, {s.name for s in own}
    rows: list[dict[str, Any]] = [{
        "name": s.name,
        "kind": "derived" if s.name in made else "service" if s.name in theirs else "declared",
        "domain": s.domain, "services": s.services,
        "stages": [st.tools for st in s.stages], "rules": s.rules} for s in chosen]
    if check:
        for row, scenario in zip(rows, chosen):
            row.update(_check(scenario, pool, seeds))
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    domains = len({r["domain"] for r in rows})
    kinds = Counter(r["kind"] for r in rows)
    table = Table(title=f"{len(rows)} scenarios over {domains} domains ({kinds['declared']} "
                        f"declared, {kinds['service']} declared by services, "
                        f"{kinds['derived']} derived for services no other acts on)",
                  show_lines=True)
    for col in ("scenario", "kind", "domain", "services", "stages") + ("yield", "calls") * check:
        table.add_column(col)
    for r in rows:
        cells = [r["name"], r["kind"], r["domain"], ", ".join(r["services"]),
                 str(len(r["stages"]))]
        if check:
            cells += [f"{r['verified']}/{r['seeds']}",
                      f"{r['calls_min']}-{r['calls_max']} (mean {r['calls_mean']})"
                      if r["verified"] else "-"]
        table.add_row(*cells)
    Console().print(table)


def _check(scenario: Any, pool: Any, seeds: int) -> dict[str, Any]:
    """Compose ``seeds`` seeds of one scenario: how many verify, their calls, why others not."""
    from compoenv.compose import Composer, ComposerConfig
    from compoenv.compose.walk import Rejected

    composer = Composer(config=ComposerConfig(scenarios=(scenario.name,)), scenarios=pool)
    calls, reasons = [], Counter()
    for seed in range(seeds):
        try:
            calls.append(len(composer.compose(seed).solution))
        except Rejected as exc:
            reasons[exc.reason] += 1
    return {"seeds": seeds, "verified": len(calls),
            "calls_min": min(calls, default=0), "calls_max": max(calls, default=0),
            "calls_mean": round(sum(calls) / len(calls), 1) if calls else 0,
            "rejections": dict(reasons.most_common())}
