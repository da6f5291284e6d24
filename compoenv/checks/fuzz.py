"""The fuzz check: a seeded run of random valid calls never gets a 500 or an invalid result."""

from __future__ import annotations

import random

from compoenv.checks.calls import call, fresh, valid_arguments
from compoenv.checks.errors import code_problem
from compoenv.checks.report import Findings
from compoenv.checks.target import Target
from compoenv.schema import is_valid

__all__ = ["fuzz", "CALLS", "SEED"]

CALLS = 80  # per service: bounded so that verifying the whole library stays fast
SEED = 0


def fuzz(target: Target, calls: int = CALLS, seed: int = SEED) -> Findings:
    """``calls`` random tools, in a random order on one service (writes change what later
    calls see), each with valid arguments from the records and the World, some optional ones
    filled: none may get a 500 or a code outside 400/404/409/422, and every success returns
    data that its tool's return schema accepts. Reproducible from ``seed``."""
    found = Findings()
    rng = random.Random(f"fuzz:{target.name}:{seed}")
    service = fresh(target.cls)
    specs = sorted(target.cls.tool_specs().values(), key=lambda s: s.name)
    if not specs:
        return found
    made_calls = succeeded = 0
    seen: set[tuple[str, int | None]] = set()
    for _ in range(calls):
        spec = rng.choice(specs)
        args = valid_arguments(spec, service, rng, optional=True)
        if args is None:
            continue
        made = call(service, spec, args)
        made_calls += 1
        problem = code_problem(made)
        if made.ok:
            succeeded += 1
            if not is_valid(made.result.get("data"), spec.returns):
                problem = f"{made} returned data its return schema rejects"
        if problem and (spec.name, made.code) not in seen:  # one finding per tool and code
            seen.add((spec.name, made.code))
            found.fail(f"{problem} (fuzz seed {seed})")
    found.note(f"{made_calls} random valid calls, {succeeded} succeeded")
    return found
