"""Episode runner: plays agents in envs, serially or fanned out over processes or a Ray cluster."""

from __future__ import annotations

import inspect
import multiprocessing
import os
import traceback
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping, Protocol, Sequence

from compoenv.agents import Agent, OracleAgent
from compoenv.env import CompoWorldEnv
from compoenv.ray_pool import RayActors
from compoenv.task import Task

__all__ = ["run_episode", "run_episodes", "run_rollouts", "AgentFactory", "RolloutError"]

AgentMaker = Callable[[int], Agent]
Episode = tuple[int, Task, int]  # (episode index, task, rollout index within its task)


def run_episode(env: CompoWorldEnv, agent: Agent, *, seed: int | None = None,
                options: dict[str, Any] | None = None, rollout_idx: int = 0,
                source: str = "compoenv") -> dict[str, Any]:
    """One episode, start to finish.

    Returns:
        A trajectory record: ``tools``, ``messages``, ``meta`` and ``source`` (the format of docs/architecture.md).
    """
    obs, info = env.reset(seed=seed, options=options)
    agent.reset(obs, info)
    terminated = truncated = False
    while not (terminated or truncated):
        obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
    task = info["task"]
    messages = list(info["messages"])
    n_calls = sum(len(m.get("tool_calls", ())) for m in messages if m["role"] == "assistant")
    return {
        "tools": info["tools"],
        "messages": messages,
        "meta": {
            "task_id": task["id"], "rollout_idx": rollout_idx,
            "rubric_score": info["score"], "score": info["binary"],
            "net_score": info["net_score"],
            "n_tool_calls": n_calls, "n_steps": info["step"], "services": task["services"],
            "domain": task["domain"], "capabilities": task["capabilities"],
            "finish_reason": "stop" if terminated else "max_steps",
            "rubric": [{"id": c["id"], "passed": c["passed"]} for c in info["rubric"]],
        },
        "source": source,
    }


def run_episodes(env: CompoWorldEnv, agent: Agent, indices: Iterable[int],
                 source: str = "compoenv") -> list[dict[str, Any]]:
    """One episode per task index of ``env.tasks``."""
    return [run_episode(env, agent, options={"index": i}, source=source) for i in indices]


@dataclass(frozen=True)
class AgentFactory:
    """A fresh agent per episode, ``cls(**kwargs)``; picklable, so it travels to workers.

    When ``cls`` takes a ``seed`` argument and ``seed`` is set, episode ``i`` gets
    ``seed + i``, so every episode's agent is seeded the same way whatever runs it.

    Args:
        cls: The agent class (or any callable returning an Agent).
        kwargs: Keyword arguments for every agent.
        seed: Base seed for agents that take one.
    """

    cls: Callable[..., Agent] = OracleAgent
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    seed: int | None = None

    def __call__(self, episode: int) -> Agent:
        kwargs = dict(self.kwargs)
        if self.seed is not None:
            try:
                takes_seed = "seed" in inspect.signature(self.cls).parameters
            except (TypeError, ValueError):  # builtins and some C types have no signature
                takes_seed = False
            if not takes_seed:
                raise TypeError(f"{getattr(self.cls, '__name__', self.cls)} takes no 'seed' "
                                f"argument; drop seed= from the AgentFactory")
            kwargs["seed"] = self.seed + episode
        return self.cls(**kwargs)


class RolloutError(RuntimeError):
    """An episode raised (an agent or env bug, not a bad action): names the episode and task
    and carries the worker's traceback as text."""


def _run_chunk(env: CompoWorldEnv, agent: AgentMaker, episodes: Sequence[Episode],
               source: str) -> list[dict[str, Any]]:
    records = []
    for index, task, rollout_idx in episodes:
        try:
            records.append(run_episode(env, agent(index), options={"task": task},
                                       rollout_idx=rollout_idx, source=source))
        except Exception as exc:  # noqa: BLE001 - re-raised with where it happened
            text = "".join(traceback.format_exception(exc))
            raise RolloutError(f"episode {index} (task {task.id or '<no id>'}, rollout "
                               f"{rollout_idx}) failed: {type(exc).__name__}: {exc}\n"
                               f"worker traceback:\n{text}") from None
    return records


# -- backends: each runs chunks of episodes; handles are resolved in submission order ------------

class _Backend(Protocol):
    def submit(self, episodes: list[Episode]) -> Any: ...
    def result(self, handle: Any) -> list[dict[str, Any]]: ...
    def close(self) -> None: ...


class _InProcess:
    def __init__(self, env_kwargs: Mapping[str, Any], agent: AgentMaker, source: str) -> None:
        self.env = CompoWorldEnv(**env_kwargs)
        self.agent, self.source = agent, source

    def submit(self, episodes: list[Episode]) -> list[Episode]:
        return episodes

    def result(self, handle: list[Episode]) -> list[dict[str, Any]]:
        return _run_chunk(self.env, self.agent, handle, self.source)

    def close(self) -> None:
        self.env.close()


_WORKER: tuple[CompoWorldEnv, AgentMaker, str] | None = None


def _init_worker(env_kwargs: Mapping[str, Any], agent: AgentMaker, source: str) -> None:
    global _WORKER
    _WORKER = (CompoWorldEnv(**env_kwargs), agent, source)


