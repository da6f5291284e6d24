"""Service conformance checks (like Gymnasium's env checker) and call helpers for tests."""

from __future__ import annotations

import string
from typing import Any, Iterable

from compoenv.service import Service
from compoenv.world import World

__all__ = ["ServiceCheckError", "check_service", "check_phrases", "check_interfaces",
           "check_seeding", "check_descriptions", "check_roles", "call_ok", "call_error"]


class ServiceCheckError(AssertionError):
    """A service breaks a library convention; the message names the tool and the fix."""


def _fail(message: str) -> None:
    raise ServiceCheckError(message)


def check_descriptions(cls: type[Service]) -> None:
    """The service and every tool have a description (agents read them)."""
    if not (cls.__doc__ or "").strip():
        _fail(f"{cls.__qualname__} has no docstring; its first line describes the service")
    for spec in cls.tool_specs().values():
        if spec.description == spec.name.replace("_", " "):
            _fail(f"{spec.qualified_name} has no docstring summary")


def check_phrases(cls: type[Service]) -> None:
    """Every tool has a phrase naming each required parameter, and only real parameters."""
    for spec in cls.tool_specs().values():
        if not spec.phrase:
            _fail(f"{spec.qualified_name} has no phrase; add @tool(phrase='...') so composed "
                  f"tasks can ask for it")
        params = set(spec.parameters.get("properties", {}))
        try:
            named = {field for _, field, _, _ in string.Formatter().parse(spec.phrase)
                     if field is not None}
            spec.phrase.format(**{p: "value" for p in params})
        except (ValueError, IndexError, KeyError) as exc:
            _fail(f"phrase of {spec.qualified_name} does not render with string values: "
                  f"{type(exc).__name__}: {exc}; use plain {{param}} placeholders")
        missing = set(spec.parameters.get("required", ())) - named
        unknown = named - params
        if missing:
            _fail(f"phrase of {spec.qualified_name} does not mention {sorted(missing)}")
        if unknown:
            _fail(f"phrase of {spec.qualified_name} names unknown parameters {sorted(unknown)}")


def check_interfaces(cls: type[Service], free_text: Iterable[str] = ()) -> None:
    """Every parameter carries an ``x-interface`` (directly, in its items, or in an Optional
    branch), except those listed as ``"tool.param"`` in ``free_text``."""
    exempt = set(free_text)
    for spec in cls.tool_specs().values():
        tagged = {slot.path[0] for slot in spec.inputs}
        for param in spec.parameters.get("properties", {}):
            key = f"{spec.name}.{param}"
            if param not in tagged and key not in exempt:
                _fail(f"{spec.qualified_name}: parameter {param!r} has no interface type; use "
                      f"one from compoenv.interfaces, or list '{key}' as free text")
            if param in tagged and key in exempt:
                _fail(f"{key} is listed as free text but has an interface; drop it from the list")
            exempt.discard(key)
    if exempt:
        _fail(f"{cls.name}: free_text lists parameters that do not exist: {sorted(exempt)}")


def check_roles(cls: type[Service]) -> None:
    """Every person, organisation, money, city and date parameter says what it is in this
    service (``x-role``): the graph joins those interfaces only where roles fit, so an
    untagged one is never fed."""
    from compoenv.roles import ROLE_INTERFACES, ROLES

    for spec in cls.tool_specs().values():
        for slot in spec.inputs:
            kind = ROLE_INTERFACES.get(slot.interface)
            if kind and slot.role is None:
                where = ".".join(slot.path)
                examples = ", ".join(ROLES[kind][:4])
                _fail(f"{spec.qualified_name}: parameter {where!r} ({slot.interface}) has no "
                      f"role; annotate it, e.g. Annotated[{slot.interface}, Role(...)] with a "
                      f"{kind} role such as {examples} (compoenv.roles)")


def check_seeding(cls: type[Service], seeds: tuple[int, int] = (0, 1)) -> None:
    """Same seed, same state digest; different seeds, different states (unless stateless)."""
    a, b = seeds
    first, again = cls(World(a)).state.digest(), cls(World(a)).state.digest()
    if first != again:
        _fail(f"{cls.name}: seed() is not deterministic for world seed {a}; use world.rng()")
    stateful = any(cls(World(a)).state.model_dump().values())
    if stateful and first == cls(World(b)).state.digest():
        _fail(f"{cls.name}: world seeds {a} and {b} give identical states")


def check_service(cls: type[Service], free_text: Iterable[str] = ()) -> None:
    """Run every check on ``cls``; raises ServiceCheckError at the first problem."""
    check_descriptions(cls)
    check_phrases(cls)
    check_interfaces(cls, free_text)
    check_roles(cls)
    check_seeding(cls)


def call_ok(service: Service, tool: str, **arguments: Any) -> Any:
    """Call through the envelope path, assert success, return ``data``."""
    result = service.call(tool, arguments)
    assert result["success"], result
    return result["data"]


def call_error(service: Service, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call through the envelope path, assert failure, return the ``error`` object."""
    result = service.call(tool, arguments)
    assert not result["success"], result
    return result["error"]
