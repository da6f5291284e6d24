"""Episode runner: plays agents in envs, here or over processes or Ray, surviving lost workers;
and async (model) agents, many episodes at once over one endpoint."""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import time
import traceback
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

from compoenv.agents import Agent, OracleAgent
from compoenv.env import CompoWorldEnv
from compoenv.rollout_results import (WORKER_LOST, RolloutError, RolloutStats, Rollouts,
                                      RolloutStream, failure_record)
from compoenv.rollout_workers import (Backend, Episode, InProcess, Lost, Processes, Raised,
                                      RayWorkers, describe, play_all)
from compoenv.task import Task
from compoenv.trajectory import call_counts, discover_mode

__all__ = ["run_episode", "run_episodes", "run_rollouts", "play_episode", "play_concurrently",
           "episode_record", "AsyncAgent", "AgentFactory", "RolloutError", "Rollouts",
           "RolloutStats"]

log = logging.getLogger(__name__)

AgentMaker = Callable[[int], Agent]


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
    return episode_record(info, terminated, rollout_idx, source)


def episode_record(info: dict[str, Any], terminated: bool, rollout_idx: int,
                   source: str) -> dict[str, Any]:
    """The trajectory record of an episode that ended with ``info`` (terminated by a final
    reply, else truncated at the step limit)."""
    task = info["task"]
    messages = list(info["messages"])
    n_calls, n_real = call_counts(messages)
    return {
        "tools": info["tools"],
        "messages": messages,
        "meta": {
            "task_id": task["id"], "rollout_idx": rollout_idx,
            # the published format: "score" is the all-required pass as 0/1
            "rubric_score": info["rubric_score"], "score": float(info["passed"]),
            "net_score": info["net_score"],
            "n_tool_calls": n_calls, "n_real_tool_calls": n_real, "n_steps": info["step"],
            "services": task["services"], "domain": task["domain"],
            "capabilities": task["capabilities"],
            "finish_reason": "stop" if terminated else "max_steps",
            "discover_mode": discover_mode(info["tools"]),
            "rubric": [{"id": c["id"], "passed": c["passed"]} for c in info["rubric"]],
        },
        "source": source,
    }


class AsyncAgent(Protocol):
    """An agent that answers a transcript asynchronously (``compoenv.agents.endpoint``):
    ``respond(messages, tools)`` gives a Turn whose ``message`` is the next action."""

    name: str

    async def respond(self, messages: Sequence[dict[str, Any]],
                      tools: Sequence[dict[str, Any]]) -> Any: ...


async def play_episode(agent: AsyncAgent, task: Task, env: CompoWorldEnv, *,
                       rollout_idx: int = 0, source: str = "compoenv") -> dict[str, Any]:
    """One episode of ``task`` with an async agent, in ``env`` (reset here). The record's
    ``meta`` also holds the tokens the episode cost, its seconds and the model.

    An agent that gives up (an endpoint that fails every retry) ends the episode as a
    failure record (``rollout_results.failure_record``) naming the reason; anything else
    the agent raises propagates.
    """
    from compoenv.agents.endpoint import EndpointError

    start = time.perf_counter()
    _, info = env.reset(options={"task": task})
    terminated = truncated = False
    prompt = completion = 0
    while not (terminated or truncated):
        try:
            turn = await agent.respond(info["messages"], info["tools"])
        except EndpointError as exc:
            record = failure_record(task, rollout_idx, source, "EndpointError", str(exc), 1)
            record["meta"].update(model=agent.name, seconds=round(time.perf_counter() - start, 3))
            return record
        prompt, completion = prompt + turn.prompt_tokens, completion + turn.completion_tokens
        _, _, terminated, truncated, info = env.step(turn.message)
    record = episode_record(info, terminated, rollout_idx, source)
    record["meta"].update(model=agent.name, prompt_tokens=prompt, completion_tokens=completion,
                          seconds=round(time.perf_counter() - start, 3))
    return record


