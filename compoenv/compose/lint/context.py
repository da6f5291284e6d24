"""What the checks read: a task, its tools' schemas, its World, read once per task."""

from __future__ import annotations

import re
from functools import cached_property
from typing import Any, Iterator, NamedTuple

from compoenv.compose.lint.fields import field_phrases
from compoenv.registry import Registry, RegistryError
from compoenv.service import ToolSpec
from compoenv.task import Task
from compoenv.world import Person, World

__all__ = ["Vocabulary", "TaskContext", "Argument"]

_QUOTED = re.compile(r'"[^"\n]*"')


def _enums(node: Any, depth: int = 0) -> Iterator[str]:
    """The string enum values anywhere in a JSON schema."""
    if isinstance(node, dict) and depth < 12:
        for value in node.get("enum") or ():
            if isinstance(value, str):
                yield value
        for child in node.values():
            yield from _enums(child, depth + 1)
    elif isinstance(node, list):
        for child in node:
            yield from _enums(child, depth + 1)


def _branch(schema: dict[str, Any]) -> dict[str, Any]:
    """The first non-null alternative of an ``Optional`` schema (the schema itself if none)."""
    for alt in schema.get("anyOf") or schema.get("oneOf") or ():
        if isinstance(alt, dict) and alt.get("type") != "null":
            return {**alt, **{k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}}
    return schema


class Vocabulary:
    """Per registry, read once: each tool's spec, its output field phrases, its enum values.

    Args:
        registry: The services tasks are linted against.
    """

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._specs: dict[str, ToolSpec | None] = {}
        self._service: dict[str, tuple[frozenset[str], frozenset[str]]] = {}

    def spec(self, qualified: str) -> ToolSpec | None:
        """The tool's spec, or None for a tool the registry lacks."""
        if qualified not in self._specs:
            try:
                self._specs[qualified] = self.registry.spec(qualified)
            except RegistryError:
                self._specs[qualified] = None
        return self._specs[qualified]

    def service(self, name: str) -> tuple[frozenset[str], frozenset[str]]:
        """``(field phrases of its outputs, enum values of its parameters)`` of a service."""
        if name not in self._service:
            try:
                specs = list(self.registry.get(name).tool_specs().values())
            except RegistryError:
                specs = []
            phrases = frozenset().union(*(field_phrases(s.returns) for s in specs))
            enums = frozenset(v for s in specs for v in _enums(s.parameters))
            self._service[name] = (phrases, enums)
        return self._service[name]

    @cached_property
    def all_phrases(self) -> frozenset[str]:
        """Field phrases of every service: what a longer reading of a reference may be."""
        return frozenset().union(*(self.service(n)[0] for n in self.registry.names()))


class Argument(NamedTuple):
    """One top-level argument of a solution call, with what its schema says about it."""

    call: int
    param: str
    value: Any
    interface: str | None
    role: str | None
    spec: ToolSpec
    explicit: bool = False  # the role is the schema's x-role, not read from the name


class TaskContext:
    """One task as the checks see it (each part computed on first use).

    Args:
        task: The task.
        vocab: Its registry's vocabulary.
    """

    def __init__(self, task: Task, vocab: Vocabulary) -> None:
        self.task = task
        self.vocab = vocab
        self.text = task.instruction
        self.memo: dict[str, Any] = {}  # what several checks read, found once per task

    @cached_property
    def phrases(self) -> frozenset[str]:
        """Field phrases of the outputs of the task's services."""
        return frozenset().union(*(self.vocab.service(s)[0] for s in self.task.services))

    @cached_property
    def enums(self) -> frozenset[str]:
        """Enum values of the parameters of the task's services."""
        return frozenset().union(*(self.vocab.service(s)[1] for s in self.task.services))

    @cached_property
    def quoted(self) -> tuple[tuple[int, int], ...]:
        """Spans of the instruction's quoted strings, quotes included."""
        return tuple(m.span() for m in _QUOTED.finditer(self.text))

    def in_quotes(self, index: int) -> bool:
        return any(start < index < end for start, end in self.quoted)

    @cached_property
    def world(self) -> World:
        return World.get(self.task.seed, self.task.today())

    @cached_property
    def _phones(self) -> dict[str, Person]:
        return {p.phone: p for p in self.world.people}

    def person(self, interface: str | None, value: Any) -> Person | None:
        """The World's person a name, email or phone value names, if any."""
        if not isinstance(value, str):
            return None
        if interface == "PersonName":
            return self.world.person(value)
        if interface == "EmailAddress":
            return self.world.person_by_email(value)
        if interface == "PhoneNumber":
            by_phone = getattr(self.world, "person_by_phone", None)
            return by_phone(value) if by_phone else self._phones.get(value.strip())
        return None

    @cached_property
    def arguments(self) -> tuple[Argument, ...]:
        """Every top-level argument of the solution's calls to tools the registry knows."""
        from compoenv.roles import infer_role

        out = []
        for i, call in enumerate(self.task.solution):
            spec = self.vocab.spec(call.name)
            if spec is None:
                continue
            props = spec.parameters.get("properties", {})
            for param, value in call.arguments.items():
                schema = _branch(props.get(param) or {})
                interface = schema.get("x-interface")
                role = schema.get("x-role") or (infer_role(interface, param)
                                                if interface else None)
                out.append(Argument(i, param, value, interface, role, spec,
                                    "x-role" in schema))
        return tuple(out)
