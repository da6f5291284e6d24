"""The schemas check: an implemented service's tools agree with its spec, when it has one."""

from __future__ import annotations

from typing import Any

from compoenv.checks.report import Findings
from compoenv.checks.target import Target
from compoenv.service import ToolSpec

__all__ = ["schemas", "compare_tool"]

_NUMBER = {"integer", "number"}


def _types(schema: dict[str, Any]) -> set[str]:
    """The JSON types a schema admits (``anyOf`` branches joined; none: any type)."""
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return set(kind)
    branches = schema.get("anyOf") or schema.get("oneOf") or ()
    return set().union(*(_types(b) for b in branches)) if branches else set()


def _fits(spec_types: set[str], own_types: set[str]) -> bool:
    """Whether every value the spec allows the implementation allows too."""
    if not own_types or not spec_types:
        return True
    if "number" in own_types:
        own_types = own_types | _NUMBER
    return spec_types <= own_types


def _interface(schema: dict[str, Any]) -> str | None:
    if "x-interface" in schema:
        return str(schema["x-interface"])
    for branch in schema.get("anyOf", ()) + schema.get("oneOf", ()):
        if "x-interface" in branch:
            return str(branch["x-interface"])
    return None


def _params(name: str, own: ToolSpec, spec: ToolSpec) -> list[str]:
    problems = []
    own_props = own.parameters.get("properties", {})
    spec_props = spec.parameters.get("properties", {})
    own_req = set(own.parameters.get("required", ()))
    spec_req = set(spec.parameters.get("required", ()))
    if own_req != spec_req:
        problems.append(f"{name}: required parameters {sorted(own_req)}, the spec requires "
                        f"{sorted(spec_req)}")
    for param in sorted(set(spec_props) - set(own_props)):
        problems.append(f"{name}: no parameter {param!r} (the spec has it)")
    for param in sorted(set(own_props) - set(spec_props)):
        problems.append(f"{name}: parameter {param!r} is not in the spec")
    for param in sorted(set(spec_props) & set(own_props)):
        mine, theirs = own_props[param], spec_props[param]
        if not _fits(_types(theirs), _types(mine)):
            problems.append(f"{name}.{param}: type {sorted(_types(mine))}, the spec says "
                            f"{sorted(_types(theirs))}")
        if _interface(theirs) and _interface(mine) != _interface(theirs):
            problems.append(f"{name}.{param}: interface {_interface(mine)}, the spec says "
                            f"{_interface(theirs)}")
    return problems


def _returns(name: str, own: ToolSpec, spec: ToolSpec) -> list[str]:
    mine, theirs = own.returns, spec.returns
    if not _fits(_types(theirs), _types(mine)) and not _fits(_types(mine), _types(theirs)):
        return [f"{name}: returns {sorted(_types(mine))}, the spec returns "
                f"{sorted(_types(theirs))}"]
    if "array" in _types(theirs) and "array" in _types(mine):
        mine, theirs = mine.get("items", {}), theirs.get("items", {})
    keys = set(theirs.get("required", ())) - set(mine.get("properties", {}))
    if keys and mine.get("properties") is not None:
        return [f"{name}: its result lacks {sorted(keys)}, which the spec's result requires"]
    return []


def compare_tool(name: str, own: ToolSpec, spec: ToolSpec) -> list[str]:
    """Where one tool disagrees with the spec's tool of the same name."""
    problems = _params(name, own, spec) + _returns(name, own, spec)
    if own.read_only != spec.read_only:
        problems.append(f"{name}: read_only={own.read_only}, the spec says {spec.read_only}")
    return problems


def schemas(target: Target) -> Findings:
    """Same tools, same required parameters, compatible types and interfaces, results with the
    fields the spec's results require. Passes with a note when the service has no spec."""
    found = Findings()
    if target.spec is None:
        found.note(f"no spec of {target.name!r} to compare with")
        return found
    own = target.cls.tool_specs()
    if own is target.spec or own == target.spec:
        found.note(f"the service is the spec ({target.spec_origin})")
        return found
    for name in sorted(set(target.spec) - set(own)):
        found.fail(f"{name}: in the spec ({target.spec_origin}), not implemented")
    for name in sorted(set(own) - set(target.spec)):
        found.fail(f"{name}: implemented, not in the spec ({target.spec_origin})")
    for name in sorted(set(own) & set(target.spec)):
        for problem in compare_tool(name, own[name], target.spec[name]):
            found.fail(problem)
    found.note(f"compared with {target.spec_origin}")
    return found
