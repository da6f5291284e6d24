"""Long tasks: a scenario's stages run as linked walks inside its services, one job end to end.

Each stage is a step of the job (find, decide, act, confirm) done with one of its tools. A stage
is fed by what earlier stages found (the first one that fits, in the walk's star-shaped order:
the job's anchor first); a stage nothing feeds starts a new linked walk from values the user
states. ``take="pick"`` takes one item of a list, ``take="all"`` lists items that the
following ``each`` stages act on one by one. House rules and the report come after
(``compoenv.compose.house_rules``, ``compoenv.compose.reports``, ``compoenv.compose.jobs``).
"""

from __future__ import annotations

import datetime as dt
import math
import random
import re
from typing import Any, Callable

from compoenv.compose.choices import Choice, choose, orderable, plain
from compoenv.compose.goal import facts_about, with_facts
from compoenv.compose.motifs import fan_out, returns_list
from compoenv.compose.render import noun, phrase
from compoenv.compose.records import (
    Binding, Rejected, Segment, Step, Value, effects, record_keys,
)
from compoenv.compose.steps import ranges_in_order, single_result
from compoenv.compose.values import MISSING, fresh_value
from compoenv.reward import same_value
from compoenv.roles import compatible
from compoenv.schema import extract, free_text
from compoenv.compose.walk import Walker
from compoenv.graph import ToolGraph
from compoenv.scenarios import Scenario, Stage
from compoenv.service import ToolSpec
from compoenv.session import Session
from compoenv.world import DEFAULT_TODAY

__all__ = ["ScenarioWalker", "run_stages"]

class ScenarioWalker(Walker):
    """A walker that stays inside a scenario's services, remembers what each write did, and
    names what it creates by the naming rule once one is set (``naming``)."""

    def __init__(self, graph: ToolGraph, session: Session, rng: random.Random,
                 scenario: Scenario, **kw: Any) -> None:
        super().__init__(graph, session, rng, allowed=set(scenario.services),
                         min_services=min(3, len(scenario.services)), **kw)
        self.scenario = scenario
        self.reuse_asked = True
        self.naming: Any = None  # house_rules.Naming, set once the job's code is known
        self.picks: list[tuple[int, int]] = []  # (list step, item taken)
        self.fanned: list[int] = []             # list steps a fan-out acted on
        self.args: tuple[frozenset[str], dict[str, Any]] | None = None  # the stage's stated
        self.about: str | None = None  # what the stage's message is about (Stage.about)

    def _starts(self, accept: Callable[[ToolSpec], bool],
                lists: bool = False) -> list[list[str]]:
        """A job may open with a tool that needs nothing ("list the open tickets"), whatever
        it returns."""
        graph = self.graph
        bare = [n for n, sig in graph.signatures.items() if not sig.required
                and graph.has_out_edges(n)]
        starts = [t for t in dict.fromkeys(graph.start_tools() + bare)
                  if self._allowed(t) and accept(graph.specs[t])]
        return [starts] if starts else []

    def rule_step(self, spec: ToolSpec, bindings: list[Binding]) -> int | None:
        """Run a call a house rule adds (a re-check, a sign-off email): kept if it succeeds,
        unsaid in the request, feeding nothing. Returns its step index."""
        before = None if spec.read_only else record_keys(self.session.state(spec.service))
        result = self.session.call(spec.qualified_name, {b.param: b.value for b in bindings})
        if not result.get("success"):
            return None
        index = len(self.walk.steps)
        self.walk.steps.append(Step(spec, bindings, result.get("data")))
        self.walk.rule_steps.add(index)
        if before is not None:
            self.walk.effects[index] = effects(before, self.session.state(spec.service))
        return index

    def _common(self, index: int) -> None:
        """A field every item of a list shares (the vendor of "the invoices from Acme") is
        one value: later stages may use it ("email the invoices' billing address")."""
        step = self.walk.steps[index]
        for slot in step.spec.outputs:
            if slot.path[:1] != ("*",) or len(slot.path) != 2 or slot.kind in ("object",
                                                                                "array"):
                continue
            found = extract(step.result, slot.path)
            if (len(found) == len(step.result) and found[0] not in (None, "")
                    and all(v == found[0] for v in found) and found[0] not in self.own):
                self.available.append(Value(index, slot, found[0]))

    def rollback(self, point: Any) -> None:
        super().rollback(point)
        steps = len(self.walk.steps)
        self.picks = [p for p in self.picks if p[0] < steps]
        self.fanned = [i for i in self.fanned if i < steps]
        if self.naming is not None:
            self.naming.applied = [a for a in self.naming.applied if a[0] < steps]

    def execute(self, spec: ToolSpec, bindings: list[Any], need_report: bool = False,
                segment: bool = True, fits: Callable[[Any], bool] | None = None) -> Step | None:
        if self.args and spec.qualified_name in self.args[0]:
            bindings = _with_args(spec, bindings, self.args[1])
            if self.about and not spec.read_only:  # the message names what the job chose
                bindings = _carrying(spec, bindings, facts_about(
                    self.walk, self.about, len(self.walk.steps)))
        naming = self.naming if not spec.read_only else None
        if naming is not None:
            bindings = naming.apply(spec, bindings)
        step = super().execute(spec, bindings, need_report, segment, fits)
        if step is not None and isinstance(step.result, list) and len(step.result) > 1:
            self._common(len(self.walk.steps) - 1)
        if naming is not None:
            naming.kept(len(self.walk.steps) - 1) if step is not None else naming.dropped()
        return step


