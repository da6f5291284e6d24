"""Task sets: deduplication, a train/test split by unseen service combinations, statistics."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping

from compoenv.task import Task

__all__ = ["dedup", "combination", "split_by_combination", "TaskSetStats", "summarize"]


def dedup(tasks: Iterable[Task]) -> list[Task]:
    """The tasks with equal content removed, keeping the first of each (order preserved).

    Content is compared with :meth:`Task.content_hash`, not ``id``, so a stale or missing id
    cannot hide a duplicate.
    """
    seen: set[str] = set()
    unique = []
    for task in tasks:
        key = task.content_hash()
        if key not in seen:
            seen.add(key)
            unique.append(task)
    return unique


def combination(task: Task) -> frozenset[str]:
    """The service combination of a task: the set of services its solution uses."""
    return frozenset(task.services)


def split_by_combination(tasks: Iterable[Task], test_fraction: float = 0.2,
                         seed: int = 0) -> tuple[list[Task], list[Task]]:
    """Split so that every service combination of the test set is unseen in the training set.

    Whole combinations go to the test set, visited in an order shuffled by ``seed``; each one is
    taken if it brings the test size closer to ``test_fraction`` of the tasks. Both sides get at
    least one combination. Tasks keep their input order within each side.

    Args:
        tasks: The task set.
        test_fraction: Target share of tasks in the test set, strictly between 0 and 1.
        seed: Shuffle seed; the same tasks and seed give the same split.

    Returns:
        ``(train, test)``; ``([], [])`` for no tasks.

    Raises:
        ValueError: ``test_fraction`` is outside (0, 1), or all tasks share one combination.
    """
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be strictly between 0 and 1, got {test_fraction}")
    tasks = list(tasks)
    if not tasks:
        return [], []
    sizes = Counter(combination(t) for t in tasks)
    if len(sizes) < 2:
        only = ", ".join(sorted(next(iter(sizes))))
        raise ValueError(f"cannot split by service combination: all {len(tasks)} tasks use the "
                         f"same services ({only}); generate more tasks or allow more services")
    # Sort first so the shuffle depends on the combinations only, not on the input order.
    order = sorted(sizes, key=lambda c: (len(c), sorted(c)))
    random.Random(f"split:{seed}").shuffle(order)
    target = test_fraction * len(tasks)
    test: list[frozenset[str]] = []
    count = 0
    for combo in order:
        if abs(count + sizes[combo] - target) < abs(count - target):
            test.append(combo)
            count += sizes[combo]
    if not test:
        test.append(min(order, key=lambda c: sizes[c]))
    elif len(test) == len(order):
        test.pop()
    held_out = set(test)
    train = [t for t in tasks if combination(t) not in held_out]
    return train, [t for t in tasks if combination(t) in held_out]


def _counts(values: Iterable[Any] | Counter[Any], by_key: bool = False) -> dict[str, int]:
    counter = values if isinstance(values, Counter) else Counter(values)
    items = sorted(counter.items()) if by_key else counter.most_common()
    return {str(k): v for k, v in items}


def _top_tools(by_tool: Mapping[tuple[str, str], int], top: int) -> dict[str, dict[str, int]]:
    """The ``top`` tools of each reason, most rejections first (ties by name), reasons likewise."""
    per_reason: dict[str, list[tuple[str, int]]] = {}
    for (reason, tool), count in by_tool.items():
        per_reason.setdefault(reason, []).append((tool, count))
    ranked = sorted(per_reason.items(), key=lambda kv: (-sum(c for _, c in kv[1]), kv[0]))
    return {reason: dict(sorted(tools, key=lambda tc: (-tc[1], tc[0]))[:top])
            for reason, tools in ranked}


@dataclass(frozen=True)
class TaskSetStats:
    """Statistics of a task set and of the seeds rejected while composing it.

    Attributes:
        tasks: Number of tasks.
        hops: Tasks per solution length.
        services: Tasks per number of services used.
        capabilities: Tasks per capability / motif tag.
        domains: Tasks per main domain.
        service_usage: Tasks using each service.
        combinations: Distinct service combinations.
        rejections: Rejected seeds per reason (including ``duplicate``).
        rejections_by_tool: Per reason, the tools at fault most often and their counts
            (reasons that name no tool are absent; a seed may name several tools).
        lint: The task linter's counts (``compoenv.compose.lint``): findings per rule,
            tasks per rule, and the share of tasks with any finding.
        calls: Tasks per number of solution calls, in bands (1-3, 4-7, 8-14, 15-24, 25+).
        long: Shares of tasks with at least 8 and at least 15 calls.
        rules: Tasks per number of house rules; ``rule_kinds``: rules per kind.
        decoys: Tasks per number of decoys to leave alone.
        reports: Tasks per number of values the final message reports.
        difficulty: Tasks per difficulty level (``compoenv.compose.difficulty``).
        scenarios: Tasks per scenario (free-walk tasks under ``-``).
        guidance: Tasks per guidance level (``goal``, ``hints``, ``steps``).
    """

    tasks: int
    hops: dict[str, int] = field(default_factory=dict)
    services: dict[str, int] = field(default_factory=dict)
    capabilities: dict[str, int] = field(default_factory=dict)
    domains: dict[str, int] = field(default_factory=dict)
    service_usage: dict[str, int] = field(default_factory=dict)
    combinations: int = 0
    rejections: dict[str, int] = field(default_factory=dict)
    rejections_by_tool: dict[str, dict[str, int]] = field(default_factory=dict)
    lint: dict[str, Any] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    long: dict[str, float] = field(default_factory=dict)
    rules: dict[str, int] = field(default_factory=dict)
    rule_kinds: dict[str, int] = field(default_factory=dict)
    decoys: dict[str, int] = field(default_factory=dict)
    reports: dict[str, int] = field(default_factory=dict)
    difficulty: dict[str, int] = field(default_factory=dict)
    scenarios: dict[str, int] = field(default_factory=dict)
    guidance: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_tasks(cls, tasks: Iterable[Task], rejections: Mapping[str, int] | None = None,
                   rejections_by_tool: Mapping[tuple[str, str], int] | None = None,
                   top: int = 5) -> TaskSetStats:
        """The statistics of ``tasks`` and of the rejections met composing them (``top`` tools
        per reason)."""
        tasks = list(tasks)
        return cls(
            tasks=len(tasks),
            hops=_counts((t.hops for t in tasks), by_key=True),
            services=_counts((len(t.services) for t in tasks), by_key=True),
            capabilities=_counts(c for t in tasks for c in t.capabilities),
            domains=_counts(t.domain for t in tasks),
            guidance=_counts(t.guidance for t in tasks),
            service_usage=_counts(s for t in tasks for s in t.services),
            combinations=len({combination(t) for t in tasks}),
            rejections=_counts(Counter(rejections or {})),
            rejections_by_tool=_top_tools(rejections_by_tool or {}, top),
            lint=_lint(tasks),
            calls=_counts((_band(len(t.solution)) for t in tasks), by_key=True),
            long={f">={k}": round(sum(len(t.solution) >= k for t in tasks) / max(1, len(tasks)),
                                  3) for k in (8, 15)},
            rules=_counts((len(t.rules) for t in tasks), by_key=True),
            rule_kinds=_counts(r.kind for t in tasks for r in t.rules),
            decoys=_counts((sum(r.kind == "never" for r in t.rules) for t in tasks), by_key=True),
            reports=_counts((len(t.answer) for t in tasks), by_key=True),
            difficulty=_counts(_level(t) for t in tasks),
            scenarios=_counts(t.scenario or "-" for t in tasks),
        )

    @property
    def attempted(self) -> int:
        """Seeds tried: accepted tasks plus rejections."""
        return self.tasks + sum(self.rejections.values())

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "attempted": self.attempted}


_BANDS = ((1, 3), (4, 7), (8, 14), (15, 24))


def _band(calls: int) -> str:
    return next((f"{lo:02d}-{hi:02d}" for lo, hi in _BANDS if calls <= hi), "25+")


def _level(task: Task) -> str:
    from compoenv.compose.difficulty import estimate, level

    return level(task.difficulty if task.difficulty is not None else estimate(task))


def _lint(tasks: list[Task]) -> dict[str, Any]:
    """The linter's counts for the set: ``share`` and ``flagged`` tasks, ``findings`` and
    ``tasks_by_rule`` per rule."""
    from compoenv.compose.lint import lint_tasks  # imported late: it loads the registry

    summary = lint_tasks(tasks).summary()
    summary.pop("tasks")
    return summary


def summarize(tasks: Iterable[Task], rejections: Mapping[str, int] | None = None,
              rejections_by_tool: Mapping[tuple[str, str], int] | None = None,
              ) -> dict[str, Any]:
    """:class:`TaskSetStats` of ``tasks`` as a JSON-able dict (keys are strings)."""
    return TaskSetStats.from_tasks(tasks, rejections, rejections_by_tool).to_dict()
