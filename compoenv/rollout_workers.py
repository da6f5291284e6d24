"""Where rollouts run: here, in spawned processes or on Ray actors; a dead worker is replaced."""

from __future__ import annotations

import logging
import multiprocessing
import signal
import traceback
from collections import Counter, deque
from dataclasses import dataclass
from multiprocessing import connection
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, Callable, Mapping, Protocol, Sequence

from compoenv.env import CompoWorldEnv
from compoenv.ray_pool import RayActors
from compoenv.rollout_results import RolloutError
from compoenv.task import Task

__all__ = ["Episode", "Play", "Raised", "Lost", "Outcome", "Backend", "InProcess", "Processes",
           "RayWorkers", "StartTries", "START_TRIES", "describe", "died", "play_all",
           "wait_processes"]

log = logging.getLogger("compoenv.rollout")

Episode = tuple[int, Task, int]  # (episode index, task, rollout index within its task)


@dataclass(frozen=True)
class Raised:
    """The episode raised: the exception's type name, text and traceback."""

    type: str
    message: str
    traceback: str


@dataclass(frozen=True)
class Lost:
    """The worker died (its process, or its Ray actor); what it was playing did not finish.
    ``before_start``: it died before its env was built, so it played nothing."""

    message: str
    before_start: bool = False


@dataclass(frozen=True)
class _Broken:
    """The worker could not build its env: a setup error, no episode can run."""

    traceback: str


Outcome = dict[str, Any] | Raised | Lost | _Broken
_READY = -2  # the episode index of a worker process's first message: its env is built
# workers of one slot that may die in a row before building their env (a script that spawns
# processes without an ``if __name__ == "__main__":`` guard kills every one it starts)
START_TRIES = 3
Event = tuple[int, int, Outcome]  # (worker slot, episode index or -1, what happened)
Play = Callable[[CompoWorldEnv, Episode], dict[str, Any] | Raised]  # picklable: it travels


def describe(episode: Episode) -> str:
    index, task, rollout_idx = episode
    return f"episode {index} (task {task.id or '<no id>'}, rollout {rollout_idx})"


def died(process: BaseProcess) -> str:
    """What became of a worker process that ended (joined): its pid and signal or exit code."""
    code = process.exitcode or 0
    how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
    return f"worker process {process.pid} died ({how})"


def wait_processes(workers: Sequence[tuple[BaseProcess, Connection]]
                   ) -> list[tuple[int, list[Any], str | None]]:
    """Waits until worker processes (each with its pipe) send or die; for each slot that did,
    the messages read from its pipe (all it sent before dying) and, once it died, how
    (``died``; None while it lives)."""
    slots: dict[Any, int] = {}
    for slot, (process, conn) in enumerate(workers):
        slots[conn] = slots[process.sentinel] = slot
    found: list[tuple[int, list[Any], str | None]] = []
    for slot in sorted({slots[h] for h in connection.wait(list(slots))}):
        process, conn = workers[slot]
        messages: list[Any] = []
        try:
            while conn.poll():
                messages.append(conn.recv())
        except (EOFError, OSError):
            pass
        else:
            if process.is_alive():
                found.append((slot, messages, None))
                continue
        process.join()
        found.append((slot, messages, died(process)))
    return found


class StartTries:
    """Counts, per worker slot, the workers in a row that died before they got going
    (``before``: "building their env", "finishing an episode"); the ``START_TRIES``-th such
    death stops the run, so a worker that can never work fails it instead of being replaced
    for ever. ``hint`` ends the error: what the user can do."""

    def __init__(self, width: int, before: str, hint: str) -> None:
        self.row, self.before, self.hint = [0] * width, before, hint

    def started(self, slot: int) -> None:
        """The slot's worker got going: its earlier deaths are forgiven."""
        self.row[slot] = 0

    def died(self, slot: int, message: str) -> None:
        """The slot's worker died (``message``: how) before it got going.

        Raises:
            RolloutError: that made ``START_TRIES`` in a row.
        """
        self.row[slot] += 1
        if self.row[slot] >= START_TRIES:
            raise RolloutError(f"{self.row[slot]} worker processes in a row died before "
                               f"{self.before} (the last: {message}), so the run stops. "
                               f"{self.hint}")


