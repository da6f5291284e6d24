"""The conventions check: the library's service checker, every rule reported, not the first."""

from __future__ import annotations

from typing import Any

from compoenv.checks.report import Findings
from compoenv.checks.target import Target
from compoenv.service import ToolSpec
from compoenv.testing import (
    ServiceCheckError, check_descriptions, check_interfaces, check_phrases, check_roles,
)

__all__ = ["conventions", "free_text", "is_free_text"]


def is_free_text(schema: dict[str, Any]) -> bool:
    """Whether an untagged parameter is one no other service's output should feed: free text,
    a flag, a count, a choice among fixed values, or a list of those. An id, a date or a
    pattern-bound string without an interface is a missed join instead."""
    branches = schema.get("anyOf") or schema.get("oneOf")
    if branches:  # Optional[X]: X decides
        return all(is_free_text(b) for b in branches if b.get("type") != "null")
    if "enum" in schema or "const" in schema:
        return True
    kind = schema.get("type")
    if kind in ("boolean", "integer", "number"):
        return True
    if kind == "array":  # a list of free values (extras to add, questions to ask)
        return is_free_text(schema.get("items", {}))
    return kind == "string" and not ({"format", "pattern"} & set(schema))


def free_text(specs: dict[str, ToolSpec]) -> tuple[list[str], list[str]]:
    """``tool.param`` names of untagged parameters that are free text, and those that are not."""
    free, missed = [], []
    for spec in specs.values():
        tagged = {slot.path[0] for slot in spec.inputs}
        for param, schema in spec.parameters.get("properties", {}).items():
            if param not in tagged:
                (free if is_free_text(schema) else missed).append(f"{spec.name}.{param}")
    return free, missed


def conventions(target: Target) -> Findings:
    """Descriptions, phrases, interfaces and roles, as ``compoenv.testing.check_service``
    checks them (seeding is a check of its own, across processes)."""
    found = Findings()
    cls = target.cls
    free, _ = free_text(cls.tool_specs())
    for check in (check_descriptions, check_phrases, check_roles):
        try:
            check(cls)
        except ServiceCheckError as exc:
            found.fail(str(exc))
    try:
        check_interfaces(cls, free)
    except ServiceCheckError as exc:
        found.fail(str(exc))
    if free:
        found.note(f"parameters taken as free text (no interface): {', '.join(free)}")
    return found
