"""Rollouts survive: a dead worker's episode is retried, results stream to disk, runs resume."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

from compoenv.agents import RandomAgent
from compoenv.rollout import AgentFactory, RolloutError, RolloutStats, run_rollouts
from compoenv.task import Task

RANDOM = AgentFactory(RandomAgent, {"stop_prob": 0.2}, seed=7)
GATEWAY = {"mode": "gateway"}
EPISODES = 12  # 6 tasks, 2 rollouts each


class Killer:
    """Kills its own process on its first action (as an out-of-memory kill or a segfault
    would), unless ``marker`` exists (made just before dying); then it plays like ``inner``.
    Without a marker it always kills."""

    def __init__(self, inner: Any, marker: Path | None, how: str) -> None:
        self.inner, self.marker, self.how = inner, marker, how

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        self.inner.reset(observation, info)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if self.marker is None or not self.marker.exists():
            if self.marker is not None:
                self.marker.touch()  # before dying: the retry finds it and plays on
            if self.how == "exit":
                os._exit(1)
            os.kill(os.getpid(), signal.SIGKILL)
        return self.inner.act(observation, info)


@dataclass(frozen=True)
class Agents:
    """RANDOM's agents, each logged to ``<log>/runs`` when made (one line per episode played);
    the agent of a ``victims`` episode kills its worker, the first time or, with ``always``,
    every time. Picklable, so it travels to worker processes and Ray actors."""

    log: str
    victims: tuple[int, ...] = ()
    always: bool = False
    how: str = "sigkill"
    raise_at: int | None = None

    def __call__(self, episode: int) -> Any:
        with open(Path(self.log) / "runs", "a", encoding="utf-8") as fh:
            fh.write(f"{episode}\n")
        if episode == self.raise_at:
            raise KeyError("agent bug")
        if episode not in self.victims:
            return RANDOM(episode)
        marker = None if self.always else Path(self.log) / f"killed-{episode}"
        return Killer(RANDOM(episode), marker, self.how)


def runs(log: Path) -> Counter[int]:
    """How many times each episode was played (its agent made)."""
    path = log / "runs"
    return Counter(int(line) for line in path.read_text().split()) if path.exists() else Counter()


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def keyed(records: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["meta"]["task_id"], r["meta"]["rollout_idx"]): r for r in records}


def once_each(n: int = EPISODES) -> Counter[int]:
    return Counter(range(n))


@pytest.fixture(scope="module")
def tasks(tasks50: list[Task]) -> list[Task]:
    return tasks50[:6]


@pytest.fixture(scope="module")
def serial(tasks: list[Task]) -> list[dict[str, Any]]:
    return run_rollouts(tasks, RANDOM, rollouts_per_task=2, env_kwargs=GATEWAY)


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray for this module's Ray tests (run_rollouts reuses a running Ray)."""
    ray = pytest.importorskip("ray")
    assert not ray.is_initialized()
    # Ray's workers cannot import this test module; ship its classes (Agents, Killer) by value
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()
    ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def check_killed_once(tasks, serial, tmp_path: Path, **where: Any) -> None:
    """Episodes 3 and 8 kill their worker once: both are retried, nothing is lost, the stream
    holds every episode once, and a second run on it plays nothing."""
    out = tmp_path / "runs.jsonl"
    records = run_rollouts(tasks, Agents(str(tmp_path), victims=(3, 8), how=where.pop("how")),
                           rollouts_per_task=2, env_kwargs=GATEWAY, workers=2, chunk=2,
                           output=out, **where)
    assert records == serial
    assert records.stats == RolloutStats(episodes=EPISODES, finished=EPISODES, retried=2,
                                         workers_lost=2)
    assert runs(tmp_path) == once_each() + Counter([3, 8])  # those queued behind ran once
    written = lines(out)
    assert len(written) == EPISODES and keyed(written) == keyed(serial)

    again = tmp_path / "again"
    again.mkdir()
    resumed = run_rollouts(tasks, Agents(str(again)), rollouts_per_task=2, env_kwargs=GATEWAY,
                           workers=2, output=out, **where)
    assert resumed == serial and runs(again) == Counter()  # no agent made, no worker started
    assert resumed.stats == RolloutStats(episodes=EPISODES, resumed=EPISODES)
    assert lines(out) == written


