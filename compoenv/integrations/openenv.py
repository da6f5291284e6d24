"""OpenEnv: compoenv episodes served in OpenEnv's wire protocol, its types, and a client.

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
``CompoWorldEnv`` held in an ``EpisodeStore`` with the client that holds it (bounded, shared
fairly, idle places reclaimed): over the WebSocket ``/ws`` a session plays its own episodes,
reachable from no other connection; over HTTP ``/reset`` mints an unguessable
``episode_id`` and each ``/step`` of that episode sends it back (only the client that reset
it may). docs/serving.md describes the model.
"""

from __future__ import annotations

import json
import json.encoder
import math
import os
import secrets
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Sequence

try:
    from openenv.core.client_types import StepResult
    from openenv.core.env_client import EnvClient
    from openenv.core.env_server.types import Action, Observation, State
except ImportError as exc:  # pragma: no cover - depends on the extra being installed
    raise ImportError(f"compoenv's OpenEnv server and client need openenv ({exc}): "
                      f"pip install 'compoenv[openenv]'") from exc
from pydantic import Field

from compoenv.env import CompoWorldEnv, steps_for
from compoenv.prompts import reset_observation
from compoenv.registry import Registry
from compoenv.service import did_you_mean
from compoenv.spaces import bounded
from compoenv.task import Task

__all__ = ["CompoenvAction", "CompoenvObservation", "CompoenvState", "CompoenvClient",
           "ServedTasks", "EpisodeStore", "EpisodeService", "Slot", "EpisodeError",
           "UnknownEpisodeError", "SessionLimitError", "RateLimitError", "BadResetError",
           "TOKEN_ENV", "mint_id"]

RESET_OPTIONS = ("seed", "episode_id", "task", "task_index", "prompt_text")
TOKEN_ENV = "COMPOENV_SERVE_TOKEN"  # bearer token(s) of the server, comma-separated
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
    code = "EXECUTION_ERROR"  # the WebSocket error code


class BadResetError(EpisodeError):
    """Request options that name no served task or have the wrong type."""


class UnknownEpisodeError(EpisodeError):
    """No live episode of this client has this id (never opened, finished, reaped, or
    another client's)."""

    status = 404


class SessionLimitError(EpisodeError):
    """The server holds as many sessions and episodes as it may (or this client its share)."""

    status = 503
    code = "CAPACITY_REACHED"


class RateLimitError(EpisodeError):
    """A client opens sessions or HTTP episodes faster than the server's reset rate."""

    status = 429
    code = "RATE_LIMITED"

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


def mint_id() -> str:
    """A fresh episode id: 192 random bits, as unguessable as a password."""
    return secrets.token_urlsafe(24)


@dataclass(eq=False)
class Slot:
    """One place in the server: a WebSocket session (which plays one episode at a time) or
    one HTTP episode. ``client`` is who holds it (a token's name, else the peer address)."""

    client: str
    kind: str  # "ws" or "http"
    used: float
    episode_id: str | None = None
    env: CompoWorldEnv | None = None
    task_id: str | None = None
    steps: int = 0
    done: bool = False
    rubric_score: float | None = None
    close: Callable[[str], None] | None = None  # a WebSocket's: end the connection
    lock: threading.Lock = field(default_factory=threading.Lock)

    def drop_episode(self) -> None:
        """Let the episode's env go (its id stays, for the error a later step gets)."""
        self.env = None


class _Bucket:
    __slots__ = ("tokens", "at")

    def __init__(self, tokens: float, at: float) -> None:
        self.tokens, self.at = tokens, at


