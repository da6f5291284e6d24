"""What a task is made of: a motif plan drawn per seed, and the walk that carries it out."""

from __future__ import annotations

import random
from dataclasses import dataclass

from compoenv.compose.motifs import (
    aggregate, as_house_rule, branch, fan_out, fans_out, returns_list,
)
from compoenv.compose.walk import Rejected, Walk, Walker

__all__ = ["Plan", "choose_plan", "realize"]

_SHAPES = ("sequential", "aggregation", "fan-out")
_WEIGHTS = {"sequential": 1.0, "aggregation": 1.0, "fan-out": 1.0}


@dataclass(frozen=True, slots=True)
class Plan:
    """The shape of one task.

    Attributes:
        shape: "sequential" (a chain), "aggregation" (count/sum/min/max over a list) or
            "fan-out" (one write per item of a list).
        hops: Target number of tool calls.
        report_aggregate: Aggregation only: end on the aggregate instead of picking an item.
        constraint: End with an if/otherwise decided by a value from another service.
        house_rules: State that if/otherwise as a house rule before the request.
    """

    shape: str
    hops: int
    report_aggregate: bool = False
    constraint: bool = False
    house_rules: bool = False


def choose_plan(rng: random.Random, motifs: tuple[str, ...], min_hops: int,
                max_hops: int) -> Plan:
    """Draw a plan among the enabled motifs (a plain chain is always possible)."""
    shapes = [s for s in _SHAPES if s == "sequential" or s in motifs]
    if max_hops < 3 and "fan-out" in shapes:  # a list and at least two writes
        shapes.remove("fan-out")
    shape = rng.choices(shapes, [_WEIGHTS[s] for s in shapes])[0]
    # a fan-out ends its walk: what its writes returned cannot be told apart ("the payment's
    # amount" after one payment per item), so nothing after them may use it
    constraint = ("cross-service-constraint" in motifs and rng.random() < 0.85
                  and max_hops >= 2 and shape != "fan-out")
    return Plan(
        shape=shape, hops=rng.randint(min_hops, max_hops),
        report_aggregate=shape == "aggregation" and rng.random() < 0.5,
        constraint=constraint,
        house_rules=constraint and "house-rules" in motifs and rng.random() < 0.6,
    )


def realize(plan: Plan, walker: Walker, max_hops: int, min_hops: int | None = None) -> Walk:
    """Run the walk the plan describes. A chain that runs out of sensible next steps once it
    has ``min_hops`` calls ends there (default: it must reach the plan's length).

    Raises:
        Rejected: the plan did not fit this world and seed (the reason says where).
    """
    steps = walker.walk.steps
    room = plan.hops - (1 if plan.constraint else 0)  # the branch adds the last call
    if plan.shape == "fan-out":
        walker.start(accept=fans_out(walker.graph), items=(2, max(2, max_hops - 1)))
        try:
            fan_out(walker, 0)
            return walker.finish()
        except Rejected:  # no write fits every item: pick one item instead of dropping the seed
            aggregate(walker, 0, report=False)
    elif plan.shape == "aggregation" and not plan.report_aggregate:
        walker.start(accept=returns_list, items=(2, 100))
        aggregate(walker, 0, report=False)
    else:
        walker.start()
    if plan.shape == "aggregation" and plan.report_aggregate:
        while len(steps) < room - 1:
            walker.extend()
        if not returns_list(steps[-1].spec):
            walker.extend(accept=returns_list)
        if not isinstance(steps[-1].result, list) or len(steps[-1].result) < 2:
            raise Rejected("small_list", tools=(steps[-1].spec.qualified_name,))
        aggregate(walker, len(steps) - 1, report=True)
        if not plan.constraint:
            return walker.finish()
    enough = room if min_hops is None else max(1, min(room, min_hops))
    while len(steps) < room:
        try:
            walker.extend(need_report=not plan.constraint and len(steps) == room - 1)
        except Rejected as exc:
            if exc.reason != "dead_end" or len(steps) < enough:
                raise
            break  # nothing sensible follows: the request is complete as it stands
    if plan.constraint:
        try:
            branch(walker)
        except Rejected:  # no number to decide on, or no two writes: end with a plain step
            walker.extend(need_report=True)
        else:
            if plan.house_rules:
                as_house_rule(walker)
    return walker.finish()
