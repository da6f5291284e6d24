"""OpenEnv: compoenv episodes as an OpenEnv ``Environment``, its wire types, and a client.

    # server side (or: compoenv serve --tasks tasks.jsonl --port 8000)
    from compoenv.integrations.openenv_app import make_app
    app = make_app("tasks.jsonl", max_sessions=256, idle_timeout_s=300)

    # trainer side
    from compoenv.integrations.openenv import CompoenvClient
    with CompoenvClient(base_url="http://cpu-node:8000").sync() as env:
        result = env.reset(task_index=3)            # or seed=..., task="<task id>"
        result = env.step('<tool_call>{"name": ..., "arguments": {...}}</tool_call>')
        ...
        result = env.step("Done. The total is 42.")  # no tool call: the final answer
        result.reward, result.metadata["passes"]    # rubric score, pass vector

An action is the assistant's message text, exactly what ``CompoWorldEnv.step`` takes (tool
calls in any supported format; no tool call ends the episode). Each episode is a
``CompoWorldEnv`` held in an ``EpisodeStore`` (bounded, idle episodes reaped): over the
WebSocket ``/ws`` one OpenEnv session plays its episodes; over OpenEnv's stateless HTTP
``/reset`` and ``/step`` an episode is found by the ``episode_id`` given to ``/reset`` and
sent again with every ``/step``.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Sequence

try:
    from openenv.core.client_types import StepResult
    from openenv.core.env_client import EnvClient
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
except ImportError as exc:  # pragma: no cover - depends on the extra being installed
    raise ImportError(f"compoenv's OpenEnv server and client need openenv ({exc}): "
                      f"pip install 'compoenv[openenv]'") from exc
from pydantic import Field

from compoenv import __version__
from compoenv.env import CompoWorldEnv, steps_for
from compoenv.registry import Registry
from compoenv.service import did_you_mean
from compoenv.task import Task

__all__ = ["CompoenvAction", "CompoenvObservation", "CompoenvState", "CompoenvEnvironment",
           "CompoenvClient", "ServedTasks", "EpisodeStore", "EpisodeError", "UnknownEpisodeError",
           "SessionLimitError", "BadResetError"]

RESET_OPTIONS = ("seed", "episode_id", "task", "task_index")
MAX_EPISODE_ID = 255  # as OpenEnv's ResetRequest


class CompoenvAction(Action):
    """One assistant turn: tool calls (hermes, qwen3_coder, JSON or OpenAI format) or, with
    no tool call, the final answer."""

    message: str = Field(description="The assistant's message text, as CompoWorldEnv.step "
                                     "takes it; no tool call ends the episode.")


class CompoenvObservation(Observation):
    """What the agent reads. ``messages`` and ``tools`` come at reset only (the opening chat
    and the OpenAI tool list, for trainers that apply a chat template); ``metadata`` holds the
    episode id, the step, the tool errors of the step, and at the end the rubric."""

    text: str = Field(default="", description="The observation text (tool responses).")
    messages: list[dict[str, Any]] = Field(default_factory=list)
    tools: list[dict[str, Any]] = Field(default_factory=list)


class CompoenvState(State):
    """An episode's progress, and how many episodes the server holds."""

    task_id: str | None = None
    done: bool = False
    rubric_score: float | None = None
    live_episodes: int = 0
    max_episodes: int = 0


class EpisodeError(Exception):
    """A request the server cannot serve; ``status`` is its HTTP status."""

    status = 400


class BadResetError(EpisodeError):
    """Request options that name no served task or have the wrong type."""


class UnknownEpisodeError(EpisodeError):
    """No live episode has this id (never opened, finished, or reaped when idle)."""

    status = 404


class SessionLimitError(EpisodeError):
    """The server holds as many episodes as it may."""

    status = 503


@dataclass
class _Episode:
    env: CompoWorldEnv
    used: float
    lock: threading.Lock = field(default_factory=threading.Lock)


