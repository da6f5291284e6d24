"""One vocabulary of scores: rubric_score, passed, net_score and reward mean the same thing in
the env's info, RubricResult, trajectories (whose published meta keeps score = the pass),
exports and eval results."""

from __future__ import annotations

import pytest

from compoenv.agents import OracleAgent
from compoenv.agents.exploits import IdleAgent
from compoenv.env import CompoWorldEnv
from compoenv.evaluation.metrics import summarize
from compoenv.rollout import run_episode
from compoenv.trajectory import Trajectory


def _partial(tasks50):
    """A task and an agent that does part of its work: the rubric score and the pass differ."""
    for task in tasks50:
        if task.answer and any(c.kind == "state" for c in task.rubric):
            return task, OracleAgent(report=False)
    raise AssertionError("no task with writes and answers")


@pytest.mark.parametrize("reward", ["rubric", "binary"])
def test_info_meta_and_results_share_one_vocabulary(tasks50, reward):
    task, partial = _partial(tasks50)
    env = CompoWorldEnv([task], reward=reward)
    records = [run_episode(env, agent, rollout_idx=i)
               for i, agent in enumerate([OracleAgent(), partial, IdleAgent()])]
    infos = []
    for agent in (OracleAgent(), partial, IdleAgent()):
        obs, info = env.reset()
        agent.reset(obs, info)
        while True:
            obs, step_reward, term, trunc, info = env.step(agent.act(obs, info))
            if term or trunc:
                break
        assert "score" not in info and "binary" not in info  # one name for each thing
        assert isinstance(info["passed"], bool)
        assert info["reward"] == step_reward == (
            info["rubric_score"] if reward == "rubric" else float(info["passed"]))
        infos.append(info)
    oracle, done_part, idle = infos
    assert (oracle["rubric_score"], oracle["passed"], oracle["net_score"]) == (1.0, True, 1.0)
    assert 0 < done_part["rubric_score"] < 1 and done_part["passed"] is False
    assert (idle["rubric_score"], idle["passed"], idle["reward"]) == (0.0, False, 0.0)
    for record, info in zip(records, infos):
        meta = record["meta"]  # the published format: score is the pass, as 0 or 1
        assert meta["rubric_score"] == info["rubric_score"]
        assert meta["score"] == float(info["passed"]) and meta["net_score"] == info["net_score"]
        assert Trajectory.model_validate(record).passed is info["passed"]
    results = summarize(records, {task.id: task.model_dump(mode="json")}, k=3)
    assert results["pass_rate"] == pytest.approx(1 / 3, abs=1e-4)
    assert results["mean_rubric_score"] == pytest.approx(
        sum(i["rubric_score"] for i in infos) / 3, abs=1e-4)
    assert "mean_score" not in results
