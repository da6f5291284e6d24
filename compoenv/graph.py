"""Tool-dependency graph: an edge u -> v when an output interface of u feeds a required input of v."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import networkx as nx

from compoenv.interfaces import STATABLE
from compoenv.service import ToolSpec

__all__ = ["ToolGraph", "Edge"]


@dataclass(frozen=True, slots=True)
class Edge:
    """``source``'s output at ``path`` (an ``interface`` value) fills ``param`` of ``target``."""

    source: str
    target: str
    interface: str
    path: tuple[str, ...]
    param: str

    target_service: str = field(init=False, repr=False, compare=False)
    cross_service: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        service = self.target.split("__", 1)[0]
        object.__setattr__(self, "target_service", service)
        object.__setattr__(self, "cross_service", self.source.split("__", 1)[0] != service)


class ToolGraph:
    """Typed dependency graph over a set of tools (networkx MultiDiGraph underneath).

    Args:
        specs: The tools; nodes are their qualified names.
    """

    def __init__(self, specs: Iterable[ToolSpec]) -> None:
        self.specs: dict[str, ToolSpec] = {s.qualified_name: s for s in specs}
        self._starts: list[str] | None = None
        self._memo: dict[Any, Any] = {}
        self.graph = nx.MultiDiGraph()
        producers: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
        for name, spec in self.specs.items():
            self.graph.add_node(name, service=spec.service, read_only=spec.read_only)
            for slot in spec.outputs:
                producers.setdefault(slot.interface, []).append((name, slot.path))
        self._out: dict[str, list[Edge]] = {name: [] for name in self.specs}
        for target, spec in self.specs.items():
            for slot in spec.inputs:
                if not slot.required or len(slot.path) != 1:
                    continue
                for source, path in producers.get(slot.interface, ()):
                    if source == target:
                        continue
                    edge = Edge(source, target, slot.interface, path, slot.path[0])
                    self._out[source].append(edge)
                    self.graph.add_edge(source, target, key=(path, edge.param),
                                        interface=slot.interface, cross=edge.cross_service)

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
        for name, spec in self.specs.items():
            view.add_node(spec.service)
        for u, v, data in self.graph.edges(data=True):
            su, sv = self.graph.nodes[u]["service"], self.graph.nodes[v]["service"]
            if su != sv:
                weight = view.edges[su, sv]["weight"] + 1 if view.has_edge(su, sv) else 1
                view.add_edge(su, sv, weight=weight)
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