_ISO_DAY = re.compile(r"^(\d{4}-\d{2}-\d{2})(T\d{2}:\d{2}(?::\d{2})?)?$")


def dated(args: dict[str, Any], today: dt.date) -> dict[str, Any]:
    """A stage's stated values with its days moved to the world's today: an author writes them
    as of ``DEFAULT_TODAY`` (a start date three weeks on), and a world of another day keeps
    each as far ahead, by whole weeks (its weekday too), never nearer."""
    weeks = math.ceil((today - DEFAULT_TODAY).days / 7)
    if not weeks:
        return args
    out = dict(args)
    for key, value in args.items():
        m = _ISO_DAY.match(value) if isinstance(value, str) else None
        if m is not None:
            try:
                day = dt.date.fromisoformat(m.group(1)) + dt.timedelta(weeks=weeks)
            except ValueError:
                continue
            out[key] = day.isoformat() + (m.group(2) or "")
    return out


def _with_args(spec: ToolSpec, bindings: list[Binding], args: dict[str, Any]) -> list[Binding]:
    """The call with the values the stage states put in: the scenario's author knows what
    the job says here (an order of 3, not "the order's quantity")."""
    props = spec.parameters.get("properties", {})
    given = {k: v for k, v in args.items() if k in props}
    out = [Binding(b.param, given[b.param], None, (), b.interface)
           if b.param in given else b for b in bindings]
    have = {b.param for b in out}
    return out + [Binding(k, v, None, (), props[k].get("x-interface"))
                  for k, v in given.items() if k not in have]


def _carrying(spec: ToolSpec, bindings: list[Binding],
              facts: list[tuple[str, str]]) -> list[Binding]:
    """The call with its longest stated free text (a body) carrying ``facts``."""
    props = spec.parameters.get("properties", {})
    texts = [b for b in bindings if b.source is None and isinstance(b.value, str)
             and free_text(props.get(b.param, {}))]
    if not facts or not texts:
        return bindings
    longest = max(texts, key=lambda b: len(b.value))
    return [Binding(b.param, with_facts(b.value, facts), None, (), b.interface)
            if b is longest else b for b in bindings]


def _fresh(walker: ScenarioWalker, stage: Stage, accept: Callable[[ToolSpec], bool],
           sizes: tuple[int, int] | None) -> None:
    """Start the stage anew: with its stated values when they are all its call needs; else
    with what the request already said where it fits (the trip's city and dates for the
    hotel search after the flight search); else from values a user could state."""
    fits = None if sizes is None else (
        lambda found: isinstance(found, list) and sizes[0] <= len(found) <= sizes[1])
    for name in sorted(stage.tools, key=lambda _: walker.rng.random()):
        spec = walker.graph.specs.get(name)
        if spec is None or not accept(spec) or not walker._allowed(name):
            continue
        if set(spec.parameters.get("required", ())) <= set(stage.args):
            args = dated(stage.args, walker.session.world.today)
            if walker.execute(spec, _with_args(spec, [], args), fits=fits) is not None:
                return
        bindings = _restated(walker, spec)
        if bindings is not None and walker.execute(spec, bindings, fits=fits) is not None:
            return
    walker.start(accept=accept, items=sizes)


