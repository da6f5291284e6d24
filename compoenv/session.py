"""Session: the live services of one episode, a router for qualified tool names, and a call log."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Iterable, NamedTuple

from compoenv.registry import Registry
from compoenv.service import Service, State, ToolResult, ToolSpec, did_you_mean, error
from compoenv.untrusted import neutralise
from compoenv.world import World

__all__ = ["Session", "Mount", "CallRecord", "render_result"]


class CallRecord(NamedTuple):
    """One executed call, as the rubric's ``call`` criteria and trajectories see it."""

    name: str
    arguments: Any
    result: ToolResult


class _Render(json.JSONEncoder):
    """ASCII JSON in which no value holds a chat template's control token or a tool-call tag
    (``compoenv.untrusted.neutralise``: a value decodes back unchanged, but cannot close the
    ``<tool_response>`` it is shown in or open a turn)."""

    def encode(self, o: Any) -> str:
        return neutralise(super().encode(o))


_RENDER = _Render(separators=(", ", ": "))


def render_result(result: ToolResult, limit: int | None = None) -> str:
    """The envelope as the agent reads it: compact, ASCII-only JSON, control tokens of chat
    templates escaped (``compoenv.untrusted.neutralise``).

    Args:
        result: The envelope.
        limit: At most this many characters (None: no limit). A longer envelope stays valid
            JSON: a list keeps its leading items, other data becomes the start of its JSON
            text (a string), a long error message is cut, and ``"truncated"`` says so.
    """
    text = _RENDER.encode(result)
    if limit is None or len(text) <= limit:
        return text
    return _cut(result, len(text), limit)


def _cut(result: ToolResult, size: int, limit: int) -> str:
    note = (f"output cut: it is {size:,} characters, over this call's limit of {limit:,} "
            f"(actions.MAX_RESULT_CHARS, or the call's share of spaces.MAX_OBSERVATION_CHARS)")
    head: dict[str, Any] = {k: v for k, v in result.items() if k not in ("data", "error")}
    error = result.get("error")
    if isinstance(error, dict):
        base = {**head, "error": {**error, "message": ""}, "truncated": note}
        room = limit - len(_RENDER.encode(base))
        base["error"]["message"] = _prefix(str(error.get("message", "")), room)
        return _RENDER.encode(base) if room >= 0 else _minimal(result, limit)
    data = result.get("data")
    if isinstance(data, list) and data:
        sizes = [len(_RENDER.encode(item)) for item in data]
        widest = f"showing the first {len(data)} of {len(data)} items; {note}"
        room = limit - len(_RENDER.encode({**head, "data": [], "truncated": widest}))
        count, used = 0, 0
        while count < len(data) and used + sizes[count] + 2 * (count > 0) <= room:
            used += sizes[count] + 2 * (count > 0)
            count += 1
        if count:
            return _RENDER.encode({**head, "data": data[:count], "truncated":
                                   f"showing the first {count} of {len(data)} items; {note}"})
    base = {**head, "data": "", "truncated": f"data shown as the start of its JSON text; {note}"}
    room = limit - len(_RENDER.encode(base))
    base["data"] = _prefix(_RENDER.encode(data), room)
    return _RENDER.encode(base) if room >= 0 else _minimal(result, limit)


def _prefix(text: str, room: int) -> str:
    """The longest start of ``text`` whose JSON string form takes at most ``room`` characters
    besides its quotes (a character takes 1 to 12: a binary search over the length)."""
    low, high = 0, min(len(text), max(room, 0))
    while low < high:
        mid = (low + high + 1) // 2
        if len(_RENDER.encode(text[:mid])) - 2 <= room:
            low = mid
        else:
            high = mid - 1
    return text[:low]


def _minimal(result: ToolResult, limit: int) -> str:
    return _RENDER.encode({"success": bool(result.get("success")),
                           "truncated": f"output over the limit of {limit:,} characters"})


@lru_cache(maxsize=256)
def _routes(classes: tuple[type[Service], ...]) -> dict[str, tuple[str, ToolSpec]]:
    """Qualified tool name -> (service, spec), once per set of services (read-only)."""
    return {spec.qualified_name: (cls.name, spec)
            for cls in classes for spec in cls.tool_specs().values()}