def _worker_chunk(episodes: list[Episode]) -> list[dict[str, Any]]:
    assert _WORKER is not None, "worker process was not initialised"
    return _run_chunk(_WORKER[0], _WORKER[1], episodes, _WORKER[2])


class _Processes:
    """A spawned process pool; each process builds its env once, in the initializer."""

    def __init__(self, env_kwargs: Mapping[str, Any], agent: AgentMaker, source: str,
                 workers: int) -> None:
        self.pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                        initializer=_init_worker,
                                        initargs=(dict(env_kwargs), agent, source))

    def submit(self, episodes: list[Episode]) -> Any:
        return self.pool.submit(_worker_chunk, episodes)

    def result(self, handle: Any) -> list[dict[str, Any]]:
        return handle.result()

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


class _EpisodeActor:
    def __init__(self, env_kwargs: Mapping[str, Any], agent: AgentMaker, source: str) -> None:
        self.env = CompoWorldEnv(**env_kwargs)
        self.agent, self.source = agent, source

    def chunk(self, episodes: list[Episode]) -> list[dict[str, Any]]:
        return _run_chunk(self.env, self.agent, episodes, self.source)


class _RayActors(RayActors):
    """One Ray actor per worker, each holding an env; an agent's crash becomes a RolloutError."""

    def result(self, handle: Any) -> list[dict[str, Any]]:
        try:
            return self.ray.get(handle)
        except self.ray.exceptions.RayTaskError as exc:
            cause = exc.as_instanceof_cause()
            raise RolloutError(str(cause.args[0]) if isinstance(cause, RolloutError)
                               and cause.args else str(exc)) from None


def _chunks(episodes: list[Episode], size: int) -> Iterator[list[Episode]]:
    for start in range(0, len(episodes), size):
        yield episodes[start:start + size]


def run_rollouts(tasks: Sequence[Task | dict[str, Any]], agent: AgentMaker | None = None, *,
                 rollouts_per_task: int = 1, env_kwargs: Mapping[str, Any] | None = None,
                 workers: int | None = 1, ray_address: str | None = None, chunk: int = 16,
                 source: str = "compoenv",
                 progress: Callable[[int], None] | None = None) -> list[dict[str, Any]]:
    """Episodes for many tasks, in task order, the same records whatever runs them.

    Episode ``i`` plays task ``i // rollouts_per_task`` (its ``rollout_idx`` is
    ``i % rollouts_per_task``) with the agent ``agent(i)``; each worker keeps one env and
    resets it with the task, so records do not depend on how episodes are spread.

    Args:
        tasks: The tasks to play.
        agent: Called with the episode index to make that episode's agent (default: the
            oracle). Must be picklable (e.g. an AgentFactory) when workers run elsewhere.
        rollouts_per_task: Episodes per task (a rollout group).
        env_kwargs: Keyword arguments of every worker's CompoWorldEnv (``mode``,
            ``max_steps``, ``world_model``...); must be picklable.
        workers: Processes (or Ray actors); 1 runs here without a pool; None means one per CPU
            (of this machine, or of the Ray cluster).
        ray_address: Run on Ray actors instead: a cluster address, or ``"local"`` to start a
            local Ray with ``workers`` CPUs. An already initialised Ray is reused.
        chunk: Most episodes per unit of work.
        source: The records' ``source`` field.
        progress: Called with the number of finished episodes after each chunk.

    Returns:
        One trajectory record per episode, in episode order.

    Raises:
        RolloutError: an episode raised; the message names it and its task.
        ValueError: bad counts.
    """
    if rollouts_per_task < 1 or chunk < 1 or (workers is not None and workers < 1):
        raise ValueError(f"need rollouts_per_task >= 1, chunk >= 1 and workers >= 1 (or None), "
                         f"got rollouts_per_task={rollouts_per_task}, chunk={chunk}, "
                         f"workers={workers}")
    kwargs = dict(env_kwargs or {})
    if "tasks" in kwargs:
        raise ValueError("env_kwargs must not hold 'tasks': pass them as the tasks argument")
    maker: AgentMaker = agent if agent is not None else AgentFactory()
    episodes = [(t * rollouts_per_task + r, Task.coerce(task), r)
                for t, task in enumerate(tasks) for r in range(rollouts_per_task)]
    if not episodes:
        return []
    if ray_address is not None:
        backend: _Backend = _RayActors(_EpisodeActor, (kwargs, maker, source), workers,
                                       ray_address)
        width = len(backend.actors)  # type: ignore[attr-defined]
    elif workers is None or workers > 1:
        width = min(workers or os.cpu_count() or 1, len(episodes))
        backend = _Processes(kwargs, maker, source, width)
    else:
        width = 1
        backend = _InProcess(kwargs, maker, source)
    size = max(1, min(chunk, -(-len(episodes) // (2 * width))))  # a few chunks per worker
    records: list[dict[str, Any]] = []
    parts = list(_chunks(episodes, size))
    try:
        pending: deque[Any] = deque(backend.submit(p) for p in parts[:2 * width])
        for part in parts[2 * width:] + [None] * len(pending):  # keep 2 chunks per worker busy
            records.extend(backend.result(pending.popleft()))
            if progress is not None:
                progress(len(records))
            if part is not None:
                pending.append(backend.submit(part))
    finally:
        backend.close()
    return records
