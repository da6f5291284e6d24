"""The linter's records: a rule and its examples, one finding, and the report over a task set."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from compoenv.service import split_qualified
from compoenv.task import Call, Task

if TYPE_CHECKING:
    from compoenv.compose.lint.context import TaskContext

__all__ = ["Hit", "Finding", "Example", "Rule", "LintReport"]


@dataclass(frozen=True)
class Hit:
    """What a check found: a message quoting the text or value, and where it is.

    Attributes:
        message: What is wrong, quoting the offending text.
        span: ``(start, end)`` in the instruction, for wording rules.
        call: Index of the solution call, for value-flow rules.
        argument: The argument of that call at fault.
    """

    message: str
    span: tuple[int, int] | None = None
    call: int | None = None
    argument: str | None = None


@dataclass(frozen=True)
class Finding:
    """One rule broken by one task."""

    rule: str
    task: str
    message: str
    span: tuple[int, int] | None = None
    call: int | None = None
    argument: str | None = None

    @property
    def where(self) -> str:
        """``instruction[12:40]``, ``solution[2].salary`` or ``solution[2]``."""
        if self.span is not None:
            return f"instruction[{self.span[0]}:{self.span[1]}]"
        if self.call is not None:
            return f"solution[{self.call}]" + (f".{self.argument}" if self.argument else "")
        return "task"

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "task": self.task, "where": self.where,
                "message": self.message}


@dataclass(frozen=True)
class Example:
    """A task a rule is shown on: an instruction, solution calls and the services whose
    tools it names (by default those of its calls), in World ``seed``."""

    instruction: str = "Check the weather in Oslo."
    calls: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    services: tuple[str, ...] = ()
    seed: int = 0

    def task(self) -> Task:
        """The example as a Task."""
        names = list(self.services or dict.fromkeys(split_qualified(n)[0] for n, _ in self.calls))
        return Task(id="example", instruction=self.instruction, services=names or ["weather"],
                    seed=self.seed, date="2026-03-16",
                    solution=[Call(name=n, arguments=dict(a)) for n, a in self.calls],
                    rubric=[], domain="example", hops=len(self.calls))


@dataclass(frozen=True)
class Rule:
    """A lint rule: its id, what it flags, a bad and a good example, and its check."""

    id: str
    name: str
    kind: str  # "wording" (the instruction) or "value-flow" (the solution's arguments)
    description: str
    check: Callable[[TaskContext], Iterable[Hit]] = field(repr=False)
    bad: Example = field(repr=False)
    good: Example = field(repr=False)


@dataclass(frozen=True)
class LintReport:
    """The findings over a task set, with counts per rule.

    Attributes:
        tasks: Number of tasks linted.
        findings: Every finding, in task order.
        rules: The ids of the rules that were run, in table order.
        seconds: Time taken.
    """

    tasks: int
    findings: tuple[Finding, ...]
    rules: tuple[str, ...]
    seconds: float = 0.0

    @property
    def counts(self) -> dict[str, int]:
        """Findings per rule (every rule run, zero included)."""
        counts = Counter(f.rule for f in self.findings)
        return {rule: counts[rule] for rule in self.rules}

    @property
    def tasks_by_rule(self) -> dict[str, int]:
        """Tasks with at least one finding, per rule."""
        counts = Counter(rule for rule, _ in {(f.rule, f.task) for f in self.findings})
        return {rule: counts[rule] for rule in self.rules}

    @property
    def flagged(self) -> int:
        """Tasks with at least one finding."""
        return len({f.task for f in self.findings})

    @property
    def share(self) -> float:
        """The share of tasks with at least one finding (0.0 for no tasks)."""
        return round(self.flagged / self.tasks, 4) if self.tasks else 0.0

    def summary(self) -> dict[str, Any]:
        """Counts only: what ``compoenv generate`` reports under ``lint``."""
        by_task = self.tasks_by_rule
        return {"tasks": self.tasks, "flagged": self.flagged, "share": self.share,
                "findings": self.counts,
                "tasks_by_rule": {r: n for r, n in by_task.items() if n}}

    def to_dict(self, show: int | None = None) -> dict[str, Any]:
        """The summary and the first ``show`` findings (all without ``show``)."""
        shown = self.findings if show is None else self.findings[:max(show, 0)]
        return {**self.summary(), "seconds": round(self.seconds, 3),
                "shown": [f.to_dict() for f in shown]}
