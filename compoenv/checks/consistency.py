"""The consistency check: a service's answers never contradict each other or themselves."""

from __future__ import annotations

import random
from typing import Any

from compoenv.checks.calls import call, fresh, valid_arguments
from compoenv.checks.report import Findings
from compoenv.checks.target import Target
from compoenv.service import ToolError, ToolSpec

__all__ = ["consistency"]

_ROUNDS = 2  # every read asked twice over, after all the others


def _naming_shown(spec: ToolSpec, arguments: dict[str, Any], ids: list[str]
                  ) -> dict[str, Any]:
    """A read's arguments for its second call: its one required id naming the first record
    shown since that it accepts (another tool's view of it), else as it first was."""
    required = [p for p in spec.parameters.get("required") or () if p.endswith("id")]
    if len(required) != 1:
        return arguments
    for value in ids:
        again = {**arguments, required[0]: value}
        try:
            spec.validate(again)
        except ToolError:
            continue
        if value != arguments.get(required[0]):
            return again
    return arguments


def consistency(target: Target) -> Findings:
    """In one episode, each tool once with valid arguments (a read's taken from the records
    the service holds), then every read again: a record shown twice (same id, or same
    name within its kind) must agree with its earlier view unless a write changed it, a
    write's new record may not be dated before today, and no answer may break an invariant
    of ``worldmodel.consistency`` (amounts that multiply, percentiles in order, parts within
    totals, counts of their lists, word counts of their text, a successful create's status,
    emails at the employer's domain, "since" dates not after today)."""
    from compoenv.worldmodel import OfflineWorldModel, Simulator, SimState
    from compoenv.worldmodel.consistency import (created_before, creates, kind_of, review,
                                                 shown_records, violations)
    from compoenv.worldmodel.offline import collection_of

    found = Findings()
    service = fresh(target.cls)
    world = service.world
    service.simulator = Simulator(OfflineWorldModel(), cache_bytes=0)
    specs = list(target.cls.tool_specs().values())
    order = specs + [s for s in specs if s.read_only] * (_ROUNDS - 1)
    recall: dict[str, Any] = {}
    again = 0
    first: dict[str, dict[str, Any]] = {}  # each read's arguments in the first round
    ids: list[str] = []  # ids of the records shown so far
    for index, spec in enumerate(order):
        if spec.name in first:  # again: a record shown before, else the same call
            arguments = _naming_shown(spec, first[spec.name], ids)
        else:
            arguments = valid_arguments(spec, service, random.Random(
                f"{spec.qualified_name}:consistency:{index}"))
        if arguments is None:
            continue
        first.setdefault(spec.name, arguments)
        result = call(service, spec, arguments).result
        if not result.get("success"):
            continue
        data, write = result.get("data"), not spec.read_only
        kind = kind_of(collection_of(spec.name, spec.returns))
        new = write and creates(recall, spec.name, data, kind)
        if new and (made := created_before(data, world.today)):
            found.fail(f"{spec.name} made a record dated before today ({world.today}): "
                       f"{', '.join(made[:3])}")
        for problem in violations(data, world.today, world, new, arguments)[:3]:
            found.fail(f"{spec.name}: {problem}")
        if write and not isinstance(service.state, SimState):
            # a typed service's write may change any record (its state is the truth; the
            # writes check reads back what it stored): views start again after it
            recall.clear()
            continue
        seen, differ = review(recall, data, kind, write)
        ids += [k.rpartition(chr(31))[2] for keys, _ in shown_records(data, kind)
                for k in keys[:1] if k.startswith("id")]
        again += seen
        for line in differ[:3]:
            found.fail(f"{spec.name} shows {line} (unlike before)")
    found.note(f"{again} records shown again, {len(order)} calls")
    return found