def _build(env_kwargs: Mapping[str, Any]) -> CompoWorldEnv | _Broken:
    try:
        return CompoWorldEnv(**env_kwargs)
    except Exception as exc:  # noqa: BLE001 - sent to the driver, which raises it
        return _Broken("".join(traceback.format_exception(exc)))


# -- backends: ``width`` worker slots, each playing the episodes sent to it in order -------------

class Backend(Protocol):
    width: int
    one_at_a_time: bool  # a slot gets one episode at a time, not a chunk

    def send(self, slot: int, episodes: list[Episode]) -> None: ...
    def wait(self) -> list[Event]: ...
    def replace(self, slot: int) -> None: ...
    def close(self) -> None: ...


class InProcess:
    """Plays here, one episode per ``wait``; a crash here is this process's, nothing to retry."""

    width, one_at_a_time = 1, False

    def __init__(self, env_kwargs: Mapping[str, Any], play: Play) -> None:
        self.env, self.play = CompoWorldEnv(**env_kwargs), play
        self.queue: deque[Episode] = deque()

    def send(self, slot: int, episodes: list[Episode]) -> None:
        self.queue.extend(episodes)

    def wait(self) -> list[Event]:
        episode = self.queue.popleft()
        return [(0, episode[0], self.play(self.env, episode))]

    def replace(self, slot: int) -> None:
        raise AssertionError("an in-process run has no worker to lose")

    def close(self) -> None:
        self.env.close()


def _serve(conn: Connection, env_kwargs: Mapping[str, Any], play: Play) -> None:
    """A worker process: builds its env, then plays each chunk it receives, sending back
    ``(episode index, outcome)`` per episode; stops at ``None`` or when the driver is gone."""
    env = _build(env_kwargs)
    if isinstance(env, _Broken):
        conn.send((-1, env))
        return
    try:
        conn.send((_READY, None))
        while (episodes := conn.recv()) is not None:
            for episode in episodes:
                conn.send((episode[0], play(env, episode)))
    except (EOFError, OSError):
        pass
    finally:
        env.close()


class Processes:
    """Spawned worker processes, one pipe each, so a death is one worker's and says which."""

    # A worker sends each record before it starts the next episode, so when it dies every
    # record it finished is readable in its pipe and the first one missing is the one it was
    # playing. It gets its next chunk once the last record came back, so pipes never clog.
    one_at_a_time = False

    def __init__(self, env_kwargs: Mapping[str, Any], play: Play, workers: int) -> None:
        self.context = multiprocessing.get_context("spawn")
        self.args = (dict(env_kwargs), play)
        self.width = workers
        self.workers = [self._start() for _ in range(workers)]
        self.busy = [0] * workers  # episodes sent and not yet answered
        self.ready = [False] * workers  # the slot's process has built its env

    def _start(self) -> tuple[BaseProcess, Connection]:
        here, there = self.context.Pipe()
        process = self.context.Process(target=_serve, args=(there, *self.args),
                                       name="compoenv-rollout")
        process.start()
        there.close()
        return process, here

    def send(self, slot: int, episodes: list[Episode]) -> None:
        self.busy[slot] += len(episodes)
        try:
            self.workers[slot][1].send(episodes)
        except OSError:
            pass  # it died: wait() sees its sentinel

    def wait(self) -> list[Event]:
        events: list[Event] = []
        for slot, messages, death in wait_processes(self.workers):
            for index, outcome in messages:  # every record sent before a death is read first
                if index == _READY:
                    self.ready[slot] = True
                    continue
                self.busy[slot] -= 1
                events.append((slot, index, outcome))
            if death is not None:
                events.append((slot, -1, Lost(death, before_start=not self.ready[slot])))
        return events

    def replace(self, slot: int) -> None:
        self.workers[slot][1].close()
        self.workers[slot] = self._start()
        self.busy[slot] = 0
        self.ready[slot] = False

    def close(self) -> None:
        for _, conn in self.workers:
            conn.close()  # an idle worker reads EOF and stops
        for (process, _), busy in zip(self.workers, self.busy):
            if busy:  # stopped early (a strict error): do not wait for its episode
                process.terminate()
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
                process.join()


class _EpisodeActor:
    def __init__(self, env_kwargs: Mapping[str, Any], play: Play) -> None:
        self.env, self.play = _build(env_kwargs), play

    def chunk(self, episode: Episode) -> Outcome:
        if isinstance(self.env, _Broken):
            return self.env
        return self.play(self.env, episode)


