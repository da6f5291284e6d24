"""Random walk over the tool graph, executing each step on a live World to bind real values."""

from __future__ import annotations

import random
from itertools import repeat
from dataclasses import dataclass, field
from typing import Any, Callable

from compoenv.compose.values import (
    MISSING, fresh_arguments, fresh_value, record_arguments, record_value,
)
from compoenv.graph import Edge, ToolGraph
from compoenv.interfaces import STATABLE
from compoenv.schema import Slot, extract, is_valid
from compoenv.service import ToolSpec
from compoenv.session import Session

__all__ = ["Binding", "Step", "Walk", "Walker", "Rejected", "random_walk"]


class Rejected(Exception):
    """A walk or a task that cannot be published; ``reason`` is a short counter key."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail

    def __reduce__(self) -> tuple[type, tuple[str, str]]:  # survives pickling between workers
        return Rejected, (self.reason, self.detail)


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

    @property
    def services(self) -> list[str]:
        return list(dict.fromkeys(s.spec.service for s in self.steps))


@dataclass(frozen=True, slots=True)
class _Value:
    step: int
    slot: Slot
    value: Any


_DULL = frozenset({"CurrencyCode", "CountryCode"})  # too guessable to be worth reporting


def _single_values(step_index: int, spec: ToolSpec, data: Any) -> list[_Value]:
    """Output values that resolve to exactly one value (a list of one item counts)."""
    out = []
    for slot in spec.outputs:
        if slot.kind in ("object", "array"):
            continue
        found = extract(data, slot.path)
        if len(found) == 1 and found[0] not in (None, "", []):
            out.append(_Value(step_index, slot, found[0]))
    return out


def _entity_kind(spec: ToolSpec) -> str | None:
    """The entity a tool returns (one, or a list of them)."""
    name = spec.qualified_name
    if name not in _KIND:
        _KIND[name] = next((s.interface for s in spec.outputs
                            if s.kind == "object" and s.path in ((), ("*",))), None)
    return _KIND[name]


_KIND: dict[str, str | None] = {}


def _looks_up_again(source: ToolSpec, target: ToolSpec) -> bool:
    """A read that fetches the same kind of entity the last step already returned."""
    kind = _entity_kind(source)
    return target.read_only and kind is not None and kind == _entity_kind(target)


class _Edges(list):  # type: ignore[type-arg]
    """Edges that read one output, with the set of tools they lead to."""

    targets: frozenset[str] = frozenset()


def _feeds(graph: ToolGraph, spec: ToolSpec, accept: Callable[[ToolSpec], bool] | None,
           ) -> dict[tuple[str, tuple[str, ...]], _Edges]:
    """``spec``'s out-edges into tools ``accept`` takes, by the output they read, minus
    repeated lookups."""
    by_output: dict[tuple[str, tuple[str, ...]], _Edges] = {}
    for edge in graph.out_edges(spec.qualified_name):
        target = graph.specs[edge.target]
        if not _looks_up_again(spec, target) and (accept is None or accept(target)):
            by_output.setdefault((edge.interface, edge.path), _Edges()).append(edge)
    for edges in by_output.values():
        edges.targets = frozenset(e.target for e in edges)
    return by_output


def _snapshot(state: Any) -> dict[str, Any]:
    """Cheap view of a state for change detection: containers copied, records shared."""
    return {k: dict(v) if isinstance(v, dict) else v for k, v in state.__dict__.items()}


def _useful(result: dict[str, Any]) -> bool:
    return bool(result.get("success")) and result.get("data") not in (None, [], {}, "")


def _bind(spec: ToolSpec, edge: Edge, value: _Value, available: list[_Value],
          session: Session, rng: random.Random) -> list[Binding] | None:
    props = spec.parameters.get("properties", {})
    world = session.world
    # stated names, emails and phones belong to one person: the one the carried value names
    carried = str(value.value)
    person = (world.person_by_email(carried) or world.person(carried)
              or rng.choice(world.people[1:]))
    # A write keyed by an entity's id takes its new values from the user, not from the same
    # entity (moving an event to its own start time would change nothing).
    rewrites = not spec.read_only and edge.interface.endswith("Id")
    if not _accepts(props, edge.param, value.value):
        return None  # a refund of -12.50 where amounts are positive: the call would be a 400
    bindings = [Binding(edge.param, value.value, value.step, value.slot.path, edge.interface)]
    for slot in spec.inputs:
        param = slot.path[0]
        if not slot.required or len(slot.path) != 1 or param == edge.param:
            continue
        v = next((v for v in reversed(available) if v.slot.interface == slot.interface
                  and not (rewrites and v.step == value.step)), None)
        if v is not None:
            if not _accepts(props, param, v.value):
                return None
            bindings.append(Binding(param, v.value, v.step, v.slot.path, slot.interface))
            continue
        if slot.interface not in STATABLE:
            return None
        stated = MISSING  # an id the user holds (an account number) comes from their records
        if slot.interface.endswith("Id"):
            stated = record_value(session.service(spec.service), slot.interface, rng)
        if stated is MISSING:
            stated = fresh_value(param, props[param], session.world, rng, person)
        if stated is MISSING:
            return None
        bindings.append(Binding(param, stated, interface=slot.interface))
    for param in spec.parameters.get("required", ()):
        if param in {b.param for b in bindings}:
            continue
        stated = fresh_value(param, props[param], session.world, rng, person)
        if stated is MISSING:
            return None
        bindings.append(Binding(param, stated))
    return bindings


def _accepts(props: dict[str, Any], param: str, value: Any) -> bool:
    schema = props.get(param)
    return schema is None or is_valid(value, schema)


def _as_list_path(path: tuple[str, ...]) -> tuple[str, ...]:
    return tuple("*" if p[:1] == "#" else p for p in path)


def _single_result(spec: ToolSpec) -> bool:
    """The tool returns one thing, not a list (lists need a motif to count or pick)."""
    single = _SINGLE.get(spec.qualified_name)
    if single is None:
        single = _SINGLE[spec.qualified_name] = (spec.returns.get("type") != "array" and not any(
            s.path == ("*",) for s in spec.outputs))
    return single


_SINGLE: dict[str, bool] = {}


def _worth_reporting(v: _Value) -> bool:
    return ((v.slot.interface in STATABLE or not v.slot.interface.endswith("Id"))
            and v.slot.interface not in _DULL and not isinstance(v.value, bool))


def _reportable(step: Step, index: int, stated: set[str]) -> list[_Value]:
    return [v for v in _single_values(index, step.spec, step.result)
            if _worth_reporting(v) and str(v.value).casefold() not in stated]


class Walker:
    """One random walk in progress: its steps, the values they produced, and the choices left.

    Args:
        graph: The tool graph to walk.
        session: Live services the steps execute in (their state advances with the walk).
        rng: The walk's random stream.
        allowed: Services the walk may use (default: every service in the graph).
        cross_bias: Weight of an edge into another service relative to one that stays.
        min_services: Services the walk should reach; unvisited ones are preferred until then.
        attempts: Candidate calls tried per hop before the walk is a dead end.
    """

    def __init__(self, graph: ToolGraph, session: Session, rng: random.Random,
                 allowed: set[str] | None = None, cross_bias: float = 3.0,
                 min_services: int = 1, attempts: int = 8) -> None:
        self.graph, self.session, self.rng = graph, session, rng
        self.allowed, self.cross_bias = allowed, cross_bias
        self.min_services, self.attempts = min_services, attempts
        self.walk = Walk()
        self.available: list[_Value] = []
        self.used: set[str] = set()
        self._visited: set[str] = set()
        # the user's own name and address are known to everyone: carrying them is no flow
        self.own = {session.world.user.email, session.world.user.name}

    # -- steps ------------------------------------------------------------------------------
    def start(self, accept: Callable[[ToolSpec], bool] | None = None,
              items: tuple[int, int] | None = None) -> Step:
        """Begin with a tool a user can ask for directly, grounded in a real record.

        Args:
            accept: Only tools it accepts may start the walk.
            items: For a list-returning start, the (min, max) number of items it must find.
        """
        accept = accept or _single_result
        allowed = frozenset(self.allowed) if self.allowed is not None else None
        starts = self.graph.memo(("starts", accept, allowed), lambda: [
            t for t in self.graph.start_tools() if self._allowed(t)
            and accept(self.graph.specs[t])])
        if not starts:
            raise Rejected("no_start_tool")
        for name in self.rng.sample(starts, min(self.attempts, len(starts))):
            spec = self.graph.specs[name]
            args = record_arguments(spec, self.session.service(spec.service), self.rng)
            if args is None and spec.simulated:  # no records yet: a user states the values
                args = fresh_arguments(spec, self.session.world, self.rng)
            if args is None:
                continue
            kinds = {slot.path[0]: slot.interface for slot in spec.inputs}
            bindings = [Binding(k, v, interface=kinds.get(k)) for k, v in args.items()]
            if step := self.execute(spec, bindings, fits=None if items is None else (
                    lambda found, low=items[0], high=items[1]:
                    isinstance(found, list) and low <= len(found) <= high)):
                return step
        raise Rejected("start_failed")

    def checkpoint(self) -> tuple[Any, int, int, set[str]]:
        """The walk and the world as they are now, to come back to after a failed attempt."""
        return (self.session.checkpoint(), len(self.walk.steps), len(self.available),
                set(self.used))

    def rollback(self, point: tuple[Any, int, int, set[str]]) -> None:
        session, steps, available, used = point
        self.session.rollback(session)
        del self.walk.steps[steps:]
        del self.available[available:]
        self.walk.segments = [s for s in self.walk.segments if s.steps[0] < steps]
        self.used = used

    def adopt(self, index: int, item: int) -> None:
        """Make item ``item`` of step ``index``'s list result available as single values."""
        spec, found = self.walk.steps[index].spec, self.walk.steps[index].result
        for slot in spec.outputs:
            if slot.path[:1] != ("*",) or slot.kind in ("object", "array") or "*" in slot.path[1:]:
                continue
            path = (f"#{item}",) + slot.path[1:]
            values = extract(found, path)
            if len(values) == 1 and values[0] not in (None, "", []) and values[0] not in self.own:
                self.available.append(_Value(index, Slot(slot.interface, path, True, slot.kind),
                                             values[0]))

    def execute(self, spec: ToolSpec, bindings: list[Binding], need_report: bool = False,
                segment: bool = True, fits: Callable[[Any], bool] | None = None) -> Step | None:
        """Run one candidate step; keep it if it succeeds, finds something (that ``fits``
        accepts) and changes what a write should change. Returns the kept step (with its own
        sentence unless ``segment`` is False: a motif phrases it)."""
        state = None if spec.read_only else _snapshot(self.session.state(spec.service))
        result = self.session.call(spec.qualified_name, {b.param: b.value for b in bindings})
        if not _useful(result) or (fits is not None and not fits(result["data"])):
            return None
        if state is not None and state == _snapshot(self.session.state(spec.service)):
            return None  # a write that changes nothing (marking a read email as read)
        if state is None and any(result["data"] == s.result for s in self.walk.steps):
            return None  # a read that finds what an earlier step already found
        index = len(self.walk.steps)
        step = Step(spec, bindings, result["data"])
        if need_report and spec.read_only and not _reportable(step, index, set()):
            return None
        self.walk.steps.append(step)
        if segment:
            self.walk.segments.append(Segment([index]))
        self.used.add(spec.qualified_name)
        self.available.extend(v for v in _single_values(index, spec, step.result)
                              if v.value not in self.own)
        return step

    def extend(self, need_report: bool = False,
               accept: Callable[[ToolSpec], bool] | None = None) -> Step:
        """Add one step fed by an earlier step's output: the last step's first, then older.

        Args:
            need_report: The step must leave a value worth reporting (it may end the walk).
            accept: Only tools it accepts may be the next step.
        """
        accept = accept or _single_result  # a list result feeds nothing unless a motif picks
        tried = 0
        self._visited = set(self.walk.services)
        last = len(self.walk.steps) - 1
        consumed = {b.source for s in self.walk.steps for b in s.bindings}
        # a read nothing uses would be a pointless step: older steps may feed the next one
        # only when the last step is a write, or its result is already used
        oldest = 0 if (not self.walk.steps[last].spec.read_only or last in consumed) else last
        for source in range(last, oldest - 1, -1):
            options = self._options(source, accept)
            weights = self._weights([e for e, _ in options])
            while options and tried < self.attempts:
                tried += 1
                pick = self.rng.choices(range(len(options)), weights)[0]
                weights.pop(pick)
                edge, value = options.pop(pick)
                spec = self.graph.specs[edge.target]
                bindings = _bind(spec, edge, value, self.available, self.session, self.rng)
                if bindings is not None and (step := self.execute(spec, bindings, need_report)):
                    return step
        raise Rejected("dead_end", f"no executable step after {len(self.walk.steps)}")

    def finish(self) -> Walk:
        """Pick the value to report when the walk ends in a read."""
        last = self.walk.steps[-1]
        if last.spec.read_only and self.walk.report is None:
            stated = {str(b.value).casefold() for s in self.walk.steps for b in s.bindings
                      if b.source is None}
            index = len(self.walk.steps) - 1
            choices = _reportable(last, index, stated) or [
                v for v in self.available if v.step == index and v.slot.path[0][:1] == "#"
                and _worth_reporting(v) and str(v.value).casefold() not in stated]
            if not choices:
                raise Rejected("nothing_to_report")
            pick = self.rng.choice(choices)
            self.walk.report = Binding("answer", pick.value, pick.step, pick.slot.path,
                                       pick.slot.interface)
        return self.walk

    # -- choices ----------------------------------------------------------------------------
    def _allowed(self, tool: str) -> bool:
        return self.allowed is None or self.graph.specs[tool].service in self.allowed

    def _options(self, source: int, accept: Callable[[ToolSpec], bool] | None = None,
                 ) -> list[tuple[Edge, _Value]]:
        """Edges out of step ``source`` that one of its values can feed (into tools ``accept``
        takes), with that value; in the order the walk's values were found."""
        spec = self.walk.steps[source].spec
        # a picked list item ("#3", "email") answers the graph's list edges ("*", "email")
        values = {(v.slot.interface, _as_list_path(v.slot.path)): v
                  for v in self.available if v.step == source}
        by_output = self.graph.memo(("feeds", spec.qualified_name, accept),
                                    lambda: _feeds(self.graph, spec, accept))
        used, allowed = self.used, self.allowed
        options: list[tuple[Edge, _Value]] = []
        for key, value in values.items():
            edges = by_output.get(key)
            if not edges:
                continue
            if allowed is None and used.isdisjoint(edges.targets):  # the common case
                options.extend(zip(edges, repeat(value)))
            else:
                options.extend((e, value) for e in edges if e.target not in used
                               and (allowed is None or e.target_service in allowed))
        return options

    def _weights(self, edges: list[Edge]) -> list[float]:
        bias = self.cross_bias
        if len(self._visited) >= self.min_services:
            return [bias if e.cross_service else 1.0 for e in edges]
        visited = self._visited  # still short of services: head somewhere new
        return [(bias if e.cross_service else 1.0) * (1.0 if e.target_service in visited else 4.0)
                for e in edges]


def random_walk(graph: ToolGraph, session: Session, rng: random.Random, hops: int,
                allowed: set[str] | None = None, cross_bias: float = 3.0,
                min_services: int = 1) -> Walk:
    """Walk ``hops`` steps from a user-statable start, executing each step in ``session``.

    Raises:
        Rejected: no start succeeded, or the walk hit a dead end before ``hops`` steps.
    """
    walker = Walker(graph, session, rng, allowed, cross_bias, min_services)
    walker.start()
    while len(walker.walk.steps) < hops:
        walker.extend(need_report=len(walker.walk.steps) == hops - 1)
    return walker.finish()
