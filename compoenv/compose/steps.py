"""One step of a walk: which values a result holds, which edges they feed, and how a candidate
call's arguments are bound (carried from earlier steps, or stated by the user)."""

from __future__ import annotations

import random
import re
from typing import Any, Callable, Mapping

from compoenv.compose.identity import call_problem, person_group, person_of
from compoenv.compose.records import Binding, Step, Value
from compoenv.compose.render import noun
from compoenv.compose.values import MISSING, field_value, fresh_value, record_value
from compoenv.graph import WORDS, Edge, ToolGraph
from compoenv.interfaces import STATABLE
from compoenv.magnitudes import plausible
from compoenv.roles import IDENTITY, ROLE_INTERFACES, compatible
from compoenv.schema import Slot, extract, is_valid
from compoenv.service import ToolSpec
from compoenv.session import Session
from compoenv.world import Person, World

__all__ = ["single_values", "feeds", "bind", "single_result", "reportable", "worth_reporting",
           "toward", "snapshot", "useful", "failure", "as_list_path", "in_order",
           "ranges_in_order"]


_DULL = frozenset({"CurrencyCode", "CountryCode"})  # too guessable to be worth reporting


def single_values(step_index: int, spec: ToolSpec, data: Any) -> list[Value]:
    """Output values that resolve to exactly one value (a list of one item counts; a field
    only one item of several has is no one value of the list: "the event's attendees" when
    one of two events has any)."""
    out = []
    several = isinstance(data, list) and len(data) > 1
    for slot in spec.outputs:
        if slot.kind in ("object", "array") or (several and slot.path[:1] == ("*",)):
            continue
        found = extract(data, slot.path)
        if len(found) == 1 and found[0] not in (None, "", []):
            out.append(Value(step_index, slot, found[0]))
    return out


def _entity_kind(spec: ToolSpec) -> str | None:
    """The entity a tool returns (one, or a list of them)."""
    name = spec.qualified_name
    if name not in _KIND:
        _KIND[name] = next((s.interface for s in spec.outputs
                            if s.kind == "object" and s.path in ((), ("*",))), None)
    return _KIND[name]


_KIND: dict[str, str | None] = {}


def looks_up_again(source: ToolSpec, target: ToolSpec) -> bool:
    """A read that fetches the same kind of entity the last step already returned."""
    kind = _entity_kind(source)
    return target.read_only and kind is not None and kind == _entity_kind(target)


class _Edges(list):  # type: ignore[type-arg]
    """Edges that read one output, with the set of tools they lead to."""

    targets: frozenset[str] = frozenset()


def feeds(graph: ToolGraph, spec: ToolSpec, accept: Callable[[ToolSpec], bool] | None,
           ) -> dict[tuple[str, tuple[str, ...]], _Edges]:
    """``spec``'s out-edges into tools ``accept`` takes, by the output they read, minus
    repeated lookups."""
    by_output: dict[tuple[str, tuple[str, ...]], _Edges] = {}
    takes: dict[str, bool] = {}  # by target: a hub's edges reach each target several times
    for edge in graph.out_edges(spec.qualified_name):
        take = takes.get(edge.target)
        if take is None:
            target = graph.specs[edge.target]
            take = takes[edge.target] = not looks_up_again(spec, target) and (
                accept is None or accept(target))
        if take:
            by_output.setdefault((edge.interface, edge.path), _Edges()).append(edge)
    for edges in by_output.values():
        edges.targets = frozenset(e.target for e in edges)
    return by_output


def snapshot(state: Any) -> dict[str, Any]:
    """Cheap view of a state for change detection: containers copied, records shared."""
    return {k: dict(v) if isinstance(v, dict) else v for k, v in state.__dict__.items()}


def useful(result: dict[str, Any]) -> bool:
    return bool(result.get("success")) and result.get("data") not in (None, [], {}, "")


