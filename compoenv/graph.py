"""Tool-dependency graph: an edge u -> v when an output of u fits a required input of v: the
same interface, and roles that may feed each other (``compoenv.roles.compatible``)."""

from __future__ import annotations

from typing import Any, Callable, Iterable, NamedTuple

import networkx as nx

from compoenv.interfaces import STATABLE
from compoenv.roles import compatible
from compoenv.service import ToolSpec

__all__ = ["WORDS", "ToolGraph", "Edge"]


# free text: a record's text may be read on (translated, looked up), not written on
WORDS = frozenset({"Text", "EmailSubject"})


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

    @classmethod
    def between(cls, source: str, target: str, interface: str, path: tuple[str, ...],
                param: str) -> Edge:
        service = target.split("__", 1)[0]
        return cls(source, target, interface, path, param, service,
                   source.split("__", 1)[0] != service)


class ToolGraph:
    """Typed dependency graph over a set of tools (a networkx MultiDiGraph on request).

    Args:
        specs: The tools; nodes are their qualified names.
        related: Whether a request may go from one service to another (by name); edges
            between unrelated services are left out (default: every pair is related).
    """

    def __init__(self, specs: Iterable[ToolSpec],
                 related: Callable[[str, str], bool] | None = None) -> None:
        self.specs: dict[str, ToolSpec] = {s.qualified_name: s for s in specs}
        self._starts: list[str] | None = None
        self._memo: dict[Any, Any] = {}
        self._nx: nx.MultiDiGraph | None = None
        producers: dict[str, list[tuple[str, tuple[str, ...], str | None]]] = {}
        for name, spec in self.specs.items():
            for slot in spec.outputs:
                producers.setdefault(slot.interface, []).append((name, slot.path, slot.role))
        self._out: dict[str, list[Edge]] = {name: [] for name in self.specs}
        near: dict[tuple[str, str], bool] = {}
        for target, spec in self.specs.items():
            for slot in spec.inputs:
                if not slot.required or len(slot.path) != 1:
                    continue
                if slot.interface in WORDS and not spec.read_only:
                    continue  # what a user writes is their own words, never a record's text
                for source, path, role in producers.get(slot.interface, ()):
                    # interface and role must fit: a lead's value is no salary (compoenv.roles)
                    if source == target or not compatible(slot.interface, role, slot.role):
                        continue
                    # and the services must belong in one request: a lead is not parked at
                    pair = (self.specs[source].service, spec.service)
                    if related is not None and not near.setdefault(pair, related(*pair)):
                        continue
                    self._out[source].append(
                        Edge.between(source, target, slot.interface, path, slot.path[0]))

    @property
    def graph(self) -> nx.MultiDiGraph:
        """The graph as networkx: tool nodes (service, read_only), edges keyed (path, param)
        with their interface and whether they cross services. Built on first use: walks need
        only the edge lists, and 70,000 edges in networkx dicts would slow the collector."""
        if self._nx is None:
            graph = nx.MultiDiGraph()
            for name, spec in self.specs.items():
                graph.add_node(name, service=spec.service, read_only=spec.read_only)
            for edges in self._out.values():
                for e in edges:
                    graph.add_edge(e.source, e.target, key=(e.path, e.param),
                                   interface=e.interface, cross=e.cross_service)
            self._nx = graph
        return self._nx

    def memo(self, key: Any, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per key for this graph (derived views of its fixed tools)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def out_edges(self, tool: str) -> list[Edge]:
        """Edges leaving ``tool``, in a stable order."""
        return self._out.get(tool, [])

    def start_tools(self) -> list[str]:
        """Tools a user's request can start from: every required input is user-statable."""
        if self._starts is None:
            self._starts = self._find_starts()
        return self._starts

    def _find_starts(self) -> list[str]:
        starts = []
        for name, spec in self.specs.items():
            required = [s for s in spec.inputs if s.required and len(s.path) == 1]
            names = set(spec.parameters.get("required", ()))
            if (required and names == {s.path[0] for s in required}
                    and all(s.interface in STATABLE for s in required) and self._out[name]):
                starts.append(name)
        return starts

    def service_graph(self) -> nx.DiGraph:
        """Services as nodes; an edge carries how many tool edges join the two services."""
        view = nx.DiGraph()
        for spec in self.specs.values():
            view.add_node(spec.service)
        weights: dict[tuple[str, str], int] = {}
        for source, edges in self._out.items():
            for e in edges:
                if e.cross_service:
                    pair = (self.specs[source].service, e.target_service)
                    weights[pair] = weights.get(pair, 0) + 1
        view.add_edges_from((u, v, {"weight": w}) for (u, v), w in weights.items())
        return view

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": [{"id": n, **d} for n, d in self.graph.nodes(data=True)],
            "edges": [{"source": u, "target": v, "interface": d["interface"], "path": list(k[0]),
                       "param": k[1]} for u, v, k, d in self.graph.edges(keys=True, data=True)],
        }

    def stats(self) -> dict[str, int]:
        cross = sum(1 for *_, d in self.graph.edges(data=True) if d["cross"])
        return {"tools": self.graph.number_of_nodes(), "edges": self.graph.number_of_edges(),
                "cross_service_edges": cross, "start_tools": len(self.start_tools())}
