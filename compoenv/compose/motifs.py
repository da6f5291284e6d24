"""Motifs: aggregation, fan-out, cross-service constraints and house rules grown on a walk.

Each motif extends a live Walker (its calls execute, so every value is real), phrases its own
sentence, and tags the walk with its capability name.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
import math
from typing import Any, Callable, Iterator

from compoenv.compose.config import MOTIFS
from compoenv.compose.identity import call_problem, person_of
from compoenv.compose.labels import field_label
from compoenv.compose.options import drawn, lists_options
from compoenv.compose.render import noun, owner_reference, phrase, plural, reference
from compoenv.compose.values import can_state
from compoenv.compose.records import Binding, Rejected, Segment, Value
from compoenv.compose.steps import bind
from compoenv.compose.walk import Walker
from compoenv.graph import Edge
from compoenv.roles import IDENTITY
from compoenv.schema import Slot, extract
from compoenv.service import ToolSpec
from compoenv.world import World

__all__ = ["MOTIFS", "returns_list", "fans_out", "fan_edges", "aggregate", "fan_out", "branch", "as_house_rule"]

_SUMMABLE = frozenset({"Money", "DurationMinutes", "Quantity"})
_UNSUMMABLE = frozenset({"rate", "limit", "balance", "value", "fee", "price", "premium",
                         "salary", "budget"})
_ORDERED = frozenset({"Money", "DurationMinutes", "Quantity", "Temperature", "Percentage",
                      "Date", "DateTime"})
_PERSONAL = frozenset({"PersonName", "EmailAddress", "PhoneNumber", "JobTitle",
                       "OrganizationName"})
_WORLD = World(0)  # for static checks only: which values a user could state at all
_COMPARABLE = frozenset({"Money", "Temperature", "Percentage", "DurationMinutes", "Quantity"})


def returns_list(spec: ToolSpec) -> bool:
    """The tool returns a list of entities (something to count, sum, pick from or fan out)."""
    name = spec.qualified_name
    if name not in _LISTS:
        items = spec.returns.get("items") if spec.returns.get("type") == "array" else None
        _LISTS[name] = (isinstance(items, dict) and items.get("type") == "object") or any(
            s.path == ("*",) and s.kind == "object" for s in spec.outputs)
    return _LISTS[name]


_LISTS: dict[str, bool] = {}


def fan_edges(graph: Any, spec: ToolSpec) -> list[Edge]:
    """Edges from a list tool's items into writes that can run once per item: every personal
    value the write needs (a name, an email) must come from the item itself."""
    return graph.memo(("fan", spec.qualified_name), lambda: _fan_edges(graph, spec), size=len)


def _acts_on(interface: str) -> bool:
    """Whether a value names the thing or person an action is about (an id, a person), not
    one of its attributes (a date, a city, an amount): for each item, do something *to* it."""
    return interface in IDENTITY or interface.endswith("Id") or interface in _KEYS


_KEYS = frozenset({"FlightNumber", "BookingReference", "TrackingNumber"})


def _fan_edges(graph: Any, spec: ToolSpec) -> list[Edge]:
    """Writes that make sense once per item: they act on the item itself or on its person
    (email each attendee, pay each invoice), never on an attribute (log a workout on each pay
    stub's date)."""
    item = _item_interfaces(spec)
    return [e for e in graph.out_edges(spec.qualified_name) if _fans(graph, e, item)]


def _item_interfaces(spec: ToolSpec) -> set[str]:
    return {s.interface for s in spec.outputs if s.path[:1] == ("*",) and len(s.path) == 2}


def _fans(graph: Any, edge: Edge, item: set[str]) -> bool:
    """Whether ``edge`` leads from a list's items (of ``item`` interfaces) into a write that
    can run once per item."""
    if (edge.path[:1] != ("*",) or "*" in edge.path[1:] or not _acts_on(edge.interface)
            or graph.signatures[edge.target].read_only):
        return False
    target = graph.specs[edge.target]
    needs = {s.interface for s in target.inputs
             if s.required and len(s.path) == 1 and s.path[0] != edge.param}
    props = target.parameters.get("properties", {})
    # every other required value must come from the item or be statable once for all
    stated = [p for p in target.parameters.get("required", ())
              if p != edge.param and props.get(p, {}).get("x-interface") not in item]
    # an id the user holds (the account to pay from) is stated from the service's records
    return not (needs & _PERSONAL) - item and all(
        can_state(p, props.get(p, {}), _WORLD, target.service)
        or (not target.simulated and str(props.get(p, {}).get("x-interface", ""))
            .endswith("Id")) for p in stated)


def fans_out(graph: Any) -> Callable[[ToolSpec], bool]:
    """A filter for list tools whose items can each feed some write (fan-out starts)."""
    # one function object per graph: walks memoize their start tools by filter; a tool's
    # edges are searched only up to the first that fans out (a large library has thousands)
    return graph.memo("fans_out", lambda: lambda spec: returns_list(spec)
                      and _can_fan(graph, spec))


def _can_fan(graph: Any, spec: ToolSpec) -> bool:
    item = _item_interfaces(spec)
    return any(_fans(graph, e, item) for e in graph.iter_out_edges(spec.qualified_name))


def _fans_in_order(walker: Walker, spec: ToolSpec,
                   accept: Callable[[ToolSpec], bool] | None) -> Iterator[Edge]:
    """``fan_edges`` of ``spec`` into tools ``accept`` takes and the walk has not used, in a
    random order: listed, or drawn from the graph's index for a tool with thousands of
    edges (``compose.options``)."""
    graph = walker.graph

    def fits(edge: Edge) -> bool:
        return edge.target not in walker.used and walker._allowed(edge.target) and (
            accept is None or accept(graph.specs[edge.target]))

    if lists_options(graph, spec.qualified_name):
        return _in_random_order([e for e in fan_edges(graph, spec) if fits(e)], walker.rng)
    item = _item_interfaces(spec)
    items = {(s.interface, s.path): s for s in spec.outputs
             if s.path[:1] == ("*",) and len(s.path) == 2 and _acts_on(s.interface)}
    return (e for e, _ in drawn(graph, spec.qualified_name, items, set(), (1.0, 1.0, 1.0),
                                lambda e, _: fits(e) and _fans(graph, e, item), walker.rng))


def _item_fields(spec: ToolSpec, kinds: frozenset[str]) -> list[Slot]:
    return [s for s in spec.outputs if len(s.path) == 2 and s.path[0] == "*"
            and s.interface in kinds and s.kind in ("number", "integer", "string")]


def aggregate(walker: Walker, index: int, report: bool) -> None:
    """Count, sum, or pick the min/max item of step ``index``'s list result.

    With ``report`` the walk ends on the aggregate (the final message states it); otherwise
    the min/max item is picked and its values feed the steps that follow.
    """
    step = walker.walk.steps[index]
    items = step.result
    rng = walker.rng
    kind = noun(step.spec)
    ops: list[tuple[str, Slot | None]] = [("max", s) for s in _item_fields(step.spec, _ORDERED)]
    ops += [("min", s) for s in _item_fields(step.spec, _ORDERED)]
    if report:
        # rates, limits and balances do not add up: "the total hourly rate" means nothing
        ops += [("sum", s) for s in _item_fields(step.spec, _SUMMABLE)
                if s.role not in _UNSUMMABLE] + [("count", None)]
    rng.shuffle(ops)
    for op, slot in ops:
        if op == "count":
            _report(walker, index, len(items), "Quantity",
                    f"Tell me how many {plural(kind)} there are.")
            return
        assert slot is not None
        values = [extract(item, slot.path[1:]) for item in items]
        if any(len(v) != 1 or v[0] is None for v in values):
            continue
        flat = [v[0] for v in values]
        field = field_label(step.spec.returns, slot.path, kind)
        if op == "sum":
            total = round(sum(flat), 2)
            _report(walker, index, total, slot.interface, f"Tell me the total {field} of those "
                                                          f"{plural(kind)}.")
            return
        best = max(flat) if op == "max" else min(flat)
        if flat.count(best) != 1:
            continue  # a tie: "the one with the highest amount" would not name one item
        pick = flat.index(best)
        extreme = {"max": "latest" if slot.interface.startswith("Date") else "highest",
                   "min": "earliest" if slot.interface.startswith("Date") else "lowest"}[op]
        said = field.removeprefix(f"{extreme} ")  # never "the lowest lowest price"
        walker.walk.segments[-1].text = (phrase(step.spec, walker.walk, step.bindings)
                                         + f", and take the {kind} with the {extreme} {said}")
        walker.adopt(index, pick)
        if report:
            value = extract(items[pick], slot.path[1:])[0]
            walker.walk.report = Binding("answer", value, index, (f"#{pick}",) + slot.path[1:],
                                         slot.interface)
            walker.walk.report_text = f"Tell me the {field} of that {kind}."
        walker.walk.motifs.append("aggregation")
        return
    raise Rejected("no_aggregate", tools=(step.spec.qualified_name,))


def _report(walker: Walker, index: int, value: Any, interface: str, text: str) -> None:
    walker.walk.report = Binding("answer", value, index, (), interface)
    walker.walk.report_text = text
    walker.walk.hidden.append(value)
    walker.walk.motifs.append("aggregation")


def fan_out(walker: Walker, index: int,
            accept: Callable[[ToolSpec], bool] | None = None) -> None:
    """For each item of step ``index``'s list result, run the same write (one ``accept``
    takes) on that item."""
    step = walker.walk.steps[index]
    items = step.result
    stated, world = walker.stated(), walker.session.world
    named = {person_of(b.value, world) for b in step.bindings if b.source is None} - {None}
    met = _met(walker, index)
    for edge in itertools.islice(_fans_in_order(walker, step.spec, accept), 12):
        first_item = _item_bindings(walker, index, edge, 0)
        if first_item is None or any(b.source is None and b.interface in _PERSONAL
                                     for b in first_item):
            continue  # a name or email stated once cannot belong to every item
        per_item = [_for_item(first_item, index, k, walker) for k in range(len(items))]
        if any(b is None or call_problem(walker.graph.specs[edge.target],
                                         {x.param: x.value for x in b},
                                         walker.session.world) for b in per_item):
            continue  # an item with no value, or one whose call could not be real
        carried = {tuple(b.value for b in bindings if b.source == index) for bindings in per_item}
        if len(carried) != len(per_item):
            continue  # two items would get the very same call
        # "for each article by Lara Hayes, message its author" reaches one person; a free walk
        # would also just repeat the city it was asked about, while a job may act on every
        # contact "at Acme" with what each record says; the one person the request named
        # among several others is left out ("each lead other than the one who reported it")
        said = [k for k, bindings in enumerate(per_item)
                if any((str(b.value).casefold() in stated
                        and (b.interface in IDENTITY or not walker.reuse_asked))
                       or person_of(b.value, world) in named
                       for b in bindings if b.source == index)]
        # ... and so is one the job already found ("each lead other than the contact" when the
        # champion who told us is one of the company's leads)
        known = [k for k, bindings in enumerate(per_item) if _own_person(bindings, index, world)
                 in met]
        left = walker.walk.left_out.get(index)  # every write of the job skips the same one
        if left is None and (said or known):
            if index in getattr(walker, "fanned", ()):
                continue  # an earlier write went to everyone: this one may not leave one out
            left = (_one_named(said, per_item, index, stated) if said else
                    (known[0], met[_own_person(per_item[known[0]], index, world)])
                    if len(known) == 1 and len(per_item) >= 3 else None)
            if left is None:
                continue
        spec = walker.graph.specs[edge.target]
        first = len(walker.walk.steps)
        point = walker.checkpoint()
        if left is not None:
            per_item = [b for k, b in enumerate(per_item) if k != left[0]]
        if any(walker.execute(spec, bindings, segment=False) is None for bindings in per_item):
            walker.rollback(point)  # one item failed: undo the others, try another write
            continue
        if left is not None:
            walker.walk.left_out[index] = left
        # the bindings as run: a scenario's stated values and a naming rule are in them
        other = f" other than {left[1]}" if left is not None else ""
        text = (f"for each {noun(step.spec)} found{other}, "
                + phrase(spec, walker.walk, walker.walk.steps[first].bindings))
        walker.walk.segments.append(Segment(list(range(first, len(walker.walk.steps))), text))
        walker.walk.motifs.append("fan-out")
        # "the payment's amount" after one payment per item would not say which: what the
        # writes returned feeds nothing later
        walker.available = [v for v in walker.available if v.step < first]
        return
    raise Rejected("no_fan_out", tools=(step.spec.qualified_name,))


def _one_named(said: list[int], per_item: list[list[Binding]], index: int, stated: set[str],
               ) -> tuple[int, str] | None:
    """The one item of three or more that is a person the request states, by their own name
    or email (a lead, not a repository's maintainer), and how the request says them: for a
    fan-out to leave out. None when no or several items are."""
    if len(said) != 1 or len(per_item) < 3:
        return None
    own = [b for b in per_item[said[0]] if b.source == index]
    shown = next((str(b.value) for b in own if b.interface in IDENTITY and len(b.path) == 2
                  and b.path[1] in _OWN_IDENTITY and str(b.value).casefold() in stated), None)
    if shown is None or any(str(b.value).casefold() in stated and b.interface not in IDENTITY
                            for b in own):
        return None
    return said[0], shown


_OWN_IDENTITY = frozenset({"name", "email", "phone"})  # a listed person's own, not a role's


def _own_person(bindings: list[Binding], index: int, world: World) -> Any:
    """The person a fan-out item is, by its own name or email (None: not a person's item)."""
    return next((p for b in bindings if b.source == index and b.interface in IDENTITY
                 and len(b.path) == 2 and b.path[1] in _OWN_IDENTITY
                 and (p := person_of(b.value, world)) is not None), None)


def _met(walker: Walker, index: int) -> dict[Any, str]:
    """The people steps before ``index`` found, and how the request names each ("the
    contact"): a fan-out over a list leaves them out rather than writing to them twice."""
    out: dict[Any, str] = {}
    world = walker.session.world
    for v in walker.available:
        if v.step >= index or v.slot.interface not in ("PersonName", "EmailAddress"):
            continue
        person = person_of(v.value, world)
        if person is not None and person not in out:
            who = owner_reference(walker.walk.steps[v.step].spec,
                                  Binding("", v.value, v.step, v.slot.path, v.slot.interface))
            if who is not None:
                out[person] = who
    return out


def _item_bindings(walker: Walker, index: int, edge: Edge, item: int) -> list[Binding] | None:
    path = (f"#{item}",) + edge.path[1:]
    found = extract(walker.walk.steps[index].result, path)
    if len(found) != 1 or found[0] in (None, "") or found[0] in walker.own:
        return None
    spec = walker.walk.steps[index].spec
    role = next((s.role for s in spec.outputs if s.path == edge.path), None)
    value = Value(index, Slot(edge.interface, path, role=role), found[0])
    item_values = [Value(index, replace(s, path=(f"#{item}",) + s.path[1:], required=True), v)
                   for s in walker.walk.steps[index].spec.outputs
                   if s.path[:1] == ("*",) and len(s.path) == 2
                   for v in extract(walker.walk.steps[index].result, (f"#{item}",) + s.path[1:])]
    # item values first: a name or city for "each" item comes from that item
    return bind(walker.graph.specs[edge.target], edge, value, walker.available + item_values,
                walker.session, walker.rng, walker.walk.steps[index].spec)


def _for_item(bindings: list[Binding], index: int, item: int,
              walker: Walker) -> list[Binding] | None:
    """Item 0's bindings moved to item ``item``: carried values re-read, stated ones kept."""
    out = []
    for b in bindings:
        if b.source == index and b.path[:1] == ("#0",):
            path = (f"#{item}",) + b.path[1:]
            found = extract(walker.walk.steps[index].result, path)
            if len(found) != 1 or found[0] in (None, ""):
                return None
            b = Binding(b.param, found[0], index, path, b.interface)
        out.append(b)
    return out


def branch(walker: Walker) -> None:
    """End with an if/otherwise between two writes, decided by a number another service gave.

    The threshold is placed so that either side may hold; only the side that holds runs.
    """
    rng = walker.rng
    # a number the user stated (echoed back by a record) would give the comparison away
    stated = {b.value for s in walker.walk.steps for b in s.bindings
              if b.source is None and isinstance(b.value, (int, float))}
    numbers = [v for v in walker.available
               if v.slot.interface in _COMPARABLE and isinstance(v.value, (int, float))
               and not isinstance(v.value, bool) and v.value != 0 and v.value not in stated]
    rng.shuffle(numbers)
    for value in numbers[:4]:
        source = walker.walk.steps[value.step].spec.service
        writes = _writes_avoiding(walker, source, value.step)
        if len(writes) < 2:
            continue
        then_side, else_side = writes[0], writes[1]
        holds = rng.random() < 0.5
        threshold = _threshold(value.value, holds, rng)
        if value.slot.interface == "Percentage" and not 0 <= threshold <= 100:
            continue  # "a dividend yield above 110" is no rule anyone keeps
        taken = then_side if holds else else_side
        if walker.execute(taken[0], taken[1], segment=False) is None:
            continue
        subject = reference(walker.walk.steps[value.step].spec, value.slot.path,
                            value.slot.interface)
        then_text = phrase(then_side[0], walker.walk, then_side[1])
        else_text = phrase(else_side[0], walker.walk, else_side[1])
        text = f"if {subject} is above {threshold:g}, {then_text}; otherwise, {else_text}"
        walker.walk.segments.append(Segment([len(walker.walk.steps) - 1], text))
        walker.walk.hidden.append(value.value)
        walker.walk.literals.append(threshold)
        untaken = (else_side if holds else then_side)[0].service
        if untaken != taken[0].service:
            walker.walk.guarded.append(untaken)
        walker.walk.motifs.append("cross-service-constraint")
        return
    raise Rejected("no_branch")


def _is_write(spec: ToolSpec) -> bool:
    return not spec.read_only


def _writes_avoiding(walker: Walker, service: str,
                     about: int) -> list[tuple[ToolSpec, list[Binding]]]:
    """Two bindable writes in services other than ``service`` that both act on what step
    ``about`` found (its id or its person): two ways of handling the one entity whose number
    decides between them."""
    found: list[tuple[ToolSpec, list[Binding]]] = []
    seen: set[str] = set()
    specs = walker.graph.specs
    stated = walker.stated()
    candidates = walker.options_in_order(
        about, _is_write, lambda _, v: str(v.value).casefold() not in stated,
        lambda items: _in_random_order(items, walker.rng), _acts_on)
    for edge, value in candidates:
        spec = specs[edge.target]
        if edge.target in seen:
            continue
        bindings = bind(spec, edge, value, walker.available, walker.session, walker.rng,
                        walker.walk.steps[value.step].spec)
        if bindings is not None:
            found.append((spec, bindings))
            seen.add(edge.target)
        if len(found) == 2:
            break
    return found


def _in_random_order(items: list[Any], rng: Any) -> Iterator[Any]:
    """The items in a random order, drawn lazily (O(1) each): loops here stop after a few."""
    while items:
        i = rng.randrange(len(items))
        items[i], items[-1] = items[-1], items[i]
        yield items.pop()


def _threshold(value: float, holds: bool, rng: Any) -> float:
    """A round number on the side of ``value`` that makes "value is above it" ``holds``."""
    gap = max(abs(value) * rng.uniform(0.1, 0.35), 1.0)
    raw = value - gap if holds else value + gap
    step = 10.0 if abs(raw) >= 100 else 1.0 if abs(raw) >= 10 else 0.5
    threshold = (math.floor(raw / step) if holds else math.ceil(raw / step)) * step
    return threshold if (value > threshold) == holds else raw


def as_house_rule(walker: Walker) -> None:
    """Move the walk's if/otherwise sentence into a house rule stated before the request."""
    for segment in walker.walk.segments:
        if segment.text and segment.text.startswith("if "):
            text = segment.text
            walker.walk.rules.append("Whenever " + text[3:] + ".")
            segment.text = "apply the house rules"
            walker.walk.motifs.append("house-rules")
            return
    raise Rejected("no_house_rule")
