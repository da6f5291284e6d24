"""Every example program runs and prints what its README line promises."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str) -> str:
    done = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)  # a tiny model trains on CPU: slow on a busy 2-core box
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_play_episode_shows_oracle_solving_and_random_agent_failing():
    out = run("examples/play_episode.py", "--mode", "gateway", "--seed", "2")
    assert "OracleAgent: rubric score 1.00" in out and "RandomAgent" in out


def test_custom_service_composes_tasks_that_use_it():
    out = run("examples/custom_service.py")
    assert out.count("[") == 3 and "giftcards" in out


def test_rl_group_rewards_script_ranks_complete_rollouts_on_top():
    out = run("rl/group_rewards.py", "--tasks", "2", "--group", "6")
    rows = [line for line in out.splitlines() if "group reward" in line]
    assert len(rows) == 12
    for line in rows:
        complete = line.split("complete ")[1].split()[0] == "1"
        reward = float(line.rsplit(" ", 1)[1])
        assert (reward >= 0.5) == complete, line


def test_trl_grpo_cpu_trains_a_tiny_model_that_calls_our_tools():
    out = run("examples/trl_grpo_cpu.py", "--steps", "2", "--tasks", "2", "--group", "2")
    steps = [line for line in out.splitlines() if line.startswith("step ")]
    assert len(steps) == 2 and "trained 2 GRPO steps on 2 tasks" in out
    calls = [float(line.split("tool calls per rollout ")[1].split(",")[0]) for line in steps]
    assert max(calls) > 0 and "last rollout of task t-" in out
