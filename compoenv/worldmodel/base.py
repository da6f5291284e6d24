"""The WorldModel protocol: what a backend receives for a simulated call, and what it returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from compoenv.service import Service, State, ToolSpec
from compoenv.world import World

__all__ = ["ToolRequest", "ToolAnswer", "WorldModel", "WorldModelError", "SimulatedService",
           "SimState"]


class WorldModelError(Exception):
    """A backend could not answer (timeout, unreachable, invalid output); ``reason`` is short."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason, self.detail = reason, detail


@dataclass(frozen=True)
class ToolRequest:
    """One simulated call.

    Attributes:
        spec: The tool (its parameter and return schemas, read/write flag).
        arguments: Validated arguments.
        world: The episode's World (people, organisations, cities, today).
        records: The service's simulated records so far (collection -> key -> record), which
            a read must agree with.
        seed: A seed fixed by (world, tool, arguments): the same before and after writes, so
            generated content stays put while stored records come and go.
    """

    spec: ToolSpec
    arguments: dict[str, Any]
    world: World
    records: dict[str, dict[str, Any]]
    seed: int


@dataclass(frozen=True)
class ToolAnswer:
    """A backend's answer: ``data`` (valid against the tool's return schema) and, for writes,
    ``patch``: records to store, ``{collection: {key: record or None to delete}}``."""

    data: Any
    patch: dict[str, dict[str, Any]] = field(default_factory=dict)
    source: str = "offline"


class WorldModel(Protocol):
    """Anything that answers simulated tool calls."""

    name: str

    def answer(self, request: ToolRequest) -> ToolAnswer: ...


class SimState(State):
    """The simulated state of a spec-only service: JSON records by collection and key, and
    ``shown``: what the episode was shown of its records (``consistency.Recall``: identity ->
    fields), which later answers agree with. ``shown`` is no collection: rubrics and the
    state's version see the records alone."""

    records: dict[str, dict[str, Any]] = {}
    shown: dict[Any, Any] = {}

    def collections(self) -> dict[str, dict[str, Any]]:
        return self.records  # read-only to callers, as State.collections says

    def fork(self) -> SimState:
        # the simulator replaces a collection on every write and never edits a record, and
        # replaces (never edits) what it remembers, so a fork needs only its own mappings
        return self.model_construct(_fields_set=self.model_fields_set, records=dict(self.records),
                                    shown=dict(self.shown))


class SimulatedService(Service):
    """Base of spec-only services: every tool is answered by the episode's world model."""

    class State(SimState):
        pass