def failure(result: Mapping[str, Any]) -> str:
    """Why a call that is not kept failed: an error, nothing found, or a list of a wrong size."""
    return ("call_failed" if not result.get("success")
            else "found_nothing" if result.get("data") in (None, [], {}, "") else "wrong_size")


# the fields of a message: their text is a letter's, whatever the records hold
_MESSAGE_FIELDS = frozenset({"body", "message", "content", "text", "subject"})


def bind(spec: ToolSpec, edge: Edge, value: Value, available: list[Value],
         session: Session, rng: random.Random, source: ToolSpec | None = None,
         ) -> list[Binding] | None:
    """The arguments of a candidate call fed by ``value`` along ``edge``: other required
    inputs from earlier results whose roles fit, or stated by the user; None when the call
    could not be a real request (``identity.call_problem``) or would fail validation.

    ``source`` is the tool that found ``value``: a message to someone it found is about
    what it found ("About your support ticket"), and its text is the user's own, never
    another record's text carried over (messaging an author their own article's summary).
    """
    props = spec.parameters.get("properties", {})
    world = session.world
    slots = {s.path[0]: s for s in spec.inputs if len(s.path) == 1}
    about = None
    if source is not None and edge.interface in IDENTITY:
        about = (noun(source), value.slot.path[-1] in _OWN_FIELDS)
    # A write keyed by an entity's id takes its new values from the user, not from the same
    # entity (moving an event to its own start time would change nothing).
    rewrites = not spec.read_only and edge.interface.endswith("Id")
    if not _accepts(props, edge.param, value.value):
        return None  # a refund of -12.50 where amounts are positive: the call would be a 400
    if value.slot.role == "business_contact" and edge.param in slots and any(
            s.interface == "PersonName" and s.required and len(s.path) == 1
            and person_group(s) == person_group(slots[edge.param]) for s in spec.inputs):
        return None  # a gym's front-desk email is nobody's name
    bindings = [Binding(edge.param, value.value, value.step, value.slot.path, edge.interface)]
    # people by the role they play in this call: the carried one, then whoever is found or
    # stated for the other roles (name, email and phone of one role belong to one person)
    people: dict[str, Person] = {}
    carried = person_of(value.value, world)
    if carried is not None and edge.param in slots:
        people[person_group(slots[edge.param])] = carried
    for slot in spec.inputs:
        param = slot.path[0]
        if not slot.required or len(slot.path) != 1 or param == edge.param:
            continue
        group = person_group(slot) if slot.interface in IDENTITY else None
        want = people.get(group) if group else None
        fits = [] if slot.interface in WORDS and not spec.read_only else [
            v for v in reversed(available) if v.slot.interface == slot.interface
            and compatible(slot.interface, v.slot.role, slot.role)
            and not (rewrites and v.step == value.step)]
        if group is not None:
            fits = [v for v in fits if (person_of(v.value, world) == want if want is not None
                                        else person_of(v.value, world) not in people.values())]
        if slot.role is not None and len(fits) > 1:  # the payment's value pays, not its fee
            fits.sort(key=lambda v: v.slot.role != slot.role)
        elif slot.interface not in ROLE_INTERFACES and len(fits) > 1:
            # untagged titles and names: a field of the parameter's own name first (an offer
            # is for the position the candidate applied for, not their current title)
            fits.sort(key=lambda v: v.slot.path[-1] != param)
        if not fits and slot.interface == "Date":  # the day of a found time: the event's
            fits = [v for v in reversed(available) if v.slot.interface == "DateTime"
                    and isinstance(v.value, str) and len(v.value) >= 10
                    and compatible("Date", v.slot.role, slot.role)]
        v = fits[0] if fits else None
        if v is not None:
            given = v.value[:10] if v.slot.interface != slot.interface else v.value
            if not _accepts(props, param, given):
                return None
            bindings.append(Binding(param, given, v.step, v.slot.path, slot.interface))
            if group is not None and (found := person_of(v.value, world)) is not None:
                people.setdefault(group, found)
            continue
        if slot.interface not in STATABLE:
            return None
        stated = MISSING  # an id the user holds (an account number) comes from their records
        if slot.interface.endswith("Id"):
            stated = record_value(session.service(spec.service), slot.interface, rng)
        elif slot.interface == "Text" and about is None and param not in _MESSAGE_FIELDS:
            # a booking's reason is one the service's records give reasons ("vaccination"),
            # not a line of a letter
            stated = field_value(session.service(spec.service), param, rng)
        if stated is MISSING:
            person = want if group is not None else carried
            if group is not None and person is None:
                person = _someone(slot.role, world, rng, set(people.values()))
                people[group] = person
            stated = fresh_value(param, props[param], session.world, rng, person, spec.service,
                                 about)
        if stated is MISSING:
            return None
        bindings.append(Binding(param, stated, interface=slot.interface))
    for param in spec.parameters.get("required", ()):
        if param in {b.param for b in bindings}:
            continue
        stated = fresh_value(param, props[param], session.world, rng, carried, spec.service,
                             about)
        if stated is MISSING:
            return None
        bindings.append(Binding(param, stated))
    if source is not None:
        bindings = _labelled(bindings, noun(source), props)
    bindings = in_order(bindings)
    if call_problem(spec, {b.param: b.value for b in bindings}, world) is not None:
        return None
    if any(b.source is not None and b.interface == "Money" and b.param in slots
           and not plausible(slots[b.param].role, b.value) for b in bindings):
        return None  # a 5.49 price is no property value, a monthly pay no annual income
    if not (_paid_to_its_own(bindings, slots) and ranges_in_order(bindings)
            and _one_address(bindings) and _durations_of_durations(bindings)):
        return None
    return bindings


