"""Worker processes that run one function over many items, each call bounded in time: a
worker over time is killed and replaced, so no item can stall or crash the run."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

__all__ = ["Outcome", "run_bounded", "one_line"]


@dataclass(frozen=True)
class Outcome:
    """How one call ended: ``value`` when ``error`` is empty, else a one-line reason."""

    value: Any = None
    error: str = ""
    kind: str = ""  # the exception's class name


def one_line(exc: BaseException, limit: int = 300) -> str:
    """An exception as one short line: its message, or its type when the message is empty."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    text = text if isinstance(exc, ValueError) or type(exc).__name__ in text else \
        f"{type(exc).__name__}: {text}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _die_with_parent() -> None:
    """On Linux, be killed when the parent dies, even in the middle of a conversion."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # elsewhere an orphan ends after its current item (the poll below)


def _serve(fn: Callable[[Any], Any], conn: Connection) -> None:
    """A worker: answer each item sent until the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the parent to handle
    _die_with_parent()
    parent = os.getppid()
    while True:
        try:
            if not conn.poll(1.0):
                if os.getppid() != parent:  # orphaned: siblings hold the pipe open, no EOF
                    return
                continue
            item = conn.recv()
        except (EOFError, OSError):
            return
        try:
            outcome = Outcome(fn(item))
        except BaseException as exc:  # noqa: BLE001 - every failure becomes data
            outcome = Outcome(error=one_line(exc), kind=type(exc).__name__)
        try:
            conn.send(outcome)
        except Exception as exc:  # noqa: BLE001 - e.g. a result that cannot be pickled
            conn.send(Outcome(error=one_line(exc)))


class _Worker:
    def __init__(self, fn: Callable[[Any], Any]) -> None:
        context = multiprocessing.get_context("fork")  # fn need not be importable by name
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(fn, child), daemon=True)
        self.process.start()
        child.close()
        self.index, self.started = -1, 0.0

    def give(self, index: int, item: Any) -> None:
        self.index, self.started = index, time.monotonic()
        self.conn.send(item)

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.conn.close()


def run_bounded(fn: Callable[[Any], Any], items: Iterable[tuple[int, Any]], workers: int = 1,
                timeout: float = 60.0) -> Iterator[tuple[int, Outcome]]:
    """``(index, Outcome)`` for each ``(index, item)``, in the order calls finish.

    Args:
        fn: The function; it runs in a forked worker process, so it may be a closure.
        items: ``(index, item)`` pairs; items are sent to workers through a pipe.
        workers: Worker processes.
        timeout: Seconds one call may take; a worker over time is killed and replaced, and
            its item ends with ``"timed out after N s"``.
    """
    pending = iter(items)
    pool = [_Worker(fn) for _ in range(max(1, workers))]
    busy: dict[Connection, _Worker] = {}
    try:
        for worker in pool:
            if (item := next(pending, None)) is not None:
                worker.give(*item)
                busy[worker.conn] = worker
        while busy:
            soonest = min(w.started for w in busy.values()) + timeout
            ready = wait(list(busy), timeout=max(0.0, soonest - time.monotonic()))
            now, done = time.monotonic(), []
            for conn in ready:
                worker = busy[conn]  # type: ignore[index]
                try:
                    outcome = conn.recv()  # type: ignore[union-attr]
                except (EOFError, OSError):
                    code = worker.process.join(1) or worker.process.exitcode
                    outcome = Outcome(error=f"the worker process died (exit code {code})")
                done.append((worker, outcome))
            for worker in [w for w in busy.values() if w.started + timeout <= now]:
                if all(worker is not w for w, _ in done):
                    done.append((worker, Outcome(error=f"timed out after {timeout:g} s")))
            for worker, outcome in done:
                del busy[worker.conn]
                yield worker.index, outcome
                if outcome.error and not worker.process.is_alive() or \
                        outcome.error.startswith("timed out"):
                    worker.stop()
                    pool[pool.index(worker)] = worker = _Worker(fn)
                if (item := next(pending, None)) is not None:
                    worker.give(*item)
                    busy[worker.conn] = worker
    finally:
        for worker in pool:
            worker.stop()
