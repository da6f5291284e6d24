"""Valid calls to a service's tools, with argument values from its records or the World."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from compoenv.compose.values import MISSING, fresh_value, record_arguments, record_value
from compoenv.schema import brief
from compoenv.service import Service, ToolError, ToolResult, ToolSpec, without_hints
from compoenv.world import World

__all__ = ["ALLOWED_CODES", "Call", "is_key", "valid_arguments", "call", "fresh", "show",
           "leaves"]

ALLOWED_CODES = frozenset({400, 404, 409, 422})
WORLD_SEED = 0


@dataclass(frozen=True)
class Call:
    """A call made during a check, and what it returned."""

    tool: str
    arguments: dict[str, Any]
    result: ToolResult

    @property
    def ok(self) -> bool:
        return bool(self.result.get("success"))

    @property
    def code(self) -> int | None:
        return None if self.ok else self.result.get("error", {}).get("code")

    def __str__(self) -> str:
        return show(self.tool, self.arguments)


def show(tool: str, arguments: dict[str, Any]) -> str:
    """``tool(a='x', n=2)``, each value cut short: how details name a call."""
    args = ", ".join(f"{k}={brief(v, 60)}" for k, v in arguments.items())
    return f"{tool}({args})"


def fresh(cls: type[Service], seed: int = WORLD_SEED) -> Service:
    """A newly seeded instance of ``cls`` that owns its state (no copy-on-write sharing)."""
    return cls(World.get(seed))


def call(service: Service, spec: ToolSpec, arguments: dict[str, Any]) -> Call:
    """Call through the envelope path, as an agent would (no did-you-mean work)."""
    with without_hints():
        return Call(spec.name, arguments, service.call(spec.name, arguments))


def _value(param: str, schema: dict[str, Any], interface: str | None, service: Service,
           rng: random.Random, prefer_records: bool) -> Any:
    world = service.world
    person = rng.choice(world.people[1:])
    sources = ("records", "fresh") if prefer_records else ("fresh", "records")
    for source in sources:
        if source == "records" and interface:
            value = record_value(service, interface, rng)
        elif source == "fresh":
            value = fresh_value(param, schema, world, rng, person, service.name)
        else:
            continue
        if value is not MISSING:
            return value
    return _from_pattern(schema) if "pattern" in schema else _word(schema, service, rng)


_ID_PATTERN = re.compile(r"^\^([A-Z][A-Z0-9]*-)\\d\{(\d+),?\d*\}\$$")


def _from_pattern(schema: dict[str, Any]) -> Any:
    """An id of another service's format (``^TX-\\d{4,}$`` -> ``TX-0001``), or MISSING."""
    match = _ID_PATTERN.match(schema.get("pattern", ""))
    return f"{match.group(1)}{1:0{int(match.group(2))}d}" if match else MISSING


def _word(schema: dict[str, Any], service: Service, rng: random.Random) -> Any:
    """A word from one of the service's records, for free text (a search query), or MISSING."""
    if schema.get("type") != "string" or "enum" in schema or "format" in schema:
        return MISSING
    state = service.state.model_dump(mode="json")
    words = sorted({w for v in leaves(state) if isinstance(v, str) and " " in v
                    for w in v.split() if w.isalpha() and len(w) >= 4})
    return rng.choice(words) if words else MISSING


def valid_arguments(spec: ToolSpec, service: Service, rng: random.Random,
                    optional: bool = False) -> dict[str, Any] | None:
    """Arguments the tool's schema accepts, with values a user of this service would give:
    a read takes them from one of its records; a write states new values where it can and
    takes ids from records. ``optional`` also fills some optional parameters. None when a
    required parameter has no value."""
    args: dict[str, Any] | None = record_arguments(spec, service, rng) if spec.read_only \
        else None
    props = spec.parameters.get("properties", {})
    interfaces = {s.path[0]: s.interface for s in spec.inputs if len(s.path) == 1}
    names = list(spec.parameters.get("required", ()))
    if optional:
        names += [p for p in props if p not in names and rng.random() < 0.5]
    out: dict[str, Any] = dict(args or {})
    for param in names:
        if param in out:
            continue
        value = _value(param, props.get(param, {}), interfaces.get(param), service, rng,
                       spec.read_only or is_key(param, interfaces.get(param)))
        if value is MISSING:
            if param in spec.parameters.get("required", ()):
                return None
            continue
        out[param] = value
    try:
        spec.validate(out)
    except ToolError:
        return _without_bad(spec, out)
    return out


def _without_bad(spec: ToolSpec, args: dict[str, Any]) -> dict[str, Any] | None:
    """``args`` less the optional values the schema rejects, or None if still invalid."""
    required = set(spec.parameters.get("required", ()))
    kept = {k: v for k, v in args.items() if k in required}
    try:
        spec.validate(kept)
    except ToolError:
        return None
    return kept


def is_key(param: str, interface: str | None) -> bool:
    """Whether the parameter names an existing record (an id): a write takes it from one."""
    return param == "id" or param.endswith("_id") or bool(interface and interface.endswith("Id"))


def leaves(value: Any) -> list[Any]:
    """Every scalar inside a JSON value."""
    if isinstance(value, dict):
        return [x for v in value.values() for x in leaves(v)]
    if isinstance(value, list):
        return [x for v in value for x in leaves(v)]
    return [value]
