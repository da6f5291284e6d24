"""Episode runner: plays an agent in an env and returns the trajectory (the SFT format)."""

from __future__ import annotations

from typing import Any, Iterable

from compoenv.agents import Agent
from compoenv.env import CompoWorldEnv

__all__ = ["run_episode", "run_episodes"]


def run_episode(env: CompoWorldEnv, agent: Agent, *, seed: int | None = None,
                options: dict[str, Any] | None = None, rollout_idx: int = 0,
                source: str = "compoenv") -> dict[str, Any]:
    """One episode, start to finish.

    Returns:
        A trajectory record: ``tools``, ``messages``, ``meta`` and ``source`` (DESIGN.md format).
    """
    obs, info = env.reset(seed=seed, options=options)
    agent.reset(obs, info)
    terminated = truncated = False
    while not (terminated or truncated):
        obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
    task = info["task"]
    messages = list(info["messages"])
    n_calls = sum(len(m.get("tool_calls", ())) for m in messages if m["role"] == "assistant")
    return {
        "tools": info["tools"],
        "messages": messages,
        "meta": {
            "task_id": task["id"], "rollout_idx": rollout_idx,
            "rubric_score": info["score"], "score": info["binary"],
            "n_tool_calls": n_calls, "n_steps": info["step"], "services": task["services"],
            "domain": task["domain"], "capabilities": task["capabilities"],
            "finish_reason": "stop" if terminated else "max_steps",
            "rubric": [{"id": c["id"], "passed": c["passed"]} for c in info["rubric"]],
        },
        "source": source,
    }


def run_episodes(env: CompoWorldEnv, agent: Agent, indices: Iterable[int],
                 source: str = "compoenv") -> list[dict[str, Any]]:
    """One episode per task index of ``env.tasks``."""
    return [run_episode(env, agent, options={"index": i}, source=source) for i in indices]