def _labelled(bindings: list[Binding], noun_: str, props: dict[str, Any]) -> list[Binding]:
    """A stated label names what the call saves: the restaurant's address is saved as
    "Restaurant", not as "Gym"."""
    label = noun_[:1].upper() + noun_[1:]
    return [Binding(b.param, label, interface=b.interface)
            if b.param == "label" and b.source is None and _accepts(props, b.param, label)
            else b for b in bindings]


def _one_address(bindings: list[Binding]) -> bool:
    """A street and its city come from one record: a Madrid street is not valued in Chicago."""
    streets = {b.source for b in bindings if b.interface == "StreetAddress"}
    if not streets:
        return True
    return all(b.source in streets for b in bindings if b.interface == "City")


def _durations_of_durations(bindings: list[Binding]) -> bool:
    """A carried length of time is something's duration (a booking's, an event's), not a
    commute time or a review turnaround that happens to be in minutes."""
    return all(b.source is None or (any(w in b.path[-1] for w in ("duration", "length"))
                                    and "total" not in b.path[-1])
               for b in bindings if b.interface == "DurationMinutes" and b.path)


def _paid_to_its_own(bindings: list[Binding], slots: dict[str, Slot]) -> bool:
    """A carried amount is paid or refunded to whoever it belongs to: an invoice's total to
    its vendor, a quote's premium to its insurer; never a product's price to a stranger."""
    paid = [b for b in bindings if b.source is not None and b.interface == "Money"
            and b.param in slots and slots[b.param].role in _PAYMENTS]
    payees = [b for b in bindings if b.interface in _PAYEES]
    return not paid or not payees or all(
        any(p.source == b.source for p in payees) for b in paid)


def ranges_in_order(bindings: list[Binding]) -> bool:
    """A range's start comes before its end, whichever of them was carried: no trip back
    before it leaves, no "from 2026-03-24 to 2026-03-24"."""
    dates = {b.param: b.value for b in bindings
             if isinstance(b.value, str) and _DATE.match(b.value)}
    for start, end in _RANGES:
        a = next((v for p, v in dates.items() if start.search(p)), None)
        z = next((v for p, v in dates.items() if end.search(p)), None)
        if a is not None and z is not None and (a[:10] > z[:10] or a == z):
            return False
    return True