class EpisodeStore:
    """Every session and episode the server holds, with who holds each: at most
    ``max_episodes`` places in all, a client's HTTP episode reachable only by that client with
    the id the server minted, a WebSocket session's episode only from that session.

    Idle places are dropped after ``idle_timeout_s``. When the server is full, a new place is
    made by reclaiming the least recently used one that has been idle ``reclaim_idle_s`` and
    belongs to a client holding more than its fair share (the places divided among the
    clients holding any); a client at or over its share is refused. ``max_per_client`` caps
    any one client; ``reset_rate`` (places opened a second per client, bursts of twice that)
    keeps one client from churning the server. Thread-safe.
    """

    def __init__(self, max_episodes: int = 256, idle_timeout_s: float | None = 300.0, *,
                 reclaim_idle_s: float = 10.0, max_per_client: int | None = None,
                 reset_rate: float | None = 100.0) -> None:
        if max_episodes < 1:
            raise ValueError(f"max_episodes must be >= 1, got {max_episodes}")
        if idle_timeout_s is not None and idle_timeout_s <= 0:
            raise ValueError(f"idle_timeout_s must be > 0 or None, got {idle_timeout_s}")
        if reclaim_idle_s < 0:
            raise ValueError(f"reclaim_idle_s must be >= 0, got {reclaim_idle_s}")
        if max_per_client is not None and max_per_client < 1:
            raise ValueError(f"max_per_client must be >= 1 or None, got {max_per_client}")
        if reset_rate is not None and reset_rate <= 0:
            raise ValueError(f"reset_rate must be > 0 or None, got {reset_rate}")
        self.max_episodes, self.idle_timeout_s = max_episodes, idle_timeout_s
        self.reclaim_idle_s, self.max_per_client = reclaim_idle_s, max_per_client
        self.reset_rate = reset_rate
        self._slots: OrderedDict[Slot, None] = OrderedDict()  # least recently used first
        self._held: Counter[str] = Counter()  # places per client
        self._http: dict[str, Slot] = {}  # HTTP episodes by minted id
        self._gone: OrderedDict[str, str] = OrderedDict()  # recent ids -> why they ended
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()
        self.reclaimed = 0  # places taken from over-share clients, for /state

    # --- bookkeeping -------------------------------------------------------------------
    def __len__(self) -> int:
        """Live episodes (HTTP episodes, and WebSocket sessions playing one)."""
        with self._lock:
            self._reap(time.monotonic())
            return sum(s.env is not None for s in self._slots)

    @property
    def places(self) -> int:
        with self._lock:
            return len(self._slots)

    def held_by(self, client: str) -> int:
        with self._lock:
            return self._held[client]

    def forget(self, key: str | None, why: str) -> None:
        """Remember why episode ``key`` ended, for the error a later request gets."""
        with self._lock:
            self._forget(key, why)

    def _forget(self, key: str | None, why: str) -> None:
        if key is None:
            return
        self._gone[key] = why
        if len(self._gone) > 4 * self.max_episodes:
            self._gone.popitem(last=False)

    def _remove(self, slot: Slot, why: str | None) -> None:
        if slot in self._slots:
            del self._slots[slot]
            self._held[slot.client] -= 1
            if self._held[slot.client] <= 0:
                del self._held[slot.client]
        if slot.kind == "http" and slot.episode_id is not None:
            self._http.pop(slot.episode_id, None)
        if why is not None:
            self._forget(slot.episode_id, why)
            slot.drop_episode()
            if slot.close is not None:
                slot.close(why)

    def _reap(self, now: float) -> None:
        if self.idle_timeout_s is None:
            return
        while self._slots:
            slot = next(iter(self._slots))
            if now - slot.used <= self.idle_timeout_s:
                break  # the rest were used later
            why = f"was dropped after {self.idle_timeout_s:g} s idle"
            if slot.kind == "ws":  # the session stays open; its episode is gone
                self._forget(slot.episode_id, why)
                slot.drop_episode()
                slot.used = now
                self._slots.move_to_end(slot)
            else:
                self._remove(slot, why)

    def _rate(self, client: str, now: float) -> None:
        if self.reset_rate is None:
            return
        burst = max(1.0, 2.0 * self.reset_rate)
        bucket = self._buckets.get(client)
        if bucket is None:
            if len(self._buckets) > 16 * self.max_episodes:  # forget full, idle buckets
                self._buckets = {k: b for k, b in self._buckets.items()
                                 if (now - b.at) * self.reset_rate + b.tokens < burst}
            bucket = self._buckets[client] = _Bucket(burst, now)
        bucket.tokens = min(burst, bucket.tokens + (now - bucket.at) * self.reset_rate)
        bucket.at = now
        if bucket.tokens < 1.0:
            wait = (1.0 - bucket.tokens) / self.reset_rate
            raise RateLimitError(f"too many new sessions and episodes from this client (the "
                                 f"limit is {self.reset_rate:g} a second, --reset-rate); retry "
                                 f"in {wait:.2f} s", wait)
        bucket.tokens -= 1.0

    def _make_room(self, client: str, now: float) -> None:
        held = self._held[client]
        if self.max_per_client is not None and held >= self.max_per_client:
            raise SessionLimitError(
                f"this client holds {held} sessions and episodes, its limit "
                f"(--max-per-client {self.max_per_client}): finish or close one first")
        if len(self._slots) < self.max_episodes:
            return
        clients = len(self._held) + (client not in self._held)
        share = self.max_episodes / clients
        if held + 1 <= share:  # within its share: take an idle place of a client over it
            for slot in self._slots:
                if now - slot.used < self.reclaim_idle_s:
                    break  # least recently used first: the rest are busier
                if self._held[slot.client] > share:
                    self.reclaimed += 1
                    self._remove(slot, f"was reclaimed after {now - slot.used:.0f} s idle "
                                       f"while the server was full")
                    return
        idle = (f"; idle ones are dropped after {self.idle_timeout_s:g} s"
                if self.idle_timeout_s is not None else "")
        raise SessionLimitError(
            f"the server is at capacity: it holds {len(self._slots)} sessions and episodes, "
            f"its limit (--max-sessions {self.max_episodes}), and this client holds {held}"
            f"{idle}: finish or close one, or retry later")

    # --- the operations --------------------------------------------------------------------
    def admit(self, client: str, kind: str,
              close: Callable[[str], None] | None = None) -> Slot:
        """A new place for ``client`` (a WebSocket session, or an HTTP episode)."""
        now = time.monotonic()
        with self._lock:
            self._reap(now)
            self._rate(client, now)
            self._make_room(client, now)
            slot = Slot(client, kind, now, close=close)
            self._slots[slot] = None
            self._held[client] += 1
            return slot

    def opened(self, slot: Slot, episode_id: str) -> None:
        """``slot`` now plays episode ``episode_id`` (its env set by the caller)."""
        with self._lock:
            slot.episode_id = episode_id
            if slot.kind == "http" and slot in self._slots:
                self._http[episode_id] = slot

    def touch(self, slot: Slot) -> None:
        now = time.monotonic()
        with self._lock:
            self._reap(now)
            slot.used = now
            if slot in self._slots:
                self._slots.move_to_end(slot)

    def find(self, client: str, episode_id: str) -> Slot:
        """``client``'s live HTTP episode ``episode_id``, marked as used now."""
        now = time.monotonic()
        with self._lock:
            self._reap(now)
            slot = self._http.get(episode_id)
            if slot is None or slot.client != client:
                why = self._gone.get(episode_id)
                if why is not None and slot is None:
                    raise UnknownEpisodeError(f"episode {_short(episode_id)} {why}; reset to "
                                              f"start a new one")
                raise UnknownEpisodeError(
                    f"no live episode {_short(episode_id)} of yours: it has finished, was "
                    f"never opened, or belongs to another client (step with the episode_id "
                    f"your /reset returned); reset first")
            slot.used = now
            self._slots.move_to_end(slot)
            return slot

    def why_gone(self, episode_id: str | None) -> str | None:
        with self._lock:
            return self._gone.get(episode_id) if episode_id else None

    def release(self, slot: Slot, why: str | None = None) -> None:
        """Give ``slot`` back (an HTTP episode that ended, a WebSocket that closed)."""
        with self._lock:
            if why is not None:
                self._forget(slot.episode_id, why)
            self._remove(slot, None)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            self._reap(time.monotonic())
            return {"live_episodes": sum(s.env is not None for s in self._slots),
                    "max_episodes": self.max_episodes, "sessions": len(self._slots),
                    "clients": len(self._held), "reclaimed": self.reclaimed}


