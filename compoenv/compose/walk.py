"""Random walk over the tool graph, executing each step on a live World to bind real values."""

from __future__ import annotations

import random
from dataclasses import replace
from collections import Counter
from itertools import repeat
from typing import Any, Callable, Iterator

from compoenv.compose.records import (
    Binding, Rejected, Segment, Step, Value, Walk, effects, record_keys,
)
from compoenv.compose.identity import call_problem
from compoenv.compose.options import Keep, drawn, lists_options, weighted
from compoenv.compose.steps import (
    _PULL, as_list_path, bind, in_order, failure, feeds, looks_up_again, ranges_in_order,
    reportable, single_result, single_values, snapshot, toward, useful, worth_reporting,
)
from compoenv.compose.values import fresh_arguments, record_arguments
from compoenv.graph import Edge, ToolGraph
from compoenv.schema import extract
from compoenv.service import ToolSpec
from compoenv.session import Session

__all__ = ["Binding", "Step", "Walk", "Walker", "Rejected", "Segment", "random_walk"]


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
        require: Services the walk should reach: it starts in or next to them and heads
            there until it has (whether it did is for the composer to check).
        misses: Counts candidate calls tried and dropped, by (why, tool); each ``why`` is
            explained in ``compoenv.compose.doctor.REASONS``.
    """

    def __init__(self, graph: ToolGraph, session: Session, rng: random.Random,
                 allowed: set[str] | None = None, cross_bias: float = 3.0,
                 min_services: int = 1, attempts: int = 8,
                 require: frozenset[str] = frozenset(),
                 misses: Counter[tuple[str, str]] | None = None) -> None:
        self.graph, self.session, self.rng = graph, session, rng
        self.allowed, self.cross_bias = allowed, cross_bias
        self.min_services, self.attempts = min_services, attempts
        self.require, self.misses = require, misses
        self.walk = Walk()
        # a job acts on what it found and what it was asked about ("look up order X, then
        # cancel it"); a free walk would carry nothing so and repeat the request instead
        self.reuse_asked = False
        self.available: list[Value] = []
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
        accept = accept or single_result
        allowed = frozenset(self.allowed) if self.allowed is not None else None
        lists = items is not None
        pools = self.graph.memo(("starts", accept, allowed, self.require, lists),
                                lambda: self._starts(accept, lists))
        if not pools:
            raise Rejected("no_start_tool")
        starts = pools[0] if len(pools) == 1 else self.rng.choice(pools)
        tried = self.rng.sample(starts, min(self.attempts, len(starts)))
        for name in tried:
            spec = self.graph.specs[name]
            args = record_arguments(spec, self.session.service(spec.service), self.rng)
            if args is None and spec.simulated:  # no records yet: a user states the values
                args = fresh_arguments(spec, self.session.world, self.rng)
            if args is None:
                self._miss("no_arguments", spec)
                continue
            kinds = {slot.path[0]: slot.interface for slot in spec.inputs}
            bindings = in_order([Binding(k, v, interface=kinds.get(k)) for k, v in args.items()])
            if not ranges_in_order(bindings) or call_problem(
                    spec, {b.param: b.value for b in bindings}, self.session.world) is not None:
                continue
            if step := self.execute(spec, bindings, fits=None if items is None else (
                    lambda found, low=items[0], high=items[1]:
                    isinstance(found, list) and low <= len(found) <= high)):
                return step
        raise Rejected("start_failed", tools=tuple(tried))

    def _starts(self, accept: Callable[[ToolSpec], bool],
                lists: bool = False) -> list[list[str]]:
        """Start tools ``accept`` takes, in pools a walk draws one of. With ``require``: those
        in the required services, and those next to them (else the nearest, else all). A walk
        that opens on a list may also open on a tool that needs nothing ("list my open
        issues"): most list operations of an imported API take only optional filters."""
        graph = self.graph
        bare = [n for n, sig in graph.signatures.items() if not sig.required
                and (sig.returns_list if lists else sig.read_only) and graph.has_out_edges(n)]
        starts = [t for t in dict.fromkeys(graph.start_tools() + bare) if self._allowed(t)
                  and accept(graph.specs[t])]
        if not self.require:
            return [starts] if starts else []
        near = toward(self.graph, self.require)
        pools = [[t for t in starts if near.get(t) == hops] for hops in (0, 1)]
        return [p for p in pools if p] or [[t for t in starts if t in near] or starts]

    def checkpoint(self) -> tuple[Any, int, int, set[str]]:
        """The walk and the world as they are now, to come back to after a failed attempt."""
        return (self.session.checkpoint(), len(self.walk.steps), len(self.available),
                set(self.used))

    def rollback(self, point: tuple[Any, int, int, set[str]]) -> None:
        session, steps, available, used = point
        self.session.rollback(session)
        del self.walk.steps[steps:]
        self.walk.effects = {i: e for i, e in self.walk.effects.items() if i < steps}
        del self.available[available:]
        self.walk.segments = [s for s in self.walk.segments if s.steps[0] < steps]
        self.walk.left_out = {i: k for i, k in self.walk.left_out.items() if i < steps}
        self.walk.choices = {i: c for i, c in self.walk.choices.items() if i < steps}
        self.walk.about = {i: a for i, a in self.walk.about.items() if i < steps}
        self.walk.extras = {i for i in self.walk.extras if i < steps}
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
                self.available.append(Value(index, replace(slot, path=path, required=True),
                                             values[0]))

    def execute(self, spec: ToolSpec, bindings: list[Binding], need_report: bool = False,
                segment: bool = True, fits: Callable[[Any], bool] | None = None) -> Step | None:
        """Run one candidate step; keep it if it succeeds, finds something (that ``fits``
        accepts) and changes what a write should change. Returns the kept step (with its own
        sentence unless ``segment`` is False: a motif phrases it)."""
        state = None if spec.read_only else snapshot(self.session.state(spec.service))
        before = None if spec.read_only else record_keys(self.session.state(spec.service))
        result = self.session.call(spec.qualified_name, {b.param: b.value for b in bindings})
        if not useful(result) or (fits is not None and not fits(result["data"])):
            self._miss(failure(result), spec)
            return None
        if state is not None and state == snapshot(self.session.state(spec.service)):
            self._miss("changes_nothing", spec)
            return None  # a write that changes nothing (marking a read email as read)
        if state is None and any(result["data"] == s.result for s in self.walk.steps):
            self._miss("same_result", spec)
            return None  # a read that finds what an earlier step already found
        index = len(self.walk.steps)
        step = Step(spec, bindings, result["data"])
        if need_report and spec.read_only and not reportable(step, index, set()):
            self._miss("not_reportable", spec)
            return None
        self.walk.steps.append(step)
        if before is not None:  # what the write did, record by record: the rubric checks it
            self.walk.effects[index] = effects(before, self.session.state(spec.service))
        if segment:
            self.walk.segments.append(Segment([index]))
        self.used.add(spec.qualified_name)
        self.available.extend(v for v in single_values(index, spec, step.result)
                              if v.value not in self.own)
        return step

    def extend(self, need_report: bool = False,
               accept: Callable[[ToolSpec], bool] | None = None) -> Step:
        """Add one step fed by an earlier step's output: the last step's first, then older.

        Args:
            need_report: The step must leave a value worth reporting (it may end the walk).
            accept: Only tools it accepts may be the next step.
        """
        accept = accept or single_result  # a list result feeds nothing unless a motif picks
        tried = 0
        self._visited = set(self.walk.services)
        last = len(self.walk.steps) - 1
        consumed = {b.source for s in self.walk.steps for b in s.bindings}
        # a read nothing uses would be a pointless step: older steps may feed the next one
        # only when the last step is a write, or its result is already used
        oldest = 0 if (not self.walk.steps[last].spec.read_only or last in consumed) else last
        stated = self.stated()
        # a request is about one thing: once the last step is used, the next one acts on
        # what the request started from (the lead, the invoice) before anything found later
        order = list(range(last, oldest - 1, -1))
        if oldest == 0 and last > 0:
            order = [0] + order[:-1]
        for source in order:
            # a value the user stated, found again ("the venue's city" of the venue looked
            # up in Lisbon), carries nothing: the request would just say Lisbon; nor does a
            # value a step was asked with and echoes (the product rating's product name)
            asked = set() if self.reuse_asked else stated | {
                _key(b.value) for s in self.walk.steps[:source + 1] for b in s.bindings}
            fresh = {id(v) for v in self.available  # each value once, not once per edge
                     if v.step == source and _key(v.value) not in asked}
            draws = self._draws(source, accept, fresh, need_report)
            while tried < self.attempts and (drawn_option := next(draws, None)) is not None:
                tried += 1
                edge, value = drawn_option
                spec = self.graph.specs[edge.target]
                bindings = bind(spec, edge, value, self.available, self.session, self.rng,
                                self.walk.steps[source].spec)
                if bindings is None:
                    self._miss("unbindable", spec)
                elif step := self.execute(spec, bindings, need_report):
                    return step
        raise Rejected("dead_end", f"no executable step after {len(self.walk.steps)}",
                       (self.walk.steps[last].spec.qualified_name,))

    def stated(self) -> set[str]:
        """The values the request states outright (casefolded text)."""
        return {_key(b.value) for s in self.walk.steps for b in s.bindings if b.source is None}

    def finish(self) -> Walk:
        """Pick the value to report when the walk ends in a read."""
        last = self.walk.steps[-1]
        if last.spec.read_only and self.walk.report is None:
            # what the request states, and what the last call was asked with: reporting
            # either back is no answer ("the busiest day's website" of the website asked)
            index = len(self.walk.steps) - 1
            # nor what an earlier step already found (the lead's name of the contact found
            # by name): the answer is something only the last call tells
            stated = self.stated() | {_key(b.value) for b in last.bindings} | {
                _key(v.value) for v in self.available if v.step < index}
            choices = reportable(last, index, stated) or [
                v for v in self.available if v.step == index and v.slot.path[0][:1] == "#"
                and worth_reporting(v) and str(v.value).casefold() not in stated]
            if not choices:
                raise Rejected("nothing_to_report", tools=(last.spec.qualified_name,))
            pick = self.rng.choice(choices)
            self.walk.report = Binding("answer", pick.value, pick.step, pick.slot.path,
                                       pick.slot.interface)
        return self.walk

    # -- choices ----------------------------------------------------------------------------
    def _allowed(self, tool: str) -> bool:
        return self.allowed is None or self.graph.specs[tool].service in self.allowed

    def _miss(self, why: str, spec: ToolSpec) -> None:
        if self.misses is not None:
            self.misses[(why, spec.qualified_name)] += 1

    def _draws(self, source: int, accept: Callable[[ToolSpec], bool], fresh: set[int],
               need_report: bool) -> Iterator[tuple[Edge, Value]]:
        """The options of step ``source`` fed by its ``fresh`` values (by id), in a random
        order weighted by ``_weights``, each once: listed for a tool with a few hundred
        edges, drawn from the graph's index for one with thousands (``compose.options``)."""
        # the last call of a walk still short of services must reach a new one: one more
        # in the same service could only be rejected
        new_only = need_report and len(self._visited) < self.min_services

        def listed() -> list[tuple[Edge, Value]]:
            options = [(e, v) for e, v in self._options(source, accept) if id(v) in fresh]
            options = self._own_roles_first(options)
            if new_only:
                options = [(e, v) for e, v in options if e.target_service not in self._visited]
            return options

        tool = self.walk.steps[source].spec.qualified_name
        if self.require or lists_options(self.graph, tool):
            options = listed()
            return weighted(options, self._weights([e for e, _ in options]), self.rng)
        values = {key: v for key, v in self._values(source).items() if id(v) in fresh}
        bias, short = self.cross_bias, len(self._visited) < self.min_services
        weights = (0.0, 0.0, bias * 4) if new_only else (1.0, bias, bias * (4 if short else 1))
        return drawn(self.graph, tool, values, self._visited, weights,
                     self._keeps(source, accept, values), self.rng)

    def _values(self, source: int) -> dict[tuple[str, tuple[str, ...]], Value]:
        """Step ``source``'s values by the graph output they come from (a picked list item,
        "#3", answers the graph's list edges, "*")."""
        return {(v.slot.interface, as_list_path(v.slot.path)): v
                for v in self.available if v.step == source}

    def _keeps(self, source: int, accept: Callable[[ToolSpec], bool] | None,
               values: dict[tuple[str, tuple[str, ...]], Value], own_roles: bool = True,
               ) -> Keep:
        """What ``_options`` (and ``_own_roles_first`` with ``own_roles``) keep of step
        ``source``'s edges, asked of one edge at a time."""
        spec, graph, takes = self.walk.steps[source].spec, self.graph, {}

        def keep(edge: Edge, value: Value) -> bool:
            if edge.target in self.used or not (
                    self.allowed is None or edge.target_service in self.allowed):
                return False
            take = takes.get(edge.target)
            if take is None:
                target = graph.specs[edge.target]
                take = takes[edge.target] = not looks_up_again(spec, target) and (
                    accept is None or accept(target))
            role = self._role(edge)
            if not take or not own_roles or role is None or value.slot.role == role:
                return take
            return not any(v.slot.role == role and v.slot.interface == edge.interface
                           for v in values.values())
        return keep

    def _role(self, edge: Edge) -> str | None:
        """The role of the input ``edge`` fills."""
        return self.graph.memo(("role", edge.target, edge.param), lambda: next(
            (s.role for s in self.graph.specs[edge.target].inputs if s.path == (edge.param,)),
            None))

    def options_in_order(self, source: int, accept: Callable[[ToolSpec], bool],
                         keep: Keep, order: Callable[[list[Any]], Iterator[Any]],
                         interfaces: Callable[[str], bool] = lambda _: True,
                         ) -> Iterator[tuple[Edge, Value]]:
        """Step ``source``'s options into tools ``accept`` takes that ``keep`` keeps, fed by
        values of ``interfaces``, each as likely: ``order`` (a random order) of their list,
        or drawn from the graph's index for a tool with thousands of edges (a search for a
        few: it stops where draws keep missing). The step's own service is left out."""
        tool = self.walk.steps[source].spec
        service = tool.service

        def listed() -> list[tuple[Edge, Value]]:
            return [(e, v) for e, v in self._options(source, accept)
                    if e.target_service != service and interfaces(e.interface) and keep(e, v)]

        if lists_options(self.graph, tool.qualified_name):
            return order(listed())
        values = {k: v for k, v in self._values(source).items() if interfaces(k[0])}
        base = self._keeps(source, accept, values, own_roles=False)
        return drawn(self.graph, tool.qualified_name, values, set(), (0.0, 1.0, 1.0),
                     lambda e, v: base(e, v) and keep(e, v), self.rng)

    def _options(self, source: int, accept: Callable[[ToolSpec], bool] | None = None,
                 ) -> list[tuple[Edge, Value]]:
        """Edges out of step ``source`` that one of its values can feed (into tools ``accept``
        takes), with that value; in the order the walk's values were found."""
        spec = self.walk.steps[source].spec
        # a picked list item ("#3", "email") answers the graph's list edges ("*", "email")
        values = self._values(source)
        by_output = self.graph.memo(("feeds", spec.qualified_name, accept),
                                    lambda: feeds(self.graph, spec, accept), size=_edges)
        used, allowed = self.used, self.allowed
        options: list[tuple[Edge, Value]] = []
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

    def _own_roles_first(self, options: list[tuple[Edge, Value]]) -> list[tuple[Edge, Value]]:
        """Where one step offers several values for a parameter, the value of the
        parameter's own role: a payment's value sends the next payment, not its fee."""
        if len(options) < 2:
            return options
        roles = [self._role(e) for e, _ in options]
        own = {(e.target, e.param) for (e, v), role in zip(options, roles)
               if role is not None and v.slot.role == role}
        if not own:
            return options
        return [(e, v) for (e, v), role in zip(options, roles)
                if (e.target, e.param) not in own or v.slot.role == role]

    def _weights(self, edges: list[Edge]) -> list[float]:
        bias = self.cross_bias
        if self.require and not self.require <= self._visited:
            return self._pulled(edges)
        if len(self._visited) >= self.min_services:
            return [bias if e.cross_service else 1.0 for e in edges]
        visited = self._visited  # still short of services: head somewhere new
        return [(bias if e.cross_service else 1.0) * (1.0 if e.target_service in visited else 4.0)
                for e in edges]


    def _pulled(self, edges: list[Edge]) -> list[float]:
        """Weights that head for the required services: edges into them get 80% of the odds,
        and of the rest, edges that lead closer weigh more."""
        near = toward(self.graph, self.require)
        hops = [near.get(e.target, 3) for e in edges]
        weights = [(self.cross_bias if e.cross_service else 1.0) * _PULL[h]
                   for e, h in zip(edges, hops)]
        into = sum(w for w, h in zip(weights, hops) if h == 0)
        rest = sum(weights) - into
        if into and rest:
            weights = [w * 4.0 * rest / into if h == 0 else w for w, h in zip(weights, hops)]
        return weights


def _edges(by_output: dict[Any, list[Edge]]) -> int:
    return sum(map(len, by_output.values()))


def _key(value: Any) -> str:
    return str(value).casefold()


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
