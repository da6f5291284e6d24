"""The errors check: unknown ids are 404, bad arguments 400, and no call is ever a 500."""

from __future__ import annotations

import re
from typing import Any

from compoenv.checks.calls import ALLOWED_CODES, Call, call, fresh, is_key
from compoenv.checks.reads_writes import successful_call
from compoenv.checks.report import Findings
from compoenv.checks.target import Target
from compoenv.schema import is_valid
from compoenv.service import ToolSpec

__all__ = ["errors", "unknown_id", "code_problem"]

_NUMBERED = re.compile(r"^(.*?)(\d+)$")


def unknown_id(value: Any, schema: dict[str, Any]) -> Any:
    """An id of the same format as ``value`` that no record has (``C-0007`` -> ``C-99999``),
    or None when no such value fits the schema."""
    if isinstance(value, int) and not isinstance(value, bool):
        candidate: Any = 987_654_321
    elif isinstance(value, str):
        match = _NUMBERED.match(value)
        candidate = (f"{match.group(1)}{'9' * (len(match.group(2)) + 1)}" if match
                     else f"{value}-unknown")
    else:
        return None
    return candidate if is_valid(candidate, schema) else None


def code_problem(made: Call, expected: int | None = None) -> str | None:
    """What is wrong with a failed call's code: a 500, a code outside the allowed set, or
    not the ``expected`` one."""
    if made.ok:
        return f"{made} succeeded; expected error {expected}" if expected else None
    error = made.result.get("error", {})
    code, message = made.code, str(error.get("message", ""))[:160]
    if code == 500:
        return f"{made} -> 500 ({message}): a bug; raise ToolError with 400/404/409/422"
    if code not in ALLOWED_CODES:
        return f"{made} -> code {code} ({message}); allowed: {sorted(ALLOWED_CODES)}"
    if expected is not None and code != expected:
        return f"{made} -> {code} ({message}); expected {expected}"
    return None


def _own_keys(target: Target) -> set[Any]:
    """The keys of the seeded state's records: ids this service answers for (an id of another
    service's record, such as a payment's bank transaction, it may take on trust)."""
    return {key for records in fresh(target.cls).state.collections().values() for key in records}


def _unknown_ids(target: Target, spec: ToolSpec, good: Call, found: Findings) -> None:
    own = _own_keys(target)
    props = spec.parameters.get("properties", {})
    interfaces = {s.path[0]: s.interface for s in spec.inputs if len(s.path) == 1}
    for param, value in good.arguments.items():
        if not is_key(param, interfaces.get(param)) or value not in own:
            continue
        missing = unknown_id(value, props.get(param, {}))
        if missing is None:
            continue
        made = call(fresh(target.cls), spec, {**good.arguments, param: missing})
        problem = code_problem(made, 404)
        if problem:
            found.fail(f"unknown {param}: {problem}")


def _bad_arguments(target: Target, spec: ToolSpec, found: Findings) -> None:
    service = fresh(target.cls)
    required = list(spec.parameters.get("required", ()))
    cases: list[dict[str, Any]] = [{"no_such_argument": 1}]
    if required:
        cases.append({p: None for p in required[1:]})  # the first one missing
    cases += [{p: {"not": "a value"}} for p in spec.parameters.get("properties", {})]
    for args in cases:
        problem = code_problem(call(service, spec, args), 400)
        if problem:
            found.fail(f"invalid arguments: {problem}")


def errors(target: Target) -> Findings:
    """Per tool: an unknown id in otherwise valid arguments is a 404; a missing, unexpected
    or wrongly typed argument is a 400; none of these calls gets a 500 or a code outside
    400/404/409/422."""
    found = Findings()
    for spec in target.cls.tool_specs().values():
        _bad_arguments(target, spec, found)
        _, good, _ = successful_call(target.cls, spec)  # 500s of valid calls: the fuzz's
        if good is not None:
            _unknown_ids(target, spec, good, found)
    return found
