"""Random walk over the tool graph, executing each step on a live World to bind real values."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from compoenv.compose.values import MISSING, fresh_value, record_arguments, record_value
from compoenv.graph import Edge, ToolGraph
from compoenv.interfaces import STATABLE
from compoenv.schema import Slot, extract
from compoenv.service import ToolSpec
from compoenv.session import Session

__all__ = ["Binding", "Step", "Walk", "Rejected", "random_walk"]


class Rejected(Exception):
    """A walk or a task that cannot be published; ``reason`` is a short counter key."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


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
class Walk:
    steps: list[Step] = field(default_factory=list)
    report: Binding | None = None      # the value the final message must report, if any

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
    for slot in spec.outputs:
        if slot.kind == "object" and slot.path in ((), ("*",)):
            return slot.interface
    return None


def _looks_up_again(source: ToolSpec, target: ToolSpec) -> bool:
    """A read that fetches the same kind of entity the last step already returned."""
    kind = _entity_kind(source)
    return target.read_only and kind is not None and kind == _entity_kind(target)


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
    bindings = [Binding(edge.param, value.value, value.step, value.slot.path, edge.interface)]
    for slot in spec.inputs:
        param = slot.path[0]
        if not slot.required or len(slot.path) != 1 or param == edge.param:
            continue
        same = [v for v in reversed(available) if v.slot.interface == slot.interface
                and not (rewrites and v.step == value.step)]
        if same:
            v = same[0]
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


def _reportable(step: Step, index: int, stated: set[str]) -> list[_Value]:
    return [v for v in _single_values(index, step.spec, step.result)
            if (v.slot.interface in STATABLE or not v.slot.interface.endswith("Id"))
            and v.slot.interface not in _DULL
            and not isinstance(v.value, bool) and str(v.value).casefold() not in stated]


def random_walk(graph: ToolGraph, session: Session, rng: random.Random, hops: int,
                allowed: set[str] | None = None, cross_bias: float = 3.0,
                attempts: int = 6) -> Walk:
    """Walk ``hops`` steps from a user-statable start, executing each step in ``session``.

    Raises:
        Rejected: no start succeeded, or the walk hit a dead end before ``hops`` steps.
    """
    starts = [t for t in graph.start_tools() if allowed is None or graph.specs[t].service in allowed]
    if not starts:
        raise Rejected("no_start_tool")
    walk = Walk()
    for start in rng.sample(starts, min(attempts, len(starts))):
        spec = graph.specs[start]
        args = record_arguments(spec, session.service(spec.service), rng)
        if args is None:
            continue
        result = session.call(start, args)
        if _useful(result):
            kinds = {slot.path[0]: slot.interface for slot in spec.inputs}
            walk.steps.append(Step(spec, [Binding(k, v, interface=kinds.get(k))
                                          for k, v in args.items()], result["data"]))
            break
    if not walk.steps:
        raise Rejected("start_failed")

    # the user's own name and address are known to everyone; carrying them is no information
    own = {session.world.user.email, session.world.user.name}
    available = [v for v in _single_values(0, walk.steps[0].spec, walk.steps[0].result)
                 if v.value not in own]
    used = {walk.steps[0].spec.qualified_name}
    while len(walk.steps) < hops:
        last = len(walk.steps) - 1
        fresh = {(v.slot.interface, v.slot.path): v for v in available if v.step == last}
        options = [(e, fresh[(e.interface, e.path)]) for e in graph.out_edges(
                   walk.steps[last].spec.qualified_name)
                   if (e.interface, e.path) in fresh and e.target not in used
                   and (allowed is None or graph.specs[e.target].service in allowed)
                   and not _looks_up_again(walk.steps[last].spec, graph.specs[e.target])]
        final = len(walk.steps) == hops - 1
        for _ in range(attempts):
            if not options:
                raise Rejected("dead_end", f"after {len(walk.steps)} steps")
            weights = [cross_bias if e.cross_service else 1.0 for e, _ in options]
            edge, value = options.pop(rng.choices(range(len(options)), weights)[0])
            spec = graph.specs[edge.target]
            bindings = _bind(spec, edge, value, available, session, rng)
            if bindings is None:
                continue
            before = None if spec.read_only else _snapshot(session.state(spec.service))
            result = session.call(spec.qualified_name, {b.param: b.value for b in bindings})
            if not _useful(result):
                continue
            if before is not None and before == _snapshot(session.state(spec.service)):
                continue  # a write that changes nothing (marking a read email as read)
            step = Step(spec, bindings, result["data"])
            if final and spec.read_only and not _reportable(step, last + 1, set()):
                continue
            walk.steps.append(step)
            used.add(spec.qualified_name)
            available.extend(v for v in _single_values(last + 1, spec, step.result)
                             if v.value not in own)
            break
        else:
            raise Rejected("dead_end", f"no executable next step after {len(walk.steps)}")

    last_step = walk.steps[-1]
    if last_step.spec.read_only:
        stated = {str(b.value).casefold() for s in walk.steps for b in s.bindings
                  if b.source is None}
        choices = _reportable(last_step, len(walk.steps) - 1, stated)
        if not choices:
            raise Rejected("nothing_to_report")
        pick = rng.choice(choices)
        walk.report = Binding("answer", pick.value, pick.step, pick.slot.path, pick.slot.interface)
    return walk
