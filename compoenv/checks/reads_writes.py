"""The reads and writes checks: reads change nothing; what a write stores, a read shows."""

from __future__ import annotations

import random
from itertools import chain
from typing import Any, Iterator

from compoenv.checks.calls import Call, call, fresh, is_key, leaves, valid_arguments
from compoenv.checks.report import Findings
from compoenv.checks.target import Target
from compoenv.schema import extract
from compoenv.service import Service, ToolSpec

__all__ = ["reads", "writes", "successful_call"]

TRIES = 6
KEYED = 40  # records of a collection a write is tried on, at most


def _changed(before: dict[str, Any], service: Service) -> list[str]:
    after = service.state.model_dump(mode="json")
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))


def _attempts(spec: ToolSpec, service: Service, tries: int = TRIES) -> Iterator[dict[str, Any]]:
    """Valid arguments for ``spec`` from ``tries`` random draws (each draw's own stream)."""
    for attempt in range(tries):
        args = valid_arguments(spec, service, random.Random(f"{spec.qualified_name}:{attempt}"))
        if args is not None:
            yield args


def _each_record(spec: ToolSpec, service: Service, args: dict[str, Any],
                 most: int = KEYED) -> Iterator[dict[str, Any]]:
    """``args`` with its record id swapped for each id of that collection in turn: a write
    may fit only some records (only a placed order can be cancelled)."""
    interfaces = {s.path[0]: s.interface for s in spec.inputs if len(s.path) == 1}
    for param, value in args.items():
        if not is_key(param, interfaces.get(param)):
            continue
        for records in service.state.collections().values():
            if value in records:
                for key in list(records)[:most]:
                    if key != value:
                        yield {**args, param: key}
                return


def successful_call(cls: type[Any], spec: ToolSpec) -> tuple[Service, Call | None, Call | None]:
    """A fresh service and the first call of ``spec`` that succeeds on it (or None), with the
    last failed call (what to say when none succeeds): a few random draws, then the first
    draw with each of its record's neighbours in the collection."""
    last = None
    draws = list(_attempts(spec, fresh(cls)))
    more = _each_record(spec, fresh(cls), draws[0]) if draws else iter(())
    for args in chain(draws, more):
        service = fresh(cls)
        made = call(service, spec, args)
        if made.ok:
            return service, made, last
        last = made
    return fresh(cls), None, last


def reads(target: Target) -> Findings:
    """Every read-only tool, called with valid arguments from the seeded records (and a few
    draws), leaves the state as it was, whether it succeeds or not."""
    found = Findings()
    service = fresh(target.cls)
    for spec in target.cls.tool_specs().values():
        if not spec.read_only:
            continue
        tried = 0
        for args in _attempts(spec, service, 3):
            tried += 1
            before = service.state.model_dump(mode="json")
            made = call(service, spec, args)
            changed = _changed(before, service)
            if changed:
                found.fail(f"{made} is read-only but changed the state ({', '.join(changed)})"
                           f"; mark it @tool(read_only=False) or leave the state alone")
                service = fresh(target.cls)
                break
        if not tried:
            found.note(f"{spec.name}: no valid arguments could be drawn from the records")
    return found


def _by_interface(spec: ToolSpec, call_: Call) -> dict[str, list[Any]]:
    """Values a write was given and returned, by interface (what a read could look it up by)."""
    pool: dict[str, list[Any]] = {}
    for slot in spec.outputs:
        for value in extract(call_.result.get("data"), slot.path):
            if isinstance(value, (str, int, float)) and value not in ("", None):
                pool.setdefault(slot.interface, []).append(value)
    for slot in spec.inputs:
        if len(slot.path) == 1 and slot.path[0] in call_.arguments:
            pool.setdefault(slot.interface, []).append(call_.arguments[slot.path[0]])
    return pool


def _reads_of(target: Target, spec: ToolSpec, made: Call) -> Iterator[tuple[ToolSpec,
                                                                           dict[str, Any]]]:
    """Reads of the service whose required parameters the write's values fill."""
    pool = _by_interface(spec, made)
    for read in target.cls.tool_specs().values():
        if not read.read_only:
            continue
        slots = {s.path[0]: s.interface for s in read.inputs if len(s.path) == 1}
        args: dict[str, Any] = {}
        for param in read.parameters.get("required", ()):
            values = pool.get(slots.get(param, ""), [])
            if not values:
                break
            args[param] = values[0]
        else:
            yield read, args


def _norm(value: Any) -> str:
    return " ".join(str(value).split()).casefold()


def _stored(made: Call) -> dict[str, Any]:
    """The write's argument values that its own result shows (what it says it stored), by
    their normal form."""
    shown = {_norm(v) for v in leaves(made.result.get("data"))}
    given = {_norm(v): v for v in leaves(made.arguments) if v not in (None, "", True, False)}
    return {k: v for k, v in given.items() if k in shown} or given


def _removed(cls: type[Any], service: Service) -> set[str]:
    """Keys of records the write took out of the state (a delete)."""
    before = fresh(cls).state.collections()
    after = service.state.collections()
    return {str(k) for name, records in before.items() for k in records
            if k not in after.get(name, {})}


def _read_back(target: Target, spec: ToolSpec, service: Service, made: Call,
               found: Findings) -> None:
    removed = _removed(target.cls, service)
    values = {_norm(k): k for k in removed} if removed else _stored(made)
    expected = set(values)
    tried = []
    for read, args in _reads_of(target, spec, made):
        seen = call(service, read, args)
        shown = {_norm(v) for v in leaves(seen.result.get("data"))} if seen.ok else set()
        if removed and (seen.code == 404 or not expected & shown):
            return  # a delete: the record is gone for the reads too
        if not removed and expected <= shown:
            return
        if removed:
            tried.append(f"{seen} still shows it")
        else:
            missing = sorted(str(values[k]) for k in expected - shown)[:3]
            tried.append(f"{seen} shows {missing} nowhere"
                         if seen.ok else f"{seen} -> {seen.result.get('error')}")
    if not tried:
        found.note(f"{made}: no read of {target.name} takes what it returns")
    elif removed:
        found.fail(f"{made} removed {sorted(removed)[:3]} from the state, but "
                   + "; ".join(tried[:3]))
    else:
        found.fail(f"{made} stored {sorted(map(str, values.values()))[:4]}, but no read "
                   f"shows it: "
                   + "; ".join(tried[:3]))


def writes(target: Target) -> Findings:
    """Each write, called with valid arguments until one succeeds, is followed by a read of
    the same service (one whose required inputs the write's values fill) that shows the
    values the write stored, or, when the write removed a record, no longer finds it."""
    found = Findings()
    for spec in target.cls.tool_specs().values():
        if spec.read_only or spec.simulated:
            continue
        service, made, last = successful_call(target.cls, spec)
        if made is None:
            why = f": last {last} -> {last.result.get('error')}" if last else ""
            found.note(f"{spec.name}: no call with drawn arguments succeeded{why}")
            continue
        _read_back(target, spec, service, made, found)
    return found