class EpisodeStore:
    """Live episodes by id, at most ``max_episodes``; an episode idle for ``idle_timeout_s``
    is dropped at the next request (the store is the only place episodes live, so memory is
    bounded by the cap whatever clients do). Thread-safe.

    Args:
        max_episodes: The cap; opening one more is a ``SessionLimitError``.
        idle_timeout_s: Seconds an episode may go unused; None keeps episodes until dropped.
    """

    def __init__(self, max_episodes: int = 256, idle_timeout_s: float | None = 300.0) -> None:
        if max_episodes < 1:
            raise ValueError(f"max_episodes must be >= 1, got {max_episodes}")
        if idle_timeout_s is not None and idle_timeout_s <= 0:
            raise ValueError(f"idle_timeout_s must be > 0 or None, got {idle_timeout_s}")
        self.max_episodes, self.idle_timeout_s = max_episodes, idle_timeout_s
        self._episodes: OrderedDict[str, _Episode] = OrderedDict()  # least recently used first
        self._reaped: OrderedDict[str, None] = OrderedDict()  # recent ids, for clear errors
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            self._reap(time.monotonic())
            return len(self._episodes)

    def _reap(self, now: float) -> None:
        if self.idle_timeout_s is None:
            return
        while self._episodes:
            key, episode = next(iter(self._episodes.items()))
            if now - episode.used <= self.idle_timeout_s:
                break
            del self._episodes[key]
            self._reaped[key] = None
            if len(self._reaped) > 4 * self.max_episodes:
                self._reaped.popitem(last=False)

    def open(self, episode_id: str, env: CompoWorldEnv) -> None:
        """Hold ``env`` as episode ``episode_id`` (replacing an episode of that id)."""
        now = time.monotonic()
        with self._lock:
            self._reap(now)
            if episode_id not in self._episodes and len(self._episodes) >= self.max_episodes:
                idle = (f"; idle ones are dropped after {self.idle_timeout_s:g} s"
                        if self.idle_timeout_s is not None else "")
                raise SessionLimitError(
                    f"the server holds {len(self._episodes)} episodes, its limit "
                    f"(--max-sessions {self.max_episodes}){idle}: finish or close an episode, "
                    f"or retry later")
            self._episodes[episode_id] = _Episode(env, now)
            self._episodes.move_to_end(episode_id)
            self._reaped.pop(episode_id, None)

    def use(self, episode_id: str) -> _Episode:
        """The live episode ``episode_id``, marked as used now."""
        now = time.monotonic()
        with self._lock:
            self._reap(now)
            episode = self._episodes.get(episode_id)
            if episode is None:
                if episode_id in self._reaped:
                    raise UnknownEpisodeError(
                        f"episode {episode_id!r} was dropped after {self.idle_timeout_s:g} s "
                        f"idle; reset to start a new one")
                raise UnknownEpisodeError(
                    f"no live episode {episode_id!r}: it has finished, was never opened, or was "
                    f"opened by an HTTP /reset without an episode_id (name the episode in "
                    f"/reset to step it over HTTP); reset first")
            episode.used = now
            self._episodes.move_to_end(episode_id)
            return episode

    def drop(self, episode_id: str) -> None:
        with self._lock:
            self._episodes.pop(episode_id, None)


