"""Evaluation episodes played in forked worker processes, each running its own asyncio loop
with a share of the concurrency, so the env work (the gateway, the offline world model) and
the HTTP client of one run use every core instead of one interpreter lock.

The parent keeps the run's bookkeeping: it hands each worker episode numbers (the episodes
themselves, the agent, the registry and the world model are the parent's, inherited by the
fork and never pickled), receives each record as the worker finishes it and passes it to the
same ``done`` callback the in-process runner calls, so the run's files and results are those
of a run in one process. A worker that dies is replaced and the episodes it held are played
again; workers of one slot that die ``START_TRIES`` times in a row before finishing an episode
stop the run with a ``RolloutError``.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import multiprocessing
import os
import traceback
from collections import deque
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, Callable, Mapping, Sequence

from compoenv.env import CompoWorldEnv
from compoenv.rollout import AsyncAgent, play_episode
from compoenv.rollout_results import RolloutError
from compoenv.rollout_workers import StartTries, wait_processes
from compoenv.task import Task

__all__ = ["AUTO_EPISODES", "AUTO_WORKERS", "can_fork", "choose_workers", "play_in_workers"]

log = logging.getLogger("compoenv.evaluation")

AUTO_EPISODES = 200  # fewer episodes than this are played in this process: forking costs more
AUTO_WORKERS = 3  # at most this many processes when the count is left to the runner
_FAILED = -1  # the episode number of a worker's message saying an episode raised
_HINT = ("An episode kills its worker each time it is played, or the agent cannot work in a "
         "forked process; run with workers=1 (compoenv eval --workers 1) to play in this "
         "process and see the error.")


def can_fork(agent: Any) -> bool:
    """Whether ``agent`` can be played in forked worker processes: it says so (``forkable``,
    e.g. an endpoint client that makes its connections in the process using them, unlike a
    model held in this process's memory) and this system forks."""
    return bool(getattr(agent, "forkable", False)) and \
        "fork" in multiprocessing.get_all_start_methods()


def choose_workers(workers: int | None, agent: Any, episodes: int, concurrency: int) -> int:
    """The number of processes to play ``episodes`` in: 1 means this process. ``workers``
    None chooses: forked workers (up to the cores, at most ``AUTO_WORKERS``) when there are
    at least ``AUTO_EPISODES`` episodes and ``can_fork(agent)``; 0 and 1 mean this process.

    Raises:
        ValueError: ``workers`` below 0, or above 1 for an agent that cannot be forked.
    """
    if workers is None:
        if episodes < AUTO_EPISODES or not can_fork(agent):
            return 1
        workers = min(os.cpu_count() or 1, AUTO_WORKERS)
    elif workers < 0:
        raise ValueError(f"workers must be >= 0 (0 or 1: in this process), got {workers}")
    elif workers > 1 and not can_fork(agent):
        name = getattr(agent, "name", type(agent).__name__)
        raise ValueError(f"the agent {name} cannot be played in forked worker processes "
                         f"(it is not forkable, or this system has no fork); use workers=1")
    return max(1, min(workers, concurrency, episodes))


def play_in_workers(agent: AsyncAgent, todo: Sequence[tuple[Task, int]], concurrency: int,
                    workers: int, env_kwargs: Mapping[str, Any], source: str,
                    done: Callable[[dict[str, Any]], None]) -> None:
    """Play the (task, rollout index) episodes of ``todo`` in ``workers`` forked processes
    sharing ``concurrency``, calling ``done(record)`` here as each ends.

    Raises:
        RolloutError: an episode raised in a worker (its traceback), or a slot's workers died
            ``START_TRIES`` times in a row before finishing an episode.
    """
    pool = _Pool(agent, todo, concurrency, workers, env_kwargs, source)
    pending = deque(range(len(todo)))
    tries = StartTries(workers, "finishing an episode", _HINT)
    try:
        while pending or any(pool.held):
            for slot in range(workers):
                pool.top_up(slot, pending)
            for slot, index, record in pool.wait():
                if index is None:  # the slot's worker died: what it held is played again
                    lost = sorted(pool.held[slot])
                    log.warning("%s holding %d episodes; they are played again", record,
                                len(lost))
                    pending.extendleft(reversed(lost))
                    tries.died(slot, record)  # the run stops here, or goes on with another
                    pool.replace(slot)
                elif index == _FAILED:
                    raise RolloutError(f"an episode raised in a worker process:\n{record}")
                else:
                    tries.started(slot)
                    done(record)
    finally:
        pool.close()


class _Pool:
    """The worker processes, one pipe each, and the episode numbers each holds."""

    def __init__(self, agent: AsyncAgent, todo: Sequence[tuple[Task, int]], concurrency: int,
                 workers: int, env_kwargs: Mapping[str, Any], source: str) -> None:
        self.context = multiprocessing.get_context("fork")
        self.args = (agent, todo, dict(env_kwargs), source)
        self.shares = [concurrency // workers + (slot < concurrency % workers)
                       for slot in range(workers)]
        self.held: list[set[int]] = [set() for _ in range(workers)]
        self.procs: list[tuple[BaseProcess, Connection] | None] = [None] * workers
        for slot in range(workers):
            self.procs[slot] = self._start(slot)

    def _start(self, slot: int) -> tuple[BaseProcess, Connection]:
        here, there = self.context.Pipe()
        others = [p[1] for p in self.procs if p is not None]
        process = self.context.Process(target=_work, name="compoenv-eval",
                                       args=(there, others, self.shares[slot], *self.args))
        gc.freeze()  # what exists now stays untouched by the worker's collector: pages shared
        try:
            process.start()
        finally:
            gc.unfreeze()
        there.close()
        return process, here

    def top_up(self, slot: int, pending: deque[int]) -> None:
        """Send the slot's worker more episode numbers once it holds no more than its share,
        up to twice its share, so it never waits for the next ones."""
        share, held = self.shares[slot], self.held[slot]
        if not pending or len(held) > share:
            return
        batch = [pending.popleft() for _ in range(min(len(pending), 2 * share - len(held)))]
        held.update(batch)
        try:
            self._proc(slot)[1].send(batch)
        except OSError:
            pass  # it died: wait() sees its sentinel

    def _proc(self, slot: int) -> tuple[BaseProcess, Connection]:
        proc = self.procs[slot]
        assert proc is not None
        return proc

    def wait(self) -> list[tuple[int, int | None, Any]]:
        """What came back: (slot, episode number, record), (slot, _FAILED, traceback), or
        (slot, None, how the worker died) once every record it sent before dying is read."""
        events: list[tuple[int, int | None, Any]] = []
        for slot, messages, death in wait_processes([self._proc(slot)
                                                     for slot in range(len(self.procs))]):
            for index, record in messages:
                self.held[slot].discard(index)
                events.append((slot, index, record))
            if death is not None:
                events.append((slot, None, death))
        return events

    def replace(self, slot: int) -> None:
        self._proc(slot)[1].close()
        self.procs[slot] = None
        self.held[slot] = set()
        self.procs[slot] = self._start(slot)

    def close(self) -> None:
        for slot in range(len(self.procs)):
            try:
                self._proc(slot)[1].send(None)  # play what you hold, then stop
            except OSError:
                pass
        for slot in range(len(self.procs)):
            process, conn = self._proc(slot)
            if self.held[slot]:  # stopped early (an error here): do not wait for its episodes
                process.terminate()
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
                process.join()
            conn.close()


def _work(conn: Connection, others: list[Connection], share: int, agent: AsyncAgent,
          todo: Sequence[tuple[Task, int]], env_kwargs: Mapping[str, Any], source: str) -> None:
    """A worker process: plays the episodes whose numbers come down ``conn``, ``share`` at a
    time, sending back ``(number, record)`` as each ends; stops at ``None`` or when the
    parent is gone."""
    for other in others:  # the other workers' pipes: a worker holding one would keep it open
        other.close()
    try:
        asyncio.run(_play(conn, share, agent, todo, env_kwargs, source))
    except (EOFError, BrokenPipeError):
        pass  # the parent is gone


async def _play(conn: Connection, share: int, agent: AsyncAgent,
                todo: Sequence[tuple[Task, int]], env_kwargs: Mapping[str, Any],
                source: str) -> None:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[int | None] = asyncio.Queue()

    def stop() -> None:
        loop.remove_reader(conn.fileno())
        for _ in range(share):
            queue.put_nowait(None)

    def readable() -> None:
        try:
            while conn.poll():
                batch = conn.recv()
                if batch is None:
                    stop()
                    return
                for index in batch:
                    queue.put_nowait(index)
        except (EOFError, OSError):
            stop()

    async def player() -> None:
        env: CompoWorldEnv | None = None
        try:
            while (index := await queue.get()) is not None:
                task, rollout_idx = todo[index]
                env = env or CompoWorldEnv(**env_kwargs)
                try:
                    record = await play_episode(agent, task, env, rollout_idx=rollout_idx,
                                                source=source)
                except Exception:  # noqa: BLE001 - sent to the parent, which raises it
                    conn.send((_FAILED, f"task {task.id}, rollout {rollout_idx}:\n"
                               + traceback.format_exc()))
                    raise
                conn.send((index, record))
        finally:
            if env is not None:
                env.close()

    loop.add_reader(conn.fileno(), readable)
    try:
        await asyncio.gather(*(player() for _ in range(share)))
    finally:
        close = getattr(agent, "aclose", None)
        if close is not None:
            await close()
