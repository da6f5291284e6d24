"""Parallel task generation (processes or Ray) with exactly the output of sequential generation."""

from __future__ import annotations

import gc
import math
import multiprocessing
import os
import pickle
import sys
import threading
import traceback
from collections import Counter, deque
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable, Iterable, Iterator, Protocol

from compoenv.compose.difficulty import DifficultyMix
from compoenv.compose.generator import Composer, ComposerConfig, Outcome, derive_seed, select
from compoenv.ray_pool import RayActors
from compoenv.registry import Registry
from compoenv.task import Task

__all__ = ["generate_parallel", "compose_range"]

RegistryFactory = Callable[[], Registry]
Progress = Callable[[int, int], None]


def compose_range(composer: Composer, seed: int, start: int, stop: int) -> list[Outcome]:
    """The outcome of every index in ``[start, stop)`` of the set generated from ``seed``.

    Errors other than :class:`Rejected` are returned, not raised: whether they matter depends on
    whether the merge ever reaches their index (sequential generation would stop before).
    """
    outcomes: list[Outcome] = []
    for index in range(start, stop):
        try:
            outcomes.append(composer.attempt(derive_seed(seed, index)))
        except Exception as exc:  # noqa: BLE001 - re-raised by the merge if it is reached
            where = f"while composing index {index} (seed {derive_seed(seed, index)})"
            outcomes.append(Outcome(None, None, _portable(exc, where)))
    return outcomes


def _portable(exc: Exception, where: str = "") -> BaseException:
    """``exc`` if it survives pickling, else a RuntimeError carrying its traceback; either way
    it says ``where`` it happened and, since tracebacks are not pickled, how."""
    text = "".join(traceback.format_exception(exc))
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - any pickling failure means: send text instead
        return RuntimeError(f"task composition failed {where}:\n{text}")
    if hasattr(exc, "add_note"):  # Python >= 3.11
        exc.add_note(f"{where}; worker traceback:\n{text}")
    return exc


def _make_composer(config: ComposerConfig | None,
                   registry_factory: RegistryFactory | None) -> Composer:
    registry = registry_factory() if registry_factory is not None else None
    return Composer(registry=registry, config=config)


def worker_composer(config: ComposerConfig | None,
                    registry_factory: RegistryFactory | None = None) -> Composer:
    """The Composer of a process that does nothing but compose: its services built, and they,
    its registry and tool graph (a few hundred thousand objects that live as long as the
    process) frozen out of the garbage collector's full passes (``gc.freeze``), which would
    otherwise walk them again and again. ``settle`` does the same for what later chunks leave
    behind."""
    composer = _make_composer(config, registry_factory)
    composer.load_services()
    settle()
    return composer


def settle() -> None:
    """In a composing process, between chunks: what is alive now (seeded states of the shared
    worlds, caches) lives long, so move it out of the collector's full passes. Frozen objects
    are still freed when nothing refers to them; only cycles among them wait."""
    gc.collect()
    gc.freeze()


# -- backends: each runs chunks and hands back handles that are resolved in submission order ---

class _Backend(Protocol):
    def submit(self, start: int, stop: int) -> Any: ...
    def result(self, handle: Any) -> Iterable[Outcome]: ...
    def close(self) -> None: ...


class _InProcess:
    """Composes lazily in this process, one index at a time as the merge asks for it."""

    def __init__(self, seed: int, config: ComposerConfig | None,
                 registry_factory: RegistryFactory | None) -> None:
        self.seed = seed
        self.composer = _make_composer(config, registry_factory)

    def submit(self, start: int, stop: int) -> tuple[int, int]:
        return start, stop

    def result(self, handle: tuple[int, int]) -> Iterator[Outcome]:
        for index in range(*handle):
            yield from compose_range(self.composer, self.seed, index, index + 1)

    def close(self) -> None:
        pass


_WORKER: Composer | None = None


def _init_worker(config: ComposerConfig | None, registry_factory: RegistryFactory | None) -> None:
    global _WORKER
    _WORKER = worker_composer(config, registry_factory)


def _worker_chunk(seed: int, start: int, stop: int) -> list[Outcome]:
    assert _WORKER is not None, "worker process was not initialised"
    outcomes = compose_range(_WORKER, seed, start, stop)
    settle()
    return outcomes


class _Processes:
    """A process pool of composers. Where the platform forks, the Composer (its registry and
    tool graph) is built once here and the workers are forked from this process: they share it
    copy-on-write (``gc.freeze`` keeps the collector from writing to its pages), instead of
    each building its own. Elsewhere, or when another thread runs here (a fork copies only the
    calling thread; a lock another one holds would stay held in the child), workers are
    spawned and each builds its Composer once, in the initializer."""

    def __init__(self, seed: int, config: ComposerConfig | None,
                 registry_factory: RegistryFactory | None, workers: int) -> None:
        global _WORKER
        self.seed = seed
        self.forked = _can_fork()
        if self.forked:
            _WORKER = worker_composer(config, registry_factory)
            self.forked = _can_fork()  # building it started no thread
        if self.forked:
            self.pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
        else:
            _WORKER = None
            self.pool = ProcessPoolExecutor(workers,
                                            mp_context=multiprocessing.get_context("spawn"),
                                            initializer=_init_worker,
                                            initargs=(config, registry_factory))

    def submit(self, start: int, stop: int) -> Any:
        # the first submit forks every worker, before the pool starts its own threads
        return self.pool.submit(_worker_chunk, self.seed, start, stop)

    def result(self, handle: Any) -> list[Outcome]:
        return handle.result()

    def close(self) -> None:
        global _WORKER
        self.pool.shutdown(wait=False, cancel_futures=True)
        if self.forked:
            _WORKER = None