async def play_concurrently(agent: AsyncAgent, episodes: Iterable[tuple[Task, int]], *,
                            concurrency: int = 32, env_kwargs: Mapping[str, Any] | None = None,
                            source: str = "compoenv",
                            on_record: Callable[[dict[str, Any]], None] | None = None,
                            keep: bool = True) -> list[dict[str, Any]]:
    """Play (task, rollout index) episodes with at most ``concurrency`` in flight, each in an
    env of its own slot (envs are reused, never shared by two episodes at once). Records come
    back in the order of ``episodes``; ``on_record`` sees each as soon as it is done (in the
    order they finish), so a caller can stream them to disk; with ``keep=False`` nothing is
    kept (memory stays flat however many episodes run) and an empty list comes back.

    Episodes are started as slots free up, so a long list costs no more than its tasks."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    kwargs = dict(env_kwargs or {})
    free: list[CompoWorldEnv] = []
    gate = asyncio.Semaphore(concurrency)

    kept: dict[int, dict[str, Any]] = {}
    raised: list[BaseException] = []

    async def one(index: int, task: Task, rollout_idx: int) -> None:
        try:
            env = free.pop() if free else CompoWorldEnv(**kwargs)
            try:
                record = await play_episode(agent, task, env, rollout_idx=rollout_idx,
                                            source=source)
            finally:
                free.append(env)
            if on_record is not None:
                on_record(record)
            if keep:
                kept[index] = record
        except BaseException as exc:  # noqa: BLE001  re-raised below, in the caller's task
            raised.append(exc)
        finally:
            gate.release()

    running: set[asyncio.Task[None]] = set()
    count = 0
    for count, (task, rollout_idx) in enumerate(episodes, start=1):
        await gate.acquire()  # at most `concurrency` started and unfinished
        if raised:
            gate.release()
            break
        job = asyncio.ensure_future(one(count - 1, task, rollout_idx))
        running.add(job)
        job.add_done_callback(running.discard)
    while running:
        await asyncio.gather(*running)
    if raised:
        raise raised[0]
    return [kept[i] for i in range(count)] if keep else []


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


@dataclass(frozen=True)
class _Player:
    """Plays one episode in a worker's env: its record, or what it raised. Picklable."""

    agent: AgentMaker
    source: str

    def __call__(self, env: CompoWorldEnv, episode: Episode) -> dict[str, Any] | Raised:
        index, task, rollout_idx = episode
        try:
            return run_episode(env, self.agent(index), options={"task": task},
                               rollout_idx=rollout_idx, source=self.source)
        except Exception as exc:  # noqa: BLE001 - the episode's outcome: recorded, or raised
            return Raised(type(exc).__name__, str(exc), "".join(traceback.format_exception(exc)))


