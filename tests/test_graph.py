"""Tool-dependency graph: typed edges, start tools, the service view."""

from __future__ import annotations

from compoenv.graph import ToolGraph
from compoenv.interfaces import STATABLE
from compoenv.registry import Registry


def graph() -> ToolGraph:
    return ToolGraph(Registry.default().tools())


def test_edges_join_an_output_interface_to_a_required_input_of_the_same_interface():
    g = graph()
    assert g.stats()["edges"] > 100
    for u, v, key, data in g.graph.edges(keys=True, data=True):
        path, param = key
        target = g.specs[v]
        assert any(s.path == (param,) and s.interface == data["interface"] and s.required
                   for s in target.inputs)
        assert any(s.path == path and s.interface == data["interface"]
                   for s in g.specs[u].outputs)


def test_known_cross_service_joins_exist():
    g = graph()
    pairs = {(e.source, e.target, e.interface) for n in g.specs for e in g.out_edges(n)}
    assert ("contacts__find_contact", "email__send_email", "EmailAddress") in pairs
    assert ("flights__search_flights", "weather__get_forecast", "City") in pairs
    assert ("contacts__find_contact", "weather__get_forecast", "City") not in pairs  # no trip
    assert ("invoices__get_invoice", "bank__transfer", "Money") in pairs


def test_start_tools_need_only_statable_inputs():
    g = graph()
    starts = g.start_tools()
    assert starts
    for name in starts:
        spec = g.specs[name]
        assert all(s.interface in STATABLE for s in spec.inputs if s.required)


def test_service_view_aggregates_cross_service_edges():
    view = graph().service_graph()
    assert set(view.nodes) == set(Registry.default().names())
    assert view.has_edge("contacts", "email") and view.edges["contacts", "email"]["weight"] > 0
    assert not any(u == v for u, v in view.edges)


def test_json_dump_lists_every_node_and_edge():
    g = graph()
    data = g.to_json()
    assert len(data["nodes"]) == g.graph.number_of_nodes()
    assert len(data["edges"]) == g.graph.number_of_edges()
    assert {"source", "target", "interface", "path", "param"} <= set(data["edges"][0])
