"""Tool-dependency graph: an edge u -> v when an output of u fits a required input of v: the
same interface, and roles that may feed each other (``compoenv.roles.compatible``).

Edges are never all materialised: a library of 50,000 tools has millions of them. The graph
indexes its tools' slots by (interface, role) and computes a tool's edges when a walk asks for
them, so its memory and build time grow with the number of tools, not with producer x
consumer pairs. networkx is only for export and analysis (``graph``, ``to_json``,
``service_graph``).
"""

from __future__ import annotations

import heapq
from operator import itemgetter
from typing import (
    Any, Callable, Iterable, Iterator, Mapping, NamedTuple, Optional, Union,
)

import networkx as nx

from compoenv.interfaces import STATABLE
from compoenv.roles import compatible
from compoenv.schema import Slot
from compoenv.service import ToolSpec
from compoenv.signature import ToolSignature

__all__ = ["WORDS", "CROSS_API", "crosses", "ToolGraph", "Edge", "Bucket", "IndexSlot"]


# free text: a record's text may be read on (translated, looked up), not written on
WORDS = frozenset({"Text", "EmailSubject"})
# values that name a thing of the world any API may act on (a person, a place, a company, a
# link, a parcel): they join a confined API to other services; its other values (an amount,
# a currency, a date, an id of its own) join only within its API ("scope")
CROSS_API = frozenset({
    "PersonName", "EmailAddress", "PhoneNumber", "City", "StreetAddress", "PostalCode",
    "CountryCode", "OrganizationName", "Url", "AirportCode", "FlightNumber", "TrackingNumber",
    "ProductName"})
# of those, what crosses without a role: a place or a code that names one thing
_PLACES = frozenset({"City", "StreetAddress", "PostalCode", "AirportCode", "FlightNumber",
                     "TrackingNumber"})

# edges kept in per-tool views (a tool's out-edges, the ones a walk may take from it); past
# this many, the views used least recently are dropped (and computed again when asked)
_CACHED_EDGES = 1_000_000
# (service, service) answers of ``related`` kept; past this many they are asked again
_CACHED_PAIRS = 250_000


class Edge(NamedTuple):
    """``source``'s output at ``path`` (an ``interface`` value) fills ``param`` of ``target``.

    A tuple of strings: tens of thousands of them cost the garbage collector nothing.
    """

    source: str
    target: str
    interface: str
    path: tuple[str, ...]
    param: str
    target_service: str
    cross_service: bool


class IndexSlot(NamedTuple):
    """A slot of a tool in the index: the tool's position, the slot's place among its inputs
    (or outputs), the tool, the slot's parameter (input) or path (output), the service."""

    position: int
    index: int
    tool: str
    where: Any
    service: str


Role = Optional[str]


class Bucket:
    """The slots of one (interface, role), in tool order, also grouped by service."""

    __slots__ = ("key", "slots", "by_service")

    def __init__(self, key: tuple[str, Role]) -> None:
        self.key = key
        self.slots: list[IndexSlot] = []
        self.by_service: dict[str, list[IndexSlot]] = {}

    def add(self, slot: IndexSlot) -> None:
        self.slots.append(slot)
        self.by_service.setdefault(slot.service, []).append(slot)


_Index = dict[str, dict[Role, Bucket]]
_Candidate = tuple[int, int, int, IndexSlot]  # (target position, its input, the output), input
_ORDER = itemgetter(0, 1, 2)  # edges by target, then its input, then the source's output


class _Specs(Mapping[str, ToolSpec]):
    """Full ToolSpecs by qualified name, resolved on first use (``resolve``) and kept."""

    def __init__(self, names: Mapping[str, ToolSignature], given: dict[str, ToolSpec],
                 resolve: Callable[[str], ToolSpec] | None) -> None:
        self._names, self._cache, self._resolve = names, given, resolve

    def __getitem__(self, name: str) -> ToolSpec:
        spec = self._cache.get(name)
        if spec is None:
            if name not in self._names:
                raise KeyError(name)
            if self._resolve is None:
                raise LookupError(f"the graph holds only the signature of {name!r}: build it "
                                  f"with resolve= (e.g. registry.spec) to read full specs")
            spec = self._cache[name] = self._resolve(name)
        return spec

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