def check_always_killed(tasks, serial, tmp_path: Path, **where: Any) -> None:
    """Episode 5 kills every worker that plays it: after ``retries`` it is a failure record,
    the others are intact; a strict re-run plays only it and raises."""
    out = tmp_path / "runs.jsonl"
    agents = Agents(str(tmp_path), victims=(5,), always=True, how=where.pop("how"))
    records = run_rollouts(tasks, agents, rollouts_per_task=2, env_kwargs=GATEWAY, workers=2,
                           chunk=2, output=out, retries=1, **where)
    assert records[:5] + records[6:] == serial[:5] + serial[6:]
    failed = records[5]
    assert records.failures == [failed]
    assert failed["meta"]["task_id"] == tasks[2].id and failed["meta"]["rollout_idx"] == 1
    assert failed["meta"]["score"] == 0.0 and failed["meta"]["finish_reason"] == "error"
    assert failed["error"]["type"] == "WorkerLost" and failed["error"]["attempts"] == 2
    assert "died" in failed["error"]["message"]
    assert records.stats == RolloutStats(episodes=EPISODES, finished=EPISODES - 1, failed=1,
                                         retried=1, workers_lost=2)
    assert runs(tmp_path)[5] == 2
    written = lines(out)  # failure records are not written: a re-run tries them again
    assert len(written) == EPISODES - 1 and keyed(written) == keyed(serial[:5] + serial[6:])

    (tmp_path / "runs").unlink()
    with pytest.raises(RolloutError, match=rf"episode 5 \(task {tasks[2].id}, rollout 1\) "
                                           r"failed: its worker died on all 2 tries"):
        run_rollouts(tasks, agents, rollouts_per_task=2, env_kwargs=GATEWAY, workers=2,
                     output=out, retries=1, strict=True, **where)
    assert runs(tmp_path) == Counter({5: 2})


def test_a_killed_worker_process_is_replaced_and_its_episode_retried(tasks, serial, tmp_path):
    check_killed_once(tasks, serial, tmp_path, how="sigkill")


def test_an_episode_that_always_kills_its_process_becomes_a_failure_record(tasks, serial,
                                                                          tmp_path):
    check_always_killed(tasks, serial, tmp_path, how="exit")


def test_a_dead_ray_actor_is_replaced_and_its_episode_retried(local_ray, tasks, serial,
                                                              tmp_path):
    check_killed_once(tasks, serial, tmp_path, how="exit", ray_address="local")


def test_an_episode_that_always_kills_its_ray_actor_becomes_a_failure_record(
        local_ray, tasks, serial, tmp_path):
    check_always_killed(tasks, serial, tmp_path, how="sigkill", ray_address="local")


def test_a_crashed_run_resumes_where_it_stopped(tasks, serial, tmp_path):
    out = tmp_path / "runs.jsonl"
    with pytest.raises(RolloutError, match="episode 6 .* failed: KeyError: 'agent bug'"):
        run_rollouts(tasks, Agents(str(tmp_path), raise_at=6), rollouts_per_task=2,
                     env_kwargs=GATEWAY, output=out, strict=True)
    assert lines(out) == serial[:6]  # each finished episode was on disk as it finished
    with open(out, "a", encoding="utf-8") as fh:  # a write the crash cut off
        fh.write(json.dumps(serial[6])[:100])

    (tmp_path / "runs").unlink()
    records = run_rollouts(tasks, Agents(str(tmp_path)), rollouts_per_task=2,
                           env_kwargs=GATEWAY, output=out)
    assert records == serial
    assert runs(tmp_path) == Counter(range(6, EPISODES))  # only what was missing
    assert records.stats == RolloutStats(episodes=EPISODES, resumed=6, finished=6)
    assert lines(out) == serial  # the cut-off line is gone, every episode is there once


def test_a_stream_line_that_is_not_a_record_is_reported_with_its_line(tasks, tmp_path):
    out = tmp_path / "runs.jsonl"
    out.write_text('{"meta": {"task_id": "x", "rollout_idx": 0}}\n{"tools": []}\n')
    with pytest.raises(ValueError, match=r"runs.jsonl line 2: not a trajectory record "
                                         r"\(KeyError: 'meta'\)"):
        run_rollouts(tasks[:1], output=out)


def test_resuming_needs_distinct_task_ids(tasks, tmp_path):
    with pytest.raises(ValueError, match="tasks need distinct ids"):
        run_rollouts([tasks[0], tasks[0]], output=tmp_path / "runs.jsonl")


def test_workers_that_cannot_build_their_env_stop_the_run_instead_of_dying_again(tasks):
    with pytest.raises(RolloutError, match=r"(?s)could not build its env.*mode must be one of"):
        run_rollouts(tasks[:2], env_kwargs={"mode": "telepathy"}, workers=2)


def test_workers_that_die_before_building_their_env_stop_the_run_after_a_few_tries(tasks,
                                                                                   tmp_path):
    """A script without a ``__main__`` guard: every spawned worker runs it again and dies
    before its env is built; the run fails naming the cause instead of respawning forever."""
    import subprocess

    from compoenv.rollout_workers import START_TRIES
    from compoenv.task import save_tasks

    save_tasks(tasks[:2], tmp_path / "tasks.jsonl")
    script = tmp_path / "unguarded.py"
    script.write_text("from compoenv.rollout import run_rollouts\n"
                      "from compoenv.task import load_tasks\n"
                      f"run_rollouts(load_tasks({str(tmp_path / 'tasks.jsonl')!r}), workers=2)\n"
                      "print('finished')\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode != 0 and "finished" not in done.stdout
    assert f"RolloutError: {START_TRIES} worker processes in a row died before building " \
           f"their env" in done.stderr
    assert 'if __name__ == "__main__":' in done.stderr
