"""Parallel generation: the tasks, order and rejection counts of sequential generation."""

from __future__ import annotations

import sys
import threading
from collections import Counter

import pytest

import compoenv.compose.parallel as parallel
from compoenv.compose import Composer, ComposerConfig, Rejected, derive_seed
from compoenv.compose.parallel import compose_range, generate_parallel
from compoenv.registry import Registry
from compoenv.task import Task

CONFIG = ComposerConfig(min_hops=2, max_hops=3)
N, SEED = 24, 5


def default_registry() -> Registry:
    """A module-level (picklable) registry factory for worker processes."""
    return Registry.default()


@pytest.fixture(scope="module")
def composer() -> Composer:
    composer = Composer(config=CONFIG)
    composer.tasks = list(composer.generate(N, seed=SEED))  # type: ignore[attr-defined]
    return composer


@pytest.fixture(scope="module")
def sequential(composer) -> tuple[list[Task], Counter[str]]:
    return composer.tasks, composer.rejections


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_parallel_generation_equals_sequential(sequential, composer, workers):
    progress: list[tuple[int, int]] = []
    by_tool: Counter[tuple[str, str]] = Counter()
    tasks, rejections = generate_parallel(
        N, SEED, CONFIG, workers=workers, chunk=4,
        registry_factory=default_registry if workers == 2 else None,
        progress=lambda accepted, attempted: progress.append((accepted, attempted)),
        rejections_by_tool=by_tool)
    expected, expected_rejections = sequential
    assert [t.id for t in tasks] == [t.id for t in expected]
    assert tasks == expected
    assert rejections == expected_rejections
    assert by_tool == composer.rejections_by_tool  # the tools at fault merge in order too
    attempted = len(expected) + sum(expected_rejections.values())
    assert progress[-1] == (N, attempted)
    assert progress == sorted(progress)


def test_chunk_size_does_not_change_the_result(sequential):
    expected, expected_rejections = sequential
    for chunk in (1, 7, 1000):
        assert generate_parallel(N, SEED, CONFIG, chunk=chunk) == (expected,
                                                                   expected_rejections)


def test_zero_tasks_and_bad_arguments():
    assert generate_parallel(0, SEED, CONFIG) == ([], Counter())
    for bad in ({"workers": 0}, {"chunk": 0}):
        with pytest.raises(ValueError, match="need n >= 0"):
            generate_parallel(1, SEED, CONFIG, **bad)


class FakeComposer:
    """Accepts every index except the listed ones (which raise), counting compose calls."""

    calls = 0
    failures: dict[int, Exception] = {}

    def __init__(self, registry=None, config=None) -> None:
        self.config = config

    attempt = Composer.attempt  # the real rule for turning compose() into an outcome

    def compose(self, seed: int) -> Task:
        type(self).calls += 1
        index = next(i for i in range(1000) if derive_seed(SEED, i) == seed)
        if index in self.failures:
            raise self.failures[index]
        return Task(instruction=f"task {index}", services=["bank"], seed=seed, date="2025-01-01",
                    solution=[], rubric=[], domain="finance", hops=1).with_id()


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(parallel, "Composer", FakeComposer)
    FakeComposer.calls = 0
    FakeComposer.failures = {3: Rejected("dead_end", tools=("bank__get_account",)),
                             6: KeyError("boom")}
    return FakeComposer


def test_errors_past_the_last_needed_index_are_never_raised(fake):
    by_tool: Counter[tuple[str, str]] = Counter()
    tasks, rejections = generate_parallel(5, SEED, workers=1, chunk=64,
                                          rejections_by_tool=by_tool)
    assert [t.instruction for t in tasks] == [f"task {i}" for i in (0, 1, 2, 4, 5)]
    assert rejections == Counter({"dead_end": 1})
    assert by_tool == Counter({("dead_end", "bank__get_account"): 1})
    assert fake.calls == 6                      # in-process composition is lazy


def test_an_error_at_a_needed_index_is_raised_with_its_type(fake):
    with pytest.raises(KeyError, match="boom") as info:
        generate_parallel(6, SEED, workers=1)
    if sys.version_info >= (3, 11):              # exception notes say which seed failed
        assert f"index 6 (seed {derive_seed(SEED, 6)})" in info.value.__notes__[0]


def test_compose_range_reports_each_outcome(fake):
    outcomes = compose_range(FakeComposer(), SEED, 2, 7)
    assert [o[0] is not None for o in outcomes] == [True, False, True, True, False]
    assert outcomes[1][1] == "dead_end" and isinstance(outcomes[4][2], KeyError)
    assert outcomes[1].tools == ("bank__get_account",) and outcomes[0].tools == ()


def test_unpicklable_worker_errors_become_runtime_errors_with_the_traceback():
    class Local(Exception):                     # a local class cannot be pickled
        pass

    try:
        raise Local("deep failure")
    except Local as exc:
        portable = parallel._portable(exc)
    assert isinstance(portable, RuntimeError) and "deep failure" in str(portable)
    assert isinstance(parallel._portable(ValueError("x")), ValueError)


def test_ray_actors_give_the_same_tasks(sequential, composer):
    ray = pytest.importorskip("ray")
    assert not ray.is_initialized()
    by_tool: Counter[tuple[str, str]] = Counter()
    tasks, rejections = generate_parallel(N, SEED, CONFIG, workers=2, ray_address="local",
                                          chunk=4, rejections_by_tool=by_tool)
    assert (tasks, rejections) == sequential
    assert by_tool == composer.rejections_by_tool
    assert not ray.is_initialized()             # the local Ray it started is shut down


def test_workers_are_forked_from_one_composer_built_here(sequential, monkeypatch):
    if not parallel._can_fork():
        pytest.skip("this platform spawns workers")
    built: list[Composer] = []

    def counting(config, registry_factory):
        built.append(Composer(config=config))
        return built[-1]

    monkeypatch.setattr(parallel, "_make_composer", counting)
    assert generate_parallel(N, SEED, CONFIG, workers=2, chunk=4) == sequential
    assert len(built) == 1                      # once, here: the workers share it
    assert parallel._WORKER is None             # and this process lets go of it after


def test_spawned_workers_give_the_same_tasks(sequential, monkeypatch):
    monkeypatch.setattr(parallel, "_can_fork", lambda: False)
    assert generate_parallel(N, SEED, CONFIG, workers=2, chunk=4) == sequential


def test_no_fork_while_another_thread_runs():
    release = threading.Event()
    thread = threading.Thread(target=release.wait)
    thread.start()
    try:
        assert not parallel._can_fork()
    finally:
        release.set()
        thread.join()
