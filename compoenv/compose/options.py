"""A walk's next step drawn from the graph's index, for tools with too many edges to list."""

from __future__ import annotations

import random
from itertools import accumulate
from typing import Any, Callable, Iterator, Mapping, NamedTuple

from compoenv.compose.records import Value
from compoenv.graph import Bucket, Edge, IndexSlot, ToolGraph, crosses

__all__ = ["LISTED", "Keep", "lists_options", "drawn", "weighted"]

# A step whose tool has up to this many edges lists its options and draws from the list (every
# edge of the built-in library: at most about a hundred); past it, a draw picks a bucket of
# the index by weight, then an input in it, and drops what the list would have left out, so a
# tool with 20,000 edges costs a walk a few draws, not 20,000 edges built and sorted.
LISTED = 1_000
# draws in a row that find no new option, or land outside the related services, before the
# search ends
_MISSES = 48
_DRAWS = 256

Keep = Callable[[Edge, Any], bool]  # whether an edge, fed by that value, is an option


class _Class(NamedTuple):
    """Inputs one value may fill, of one kind: in its own service, in services the walk
    visited, or elsewhere (``inputs`` None: the bucket's inputs of unvisited services)."""

    weight: float
    value: Any
    k: int
    bucket: Bucket
    inputs: list[IndexSlot] | None
    cross: bool  # the value crosses APIs (``graph.crosses``)


def lists_options(graph: ToolGraph, tool: str) -> bool:
    """Whether a walk lists ``tool``'s options rather than drawing them: at most ``LISTED``
    edges leave it (counted from the index, without listing them)."""
    return graph.memo(("lists options", tool, LISTED), lambda: sum(
        len(bucket.slots) for _, bucket in graph.fills(tool)) <= LISTED)


def drawn(graph: ToolGraph, tool: str, values: Mapping[tuple[str, tuple[str, ...]], Any],
          visited: set[str], weights: tuple[float, float, float], keep: Keep,
          rng: random.Random) -> Iterator[tuple[Edge, Any]]:
    """Edges out of ``tool`` fed by ``values`` (keyed by the output they come from), in a
    random order weighted by where they lead, each once, those ``keep`` refuses left out.

    A draw picks a bucket of inputs by its weight, then an input in it; an input of an
    unrelated service is drawn again from the start, so the odds are those of the listed
    edges. The search ends when draws keep missing (what is left is mostly taken, refused
    or unrelated): a walk tries a few options, and listing thousands to find the last
    fitting one would cost more than the attempt it could save.

    Args:
        values: What feeds each output (a walk's value); outputs not in it feed nothing.
        weights: An edge's weight into ``tool``'s own service, into another service the walk
            visited, and into one it did not.
    """
    service = graph.signatures[tool].service
    classes = _classes(graph, tool, service, values, visited, weights)
    if not classes:
        return
    totals = list(accumulate(c.weight for c in classes))
    seen: set[tuple[Edge, int]] = set()
    misses = draws = 0
    while misses < _MISSES and draws < _DRAWS:
        draws += 1
        pick = rng.choices(classes, cum_weights=totals)[0]
        target = _input(pick, service, visited, graph, rng)
        if target is None or target.tool == tool:
            continue
        edge = graph.edge(tool, pick.k, target)
        key = (edge, id(pick.value))
        if key in seen or not keep(edge, pick.value):
            seen.add(key)
            misses += 1
            continue
        seen.add(key)
        misses = draws = 0
        yield edge, pick.value


def _classes(graph: ToolGraph, tool: str, service: str,
             values: Mapping[tuple[str, tuple[str, ...]], Any], visited: set[str],
             weights: tuple[float, float, float]) -> list[_Class]:
    """The buckets the values may feed, split by where their inputs lie; inputs elsewhere
    weigh as many as the bucket holds outside the walk (related or not: an unrelated one
    drawn is drawn again)."""
    own_w, visited_w, new_w = weights
    outputs = graph.signatures[tool].outputs
    classes: list[_Class] = []
    for k, bucket in graph.fills(tool):
        value = values.get((outputs[k].interface, outputs[k].path))
        if value is None:
            continue
        cross = crosses(outputs[k].interface, outputs[k].role)
        own = bucket.by_service.get(service, [])
        if own and own_w:
            classes.append(_Class(own_w * len(own), value, k, bucket, own, cross))
        near = len(own)
        for other in visited:
            inputs = bucket.by_service.get(other)
            if inputs and other != service:
                near += len(inputs)
                if visited_w and graph.joins(service, other, cross):
                    classes.append(_Class(visited_w * len(inputs), value, k, bucket, inputs,
                                          cross))
        if len(bucket.slots) > near and new_w:
            classes.append(_Class(new_w * (len(bucket.slots) - near), value, k, bucket, None,
                                  cross))
    return classes


def _input(pick: _Class, service: str, visited: set[str], graph: ToolGraph,
           rng: random.Random) -> IndexSlot | None:
    """An input of the class, uniformly; None for one outside it (the walk's, unrelated)."""
    if pick.inputs is not None:
        return pick.inputs[rng.randrange(len(pick.inputs))]
    target = pick.bucket.slots[rng.randrange(len(pick.bucket.slots))]
    if (target.service == service or target.service in visited
            or not graph.joins(service, target.service, pick.cross)):
        return None
    return target


def weighted(items: list[Any], weights: list[float], rng: random.Random) -> Iterator[Any]:
    """``items`` in a random order, each drawn with odds by its weight (zero: never)."""
    while items and any(weights):
        pick = rng.choices(range(len(items)), weights)[0]
        weights.pop(pick)
        yield items.pop(pick)
