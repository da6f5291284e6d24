"""Rollout fan-out: processes and Ray give exactly the serial records, in task order."""

from __future__ import annotations

from typing import Any

import pytest

from compoenv.agents import OracleAgent, RandomAgent
from compoenv.rollout import AgentFactory, RolloutError, RolloutStats, run_rollouts
from compoenv.task import Task

RANDOM = AgentFactory(RandomAgent, {"stop_prob": 0.2}, seed=7)


class CrashingAgent:
    """Raises on its second action: an agent bug, not a bad action."""

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        self.turns = 0

    def act(self, observation: str, info: dict[str, Any]) -> str:
        self.turns += 1
        if self.turns == 2:
            raise KeyError("no plan for this turn")
        return '<tool_call>{"name": "nowhere__nothing", "arguments": {}}</tool_call>'


@pytest.fixture(scope="module")
def tasks(tasks50: list[Task]) -> list[Task]:
    return tasks50[:6]


@pytest.fixture(scope="module")
def serial(tasks: list[Task]) -> list[dict[str, Any]]:
    return run_rollouts(tasks, RANDOM, rollouts_per_task=2, env_kwargs={"mode": "gateway"})


def test_serial_records_follow_task_order_with_rollout_indices(tasks, serial):
    assert [r["meta"]["task_id"] for r in serial] == [t.id for t in tasks for _ in range(2)]
    assert [r["meta"]["rollout_idx"] for r in serial] == [0, 1] * len(tasks)
    # each episode's agent is seeded by its index, so a task's two rollouts differ
    assert any(a["messages"] != b["messages"] for a, b in zip(serial[::2], serial[1::2]))


def test_process_fan_out_equals_serial(tasks, serial):
    fanned = run_rollouts(tasks, RANDOM, rollouts_per_task=2, env_kwargs={"mode": "gateway"},
                          workers=2, chunk=1)
    assert fanned == serial


def test_ray_fan_out_equals_serial(tasks, serial):
    pytest.importorskip("ray")
    done: list[int] = []
    fanned = run_rollouts(tasks, RANDOM, rollouts_per_task=2, env_kwargs={"mode": "gateway"},
                          workers=2, ray_address="local", chunk=2, progress=done.append)
    assert fanned == serial
    assert done[-1] == len(serial) and done == sorted(done)


def test_the_default_agent_is_the_oracle_and_it_passes(tasks):
    records = run_rollouts(tasks[:3], env_kwargs={"mode": "direct"}, source="oracle")
    assert [r["meta"]["score"] for r in records] == [1.0, 1.0, 1.0]
    assert {r["source"] for r in records} == {"oracle"}


def test_agent_factory_seeds_each_episode_from_its_index():
    agent = RANDOM(3)
    assert isinstance(agent, RandomAgent) and agent.stop_prob == 0.2
    assert agent.rng.random() == RandomAgent(seed=10).rng.random()
    assert isinstance(AgentFactory()(0), OracleAgent)
    with pytest.raises(TypeError, match="OracleAgent takes no 'seed' argument"):
        AgentFactory(OracleAgent, seed=1)(0)


def test_an_agent_that_raises_is_reported_with_its_episode_and_task_when_strict(tasks):
    with pytest.raises(RolloutError, match=rf"episode 0 \(task {tasks[0].id}, rollout 0\) "
                                           r"failed: KeyError: 'no plan for this turn'"):
        run_rollouts(tasks[:2], AgentFactory(CrashingAgent), strict=True)


def test_an_agent_that_raises_becomes_a_failed_episode_record_in_its_place(tasks, serial):
    class SecondCrashes:  # the second episode's agent raises, the others play as in `serial`
        def __call__(self, episode: int) -> Any:
            return CrashingAgent() if episode == 1 else RANDOM(episode)

    records = run_rollouts(tasks[:2], SecondCrashes(), rollouts_per_task=2,
                           env_kwargs={"mode": "gateway"})
    assert records[:1] + records[2:] == serial[:1] + serial[2:4]
    failed = records[1]
    assert records.failures == [failed] and records.trajectories == serial[:1] + serial[2:4]
    assert failed["meta"] == {
        "task_id": tasks[0].id, "rollout_idx": 1, "rubric_score": 0.0, "score": 0.0,
        "net_score": 0.0, "n_tool_calls": 0, "n_real_tool_calls": 0, "n_steps": 0,
        "services": tasks[0].services,
        "domain": tasks[0].domain, "capabilities": tasks[0].capabilities,
        "finish_reason": "error", "rubric": []}
    error = failed["error"]
    assert (error["type"], error["message"], error["attempts"]) == (
        "KeyError", "'no plan for this turn'", 1)  # an agent bug is not retried
    assert error["traceback"].endswith("KeyError: 'no plan for this turn'\n")
    assert (failed["tools"], failed["messages"], failed["source"]) == ([], [], "compoenv")
    assert records.stats == RolloutStats(episodes=4, finished=3, failed=1)


@pytest.mark.parametrize("kwargs, message", [
    ({"rollouts_per_task": 0}, "rollouts_per_task >= 1"),
    ({"workers": 0}, "workers >= 1"),
    ({"chunk": 0}, "chunk >= 1"),
    ({"retries": -1}, "retries >= 0"),
    ({"env_kwargs": {"tasks": []}}, "env_kwargs must not hold 'tasks'"),
])
def test_bad_arguments_are_rejected_with_the_reason(tasks, kwargs, message):
    with pytest.raises(ValueError, match=message):
        run_rollouts(tasks, **kwargs)


def test_no_tasks_no_records():
    records = run_rollouts([], workers=4)
    assert records == [] and records.stats == RolloutStats()


@pytest.mark.parametrize("mode", ["direct", "gateway"])
def test_records_carry_the_published_meta_fields(tasks, mode):
    """The fields the published CompoWorld sample's loader reads, in both modes."""
    from compoenv.env import CompoWorldEnv
    from compoenv.rollout import run_episode
    from compoenv.trajectory import Trajectory

    env = CompoWorldEnv(tasks[:1], mode=mode)
    record = run_episode(env, OracleAgent(), options={"index": 0})
    Trajectory.model_validate(record)
    meta = record["meta"]
    assert {"task_id", "rollout_idx", "rubric_score", "score", "net_score", "n_tool_calls",
            "n_real_tool_calls", "n_steps", "discover_mode", "finish_reason", "services",
            "domain", "capabilities"} <= set(meta)
    assert meta["discover_mode"] == mode
    assert meta["n_real_tool_calls"] == len(tasks[0].solution) <= meta["n_tool_calls"]
