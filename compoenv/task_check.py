"""Tasks checked against the library they are played on: services, versions, tools, answers.

A task records the services it mounts and their versions (``fingerprint``). Played on a library
without one of those services, or whose solution calls a tool the library lacks, it could only
fail at reset or score 0 for the oracle: such a task is an error at load time, naming the file,
the line and the task. So is a recorded world-model answer that belongs to no tool of the
task, does not fit the tool's return schema, or changes state for a read-only tool (a task
file is data from anywhere; it must not inject records). A service whose version changed since the task was composed is a
warning (``StaleTaskWarning``): the task may still play, but its solution was verified against
the older service.
"""

from __future__ import annotations

import os
import threading
import warnings
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from compoenv.registry import Registry
from compoenv.schema import brief, is_valid
from compoenv.service import ToolSpec, did_you_mean, split_qualified
from compoenv.task import Task, TaskFileError, iter_numbered_tasks

__all__ = ["StaleTaskWarning", "TaskCheck", "check_task", "load_checked", "shared_tasks",
           "SharedTasks"]


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
        current = registry.info(name).version  # without building the service
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
        if criterion.kind == "call" and _spec(criterion.name, mounted, registry) is None:
            check.errors.append(f"criterion {criterion.id!r} expects a call of "
                                f"{criterion.name!r}, which is no tool of the task's services")
        if criterion.kind == "order":
            for name in (criterion.first.name, criterion.then):
                if _spec(name, mounted, registry) is None:
                    check.errors.append(f"criterion {criterion.id!r} orders a call of "
                                        f"{name!r}, which is no tool of the task's services")
    check.errors.extend(_rule_errors(task))
    check.errors.extend(_recorded_errors(task, mounted, registry))
    return check


def _rule_errors(task: Task) -> list[str]:
    """House rules must name criteria the rubric has and calls the solution has."""
    ids = {c.id for c in task.rubric}
    errors = []
    for rule in task.rules:
        missing = [c for c in rule.criteria if c not in ids]
        if missing:
            errors.append(f"house rule {rule.id!r} names criteria {missing} the rubric lacks")
        change = rule.without
        if change is None:
            continue
        calls = change.drop + [r.call for r in change.replace]
        bad = [i for i in calls if not 0 <= i < len(task.solution)]
        if bad:
            errors.append(f"house rule {rule.id!r} changes solution calls {bad}, but the "
                          f"solution has {len(task.solution)}")
    return errors


def _spec(name: str, mounted: list[str], registry: Registry) -> ToolSpec | None:
    service, tool = split_qualified(name)
    if service not in mounted or service not in registry:
        return None
    return registry.get(service).tool_specs().get(tool)


def _recorded_errors(task: Task, mounted: list[str], registry: Registry) -> list[str]:
    """Recorded world-model answers must belong to the task's tools, fit their return schemas,
    and change state only for tools that write."""
    answers = task.recorded.get("answers", {})
    if not isinstance(answers, dict):
        return [f"recorded.answers must be an object of request key -> answer, "
                f"got {type(answers).__name__}"]
    errors = []
    for key, saved in answers.items():
        where = f"recorded.answers[{brief(key, 60)}]"
        spec = _spec(key.split("|", 1)[0], mounted, registry) if isinstance(key, str) else None
        if spec is None:
            errors.append(f"{where}: the key does not start with a tool of the task's services "
                          f"(<service>__<tool>|<arguments>|<state>)")
            continue
        if not isinstance(saved, dict) or "data" not in saved:
            errors.append(f"{where}: an answer is an object with 'data' (and 'patch', "
                          f"'source')")
            continue
        if not is_valid(saved["data"], spec.returns):
            errors.append(f"{where}: 'data' does not match the return schema of "
                          f"{spec.qualified_name}")
        patch = saved.get("patch") or {}
        if not isinstance(patch, dict) or not all(
                isinstance(c, dict) and all(r is None or isinstance(r, dict) for r in c.values())
                for c in patch.values()):
            errors.append(f"{where}: 'patch' maps collections to {{key: record or null}}")
        elif patch and spec.read_only:
            errors.append(f"{where}: {spec.qualified_name} is read-only, but its recorded "
                          f"answer carries a state change")
    return errors


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
    tasks, stale = _checked(source, registry)
    _warn(stale)
    return tasks


@dataclass(frozen=True)
class SharedTasks:
    """A task file as every env of a process shares it: its tasks (a tuple, read-only by
    convention: a Task is data), their ids, the longest solution, and the stale-service
    warnings its check gave (repeated to each env that loads it, as a fresh check would)."""

    tasks: tuple[Task, ...]
    by_id: dict[str, Task]
    longest: int
    stale: tuple[str, ...]


_SHARED_LOCK = threading.Lock()
# registry -> (path, inode, mtime, size) -> the checked file; a registry's files go with it
_SHARED: weakref.WeakKeyDictionary[Registry, OrderedDict[tuple[str, int, int, int], SharedTasks]] = \
    weakref.WeakKeyDictionary()
_SHARED_FILES = 8  # files kept per registry


def shared_tasks(path: str | Path, registry: Registry) -> SharedTasks:
    """The checked tasks of a JSONL file, parsed and checked once per process (per registry
    and version of the file: a file rewritten since is read again) and shared by every env
    that plays it. Raises and warns as ``load_checked`` does."""
    try:
        stat = os.stat(path)
        key = (os.path.realpath(path), stat.st_ino, stat.st_mtime_ns, stat.st_size)
    except OSError:
        key = None  # missing or unreadable: load_checked says why
    with _SHARED_LOCK:
        files = _SHARED.get(registry)
        found = files.get(key) if files is not None and key is not None else None
        if found is not None:
            files.move_to_end(key)
    if found is None:
        tasks, stale = _checked(path, registry)
        found = SharedTasks(tuple(tasks), {t.id: t for t in tasks},
                            max((len(t.solution) for t in tasks), default=0), tuple(stale))
        if key is not None:
            with _SHARED_LOCK:
                files = _SHARED.setdefault(registry, OrderedDict())
                found = files.setdefault(key, found)
                while len(files) > _SHARED_FILES:
                    files.popitem(last=False)
    _warn(found.stale)
    return found


def _checked(source: str | Path | Sequence[Task | dict[str, Any]],
             registry: Registry) -> tuple[list[Task], list[str]]:
    """The checked tasks of ``source`` and the text of its stale-service warnings."""
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
    return tasks, [
        f"{first}: {count} task(s) were composed with version {recorded!r} of service "
        f"{name!r}, the library has version {current!r}; their solutions were verified "
        f"against the old service, so recompose them (compoenv generate) to be sure they "
        f"still score 1.0" for (name, recorded, current), (first, count) in stale.items()]


def _warn(stale: Iterable[str]) -> None:
    for text in stale:
        warnings.warn(StaleTaskWarning(text), stacklevel=3)


def _coerce(value: Any, index: int) -> Task:
    try:
        return Task.coerce(value)
    except (ValueError, TypeError) as exc:
        first = str(exc).splitlines()
        raise TaskFileError(f"tasks[{index}]: not a valid task: "
                            f"{' '.join(first[:3])}") from None
