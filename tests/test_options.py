"""Options drawn from the graph's index (tools with thousands of edges): the same edges and
the same odds as listing them, and walks that still compose verified tasks."""

from __future__ import annotations

import random

import pytest

import compoenv.compose.options as options
from compoenv.compose import Composer, ComposerConfig
from compoenv.compose.options import drawn, lists_options
from compoenv.graph import ToolGraph
from compoenv.registry import Registry


@pytest.fixture(scope="module")
def graph() -> ToolGraph:
    registry = Registry.default()
    return ToolGraph(registry.signatures(), registry.related, registry.spec)


def _busiest(graph: ToolGraph) -> str:
    """The tool with the most edges into more than one other service."""
    return max(graph.signatures, key=lambda t: (
        len({e.target_service for e in graph.out_edges(t)}), len(graph.out_edges(t))))


def _values(graph: ToolGraph, tool: str) -> dict[tuple[str, tuple[str, ...]], str]:
    return {(s.interface, s.path): f"value of {'.'.join(s.path)}"
            for s in graph.signatures[tool].outputs}


def test_the_built_in_library_lists_every_tool_s_options(graph: ToolGraph) -> None:
    assert all(lists_options(graph, tool) for tool in graph.signatures)


def test_drawing_until_nothing_is_left_finds_exactly_the_listed_edges(
        graph: ToolGraph, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(options, "_MISSES", 20_000)
    monkeypatch.setattr(options, "_DRAWS", 20_000)
    tool = _busiest(graph)
    values = _values(graph, tool)
    found = [e for e, _ in drawn(graph, tool, values, set(), (1.0, 1.0, 1.0),
                                 lambda e, v: True, random.Random(0))]
    assert len(found) == len(set(found))  # each edge once
    assert set(found) == set(graph.out_edges(tool))


def test_refused_edges_are_never_drawn(graph: ToolGraph,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(options, "_MISSES", 20_000)
    tool = _busiest(graph)
    keep = lambda e, v: not e.cross_service  # noqa: E731
    found = {e for e, _ in drawn(graph, tool, _values(graph, tool), set(), (1.0, 1.0, 1.0),
                                 keep, random.Random(1))}
    assert found == {e for e in graph.out_edges(tool) if not e.cross_service}


def test_first_draws_follow_the_weights_of_the_listed_edges(graph: ToolGraph) -> None:
    tool = _busiest(graph)
    edges = graph.out_edges(tool)
    service = graph.signatures[tool].service
    visited = {service, next(e.target_service for e in edges if e.cross_service)}
    weights = (1.0, 3.0, 12.0)

    def kind(target: str) -> int:
        return 0 if target == service else 1 if target in visited else 2

    listed = [0.0, 0.0, 0.0]
    for e in edges:
        listed[kind(e.target_service)] += weights[kind(e.target_service)]
    expected = [w / sum(listed) for w in listed]
    counts = [0, 0, 0]
    runs = 3_000
    for seed in range(runs):
        edge, _ = next(drawn(graph, tool, _values(graph, tool), visited, weights,
                             lambda e, v: True, random.Random(seed)))
        counts[kind(edge.target_service)] += 1
    for got, want in zip(counts, expected):
        assert abs(got / runs - want) < 0.03


def test_walks_that_draw_every_option_compose_verified_tasks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    config = ComposerConfig(scenarios=())
    listed = [o.task for o in Composer(config=config).outcomes(5, stop=30)]
    monkeypatch.setattr(options, "LISTED", 0)  # every tool's options drawn from the index
    first = [o.task for o in Composer(config=config).outcomes(5, stop=30)]
    again = [o.task for o in Composer(config=config).outcomes(5, stop=30)]
    tasks = [t for t in first if t is not None]
    assert [t.id if t else None for t in first] == [t.id if t else None for t in again]
    assert len(tasks) >= 0.7 * sum(t is not None for t in listed)
    assert all(len(t.services) >= config.min_services for t in tasks)
