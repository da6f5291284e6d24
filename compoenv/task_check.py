"""Tasks checked against the library they are played on: services, their versions, and tools.

A task records the services it mounts and their versions (``fingerprint``). Played on a library
without one of those services, or whose solution calls a tool the library lacks, it could only
fail at reset or score 0 for the oracle: such a task is an error at load time, naming the file,
the line and the task. A service whose version changed since the task was composed is a
warning (``StaleTaskWarning``): the task may still play, but its solution was verified against
the older service.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from compoenv.registry import Registry
from compoenv.service import did_you_mean, split_qualified
from compoenv.task import Task, TaskFileError, iter_numbered_tasks

__all__ = ["StaleTaskWarning", "TaskCheck", "check_task", "load_checked"]


class StaleTaskWarning(UserWarning):
    """A task was composed with another version of a service than the library holds."""


@dataclass
class TaskCheck:
    """What is wrong with one task on one library: ``errors`` make it unplayable, ``stale``
    lists ``(service, task's version, library's version)`` for services that changed."""

    errors: list[str] = field(default_factory=list)
    stale: list[tuple[str, str, str]] = field(default_factory=list)


def check_task(task: Task, registry: Registry) -> TaskCheck:
    """Check that ``registry`` can play ``task``: every service it mounts exists, every
    solution call names one of its tools, and criteria grade mounted services."""
    check = TaskCheck()
    mounted = task.services + task.distractors
    for name in dict.fromkeys(mounted):
        if name not in registry:
            check.errors.append(did_you_mean(name, registry.names(), "service")
                                + " Install or register it, or recompose the task.")
            continue
        recorded = task.fingerprint.get(name)
        current = registry.get(name).version
        if recorded is not None and recorded != current:
            check.stale.append((name, recorded, current))
    for i, call in enumerate(task.solution):
        service, tool = split_qualified(call.name)
        if service not in task.services:
            check.errors.append(f"solution call {i} ({call.name!r}) is not a tool of the "
                                f"task's services {task.services}")
        elif service in registry and tool not in registry.get(service).tool_specs():
            specs = registry.get(service).tool_specs().values()
            check.errors.append(f"solution call {i}: "
                                + did_you_mean(call.name, [s.qualified_name for s in specs],
                                               "tool"))
    for criterion in task.rubric:
        service = getattr(criterion, "service", None)
        if service is not None and service not in mounted:
            check.errors.append(f"criterion {criterion.id!r} grades service {service!r}, which "
                                f"the task does not mount")
    return check


def load_checked(source: str | Path | Sequence[Task | dict[str, Any]],
                 registry: Registry) -> list[Task]:
    """Tasks from a JSONL path or a sequence, each checked against ``registry``.

    Raises:
        TaskFileError: a line is not a valid task, or a task cannot be played on this library;
            the message names the file and line (or the task's position) and the task id.

    Warns:
        StaleTaskWarning: once per changed service, with how many tasks use it and where the
            first one is.
    """
    if isinstance(source, (str, Path)):
        numbered: Iterable[tuple[str, Task]] = (
            (f"{source}:{line}", task) for line, task in iter_numbered_tasks(source))
    else:
        numbered = ((f"tasks[{i}]", _coerce(value, i)) for i, value in enumerate(source))
    tasks: list[Task] = []
    stale: dict[tuple[str, str, str], tuple[str, int]] = {}
    for where, task in numbered:
        check = check_task(task, registry)
        if check.errors:
            more = f" (and {len(check.errors) - 1} more problem(s))" if len(check.errors) > 1 else ""
            raise TaskFileError(f"{where}: task {task.id or '(no id)'}: {check.errors[0]}{more}")
        for key in check.stale:
            first, count = stale.get(key, (where, 0))
            stale[key] = (first, count + 1)
        tasks.append(task)
    for (name, recorded, current), (first, count) in stale.items():
        warnings.warn(StaleTaskWarning(
            f"{first}: {count} task(s) were composed with version {recorded!r} of service "
            f"{name!r}, the library has version {current!r}; their solutions were verified "
            f"against the old service, so recompose them (compoenv generate) to be sure they "
            f"still score 1.0"), stacklevel=2)
    return tasks


def _coerce(value: Any, index: int) -> Task:
    try:
        return Task.coerce(value)
    except (ValueError, TypeError) as exc:
        first = str(exc).splitlines()
        raise TaskFileError(f"tasks[{index}]: not a valid task: "
                            f"{' '.join(first[:3])}") from None
