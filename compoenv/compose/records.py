"""What a walk is made of: its steps, where each argument came from, its sentences, and why a
walk or a task is rejected."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from compoenv.schema import Slot
from compoenv.service import ToolSpec

__all__ = ["Rejected", "Binding", "Step", "Segment", "Walk", "Value", "capabilities", "Effects",
           "effects", "record_keys"]


class Rejected(Exception):
    """A walk or a task that cannot be published.

    Args:
        reason: A short counter key (``dead_end``, ``leak``, ...).
        detail: What happened, for people.
        tools: Qualified names of the tools at fault, when some are: the step a walk could not
            go on from, the list a motif could not use, every start tool a walk tried.
    """

    def __init__(self, reason: str, detail: str = "", tools: tuple[str, ...] = ()) -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail
        self.tools = tools

    def __reduce__(self) -> tuple[type, tuple[str, str, tuple[str, ...]]]:  # survives pickling
        return Rejected, (self.reason, self.detail, self.tools)


@dataclass(frozen=True, slots=True)
class Binding:
    """Where one argument came from: stated by the user, or an earlier step's output."""

    param: str
    value: Any
    source: int | None = None          # index of the producing step; None = stated
    path: tuple[str, ...] = ()
    interface: str | None = None


@dataclass(slots=True)
class Step:
    spec: ToolSpec
    bindings: list[Binding]
    result: Any = None

    @property
    def arguments(self) -> dict[str, Any]:
        return {b.param: b.value for b in self.bindings}


@dataclass(slots=True)
class Segment:
    """One sentence of the request: a step rendered from its phrase, or a motif's own text.

    Attributes:
        steps: Indices of the steps (tool calls) the sentence asks for.
        text: The sentence's text; None renders the single step's phrase.
        lead: Whether "Then" may lead the sentence (motif texts open with their own words).
    """

    steps: list[int]
    text: str | None = None
    lead: bool = True


@dataclass(slots=True)
class Walk:
    """A composed solution and everything needed to phrase and grade it."""

    steps: list[Step] = field(default_factory=list)
    report: Binding | None = None      # the value the final message must report, if any
    report_text: str | None = None     # how to ask for it, when not "Tell me <reference>."
    segments: list[Segment] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)        # house rules, stated up front
    motifs: list[str] = field(default_factory=list)
    hidden: list[Any] = field(default_factory=list)       # values the request must not state
    literals: list[float] = field(default_factory=list)   # numbers a motif states (thresholds)
    guarded: list[str] = field(default_factory=list)      # services the solution must not touch
    # long (scenario) tasks
    reports: list[Binding] = field(default_factory=list)  # several values to report
    asks: list[str] = field(default_factory=list)         # how each is asked for
    order: list[int] | None = None     # the solution's call order, when not the steps' order
    shown: dict[tuple[int, str], str] = field(default_factory=dict)  # how an argument reads
    rule_steps: set[int] = field(default_factory=set)     # calls a house rule adds, unsaid
    ruled: list[Any] = field(default_factory=list)        # values only a rule's criteria check
    effects: dict[int, list[tuple[str, str, str]]] = field(default_factory=dict)
    house: list[Any] = field(default_factory=list)        # house rules with their criteria
    # list step -> the item its fan-outs skip, and how the request names it
    left_out: dict[int, tuple[int, str]] = field(default_factory=dict)
    # list step -> the criterion its pick took the item by, as the request says it, and the item
    choices: dict[int, tuple[str, int]] = field(default_factory=dict)
    # write step -> what its message or document is about, in the user's words (Stage.about)
    about: dict[int, str] = field(default_factory=dict)
    # write steps of optional stages: work the scenario's goal does not speak of
    extras: set[int] = field(default_factory=set)

    @property
    def answers(self) -> list[Binding]:
        """The values the final message reports."""
        return self.reports or ([self.report] if self.report is not None else [])

    @property
    def services(self) -> list[str]:
        return list(dict.fromkeys(s.spec.service for s in self.steps))


Effects = list[tuple[str, str, str]]  # (collection, key, "created" | "modified" | "deleted")


def record_keys(state: Any) -> dict[str, dict[str, Any]]:
    """A service's records by collection, as ``effects`` compares them after a write."""
    return {c: dict(records) for c, records in state.collections().items()}


def effects(before: dict[str, dict[str, Any]], state: Any) -> Effects:
    """What one write did to a service's records."""
    out: Effects = []
    after = state.collections()
    for collection in sorted(set(before) | set(after)):
        old, new = before.get(collection, {}), after.get(collection, {})
        for key in new:
            if key not in old:
                out.append((collection, key, "created"))
            elif new[key] is not old[key] and new[key] != old[key]:
                out.append((collection, key, "modified"))
        out.extend((collection, key, "deleted") for key in old if key not in new)
    return out


@dataclass(frozen=True, slots=True)
class Value:
    """A single value an executed step produced, at ``slot`` of its result."""

    step: int
    slot: Slot
    value: Any


def capabilities(walk: Walk) -> list[str]:
    """Capability tags: the motifs used, plus how information flows and how the task ends."""
    tags = []
    if any(b.source is not None for step in walk.steps for b in step.bindings):
        tags.append("sequential-dependency")
    tags += [m for m in walk.motifs if m not in tags]
    if len(walk.services) > 1:
        tags.append("cross-service")
    tags.append("report" if walk.answers else "write")
    return tags
