"""Evaluation in forked worker processes: the same results as in one process, a killed worker
replaced, a worker that always dies failing the run with a clear error, the CLI's checks."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from chat_server import OraclePolicy, ServerProcess
from click.testing import CliRunner

from compoenv.agents.endpoint import EndpointAgent
from compoenv.cli import main
from compoenv.evaluation import evaluate
from compoenv.rollout_results import RolloutError
from compoenv.task import Task

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="forked workers need fork")


@pytest.fixture(scope="module")
def tasks(tasks50: list[Task]) -> list[Task]:
    """Eight tasks; the first and fourth ask for values, so the scripted wrong reports of
    tasks 0, 3 and 6 fail them and scores vary."""
    answered = [t for t in tasks50 if t.answer][:2]
    rest = [t for t in tasks50 if not t.answer][:6]
    return [answered[0], *rest[:2], answered[1], *rest[2:]]


@pytest.fixture(scope="module")
def server(tasks: list[Task]) -> Any:
    # in a process of its own: forked workers must not inherit the server's sockets
    with ServerProcess(OraclePolicy(tasks, fail_every=3), max_requests=100_000,
                       keep_alive=True) as server:
        yield server


class _Dying:
    """An endpoint agent whose process is killed at its ``after``-th reply, each time
    (``once``: only the first time, marked by a file) — a worker that dies mid-run."""

    forkable = True

    def __init__(self, server: Any, after: int, once: Path | None) -> None:
        self.agent = EndpointAgent(base_url=server.url, model=server.model, backoff_s=0.01)
        self.name, self.after, self.once, self.calls = self.agent.name, after, once, 0

    async def respond(self, messages: Any, tools: Any) -> Any:
        self.calls += 1
        if self.calls == self.after and (self.once is None or not self.once.exists()):
            if self.once is not None:
                self.once.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return await self.agent.respond(messages, tools)

    async def aclose(self) -> None:
        await self.agent.aclose()


def _scores(folder: Path) -> dict[tuple[str, int], tuple[float, float]]:
    records = [json.loads(x) for x in (folder / "trajectories.jsonl").read_text().splitlines()]
    return {(r["meta"]["task_id"], r["meta"]["rollout_idx"]):
            (r["meta"]["score"], r["meta"]["rubric_score"]) for r in records}


def _same(results: dict[str, Any]) -> dict[str, Any]:
    """The results without what depends on time or the processes that played."""
    drop = {"run", "episode_seconds"}
    return {k: v for k, v in results.items() if k not in drop}


def test_workers_give_the_results_of_one_process(tmp_path, tasks, server):
    agent = lambda: EndpointAgent(base_url=server.url, model=server.model)  # noqa: E731
    one = evaluate(tasks, agent(), tmp_path / "one", k=3, concurrency=6, workers=1)
    two = evaluate(tasks, agent(), tmp_path / "two", k=3, concurrency=6, workers=2)
    assert one["run"]["workers"] == 1 and two["run"]["workers"] == 2
    assert _same(two) == _same(one)
    assert 0 < one["pass_rate"] < 1  # some tasks fail: scores vary
    assert _scores(tmp_path / "two") == _scores(tmp_path / "one")
    assert len(_scores(tmp_path / "two")) == 24
    # the order of the summary's lists is that of the tasks, not of the workers
    assert json.loads((tmp_path / "two" / "results.json").read_text())["flips"] == \
        json.loads((tmp_path / "one" / "results.json").read_text())["flips"]


def test_a_worker_killed_mid_run_is_replaced_and_the_run_completes(tmp_path, tasks, server):
    expected = evaluate(tasks, EndpointAgent(base_url=server.url, model=server.model),
                        tmp_path / "one", k=2, concurrency=4, workers=1)
    marker = tmp_path / "killed"
    results = evaluate(tasks, _Dying(server, after=6, once=marker), tmp_path / "two", k=2,
                       concurrency=4, workers=2)
    assert marker.exists()  # a worker really died mid-run
    assert results["errored_episodes"] == 0 and results["episodes"] == 16
    assert _same(results) == _same(expected)
    assert _scores(tmp_path / "two") == _scores(tmp_path / "one")


def test_a_worker_that_always_dies_fails_the_run_in_bounded_time(tmp_path, tasks, server):
    start = time.monotonic()
    with pytest.raises(RolloutError, match="worker processes in a row died before "
                                           "finishing an episode"):
        evaluate(tasks, _Dying(server, after=1, once=None), tmp_path, k=2, concurrency=4,
                 workers=2)
    assert time.monotonic() - start < 30
    assert not (tmp_path / "trajectories.jsonl").exists() or \
        not (tmp_path / "trajectories.jsonl").read_text().strip()


def test_an_agent_that_cannot_fork_is_refused_workers(tmp_path, tasks):
    class Local:
        name = "local"

        async def respond(self, messages: Any, tools: Any) -> Any:
            raise AssertionError("never played")

    with pytest.raises(ValueError, match="cannot be played in forked worker processes"):
        evaluate(tasks, Local(), tmp_path, k=1, workers=2)


def test_the_cli_refuses_workers_with_a_local_model(tmp_path, tasks):
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(t.model_dump_json() + "\n" for t in tasks))
    model = tmp_path / "model"
    model.mkdir()
    result = CliRunner().invoke(main, ["eval", "--tasks", str(path), "--model-path", str(model),
                                       "--workers", "2", "-o", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    assert "--workers" in result.output and "--model-path" in result.output
    assert "Traceback" not in result.output and result.exception is not None and \
        isinstance(result.exception, SystemExit)