class ToolGraph:
    """Typed dependency graph over a set of tools (a networkx MultiDiGraph on request).

    Args:
        tools: The tools, as signatures (``registry.signatures()``) or full specs; nodes are
            their qualified names.
        related: Whether a request may go from one service to another (by name); edges
            between unrelated services are left out (default: every pair is related).
        resolve: The full ToolSpec of a qualified name (``registry.spec``), for ``specs`` of
            tools given as signatures.
        scope: A service's API and whether it is confined to it (``registry.scope``): an
            imported API's amounts, dates and codes join only within that API; only values
            that ``crosses`` accepts join it to other services.

    Attributes:
        signatures: Each tool's signature, by qualified name, in the order given.
        specs: Each tool's full ToolSpec, by qualified name, resolved lazily.
    """

    def __init__(self, tools: Iterable[Union[ToolSignature, ToolSpec]],
                 related: Callable[[str, str], bool] | None = None,
                 resolve: Callable[[str], ToolSpec] | None = None,
                 scope: Callable[[str], tuple[str, bool]] | None = None) -> None:
        self.signatures: dict[str, ToolSignature] = {}
        given: dict[str, ToolSpec] = {}
        for tool in tools:
            if isinstance(tool, ToolSignature):
                self.signatures[tool.qualified_name] = tool
            else:
                self.signatures[tool.qualified_name] = ToolSignature.of(tool)
                given[tool.qualified_name] = tool
        self.specs: Mapping[str, ToolSpec] = _Specs(self.signatures, given, resolve)
        self._related, self._scope = related, scope
        self._scopes: dict[str, tuple[str, bool]] = {}
        self._near: dict[str, dict[str, bool]] = {}  # service -> service -> related
        self._pairs = 0
        self._consumers: _Index = {}  # required inputs an output may fill
        self._producers: _Index = {}  # outputs, for edges into a tool
        for position, (name, sig) in enumerate(self.signatures.items()):
            for k, slot in enumerate(sig.outputs):
                _bucket(self._producers, slot).add(
                    IndexSlot(position, k, name, slot.path, sig.service))
            for j, slot in enumerate(sig.inputs):
                if _takes(sig, slot):
                    _bucket(self._consumers, slot).add(
                        IndexSlot(position, j, name, slot.path[0], sig.service))
        self._fits: dict[tuple[str, Role, bool], tuple[Role, ...]] = {}
        self._reach: dict[tuple[str, str, Role, bool], bool] = {}
        self._views: dict[Any, tuple[Any, int]] = {}  # per-tool views: (view, its edges)
        self._cached = 0
        self._starts: list[str] | None = None
        self._memo: dict[Any, Any] = {}
        self._nx: nx.MultiDiGraph | None = None

    # -- edges ------------------------------------------------------------------------------
    def out_edges(self, tool: str) -> list[Edge]:
        """Edges leaving ``tool``: by target (in tool order), then the target's input, then
        ``tool``'s output. Computed on first use and kept (the most recent ones)."""
        return self.memo(("out", tool), lambda: self._edges_from(tool)
                         if tool in self.signatures else [], size=len)

    def in_edges(self, tool: str) -> list[Edge]:
        """Edges into ``tool``: by source (in tool order), then ``tool``'s input, then the
        source's output (the order in which the sources' ``out_edges`` list them)."""
        sig = self.signatures.get(tool)
        if sig is None:
            return []
        found = []
        for j, slot in enumerate(sig.inputs):
            if not _takes(sig, slot) or slot.interface not in self._producers:
                continue
            by_role = self._producers[slot.interface]
            for role in self._roles_feeding(slot.interface, slot.role):
                found.extend((p.position, j, p.index, p, slot) for p in by_role[role].slots
                             if p.tool != tool
                             and self.joins(p.service, sig.service,
                                            crosses(slot.interface, role)))
        found.sort(key=lambda f: f[:3])
        return [Edge(p.tool, tool, slot.interface, p.where, slot.path[0], sig.service,
                     p.service != sig.service) for *_, p, slot in found]

    def has_out_edges(self, tool: str) -> bool:
        """Whether any edge leaves ``tool`` (without listing them)."""
        if ("out", tool) in self._views:
            return bool(self._views[("out", tool)][0])
        sig = self.signatures.get(tool)
        if sig is None:
            return False
        for slot, bucket in self._buckets_fed(sig):
            if self._reaches(sig.service, bucket, crosses(slot.interface, slot.role)):
                return True
            own = bucket.by_service.get(sig.service, ())
            if any(c.tool != tool for c in own) and self.related(sig.service, sig.service):
                return True
        return False

    def related(self, a: str, b: str) -> bool:
        """Whether the graph joins service ``a`` to service ``b`` (``related``, remembered)."""
        near = self._near_of(a)
        fits = near.get(b)
        if fits is None:
            if self._pairs >= _CACHED_PAIRS:
                self._near.clear()
                self._pairs = 0
                near = self._near_of(a)
            fits = near[b] = self._related is None or self._related(a, b)
            self._pairs += 1
        return fits

    def joins(self, a: str, b: str, cross: bool) -> bool:
        """Whether a value found in service ``a`` may fill an input of service ``b``: the
        services are ``related``, and where either is confined to its API (``scope``), they
        are of one API or the value ``cross``es APIs (``crosses``)."""
        if not self.related(a, b):
            return False
        if a == b or cross or self._scope is None:
            return True
        api, confined = self._scope_of(b)
        other, also = self._scope_of(a)
        return other == api or not (confined or also)

    def _scope_of(self, service: str) -> tuple[str, bool]:
        scope = self._scopes.get(service)
        if scope is None:
            scope = self._scopes[service] = self._scope(service) if self._scope else (
                service, False)
        return scope

    def _near_of(self, service: str) -> dict[str, bool]:
        """What ``related`` answered so far for pairs from ``service``."""
        near = self._near.get(service)
        if near is None:
            near = self._near[service] = {}
        return near

    def start_tools(self) -> list[str]:
        """Tools a user's request can start from: every required input is user-statable."""
        if self._starts is None:
            self._starts = [name for name, sig in self.signatures.items()
                            if _statable(sig) and self.has_out_edges(name)]
        return self._starts

    def memo(self, key: Any, compute: Callable[[], Any],
             size: Callable[[Any], int] | None = None) -> Any:
        """``compute()`` once per key for this graph (derived views of its fixed tools).

        Args:
            key: What the view is of.
            compute: Computes the view.
            size: For a view of one tool (its edges, say), how many edges it holds: such
                views are kept up to a bound on their total, the least recently used dropped
                first, so a walk over a large library holds the views of the tools it is
                near, not of every tool it ever passed.
        """
        if size is None:
            if key not in self._memo:
                self._memo[key] = compute()
            return self._memo[key]
        kept = self._views.pop(key, None)
        if kept is None:
            view = compute()
            kept = (view, size(view))
            self._cached += kept[1]
            while self._views and self._cached > _CACHED_EDGES:
                self._cached -= self._views.pop(next(iter(self._views)))[1]
        self._views[key] = kept  # the most recently used last
        return kept[0]

    def iter_out_edges(self, tool: str) -> Iterator[Edge]:
        """The edges ``out_edges`` lists, in its order, computed one at a time: for a search
        that stops at the first edge that fits ("can any of its items feed a write?")."""
        kept = self._views.get(("out", tool))
        sig = self.signatures.get(tool)
        if kept is not None or sig is None:
            yield from kept[0] if kept is not None else ()
            return
        for _, _, k, c in heapq.merge(*self._candidates(tool, sig), key=_ORDER):
            yield Edge(tool, c.tool, sig.outputs[k].interface, sig.outputs[k].path, c.where,
                       c.service, c.service != sig.service)

    def _edges_from(self, tool: str) -> list[Edge]:
        sig = self.signatures[tool]
        found: list[_Candidate] = []
        for k, slot in enumerate(sig.outputs):
            for bucket in self._buckets_of(slot):
                found.extend([(c.position, c.index, k, c) for c in self._reachable(
                    sig.service, bucket, crosses(slot.interface, slot.role)) if c.tool != tool])
        found.sort(key=_ORDER)
        outputs = sig.outputs
        return [Edge(tool, c.tool, outputs[k].interface, outputs[k].path, c.where, c.service,
                     c.service != sig.service) for _, _, k, c in found]

    def fills(self, tool: str) -> list[tuple[int, Bucket]]:
        """Each output of ``tool`` (by its index) with each bucket of inputs it may fill: what
        a walk draws its next step from without listing the edges (``compose.options``)."""
        sig = self.signatures[tool]
        return [(k, bucket) for k, slot in enumerate(sig.outputs)
                for bucket in self._buckets_of(slot)]

    def edge(self, tool: str, k: int, target: IndexSlot) -> Edge:
        """The edge from ``tool``'s output ``k`` into the input ``target`` of the index."""
        sig = self.signatures[tool]
        out = sig.outputs[k]
        return Edge(tool, target.tool, out.interface, out.path, target.where, target.service,
                    target.service != sig.service)

    def _reachable(self, service: str, bucket: Bucket, cross: bool) -> list[IndexSlot]:
        """The inputs of ``bucket`` in services ``service`` joins (``cross``: by a value
        that crosses APIs): the same for every tool of the service, so kept as a view
        (``related`` asked once per service pair)."""
        def compute() -> list[IndexSlot]:
            return [c for other, inputs in bucket.by_service.items()
                    if self.joins(service, other, cross) for c in inputs]
        return self.memo(("reach", service, bucket.key, cross), compute, size=len)

    def _candidates(self, tool: str, sig: ToolSignature) -> list[Iterator[_Candidate]]:
        """For each output of ``tool`` and each bucket of inputs it may fill, those inputs (of
        other tools, in related services), in tool order."""
        return [self._filled(tool, sig, k, bucket) for k, slot in enumerate(sig.outputs)
                for bucket in self._buckets_of(slot)]

    def _filled(self, tool: str, sig: ToolSignature, k: int,
                bucket: Bucket) -> Iterator[_Candidate]:
        cross = crosses(sig.outputs[k].interface, sig.outputs[k].role)
        return ((c.position, c.index, k, c) for c in bucket.slots
                if c.tool != tool and self.joins(sig.service, c.service, cross))

    def _buckets_of(self, slot: Slot) -> list[Bucket]:
        """The buckets of inputs an output ``slot`` may fill."""
        by_role = self._consumers.get(slot.interface)
        if by_role is None:
            return []
        return [by_role[role] for role in self._roles_fed(slot.interface, slot.role)]

    def _buckets_fed(self, sig: ToolSignature) -> Iterator[tuple[Slot, Bucket]]:
        """Each output of ``sig`` with each bucket of inputs it may fill."""
        for slot in sig.outputs:
            for bucket in self._buckets_of(slot):
                yield slot, bucket

    def _reaches(self, service: str, bucket: Bucket, cross: bool) -> bool:
        """Whether an input in ``bucket`` of another service ``service`` joins exists (once
        per service, bucket and ``cross``: the tools of one service share the answer)."""
        key = (service, *bucket.key, cross)
        reach = self._reach.get(key)
        if reach is None:
            reach = self._reach[key] = any(other != service and self.joins(service, other, cross)
                                           for other in bucket.by_service)
        return reach

    def _roles_fed(self, interface: str, role: Role) -> tuple[Role, ...]:
        """Input roles of ``interface`` that an output of ``role`` may fill."""
        return self._roles(interface, role, False)

    def _roles_feeding(self, interface: str, role: Role) -> tuple[Role, ...]:
        """Output roles of ``interface`` that may fill an input of ``role``."""
        return self._roles(interface, role, True)

    def _roles(self, interface: str, role: Role, outputs: bool) -> tuple[Role, ...]:
        key = (interface, role, outputs)
        if key not in self._fits:
            index = self._producers if outputs else self._consumers
            self._fits[key] = tuple(
                other for other in index.get(interface, ())
                if compatible(interface, *((other, role) if outputs else (role, other))))
        return self._fits[key]

    # -- export and analysis ----------------------------------------------------------------
    def all_edges(self) -> Iterator[Edge]:
        """Every edge, source by source (computed afresh: for export, never kept)."""
        for name in self.signatures:
            yield from self._edges_from(name)

    @property
    def graph(self) -> nx.MultiDiGraph:
        """The graph as networkx: tool nodes (service, read_only), edges keyed (path, param)
        with their interface and whether they cross services. Built on first use, for export
        and analysis: walks read ``out_edges``, and millions of edges in networkx dicts would
        not fit a large library's memory."""
        if self._nx is None:
            graph = nx.MultiDiGraph()
            for name, sig in self.signatures.items():
                graph.add_node(name, service=sig.service, read_only=sig.read_only)
            for e in self.all_edges():
                graph.add_edge(e.source, e.target, key=(e.path, e.param),
                               interface=e.interface, cross=e.cross_service)
            self._nx = graph
        return self._nx

    def service_graph(self) -> nx.DiGraph:
        """Services as nodes; an edge carries how many tool edges join the two services
        (counted from the index, without listing the edges)."""
        view = nx.DiGraph()
        view.add_nodes_from(dict.fromkeys(sig.service for sig in self.signatures.values()))
        weights: dict[tuple[str, str], int] = {}
        first: dict[tuple[str, str], tuple[int, int]] = {}  # where out_edges first meets it
        for position, sig in enumerate(self.signatures.values()):
            for slot, bucket in self._buckets_fed(sig):
                cross = crosses(slot.interface, slot.role)
                for other, inputs in bucket.by_service.items():
                    pair = (sig.service, other)
                    if other == sig.service or not self.joins(*pair, cross):
                        continue
                    weights[pair] = weights.get(pair, 0) + len(inputs)
                    first[pair] = min(first.get(pair, (position, inputs[0].position)),
                                      (position, inputs[0].position))
        view.add_edges_from((u, v, {"weight": weights[(u, v)]})
                            for u, v in sorted(weights, key=first.__getitem__))
        return view

    def to_json(self) -> dict[str, Any]:
        """Every node and edge, as JSON (for export: lists every edge)."""
        return {
            "nodes": [{"id": name, "service": sig.service, "read_only": sig.read_only}
                      for name, sig in self.signatures.items()],
            "edges": [{"source": e.source, "target": e.target, "interface": e.interface,
                       "path": list(e.path), "param": e.param} for e in self.all_edges()],
        }

    def stats(self) -> dict[str, int]:
        """Counts of tools, edges, cross-service edges and start tools (edges counted from the
        index, without listing them)."""
        inner = cross = 0
        # inputs of related other services in a bucket: the same for every tool of a service
        reached: dict[tuple[str, str, Role, bool], int] = {}
        for name, sig in self.signatures.items():
            for slot, bucket in self._buckets_fed(sig):
                over = crosses(slot.interface, slot.role)
                key = (sig.service, *bucket.key, over)
                if key not in reached:
                    reached[key] = sum(len(inputs) for other, inputs in bucket.by_service.items()
                                       if other != sig.service
                                       and self.joins(sig.service, other, over))
                cross += reached[key]
                own = bucket.by_service.get(sig.service, ())
                if own and self.related(sig.service, sig.service):
                    inner += sum(c.tool != name for c in own)
        return {"tools": len(self.signatures), "edges": inner + cross,
                "cross_service_edges": cross, "start_tools": len(self.start_tools())}