def _short(episode_id: str) -> str:
    return repr(episode_id if len(episode_id) <= 64 else episode_id[:61] + "...")


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
        self.max_steps = max_steps or steps_for(self.tasks, gateway=mode == "gateway")
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
                raise BadResetError(did_you_mean(task[:200], self.by_id, "task id")
                                    + f" ({len(self.tasks)} tasks served)")
            return self.by_id[task]
        if task_index is not None:
            if not isinstance(task_index, int) or isinstance(task_index, bool):
                raise BadResetError(f"task_index must be an integer, got {task_index!r:.80}")
            return self.tasks[task_index % len(self.tasks)]
        if seed is None:
            seed = secrets.randbits(64)
        return self.tasks[seed % len(self.tasks)]

    def new_env(self) -> CompoWorldEnv:
        env = CompoWorldEnv(mode=self.mode, max_steps=self._given,
                            world_model=self.world_model, registry=self.registry)
        env._info_task = False  # the server sends the task's instruction alone
        return env


# one encoder, reused; compact: the same JSON values in fewer bytes for the server to send
# and the client to parse
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)
_c_encode = (json.encoder.c_make_encoder(  # type: ignore[attr-defined]
    None, str, json.encoder.encode_basestring, None, ":", ",", False, False, True)  # type: ignore[attr-defined]
    if json.encoder.c_make_encoder is not None else None)  # type: ignore[attr-defined]