class ServedTasks:
    """The task set a server plays, and how each episode's env is built.

    Args:
        tasks: The tasks (checked against ``registry`` by the caller).
        mode: ``"direct"`` or ``"gateway"`` (see CompoWorldEnv).
        max_steps: Actions per episode (default: CompoWorldEnv's, enough for each episode's
            own task).
        world_model: Who answers spec-only tools (see CompoWorldEnv).
        registry: Services to use (default: the built-in library and plugins).
    """

    def __init__(self, tasks: Sequence[Task], *, mode: str = "direct",
                 max_steps: int | None = None, world_model: Any = None,
                 registry: Registry | None = None) -> None:
        if not tasks:
            raise ValueError("a server needs at least one task to serve")
        self.tasks = list(tasks)
        self.by_id = {t.id: t for t in self.tasks}
        self.registry = registry or Registry.default()
        # not given: each episode's env gives enough for its own task (CompoWorldEnv's
        # default), at most this many for the longest task served
        self._given = max_steps or None
        self.max_steps = max_steps or steps_for(self.tasks)
        self.mode, self.world_model = mode, world_model

    def pick(self, seed: Any = None, task: Any = None, task_index: Any = None) -> Task:
        """The task of a reset: ``task`` (a served task's id), else ``task_index`` (modulo
        the count), else ``seed`` (task ``seed % count``: seeds 0..n-1 play each task once,
        and a group given one seed plays one task), else a random one."""
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)
                                 or seed < 0):
            raise BadResetError(f"seed must be an integer >= 0, got {seed!r}")
        if task is not None:
            if not isinstance(task, str):
                raise BadResetError(f"task must be the id of a served task (a string), got "
                                    f"{type(task).__name__}")
            if task not in self.by_id:
                raise BadResetError(did_you_mean(task, self.by_id, "task id")
                                    + f" ({len(self.tasks)} tasks served)")
            return self.by_id[task]
        if task_index is not None:
            if not isinstance(task_index, int) or isinstance(task_index, bool):
                raise BadResetError(f"task_index must be an integer, got {task_index!r}")
            return self.tasks[task_index % len(self.tasks)]
        if seed is None:
            seed = uuid.uuid4().int
        return self.tasks[seed % len(self.tasks)]

    def new_env(self) -> CompoWorldEnv:
        return CompoWorldEnv(mode=self.mode, max_steps=self._given,
                             world_model=self.world_model, registry=self.registry)


def _check_episode_id(episode_id: Any) -> None:
    if episode_id is not None and not (isinstance(episode_id, str)
                                       and 0 < len(episode_id) <= MAX_EPISODE_ID):
        shown = repr(episode_id) if len(repr(episode_id)) < 80 else type(episode_id).__name__
        raise BadResetError(f"episode_id must be a string of 1 to {MAX_EPISODE_ID} "
                            f"characters, got {shown}")


