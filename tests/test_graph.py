"""Tool-dependency graph: typed edges (from the index, as by definition), start tools, lazy
specs, the bound on kept edges, the service view."""

from __future__ import annotations

import pytest

import compoenv.graph as graph_module
from compoenv.graph import WORDS, Edge, ToolGraph
from compoenv.interfaces import STATABLE
from compoenv.registry import Registry
from compoenv.roles import compatible
from compoenv.service import ToolSpec
from compoenv.schema import Slot
from compoenv.signature import ToolSignature


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


def naive_edges(specs: list[ToolSpec], related=None) -> dict[str, list[Edge]]:
    """Every edge by the definition: each producer x consumer pair, tried one by one."""
    out: dict[str, list[Edge]] = {s.qualified_name: [] for s in specs}
    for target in specs:
        for slot in target.inputs:
            if not slot.required or len(slot.path) != 1 or (
                    slot.interface in WORDS and not target.read_only):
                continue
            for source in specs:
                if source is target or (related and not related(source.service,
                                                                 target.service)):
                    continue
                for out_slot in source.outputs:
                    if out_slot.interface == slot.interface and compatible(
                            slot.interface, out_slot.role, slot.role):
                        out[source.qualified_name].append(Edge(
                            source.qualified_name, target.qualified_name, slot.interface,
                            out_slot.path, slot.path[0], target.service,
                            source.service != target.service))
    return {name: sorted(edges, key=lambda e: _order(specs, e)) for name, edges in out.items()}


def _order(specs: list[ToolSpec], e: Edge) -> tuple[int, int, int]:
    names = [s.qualified_name for s in specs]
    target, source = specs[names.index(e.target)], specs[names.index(e.source)]
    inputs = [s.path for s in target.inputs]
    outputs = [s.path for s in source.outputs]
    return names.index(e.target), inputs.index((e.param,)), outputs.index(e.path)


def test_edges_computed_from_the_index_are_the_edges_by_definition():
    registry = Registry.default()
    specs = registry.tools(["contacts", "email", "crm", "invoices", "bank", "calendar"])
    naive = naive_edges(specs, registry.related)
    fresh = ToolGraph(specs, registry.related)  # one at a time, nothing kept yet
    assert {n: list(fresh.iter_out_edges(n)) for n in fresh.specs} == naive
    g = ToolGraph(specs, registry.related)
    assert {n: g.out_edges(n) for n in g.specs} == naive
    assert {n: list(g.iter_out_edges(n)) for n in g.specs} == naive
    into: dict[str, list[Edge]] = {}
    for edges in naive.values():
        for e in edges:
            into.setdefault(e.target, []).append(e)
    assert {n: g.in_edges(n) for n in g.specs} == {n: into.get(n, []) for n in g.specs}
    assert all(g.has_out_edges(n) == bool(naive[n]) for n in g.specs)
    everything = [e for edges in naive.values() for e in edges]
    assert g.stats()["edges"] == len(everything) == g.graph.number_of_edges()
    assert g.stats()["cross_service_edges"] == sum(e.cross_service for e in everything)
    unrelated = ToolGraph(specs, lambda a, b: a == b)
    assert all(not e.cross_service for n in unrelated.specs for e in unrelated.out_edges(n))


def test_edges_are_kept_up_to_a_bound_and_computed_again_alike(monkeypatch):
    registry = Registry.default()
    full = ToolGraph(registry.tools(), registry.related)
    monkeypatch.setattr(graph_module, "_CACHED_EDGES", 50)
    small = ToolGraph(registry.tools(), registry.related)
    for _ in range(2):
        for name in small.specs:
            assert small.out_edges(name) == full.out_edges(name)
            assert small._cached <= 50 or len(small._views) == 1
    assert small.memo("a view", lambda: [1, 2], size=len) == [1, 2]
    assert small.memo("a view", lambda: [], size=len) == [1, 2]  # kept while it is recent


def test_a_graph_of_signatures_resolves_full_specs_on_first_use_only():
    registry = Registry.default()
    asked: list[str] = []

    def resolve(name: str) -> ToolSpec:
        asked.append(name)
        return registry.spec(name)

    signatures = [ToolSignature.of(s) for s in registry.tools()]
    g = ToolGraph(signatures, registry.related, resolve)
    assert g.start_tools() == ToolGraph(registry.tools(), registry.related).start_tools()
    assert g.stats()["edges"] > 100 and not asked  # the graph itself needs no spec
    assert "email__send_email" in g.specs and not asked
    assert g.specs["email__send_email"] is registry.spec("email__send_email")
    g.specs["email__send_email"]
    assert asked == ["email__send_email"]
    with pytest.raises(KeyError):
        g.specs["email__no_such_tool"]
    with pytest.raises(LookupError, match="resolve="):
        ToolGraph(signatures).specs["email__send_email"]


def test_the_service_view_counts_the_edges_between_services_in_the_order_they_appear():
    registry = Registry.default()
    g = ToolGraph(registry.tools(), registry.related)
    weights: dict[tuple[str, str], int] = {}
    for name in g.specs:
        for e in g.out_edges(name):
            if e.cross_service:
                pair = (g.signatures[name].service, e.target_service)
                weights[pair] = weights.get(pair, 0) + 1
    assert list(g.service_graph().edges(data="weight")) == [(*p, w) for p, w in weights.items()]


def _tool(service: str, name: str, inputs: tuple[Slot, ...], outputs: tuple[Slot, ...]
          ) -> ToolSignature:
    return ToolSignature(service, name, f"{service.replace('.', '-')}__{name}", False, True,
                         tuple(s.path[0] for s in inputs), inputs, outputs, False)


def test_a_confined_api_trades_amounts_within_itself_and_only_entities_with_others():
    price = Slot("Money", ("price",), role="price")
    customer = Slot("EmailAddress", ("email",), role="customer")
    anyone = Slot("EmailAddress", ("contact_email",))  # a record's email, of no role
    recipient = Slot("EmailAddress", ("to",), role="recipient")
    tools = [
        _tool("shop.orders", "get_order", (), (price, customer, anyone)),
        _tool("shop.refunds", "refund", (Slot("Money", ("price",), role="price"),), ()),
        _tool("billing", "charge", (Slot("Money", ("price",), role="price"),), ()),
        _tool("mailer", "send", (recipient,), ()),
        _tool("bank", "pay", (Slot("Money", ("price",), role="price"),), ()),
    ]
    scopes = {"shop.orders": ("shop", True), "shop.refunds": ("shop", True),
              "billing": ("billing", True), "mailer": ("mailer", True),
              "bank": ("bank", False)}
    confined = ToolGraph(tools, scope=scopes.__getitem__)
    edges = {(e.target, e.path) for e in confined.out_edges("shop-orders__get_order")}
    assert ("shop-refunds__refund", ("price",)) in edges      # one API: any value
    assert ("billing__charge", ("price",)) not in edges       # another API's amount: never
    assert ("bank__pay", ("price",)) not in edges             # nor into an unconfined one
    assert ("mailer__send", ("email",)) in edges              # the order's customer crosses
    assert ("mailer__send", ("contact_email",)) not in edges  # an email of no role does not
    assert confined.stats()["edges"] == len(confined.out_edges("shop-orders__get_order"))
    free = ToolGraph(tools)  # without scopes every related pair joins, as before
    assert {(e.target, e.path) for e in free.out_edges("shop-orders__get_order")} > edges
