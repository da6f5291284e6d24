"""``compoenv verify``: whether an implemented service is fit for the library, check by check.

    from compoenv.checks import verify
    report = verify("contacts")            # a class, a registered name, a .py or spec .json
    report.ok, report.summary(), report.to_json()
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Iterable

from compoenv.checks.report import CheckResult, Findings, VerifyReport
from compoenv.checks.target import LoadFailure, Target, TargetError, resolve
from compoenv.registry import Registry

__all__ = ["verify", "verify_all", "VerifyReport", "CheckResult", "TargetError", "CHECKS",
           "check_names"]


def _checks() -> dict[str, Callable[[Target], Findings]]:
    from compoenv.checks.composer import composer
    from compoenv.checks.consistency import consistency
    from compoenv.checks.conventions import conventions
    from compoenv.checks.errors import errors
    from compoenv.checks.fuzz import fuzz
    from compoenv.checks.reads_writes import reads, writes
    from compoenv.checks.schemas import schemas
    from compoenv.checks.seeding import seeding
    from compoenv.checks.worldmodel import worldmodel

    return {"conventions": conventions, "schemas": schemas, "seeding": seeding,
            "reads": reads, "writes": writes, "errors": errors, "fuzz": fuzz,
            "composer": composer, "worldmodel": worldmodel, "consistency": consistency}


CHECKS: tuple[str, ...] = ("conventions", "schemas", "seeding", "reads", "writes", "errors",
                           "fuzz", "composer", "worldmodel", "consistency")


def check_names(names: Iterable[str] | None) -> tuple[str, ...]:
    """The checks to run, in the standard order; TargetError names an unknown one."""
    if names is None:
        return CHECKS
    chosen = tuple(names)
    unknown = [n for n in chosen if n not in CHECKS]
    if unknown:
        from compoenv.service import did_you_mean

        raise TargetError(" ".join(did_you_mean(n, CHECKS, "check") for n in unknown)
                          + f" Checks: {', '.join(CHECKS)}.")
    return tuple(n for n in CHECKS if n in chosen)


def verify(target: Any, *, registry: Registry | None = None,
           checks: Iterable[str] | None = None, spec: str | Path | None = None
           ) -> VerifyReport:
    """Run the checks on one service and report each.

    Args:
        target: A Service subclass, a registered service name, a path to a Python file that
            defines exactly one Service subclass, or a path to a spec JSON file (the library's
            implementation of that spec is checked against it, or the spec-only service).
        registry: Where names are looked up and which services the composer joins it with
            (default: ``Registry.default()``).
        checks: Names of the checks to run (default: all of ``CHECKS``).
        spec: A spec JSON file the service's schemas must agree with (default: the library's
            spec of the same name, when there is one).

    Returns:
        The report; a file that fails to import or defines no single service gives a report
        whose one ``load`` check failed.

    Raises:
        TargetError: an unknown service or check name, or a file that cannot be read.
    """
    return verify_all([target], registry=registry, checks=checks, spec=spec)[0]


def verify_all(targets: Iterable[Any], *, registry: Registry | None = None,
               checks: Iterable[str] | None = None, spec: str | Path | None = None
               ) -> list[VerifyReport]:
    """``verify`` for several targets, faster together: every target is resolved first (an
    unknown one stops all, before any check runs) and seeded in one pair of fresh processes.

    Raises:
        TargetError: an unknown service or check name, or a file that cannot be read.
    """
    from compoenv.checks.seeding import prefetch

    names = check_names(checks)
    resolved: list[Target | VerifyReport] = []
    for target in targets:
        began = time.perf_counter()
        try:
            resolved.append(resolve(target, registry, spec))
        except LoadFailure as exc:
            resolved.append(VerifyReport(str(target), str(target), [
                CheckResult("load", False, [str(exc)], time.perf_counter() - began)]))
    if "seeding" in names:
        prefetch([t.ref for t in resolved if isinstance(t, Target)])
    return [_run(t, names) if isinstance(t, Target) else t for t in resolved]


def _run(target: Target, names: tuple[str, ...]) -> VerifyReport:
    report = VerifyReport(target.name, target.label)
    table = _checks()
    for name in names:
        began = time.perf_counter()
        try:
            findings = table[name](target)
        except Exception as exc:  # a check must not crash the report: the service may be odd
            findings = Findings()
            findings.fail(f"the check stopped: {type(exc).__name__}: {exc}")
        report.checks.append(findings.result(name, time.perf_counter() - began))
    return report