class CompoenvEnvironment(Environment[CompoenvAction, CompoenvObservation, CompoenvState]):
    """OpenEnv's ``Environment`` over compoenv episodes kept in a shared ``EpisodeStore``.

    An instance serves one OpenEnv session (a WebSocket) or one stateless HTTP request. An
    episode reset without an ``episode_id`` belongs to the instance and ends with it (the
    WebSocket closing, or the next reset); one reset with an ``episode_id`` lives in the store
    until it ends, is reset again, or is reaped when idle, and any request may step it by id.

    Args:
        served: The task set and env settings.
        store: Where episodes live (shared by every instance of one server).
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, served: ServedTasks, store: EpisodeStore) -> None:
        super().__init__()
        self._served, self._store = served, store
        self._owned: str | None = None  # the unnamed episode this instance opened
        self._current: str | None = None  # the episode steps without an id go to
        self._state = CompoenvState(max_episodes=store.max_episodes)

    def reset(self, seed: int | None = None, episode_id: str | None = None,
              **options: Any) -> CompoenvObservation:
        unknown = sorted(set(options) - set(RESET_OPTIONS))
        if unknown:
            raise BadResetError(f"unknown reset option(s) {unknown}; the options are "
                                f"{list(RESET_OPTIONS)}")
        _check_episode_id(episode_id)
        task = self._served.pick(seed, options.get("task"), options.get("task_index"))
        env = self._served.new_env()
        text, info = env.reset(seed=seed, options={"task": task})
        if self._owned is not None:
            self._store.drop(self._owned)
            self._owned = None
        key = episode_id or uuid.uuid4().hex
        self._store.open(key, env)
        self._owned = None if episode_id else key
        self._current = key
        self._state = CompoenvState(episode_id=key, task_id=task.id,
                                    max_episodes=self._store.max_episodes)
        return CompoenvObservation(
            text=text, messages=list(info["messages"]), tools=list(info["tools"]),
            metadata={"episode_id": key, "task_id": task.id, "instruction": task.instruction,
                      "services": list(task.services), "mode": env.mode,
                      "max_steps": env.max_steps})

    def step(self, action: CompoenvAction, timeout_s: float | None = None,
             episode_id: str | None = None, **kwargs: Any) -> CompoenvObservation:
        # timeout_s: a step runs tools in memory (milliseconds), or asks a world model with
        # its own timeouts, so there is nothing to cut short here
        _check_episode_id(episode_id)
        key = episode_id or self._current
        if key is None:
            raise UnknownEpisodeError(
                "no episode to step: reset first (over HTTP, send the episode_id of your "
                "/reset with each /step; OpenEnv's HTTP routes keep no session)")
        episode = self._store.use(key)
        with episode.lock:
            env = episode.env
            before = len(env.messages)
            text, reward, terminated, truncated, info = env.step(action.message)
            results = [m for m in env.messages[before:] if m["role"] == "tool"]
        done = terminated or truncated
        errors = sum(not str(m["content"]).startswith('{"success": true') for m in results)
        metadata: dict[str, Any] = {"episode_id": key, "step": info["step"],
                                    "tool_calls": len(results), "tool_errors": errors,
                                    "truncated": truncated}
        if "rubric" in info:
            metadata.update(rubric=info["rubric"], passes=[c["passed"] for c in info["rubric"]],
                            rubric_score=info["rubric_score"], passed=info["passed"],
                            net_score=info["net_score"])
        if done and key != self._owned:
            self._store.drop(key)  # a named episode is over: free its place now
        if key == self._current:
            self._state = self._state.model_copy(update={
                "step_count": info["step"], "done": done,
                "rubric_score": info.get("rubric_score")})
        return CompoenvObservation(text=text, done=done, reward=reward,
                                   metadata=metadata)

    def get_metadata(self) -> EnvironmentMetadata:
        served = self._served
        return EnvironmentMetadata(
            name="compoenv", version=__version__,
            description=f"{len(served.tasks)} compositional multi-service tool-use tasks "
                        f"({served.mode} mode, at most {served.max_steps} actions an episode); "
                        f"an action is the assistant's message, tool calls or the final answer")

    @property
    def state(self) -> CompoenvState:
        return self._state.model_copy(update={"live_episodes": len(self._store)})

    def close(self) -> None:
        if self._owned is not None:
            self._store.drop(self._owned)
            self._owned = None


class CompoenvClient(EnvClient[CompoenvAction, CompoenvObservation, CompoenvState]):
    """OpenEnv client of a compoenv server (a WebSocket session; ``.sync()`` for plain calls).

    ``step`` takes the assistant's message text (or a ``CompoenvAction``); ``reset`` takes
    ``seed``, ``task`` (a task id), ``task_index`` and ``episode_id``. Results are OpenEnv
    ``StepResult``s of ``CompoenvObservation``; at the end ``result.reward`` is the rubric
    score and ``result.metadata`` holds ``passes``, ``rubric``, ``rubric_score``, ``passed`` and
    ``net_score``.
    """

    def _step_payload(self, action: CompoenvAction | str) -> dict[str, Any]:
        if isinstance(action, str):
            return {"message": action}
        return action.model_dump()

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[CompoenvObservation]:
        observation = CompoenvObservation.model_validate(
            {**payload.get("observation", {}), "done": payload.get("done", False),
             "reward": payload.get("reward")})
        return StepResult(observation=observation, reward=payload.get("reward"),
                          done=bool(payload.get("done", False)),
                          metadata=payload.get("metadata") or observation.metadata)

    def _parse_state(self, payload: dict[str, Any]) -> CompoenvState:
        return CompoenvState.model_validate(payload)
