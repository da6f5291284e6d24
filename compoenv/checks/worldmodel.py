"""The worldmodel check: the service's answers beside the offline world model's for its tools."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from compoenv.checks.calls import Call, call
from compoenv.checks.reads_writes import successful_call
from compoenv.checks.report import Findings
from compoenv.checks.target import Target
from compoenv.schema import is_valid
from compoenv.service import Service, ToolSpec
from compoenv.world import World

__all__ = ["worldmodel", "shape", "differences", "agreement"]


def shape(value: Any) -> Any:
    """The shape of a JSON value: a type name, an object's keys with their shapes, a list's
    first item's shape."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    if value is None:
        return "null"
    return "number" if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else type(value).__name__


def differences(mine: Any, theirs: Any, where: str = "") -> list[str]:
    """How two shapes differ, one line per place (``where`` is the path so far)."""
    at = where or "the result"
    if isinstance(mine, dict) and isinstance(theirs, dict):
        out = []
        if set(theirs) - set(mine):
            out.append(f"{at}: the world model adds {sorted(set(theirs) - set(mine))}")
        if set(mine) - set(theirs):
            out.append(f"{at}: the world model lacks {sorted(set(mine) - set(theirs))}")
        for key in sorted(set(mine) & set(theirs)):
            out += differences(mine[key], theirs[key], f"{where}.{key}" if where else key)
        return out
    if isinstance(mine, list) and isinstance(theirs, list):
        return differences(mine[0], theirs[0], f"{where}[]") if mine and theirs else []
    if "null" in (mine, theirs) or mine == theirs:
        return []
    kind = lambda s: "object" if isinstance(s, dict) else "list" if isinstance(s, list) else s
    return [f"{at}: the service gives {kind(mine)}, the world model {kind(theirs)}"]


def _fields(value: Any, where: str = "") -> dict[str, Any]:
    """Scalars by path; a list contributes its first item (the answers' lists differ in
    length and order)."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items()
                for k, v in _fields(item, f"{where}.{key}" if where else key).items()}
    if isinstance(value, list):
        return _fields(value[0], f"{where}[]") if value else {}
    return {where: value}


def agreement(made: Call, theirs: Any) -> str:
    """How far the world model's answer agrees with the service's on values: fields equal,
    and the call's arguments the service's answer shows but the world model's does not."""
    mine = _fields(made.result.get("data"))
    other = _fields(theirs)
    common = set(mine) & set(other)
    same = sum(1 for k in common if str(mine[k]).casefold() == str(other[k]).casefold())
    shown = {str(v).casefold() for v in mine.values()}
    echoed = {str(v).casefold() for v in other.values()}
    ignored = [f"{k}={v!r}" for k, v in made.arguments.items()
               if str(v).casefold() in shown and str(v).casefold() not in echoed]
    text = f"{same} of {len(common)} shared fields equal" if common else "no values to compare"
    return text + (f"; its answer does not show {', '.join(ignored)}" if ignored else "")


def _simulated(target: Target, specs: dict[str, ToolSpec]) -> type[Service]:
    """A spec-only twin of the service: every tool answered by the offline world model."""
    from compoenv.worldmodel.base import SimulatedService

    cls = type(f"WorldModel_{target.name}", (SimulatedService,), {
        "__doc__": target.cls.__doc__, "name": target.name, "domain": target.cls.domain})
    # an implemented tool's spec runs its method: the twin's say the world model answers
    cls._spec_tools = {n: replace(s, simulated=True)  # type: ignore[attr-defined]
                       for n, s in specs.items()}
    return cls


def _answer(twin: type[Service], spec: ToolSpec, made: Call) -> Any:
    from compoenv.worldmodel import OfflineWorldModel, Simulator

    service = twin(World.get(0))
    service.simulator = Simulator(OfflineWorldModel(), cache_bytes=0)
    return call(service, spec, made.arguments).result


def worldmodel(target: Target) -> Findings:
    """For each tool, one successful call of the service and the offline world model's answer
    to the same call (from the service's spec when it has one, else from its own schemas).
    Differences in shape are listed; the check fails only when the service's own answer does
    not fit its return schema."""
    from compoenv.worldmodel.base import SimulatedService

    found = Findings()
    if issubclass(target.cls, SimulatedService):
        found.note("a spec-only service: the world model is its implementation")
        return found
    specs = target.spec or target.cls.tool_specs()
    twin = _simulated(target, specs)
    for spec in target.cls.tool_specs().values():
        _, made, _ = successful_call(target.cls, spec)
        if made is None:
            continue
        data = made.result.get("data")
        if not is_valid(data, spec.returns):
            found.fail(f"{made} returned data its return schema rejects: "
                       f"{str(data)[:120]}")
            continue
        if spec.name not in specs:
            continue
        answer = _answer(twin, specs[spec.name], made)
        if not answer.get("success"):
            found.note(f"{made}: the world model answered {answer.get('error')}")
            continue
        lines = differences(shape(data), shape(answer.get("data")))
        found.note(f"{spec.name}: the world model's answer "
                   + ("has the service's shape" if not lines else "; ".join(lines[:3]))
                   + f", {agreement(made, answer.get('data'))}")
    return found
