"""The environment benchmark runs end to end and reports every figure (no timing thresholds)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIGURES = [
    "env_steps_per_s", "env_step_us_p50", "env_step_us_p99",
    "reset_ms_median", "reset_ms_p90", "reset_compose_ms_median",
    "memory_kb_per_live_env_distinct_tasks", "memory_kb_per_live_env_one_step",
    "rss_kb_per_live_env_distinct_tasks", "rss_kb_per_live_env_one_step",
    "step_over_bare_call_ratio", "step_us", "bare_call_us",
]


def test_quick_bench_prints_one_json_object_with_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, "-m", "bench.env", "--quick", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)  # stdout holds the JSON object and nothing else
    assert json.loads(out.read_text()) == result
    for key in FIGURES:
        assert isinstance(result[key], (int, float)) and result[key] > 0, (key, result.get(key))
    assert set(result["targets"]) == set(result["meets"])
    assert all(isinstance(ok, bool) for ok in result["meets"].values())
    assert result["python"] and result["platform"]
    assert result["config"]["quick"] is True and result["config"]["envs"] == 1_000


def test_bench_lists_the_env_benchmark() -> None:
    proc = subprocess.run([sys.executable, "-m", "bench"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 0 and "bench.env" in proc.stdout


def test_reward_bench_times_hostile_replies_and_scores_exploit_agents(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "bench.reward", "--quick"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert set(result["scoring"]) >= {"1mb_reply", "numbers_only_at_limit",
                                      "lookalike_digits_at_limit", "oracle_reply"}
    assert result["exploits"]["direct/oracle"]["rubric_mean"] == 1.0
    assert result["exploits"]["gateway/idle"]["rubric_mean"] == 0.0
    assert set(result["meets"]) == set(result["targets"])


def test_eval_bench_plays_every_episode_through_a_loopback_endpoint() -> None:
    proc = subprocess.run([sys.executable, "-m", "bench.evaluate", "--quick"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["episodes"] == 40 and result["errored_episodes"] == 0
    assert result["pass_rate"] == 1.0 and result["most_requests_in_flight"] >= 2
    assert {"episodes_per_s", "requests_per_episode", "peak_rss_growth_mb",
            "soak_peak_rss_growth_mb"} <= set(result) and result["soak_episodes"] == 100