def _dumps(value: Any) -> str:
    """``_ENCODER.encode(value)``, the C encoder made once rather than at each call (values
    here are the server's own: no cycles to look for)."""
    if _c_encode is None or type(value) is str:
        return _ENCODER.encode(value)
    return "".join(_c_encode(value, 0))
_PUBLIC_CRITERION = ("id", "kind", "passed", "weight", "required")


class EpisodeService:
    """What the server does with a session's or an HTTP episode's requests, each answer
    serialised once into the JSON the OpenEnv wire format carries.

    Args:
        served: The task set and env settings.
        store: Where sessions and episodes are held (and who holds each).
        expose_rubric: Send each criterion's description and detail (which state the expected
            answers) at the end of an episode; by default only ids, kinds, weights and passes.
    """

    def __init__(self, served: ServedTasks, store: EpisodeStore, *,
                 expose_rubric: bool = False) -> None:
        self.served, self.store, self.expose_rubric = served, store, expose_rubric
        self._opening: dict[str, tuple[str, str]] = {}  # task id -> (messages, tools) JSON

    def reset(self, slot: Slot, options: dict[str, Any]) -> str:
        """Start an episode in ``slot`` (replacing its last one); the reset's JSON."""
        unknown = sorted(set(options) - set(RESET_OPTIONS))
        if unknown:
            raise BadResetError(f"unknown reset option(s) {unknown[:10]}; the options are "
                                f"{list(RESET_OPTIONS)}")
        label = options.get("episode_id")
        _check_episode_id(label)
        prompt_text = options.get("prompt_text", False)
        if not isinstance(prompt_text, bool):
            raise BadResetError(f"prompt_text must be true or false, got {prompt_text!r:.80}")
        task = self.served.pick(options.get("seed"), options.get("task"),
                                options.get("task_index"))
        env = self.served.new_env()
        text, info = env.reset(seed=options.get("seed"), options={"task": task})
        opening = self._opening.get(task.id)
        if opening is None:  # the same for every episode of the task
            opening = self._opening[task.id] = (_dumps(info["messages"]), _dumps(info["tools"]))
        key = mint_id()
        with slot.lock:
            slot.env, slot.task_id, slot.episode_id = env, task.id, None
            slot.steps, slot.done, slot.rubric_score = 0, False, None
        self.store.opened(slot, key)
        metadata: dict[str, Any] = {"episode_id": key, "task_id": task.id,
                                    "instruction": task.instruction,
                                    "services": list(task.services), "mode": env.mode,
                                    "max_steps": env.max_steps}
        if label is not None:
            metadata["client_episode_id"] = label
        return _payload(text if prompt_text else "", opening[0], opening[1], metadata,
                        None, False)

    def step(self, slot: Slot, message: str) -> str:
        """One action in ``slot``'s episode; the step's JSON."""
        with slot.lock:
            env = slot.env
            if env is None:
                why = self.store.why_gone(slot.episode_id) if slot.episode_id else None
                raise UnknownEpisodeError(f"this session's episode {why}; reset to start a new "
                                          f"one" if why else "no episode to step: reset first")
            key = slot.episode_id
            before = len(env.messages)
            text, reward, terminated, truncated, info = env.step(message)
            results = [m for m in env.messages[before:] if m["role"] == "tool"]
            done = terminated or truncated
            slot.steps, slot.done, slot.rubric_score = info["step"], done, info.get("rubric_score")
        errors = sum(not str(m["content"]).startswith('{"success": true') for m in results)
        metadata: dict[str, Any] = {"episode_id": key, "step": info["step"],
                                    "tool_calls": len(results), "tool_errors": errors,
                                    "truncated": truncated}
        if "rubric" in info:
            rubric = info["rubric"] if self.expose_rubric else [
                {k: c[k] for k in _PUBLIC_CRITERION if k in c} for c in info["rubric"]]
            metadata.update(rubric=rubric, passes=[c["passed"] for c in info["rubric"]],
                            rubric_score=info["rubric_score"], passed=info["passed"],
                            net_score=info["net_score"])
        if done:
            with slot.lock:
                slot.env = None  # the episode is over: its memory goes now
            if slot.kind == "http":
                self.store.release(slot, "has finished")
            else:
                self.store.forget(key, "has finished")
        return _payload(text, "[]", "[]", metadata, reward, done)

    def state(self, slot: Slot | None) -> str:
        """The state of ``slot``'s episode (none: the server's), and the server's counts."""
        state: dict[str, Any] = {"episode_id": None, "step_count": 0, "task_id": None,
                                 "done": False, "rubric_score": None}
        if slot is not None and slot.episode_id is not None:
            state.update(episode_id=slot.episode_id, step_count=slot.steps,
                         task_id=slot.task_id, done=slot.done, rubric_score=slot.rubric_score)
        stats = self.store.stats()
        state.update(live_episodes=stats["live_episodes"], max_episodes=stats["max_episodes"])
        return _dumps(state)