def _restated(walker: ScenarioWalker, spec: ToolSpec) -> list[Binding] | None:
    """The call's required values from what the request stated for earlier calls, in roles
    that fit (a flight's destination city is the hotel's city); None unless at least one is
    restated and every other one can be stated fresh."""
    said: dict[str, list[tuple[str | None, Any]]] = {}
    for step in walker.walk.steps:
        roles = {s.path[0]: s.role for s in step.spec.inputs if len(s.path) == 1}
        for b in step.bindings:
            if b.source is None and b.interface is not None:
                said.setdefault(b.interface, []).append((roles.get(b.param), b.value))
    props = spec.parameters.get("properties", {})
    out, restated = [], 0
    world, rng = walker.session.world, walker.rng
    for slot in spec.inputs:
        param = slot.path[0]
        if not slot.required or len(slot.path) != 1:
            continue
        stated = said.get(slot.interface, [])
        if slot.interface == "Date":  # the day of a stated time: the health day's date
            stated = [(r, v[:10]) for r, v in said.get("DateTime", [])
                      if isinstance(v, str) and len(v) >= 10] + stated
        value = next((v for role, v in reversed(stated)
                      if compatible(slot.interface, role, slot.role)), MISSING)
        if value is not MISSING:
            restated += 1
        else:
            value = fresh_value(param, props.get(param, {}), world, rng,
                                rng.choice(world.people[1:]), spec.service)
        if value is MISSING:
            return None
        out.append(Binding(param, value, None, (), slot.interface))
    have = {b.param for b in out}
    for param in spec.parameters.get("required", ()):
        if param not in have:
            value = fresh_value(param, props.get(param, {}), world, rng,
                                rng.choice(world.people[1:]), spec.service)
            if value is MISSING:
                return None
            out.append(Binding(param, value))
    # "from 2026-03-24 to 2026-03-24": one stated date cannot be both ends of a range
    return out if restated and ranges_in_order(out) else None


_ACCEPT: dict[tuple[frozenset[str], bool], Callable[[ToolSpec], bool]] = {}


def _accept(tools: list[str], listing: bool) -> Callable[[ToolSpec], bool]:
    """One filter object per (tools, list or not): walks memoize their choices by filter."""
    key = (frozenset(tools), listing)
    if key not in _ACCEPT:
        names, shape = key[0], returns_list if listing else single_result
        _ACCEPT[key] = lambda spec: spec.qualified_name in names and shape(spec)
    return _ACCEPT[key]


_EACH: dict[frozenset[str], Callable[[ToolSpec], bool]] = {}


def _writes(tools: list[str]) -> Callable[[ToolSpec], bool]:
    names = frozenset(tools)
    if names not in _EACH:
        _EACH[names] = lambda spec: spec.qualified_name in names
    return _EACH[names]


def _run(walker: ScenarioWalker, stage: Stage, first: bool, listed: int | None) -> None:
    steps = walker.walk.steps
    listing = stage.take != "one"
    accept = _accept(stage.tools, listing)
    if stage.each:
        assert listed is not None
        fan_out(walker, listed, _writes(stage.tools))
        if listed not in walker.fanned:
            walker.fanned.append(listed)
        return
    sizes = stage.items if listing else None
    if first:
        walker.start(accept=accept, items=sizes)
    else:
        try:
            walker.extend(accept=accept)
        except Rejected as exc:
            if exc.reason != "dead_end" or not stage.fresh:
                raise
            _fresh(walker, stage, accept, sizes)  # a new linked walk: the user says what
        if sizes is not None:
            found = steps[-1].result
            if not isinstance(found, list) or not sizes[0] <= len(found) <= sizes[1]:
                raise Rejected("small_list", tools=(steps[-1].spec.qualified_name,))
    if stage.take == "pick":
        _pick(walker, stage, len(steps) - 1)