def run_rollouts(tasks: Sequence[Task | dict[str, Any]], agent: AgentMaker | None = None, *,
                 rollouts_per_task: int = 1, env_kwargs: Mapping[str, Any] | None = None,
                 workers: int | None = 1, ray_address: str | None = None, chunk: int = 16,
                 source: str = "compoenv", progress: Callable[[int], None] | None = None,
                 retries: int = 2, strict: bool = False,
                 output: str | Path | None = None) -> Rollouts:
    """Episodes for many tasks, in task order, the same records whatever runs them.

    Episode ``i`` plays task ``i // rollouts_per_task`` (its ``rollout_idx`` is
    ``i % rollouts_per_task``) with the agent ``agent(i)``; each worker keeps one env and
    resets it with the task, so records do not depend on how episodes are spread, retried or
    resumed.

    A bad rollout is data, not a crash. A worker that dies (its process is killed, its Ray
    actor dies) is replaced by a fresh one; the episode it was playing is played again, up to
    ``retries`` times, and the episodes queued behind it are sent again (not counted as
    retries). An episode that raises is not retried (its agent is seeded by its index, so it
    would raise again). Either way, an episode that cannot be played becomes a failed-episode
    record in its place (see ``rollout_results.failure_record``: ``meta`` with ``task_id``,
    ``rollout_idx``, score 0 and ``finish_reason: "error"``, and ``error`` with ``type`` (the
    exception's, or ``"WorkerLost"``), ``message``, ``attempts`` and ``traceback``), and a
    warning is logged; with ``strict=True`` it raises RolloutError instead. Finished episodes
    are never lost: they are kept, and streamed to ``output`` when it is given.

    With ``output``, each finished trajectory is appended to that JSONL file as one line as
    soon as it comes back, and flushed. A run on a file that already holds records resumes: an
    episode whose task id and rollout index are in the file is loaded back, not played, so an
    interrupted or crashed run goes on where it stopped (a line cut off by the crash is
    dropped). Failure records are not written, so a re-run tries those episodes again. Keep
    the tasks, agent and settings of the first run.

    Args:
        tasks: The tasks to play (with distinct ids when ``output`` is given).
        agent: Called with the episode index to make that episode's agent (default: the
            oracle). Must be picklable (e.g. an AgentFactory) when workers run elsewhere.
        rollouts_per_task: Episodes per task (a rollout group).
        env_kwargs: Keyword arguments of every worker's CompoWorldEnv (``mode``,
            ``max_steps``, ``world_model``...); must be picklable.
        workers: Processes (or Ray actors); 1 runs here without a pool (and so without
            retries); None means one per CPU (of this machine, or of the Ray cluster).
        ray_address: Run on Ray actors instead: a cluster address, or ``"local"`` to start a
            local Ray with ``workers`` CPUs. An already initialised Ray is reused.
        chunk: Most episodes handed to a worker process at a time (a Ray actor gets one at
            a time, so that the episode a dead actor was playing is known).
        source: The records' ``source`` field.
        progress: Called with the number of finished episodes (resumed and failed ones
            included) as episodes come back.
        retries: Times an episode is played again after its worker died playing it.
        strict: Raise RolloutError for an episode that cannot be played instead of recording
            it (what finished before is still in ``output``).
        output: A JSONL file to stream trajectories to and resume from.

    Returns:
        One record per episode, in episode order: a list (Rollouts) whose ``stats``
        (RolloutStats) count resumed, finished, failed and retried episodes and lost workers,
        and whose ``failures`` are the failed-episode records.

    Raises:
        RolloutError: ``strict`` and an episode raised (the message names it, its task and
            the error, with the worker's traceback) or lost its worker ``retries + 1``
            times; or a worker could not build its env.
        TrajectoryFileError: ``output`` holds a line that is not a trajectory record.
        ValueError: bad counts, or repeated task ids with ``output``.
    """
    if (rollouts_per_task < 1 or chunk < 1 or (workers is not None and workers < 1)
            or retries < 0):
        raise ValueError(f"need rollouts_per_task >= 1, chunk >= 1, workers >= 1 (or None) and "
                         f"retries >= 0, got rollouts_per_task={rollouts_per_task}, "
                         f"chunk={chunk}, workers={workers}, retries={retries}")
    kwargs = dict(env_kwargs or {})
    if "tasks" in kwargs:
        raise ValueError("env_kwargs must not hold 'tasks': pass them as the tasks argument")
    maker: AgentMaker = agent if agent is not None else AgentFactory()
    episodes = [(t * rollouts_per_task + r, Task.coerce(task), r)
                for t, task in enumerate(tasks) for r in range(rollouts_per_task)]
    stream = RolloutStream(output) if output is not None else None
    records: dict[int, dict[str, Any]] = {}
    if stream is not None:
        keys = [(task.id, r) for _, task, r in episodes]
        repeated = sorted(k for k, n in Counter(keys).items() if n > 1)
        if repeated:
            raise ValueError(f"output= resumes by task id and rollout index, so tasks need "
                             f"distinct ids; repeated: {repeated[:3]} (Task.with_id() gives one)")
        saved = stream.load()
        records = {e[0]: saved[key] for e, key in zip(episodes, keys) if key in saved}
    resumed, failed = len(records), 0

    def finish(episode: Episode, outcome: dict[str, Any] | Raised | Lost, attempts: int) -> None:
        nonlocal failed
        if isinstance(outcome, dict):
            records[episode[0]] = outcome
            if stream is not None:
                stream.append(outcome)
        else:
            if isinstance(outcome, Raised):
                kind, trace, how = outcome.type, outcome.traceback, f"{outcome.type}: "
            else:
                kind, trace, how = WORKER_LOST, "", f"its worker died on all {attempts} tries: "
            what = f"{describe(episode)} failed: {how}{outcome.message}"
            if strict:
                raise RolloutError(what + (f"\nworker traceback:\n{trace}" if trace else ""))
            log.warning("%s (recorded as a failed episode)", what)
            failed += 1
            records[episode[0]] = failure_record(episode[1], episode[2], source, kind,
                                                 outcome.message, attempts, trace)
        if progress is not None:
            progress(len(records))

    todo = deque(e for e in episodes if e[0] not in records)
    retried = lost = 0
    if todo:
        play = _Player(maker, source)
        if ray_address is not None:
            backend: Backend = RayWorkers(kwargs, play, workers, ray_address)
        elif workers is None or workers > 1:
            backend = Processes(kwargs, play, min(workers or os.cpu_count() or 1, len(todo)))
        else:
            backend = InProcess(kwargs, play)
        size = max(1, min(chunk, -(-len(todo) // (2 * backend.width))))  # a few per worker
        try:
            retried, lost = play_all(backend, todo, size, retries, finish)
        finally:
            backend.close()
            if stream is not None:
                stream.close()
    stats = RolloutStats(episodes=len(episodes), resumed=resumed,
                         finished=len(records) - resumed - failed, failed=failed,
                         retried=retried, workers_lost=lost)
    return Rollouts((records[e[0]] for e in episodes), stats)