def crosses(interface: str, role: Role) -> bool:
    """Whether a value found in one API may be used in another: an entity of the world
    (``CROSS_API``), and a person, company, country or link only as the role a record gives
    it (the order's customer, the repo's owner, the company's website), not any name, email
    or url a record holds (a Stripe object's ``url`` is an API path, no page to bookmark)."""
    return interface in CROSS_API and (role is not None or interface in _PLACES)


def _bucket(index: _Index, slot: Slot) -> Bucket:
    by_role = index.setdefault(slot.interface, {})
    if slot.role not in by_role:
        by_role[slot.role] = Bucket((slot.interface, slot.role))
    return by_role[slot.role]


def _takes(sig: ToolSignature, slot: Slot) -> bool:
    """Whether an input slot takes values from other tools: required, a top-level parameter,
    and not a write's free text (what a user writes is their own words, never a record's)."""
    return (slot.required and len(slot.path) == 1
            and not (slot.interface in WORDS and not sig.read_only))


def _statable(sig: ToolSignature) -> bool:
    """Whether every required parameter is tagged with an interface a user can state."""
    required = [s for s in sig.inputs if s.required and len(s.path) == 1]
    return (bool(required) and set(sig.required) == {s.path[0] for s in required}
            and all(s.interface in STATABLE for s in required))