def _payload(text: str, messages: str, tools: str, metadata: dict[str, Any],
             reward: Any, done: bool) -> str:
    """OpenEnv's step/reset JSON (``serialize_observation``'s shape: the metadata in the
    observation and beside it), built as one string."""
    meta = _dumps(metadata)
    score = repr(reward) if type(reward) is float and math.isfinite(reward) else _dumps(reward)
    return (f'{{"observation":{{"text":{_dumps(text)},"messages":{messages},'
            f'"tools":{tools},"metadata":{meta}}},"reward":{score},'
            f'"done":{"true" if done else "false"},"metadata":{meta}}}')


def _check_episode_id(episode_id: Any) -> None:
    if episode_id is not None and not (isinstance(episode_id, str)
                                       and 0 < len(episode_id) <= MAX_EPISODE_ID):
        shown = repr(episode_id) if len(repr(episode_id)) < 80 else type(episode_id).__name__
        raise BadResetError(f"episode_id must be a string of 1 to {MAX_EPISODE_ID} "
                            f"characters, got {shown}")


class CompoenvClient(EnvClient[CompoenvAction, CompoenvObservation, CompoenvState]):
    """OpenEnv client of a compoenv server (a WebSocket session; ``.sync()`` for plain calls).

    ``step`` takes the assistant's message text (or a ``CompoenvAction``); ``reset`` takes
    ``seed``, ``task`` (a task id), ``task_index`` and ``episode_id`` (a label of yours; the
    server mints the episode's own id). Results are OpenEnv ``StepResult``s of
    ``CompoenvObservation``; at the end ``result.reward`` is the rubric score and
    ``result.metadata`` holds ``passes``, ``rubric``, ``rubric_score``, ``passed`` and
    ``net_score``. The reset's
    ``observation.text`` (the prompt as one text) is rebuilt here from its ``messages`` and
    ``tools``, which the server sends once.

    Args:
        base_url: The server, e.g. ``http://cpu-node:8000``.
        token: The server's bearer token (default: the first of ``$COMPOENV_SERVE_TOKEN``).
        **kwargs: As OpenEnv's ``EnvClient`` (``headers``, timeouts...).
    """

    def __init__(self, base_url: str | None = None, *, token: str | None = None,
                 **kwargs: Any) -> None:
        token = token or (os.environ.get(TOKEN_ENV, "").split(",")[0].strip() or None)
        if token is not None:
            kwargs["headers"] = {**(kwargs.get("headers") or {}),
                                 "Authorization": f"Bearer {token}"}
        super().__init__(base_url=base_url, **kwargs)

    def _step_payload(self, action: CompoenvAction | str) -> dict[str, Any]:
        if isinstance(action, str):
            return {"message": action}
        return action.model_dump()

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[CompoenvObservation]:
        fields = payload.get("observation", {})
        if not fields.get("text") and fields.get("messages") and fields.get("tools"):
            fields = {**fields, "text": _prompt_text(fields["messages"], fields["tools"])}
        observation = CompoenvObservation.model_validate(
            {**fields, "done": payload.get("done", False), "reward": payload.get("reward")})
        return StepResult(observation=observation, reward=payload.get("reward"),
                          done=bool(payload.get("done", False)),
                          metadata=payload.get("metadata") or observation.metadata)

    def _parse_state(self, payload: dict[str, Any]) -> CompoenvState:
        return CompoenvState.model_validate(payload)


def _prompt_text(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    """The reset's text observation, as ``CompoWorldEnv.reset`` writes it, from its parts."""
    system = next((m["content"] for m in messages if m.get("role") == "system"), "")
    request = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
    return bounded(reset_observation(system, tools, request))
