"""The environment benchmark runs end to end and reports every figure (no timing thresholds)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIGURES = [
    "env_steps_per_s", "env_step_us_p50", "env_step_us_p99",
    "reset_ms_median", "reset_ms_p90", "reset_compose_ms_median", "reset_compose_walk_ms_median",
    "memory_kb_per_live_env_distinct_tasks", "memory_kb_per_live_env_one_step",
    "rss_kb_per_live_env_distinct_tasks", "rss_kb_per_live_env_one_step",
    "step_over_bare_call_ratio", "step_us", "bare_call_us", "task_file_env_build_ms",
    "task_file_mb",
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
    assert result["exploits"]["direct/oracle"]["rubric_score_mean"] == 1.0
    assert result["exploits"]["gateway/idle"]["rubric_score_mean"] == 0.0
    assert set(result["meets"]) == set(result["targets"])


def test_eval_bench_plays_every_episode_through_a_loopback_endpoint() -> None:
    proc = subprocess.run([sys.executable, "-m", "bench.evaluate", "--quick"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["episodes"] == 40 and result["errored_episodes"] == 0
    assert result["pass_rate"] == 1.0 and result["most_connections_open"] >= 2
    assert {"episodes_per_s", "requests_per_episode", "peak_rss_growth_mb",
            "soak_peak_rss_growth_mb"} <= set(result) and result["soak_episodes"] == 100


def test_library_bench_loads_builds_and_composes_a_tiny_synthetic_corpus(tmp_path: Path) -> None:
    out = tmp_path / "library.json"
    proc = subprocess.run([sys.executable, "-m", "bench.library", "--services", "12",
                           "--seeds", "6", "--out", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert json.loads(out.read_text()) == result
    assert result["corpus"]["services"] == result["services"] == 12
    assert result["tools"] == result["corpus"]["tools"] == 12 * 25
    assert result["start_tools"] > 0 and result["edges_counted_not_built"] > 0
    assert result["seeds"] == 6 and 0 < result["verified_tasks"] <= 6
    assert result["library_over_builtin_per_cpu"] > 0
    assert result["scenario_same_jobs"] is True  # services no scenario uses change no job
    assert set(result["meets"]) == set(result["targets"])
    assert all(isinstance(ok, bool) for ok in result["meets"].values())


def test_the_synthetic_corpus_is_the_same_for_a_seed_and_loads_as_specs(tmp_path: Path) -> None:
    from bench.synthetic import write_corpus
    from compoenv.worldmodel.spec import load_spec

    counts = [write_corpus(tmp_path / name, 9, seed=3) for name in ("a", "b")]
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.json"))
    assert counts[0] == counts[1] and len(files) == 9 and counts[0]["tools"] == 9 * 25
    for rel in files:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes()
        spec = load_spec(tmp_path / "a" / rel)
        assert spec["api"] == rel.parts[0]  # services of one API share it, and name each other
        assert set(spec.get("related", ())) == {p.stem for p in files
                                                if p.parts[0] == rel.parts[0]} - {rel.stem}


def test_variety_bench_counts_near_duplicates_dates_and_openings() -> None:
    from bench.variety import mask, measure, near_duplicates

    base = ('I run AP at Acme Labs. Go with the cheapest hotel in Paris. I need you to book '
            'it for Ana Kim (ana.kim@acme.com) from 2026-03-20 for 2 nights.')
    other = base.replace("Acme Labs", "Quarry Media").replace("Paris", "Rome") \
        .replace("2026-03-20", "2026-04-02").replace("ana.kim@acme.com", "li@q.com")
    different = "Our supplier chases three open bills; pay each one and tell their desk."
    assert mask(base) == mask(other)  # only what varies between copies of one skeleton
    best = near_duplicates([base, other, different])
    assert best[0] == best[1] == 1.0 and best[2] < 0.2
    from compoenv.task import Call, Task

    def task(text: str, date: str) -> Task:
        return Task(instruction=text, services=["hotels"], seed=1, date=date,
                    solution=[Call(name="hotels__search_hotels", arguments={"city": "Rome"})],
                    rubric=[], domain="travel", hops=1)

    out = measure([task(base, "2026-03-16"), task(other, "2026-04-01"),
                   task(different, "2026-04-01")])
    assert out["near_duplicate_share"] == round(2 / 3, 4) and out["distinct_dates"] == 2
    assert out["distinct_openings_share"] == round(2 / 3, 4)
