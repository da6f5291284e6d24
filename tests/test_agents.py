"""Agents and the episode runner: oracle, random baseline, trajectory format."""

from __future__ import annotations

import json

from compoenv.agents import OracleAgent, RandomAgent
from compoenv.env import CompoWorldEnv
from compoenv.rollout import run_episode, run_episodes


def test_oracle_trajectory_has_the_sft_format(task):
    env = CompoWorldEnv([task])
    traj = run_episode(env, OracleAgent(), source="oracle")
    assert set(traj) == {"tools", "messages", "meta", "source"}
    meta = traj["meta"]
    assert meta["task_id"] == task.id and meta["rubric_score"] == 1.0 and meta["score"] == 1.0
    assert meta["n_tool_calls"] == len(task.solution) and meta["finish_reason"] == "stop"
    roles = [m["role"] for m in traj["messages"]]
    assert roles[:2] == ["system", "user"] and roles[-1] == "assistant"
    calls = [c for m in traj["messages"] if m["role"] == "assistant"
             for c in m.get("tool_calls", [])]
    tool_ids = [m["tool_call_id"] for m in traj["messages"] if m["role"] == "tool"]
    assert [c["id"] for c in calls] == tool_ids
    assert all(isinstance(c["function"]["arguments"], str) for c in calls)
    json.dumps(traj)  # JSON-serialisable as is


def test_oracle_in_gateway_mode_calls_through_call_tool(task):
    env = CompoWorldEnv([task], mode="gateway")
    traj = run_episode(env, OracleAgent())
    names = {c["function"]["name"] for m in traj["messages"] if m["role"] == "assistant"
             for c in m.get("tool_calls", [])}
    assert names == {"call_tool"} and traj["meta"]["rubric_score"] == 1.0


def test_random_agent_is_seeded_and_scores_below_the_oracle(tasks50):
    env = CompoWorldEnv(tasks50[:10], max_steps=8)
    a = run_episodes(env, RandomAgent(seed=1), range(10))
    b = run_episodes(env, RandomAgent(seed=1), range(10))
    assert [t["messages"] for t in a] == [t["messages"] for t in b]
    assert sum(t["meta"]["score"] for t in a) < 10
