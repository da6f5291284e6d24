"""The composer check: the doctor's verdict, whether composed tasks use the service's tools."""

from __future__ import annotations

from compoenv.checks.report import Findings
from compoenv.checks.target import Target

__all__ = ["composer", "TASKS"]

TASKS = 2  # tasks that must touch the service: enough to show it composes, and fast


def composer(target: Target, tasks: int = TASKS) -> Findings:
    """The composer, required to touch the service, composes verified tasks with it; when it
    cannot, the doctor's verdict and its first problems say why (``compoenv doctor`` tells
    more)."""
    from compoenv.compose.doctor import diagnose

    found = Findings()
    diagnosis = diagnose(target.name, registry=target.registry, tasks=tasks)
    if not diagnosis.used:
        found.fail(diagnosis.verdict)
        for tool in diagnosis.tools:
            for problem in tool.start_problems[:1] + tool.join_problems[:1]:
                found.fail(f"{tool.tool}: {problem.what} (fix: {problem.fix})")
    else:
        found.note(diagnosis.verdict)
        idle = [t.tool for t in diagnosis.tools if not (t.can_start or t.joins_in)]
        if idle:
            found.note(f"tools no walk reaches: {', '.join(idle)} (compoenv doctor "
                       f"{target.name})")
    return found