class Mount(NamedTuple):
    """Service classes by name and their tools' routes, made once and shared read-only by
    many sessions (a composer makes a session per attempt: over thousands of services,
    listing them each time would cost more than the attempt)."""

    classes: dict[str, type[Service]]
    routes: dict[str, tuple[str, ToolSpec]]

    @classmethod
    def of(cls, services: Iterable[type[Service]]) -> Mount:
        classes = {service.name: service for service in services}
        return cls(classes, _routes(tuple(classes.values())))


class Session:
    """Services of one episode over one World, created lazily and shared copy-on-write.

    Args:
        services: Service classes the episode mounts.
        world: The episode's World.
        simulator: The episode's world model access (a ``worldmodel.Simulator``, holding the
            task's recorded answers); None uses the process-wide offline one, which is for
            the library's own sessions (composition, verification): a session that plays an
            agent's calls gets a Simulator of its own (the env makes one per episode), so
            that the agent's arguments are cached with the episode, not the process.
    """

    def __init__(self, services: Iterable[type[Service]] | Mount, world: World,
                 simulator: Any = None) -> None:
        self.world = world
        self.simulator = simulator  # a worldmodel.Simulator; None: the offline default
        mount = services if isinstance(services, Mount) else Mount.of(services)
        self._classes, self._routes = mount
        self._live: dict[str, Service] = {}
        self._initial: dict[str, State] = {}
        self.log: list[CallRecord] = []

    @classmethod
    def for_names(cls, names: Iterable[str], world: World, registry: Registry | None = None,
                  simulator: Any = None) -> Session:
        registry = registry or Registry.default()
        return cls([registry.get(name) for name in names], world, simulator)

    @property
    def names(self) -> list[str]:
        return list(self._classes)

    @property
    def classes(self) -> dict[str, type[Service]]:
        return self._classes

    def used(self, name: str) -> bool:
        """Whether the mounted service ``name`` has been used (seeded) in this session: one
        that was not cannot have changed."""
        return name in self._live

    def service(self, name: str) -> Service:
        """The live instance of a mounted service (seeded on first use)."""
        live = self._live.get(name)
        if live is None:
            live = self._live[name] = self._classes[name].create(self.world)
            live.simulator = self.simulator
            self._initial[name] = live.state
        return live

    def specs(self, names: Iterable[str] | None = None) -> list[ToolSpec]:
        wanted = None if names is None else set(names)
        return [spec for service, spec in self._routes.values()
                if wanted is None or service in wanted]

    def spec(self, qualified: str) -> ToolSpec | None:
        route = self._routes.get(qualified)
        return route[1] if route else None

    def call(self, name: Any, arguments: Any) -> ToolResult:
        """Run ``<service>__<tool>`` with ``arguments``; every failure is an error envelope."""
        route = self._routes.get(name) if isinstance(name, str) else None
        if route is None:
            result = error(404, did_you_mean(name, self._routes, "tool") if isinstance(name, str)
                           else f"Tool name must be a string, got {type(name).__name__}")
        else:
            result = self.service(route[0]).call(route[1].name, arguments)
        self.log.append(CallRecord(str(name)[:200], arguments, result))
        return result

    def checkpoint(self) -> tuple[dict[str, tuple[State, bool]], int]:
        """A point to roll back to: each live state (owned ones forked, records shared) and
        whether it is still the shared seeded state, plus the log length."""
        states = {}
        for name, service in self._live.items():
            shared = service._shared
            states[name] = (service.state if shared else service.state.fork(), shared)
        return states, len(self.log)

    def rollback(self, point: tuple[dict[str, tuple[State, bool]], int]) -> None:
        """Undo every call since ``checkpoint()`` (services first used since are dropped).
        The point stays valid: owned states are installed as forks, so a point can be rolled
        back to again after more calls."""
        states, length = point
        for name in list(self._live):
            if name not in states:
                del self._live[name]
                del self._initial[name]
            else:
                state, shared = states[name]
                self._live[name].state = state if shared else state.fork()
                self._live[name]._shared = shared
        del self.log[length:]

    def state(self, name: str) -> State:
        return self.service(name).state

    def initial_state(self, name: str) -> State:
        """The state before any call (copy-on-write keeps the seeded object untouched)."""
        self.service(name)
        return self._initial[name]

    def digests(self) -> dict[str, str]:
        return {name: self.state(name).digest() for name in self._classes}