_PAYMENTS = frozenset({"payment", "refund"})
_PAYEES = IDENTITY | {"OrganizationName"}


_OWN_FIELDS = frozenset({"name", "email", "phone", "phone_number", "full_name"})

_RANGES = tuple((re.compile(a), re.compile(b)) for a, b in (
    (r"(^|_)(from|start|since|pickup|check_in|period_start)(_|$)",
     r"(^|_)(to|end|until|return|check_out|period_end)(_|$)"),
))


def in_order(bindings: list[Binding]) -> list[Binding]:
    """Stated range ends in order: a user asks for 2026-03-19 to 2026-03-25, not backwards."""
    stated = {b.param: i for i, b in enumerate(bindings) if b.source is None
              and isinstance(b.value, str) and _DATE.match(b.value)}
    for start, end in _RANGES:
        a = next((i for p, i in stated.items() if start.search(p)), None)
        z = next((i for p, i in stated.items() if end.search(p)), None)
        if a is not None and z is not None and bindings[a].value > bindings[z].value:
            first, last = bindings[a], bindings[z]
            bindings[a] = Binding(first.param, last.value, interface=first.interface)
            bindings[z] = Binding(last.param, first.value, interface=last.interface)
    return bindings


_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")


_TEAM = frozenset({"colleague", "employee", "manager", "hiring_manager", "interviewer",
                   "assignee", "reviewer", "approver", "organizer", "editor"})


def _someone(role: str | None, world: World, rng: random.Random,
             taken: set[Person]) -> Person:
    """A person a user would name for ``role``: a colleague for team roles, else anyone but
    the user; never one already in the call."""
    pool = world.colleagues(world.user) if role in _TEAM else list(world.people[1:])
    pool = [p for p in pool if p not in taken] or [p for p in world.people[1:]
                                                    if p not in taken]
    return rng.choice(pool)


def _accepts(props: dict[str, Any], param: str, value: Any) -> bool:
    schema = props.get(param)
    return schema is None or is_valid(value, schema)


def as_list_path(path: tuple[str, ...]) -> tuple[str, ...]:
    return tuple("*" if p[:1] == "#" else p for p in path)


def single_result(spec: ToolSpec) -> bool:
    """The tool returns one thing, not a list (lists need a motif to count or pick)."""
    single = _SINGLE.get(spec.qualified_name)
    if single is None:
        single = _SINGLE[spec.qualified_name] = (spec.returns.get("type") != "array" and not any(
            s.path == ("*",) for s in spec.outputs))
    return single


_SINGLE: dict[str, bool] = {}


def worth_reporting(v: Value) -> bool:
    return ((v.slot.interface in STATABLE or not v.slot.interface.endswith("Id"))
            and v.slot.interface not in _DULL and not isinstance(v.value, bool))


def reportable(step: Step, index: int, stated: set[str]) -> list[Value]:
    return [v for v in single_values(index, step.spec, step.result)
            if worth_reporting(v) and str(v.value).casefold() not in stated]


def toward(graph: ToolGraph, services: frozenset[str]) -> dict[str, int]:
    """Hops from each tool to the nearest tool of ``services``: 0 inside them, 1 or 2 for tools
    with an edge that gets there in that many steps; farther tools are left out."""
    def compute() -> dict[str, int]:
        near = {n: 0 for n, s in graph.signatures.items() if s.service in services}
        last = list(near)
        for hops in (1, 2):  # tools with an edge into the last ring, found from its end
            ring = {e.source: hops for n in last for e in graph.in_edges(n)
                    if e.source not in near}
            near.update(ring)
            last = list(ring)
        return near
    return graph.memo(("toward", services), compute)


_PULL = (1.0, 4.0, 1.0, 0.25)  # edge weights by hops left to a required service