def _can_fork() -> bool:
    """Whether workers may be forked from this process: the platform forks (macOS can, but
    its system frameworks are not fork-safe, so Python spawns there) and no other thread runs."""
    return ("fork" in multiprocessing.get_all_start_methods() and sys.platform != "darwin"
            and threading.active_count() == 1)


class _ComposerActor:
    def __init__(self, seed: int, config: ComposerConfig | None,
                 registry_factory: RegistryFactory | None) -> None:
        self.seed = seed
        self.composer = worker_composer(config, registry_factory)

    def chunk(self, start: int, stop: int) -> list[Outcome]:
        outcomes = compose_range(self.composer, self.seed, start, stop)
        settle()
        return outcomes


# -- the merge -----------------------------------------------------------------------------------

def _ordered(backend: _Backend, chunk: int, ahead: int) -> Iterator[Outcome]:
    """Outcomes of indices 0, 1, 2, ... in order, keeping ``ahead`` chunks in flight."""
    pending: deque[Any] = deque()
    start = 0
    while True:
        while len(pending) < ahead:
            pending.append(backend.submit(start, start + chunk))
            start += chunk
        yield from backend.result(pending.popleft())


def generate_parallel(n: int, seed: int = 0, config: ComposerConfig | None = None,
                      registry_factory: RegistryFactory | None = None, workers: int | None = 1,
                      ray_address: str | None = None, chunk: int = 64,
                      progress: Progress | None = None,
                      rejections_by_tool: Counter[tuple[str, str]] | None = None,
                      mix: DifficultyMix | None = None,
                      ) -> tuple[list[Task], Counter[str]]:
    """``n`` verified, distinct tasks: the same tasks, in the same order, with the same rejection
    counts as ``list(Composer(config=config).generate(n, seed))`` and its ``rejections`` (and
    ``rejections_by_tool``), for any number of workers.

    Workers compose chunks of candidate indices ahead; results are merged strictly in index
    order (deduplicated by id, first occurrence kept) and the merge stops at the n-th accepted
    task, so work past that point is discarded and not counted.

    Args:
        n: Tasks to produce.
        seed: Generation seed (index ``i`` uses ``derive_seed(seed, i)``).
        config: Composer controls, passed through unchanged (must be picklable).
        registry_factory: Builds each worker's registry (default ``Registry.default()``); must
            be picklable, i.e. a module-level function, when workers run in other processes.
        workers: Processes (or Ray actors); 1 composes in this process without a pool; None
            means one per CPU (of this machine, or of the Ray cluster).
        ray_address: Use Ray actors instead of processes: a cluster address, or ``"local"`` to
            start a local Ray with ``workers`` CPUs. An already initialised Ray is reused.
        chunk: Most indices per unit of work (smaller when ``n`` is small, so that every worker
            gets some).
        progress: Called as ``progress(accepted, attempted)`` after each merged chunk.
        rejections_by_tool: A Counter to add rejected seeds to per (reason, tool at fault).
        mix: Shares of difficulty levels the set should hold (``select``).

    Raises:
        RuntimeError: no n distinct tasks within ``100 * (n + 10)`` seeds (as sequentially).
        ValueError: ``n`` is negative, or ``workers`` or ``chunk`` is not positive.
    """
    if n < 0 or chunk < 1 or (workers is not None and workers < 1):
        raise ValueError(f"need n >= 0, chunk >= 1 and workers >= 1 (or None), got n={n}, "
                         f"chunk={chunk}, workers={workers}")
    rejections: Counter[str] = Counter()
    if n == 0:
        return [], rejections
    if ray_address is not None:
        backend: _Backend = RayActors(_ComposerActor, (seed, config, registry_factory), workers,
                                      ray_address)
        width = len(backend.actors)  # type: ignore[attr-defined]
    elif workers is None or workers > 1:
        width = workers or os.cpu_count() or 1
        backend = _Processes(seed, config, registry_factory, width)
    else:
        width = 1
        backend = _InProcess(seed, config, registry_factory)
    # Several seeds are tried per accepted task, so n / (2 * width) indices per chunk still give
    # every worker a few chunks when n is small.
    size = max(1, min(chunk, math.ceil(n / (2 * width))))

    def report(accepted: int, attempted: int) -> None:
        if progress is not None and (attempted % size == 0 or accepted == n):
            progress(accepted, attempted)

    try:
        tasks = list(select(_ordered(backend, size, 2 * width), n, rejections, report,
                            rejections_by_tool, mix))
    finally:
        backend.close()
    return tasks, rejections