def _pick(walker: ScenarioWalker, stage: Stage, index: int) -> None:
    """Take the one item of step ``index``'s list that a business criterion names: the
    stage's own (``Stage.by``), else a field whose meaning is plain (``choices.plain``).

    Raises:
        Rejected: ``tied_pick`` when every criterion leaves two items level (or nearly), so
            the request would have two right answers; ``no_criterion`` when none applies.
    """
    step = walker.walk.steps[index]
    kind = noun(step.spec)
    slots = {s.path[1]: s for s in orderable(step.spec)}
    if stage.by:
        options = [(Choice(slots[p.field], p.order, p.says), p.among) for p in stage.by
                   if p.field in slots]
    else:
        options = [(Choice(s, order, says), {}) for s in slots.values()
                   for order in ("min", "max")
                   if (says := plain(s, order, kind, step.spec.returns)) is not None]
    walker.rng.shuffle(options)
    reason = "no_criterion"
    for option, among in options:
        # the items the criterion's words allow ("the open form ..."): the pick is among them
        allowed = [k for k, it in enumerate(step.result) if isinstance(it, dict) and all(
            same_value(v, it.get(f)) for f, v in among.items())]
        if not allowed:
            reason = "none_among"
            continue
        item, why = choose([step.result[k] for k in allowed], option.slot, option.order)
        if item is None:
            reason = "tied_pick" if why == "tied_pick" else reason
            continue
        item = allowed[item]
        walker.walk.segments[-1].text = (phrase(step.spec, walker.walk, step.bindings)
                                         + f", and take {option.says}")
        walker.adopt(index, item)
        walker.walk.choices[index] = (option.says, item)
        walker.walk.motifs.append("aggregation")
        walker.picks.append((index, item))
        return
    raise Rejected(reason, tools=(step.spec.qualified_name,))


def run_stages(walker: ScenarioWalker, stages: list[Stage],
               on_anchor: Callable[[ScenarioWalker], None] | None = None) -> None:
    """Run the stages in order; an optional stage that fits nothing is skipped.

    Args:
        on_anchor: Called once the first stage has run (the job's anchor is known).

    Raises:
        Rejected: a required stage fit nothing in this world and seed.
    """
    listed: int | None = None
    for i, stage in enumerate(stages):
        point = walker.checkpoint()
        segments = len(walker.walk.segments)
        walker.args = (frozenset(stage.tools), dated(stage.args, walker.session.world.today)) \
            if stage.args else None
        walker.about = stage.about
        walker.used = set()  # a stage may use a tool an earlier stage used (a second email)
        try:
            _run(walker, stage, i == 0, listed)
        except Rejected:
            walker.rollback(point)
            del walker.walk.segments[segments:]
            if stage.optional and i > 0:
                continue
            raise
        if stage.optional:
            walker.walk.extras.update(range(point[1], len(walker.walk.steps)))
        if stage.about:
            for index in range(point[1], len(walker.walk.steps)):
                if walker.walk.steps[index].spec.qualified_name in stage.tools:
                    walker.walk.about[index] = stage.about
        if stage.take == "all":
            listed = len(walker.walk.steps) - 1
        elif not stage.each:
            listed = None
        if i == 0 and on_anchor is not None:
            on_anchor(walker)
    walker.args = walker.about = None
    _merge_each(walker)


def _merge_each(walker: Walker) -> None:
    """"For each invoice found, pay it. For each invoice found, email its vendor." reads
    "For each invoice found, pay it, and email its vendor."."""
    merged: list[Segment] = []
    for segment in walker.walk.segments:
        prev = merged[-1] if merged else None
        lead = _each_lead(segment)
        if prev is not None and lead is not None and _each_lead(prev) == lead:
            assert prev.text is not None and segment.text is not None
            prev.text = prev.text + ", and " + segment.text[len(lead):]
            prev.steps = prev.steps + segment.steps
            continue
        merged.append(segment)
    walker.walk.segments = merged


def _each_lead(segment: Segment) -> str | None:
    found = _LEAD.match(segment.text or "")
    return found.group(0) if found else None


_LEAD = re.compile(r"for each [^,]*? found(?: other than [^,]+)?, ")