class RayWorkers(RayActors):
    """One Ray actor per slot, each holding an env, given one episode at a time: when an actor
    dies Ray may lose the reply of a call that had finished, so each call waits for the one
    before it to come back, and a dead actor's episode is always the one it was playing."""

    one_at_a_time = True

    def __init__(self, env_kwargs: Mapping[str, Any], play: Play, workers: int | None,
                 address: str) -> None:
        super().__init__(_EpisodeActor, (dict(env_kwargs), play), workers, address)
        self.width = len(self.actors)
        self.calls: dict[Any, tuple[int, int]] = {}  # handle -> (slot, episode index)

    def send(self, slot: int, episodes: list[Episode]) -> None:
        for episode in episodes:
            self.calls[self.submit(episode, actor=slot)] = (slot, episode[0])

    def wait(self) -> list[Event]:
        (ready,), _ = self.ray.wait(list(self.calls), num_returns=1)
        slot, index = self.calls.pop(ready)
        try:
            return [(slot, index, self.ray.get(ready))]
        except self.ray.exceptions.RayActorError as exc:
            why = (str(exc).strip().splitlines() or [""])[0]
            return [(slot, -1, Lost(f"Ray actor died ({type(exc).__name__}: {why})"))]
        except self.ray.exceptions.RayTaskError as exc:  # e.g. a record that cannot pickle
            return [(slot, index, Raised(type(exc).__name__, str(exc), ""))]

    def replace(self, slot: int) -> None:
        self.calls = {ref: call for ref, call in self.calls.items() if call[0] != slot}
        super().replace(slot)


def play_all(backend: Backend, todo: deque[Episode], size: int, retries: int,
             finish: Callable[[Episode, dict[str, Any] | Raised | Lost, int], None]
             ) -> tuple[int, int]:
    """Plays ``todo``, a chunk of ``size`` at a time per worker, calling ``finish(episode,
    outcome, attempts)`` once per episode with its record, its Raised, or the Lost of its last
    attempt. A dead worker is replaced; the episode it was playing is tried again up to
    ``retries`` times, those queued behind it are sent again (not charged); a worker that died
    before building its env played nothing, and its episodes are all sent again. Returns
    ``(retried, workers_lost)``.

    Raises:
        RolloutError: a worker could not build its env, or ``START_TRIES`` workers in a row
            of one slot died before building it.
    """
    inflight: list[dict[int, Episode]] = [{} for _ in range(backend.width)]
    deaths: Counter[int] = Counter()
    unstarted = StartTries(backend.width, "building their env", _SPAWN_HINT)
    retried = lost = 0
    size = 1 if backend.one_at_a_time else size
    while todo or any(inflight):
        for slot, queue in enumerate(inflight):
            if todo and not queue:
                part = [todo.popleft() for _ in range(min(size, len(todo)))]
                queue.update((e[0], e) for e in part)
                backend.send(slot, part)
        for slot, index, outcome in backend.wait():
            if isinstance(outcome, _Broken):
                raise RolloutError(f"a worker could not build its env:\n{outcome.traceback}")
            if not isinstance(outcome, Lost):
                unstarted.started(slot)
                finish(inflight[slot].pop(index), outcome, deaths[index] + 1)
                continue
            lost += 1
            if outcome.before_start:
                unstarted.died(slot, outcome.message)
            backend.replace(slot)
            queue, inflight[slot] = list(inflight[slot].values()), {}
            log.warning("%s; it was %s", outcome.message,
                        "starting" if outcome.before_start else
                        f"playing {describe(queue[0])}" if queue else "idle")
            if outcome.before_start:  # it played nothing: nothing is charged
                todo.extendleft(reversed(queue))
                continue
            if not queue:
                continue
            culprit = queue[0]
            todo.extendleft(reversed(queue[1:]))
            deaths[culprit[0]] += 1
            if deaths[culprit[0]] > retries:
                finish(culprit, outcome, deaths[culprit[0]])
            else:
                retried += 1
                todo.appendleft(culprit)
    return retried, lost


_SPAWN_HINT = ("Worker processes are spawned: they import the script that started the run, "
               "so a script must start rollouts under an `if __name__ == \"__main__\":` guard "
               "(the workers' own error is printed above this one); or run with workers=1, in "
               "this process.")
