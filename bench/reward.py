"""Reward benchmark: scoring time of hostile final messages, and what exploit agents score.

Run ``python -m bench.reward [--quick] [--out FILE]``: one JSON object on stdout. Scoring
times are the median and worst of repeated ``score_rubric`` calls over tasks with answer
criteria (``time.perf_counter``); exploit scores are means over composed tasks in both modes.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from typing import Any

from compoenv.agents import OracleAgent, RandomAgent
from compoenv.agents.exploits import (
    SPRAYS, IdleAgent, RunOnSprayAgent, SprayAgent, WriteEverythingAgent,
)
from compoenv.answers import MAX_ANSWER_CHARS
from compoenv.compose import Composer, ComposerConfig
from compoenv.compose.verify import _session, oracle_message
from compoenv.env import CompoWorldEnv
from compoenv.reward import Outcome, score_rubric
from compoenv.rollout import run_episode
from compoenv.task import Task

TARGETS = {"score_ms_1mb_reply_max": ("<=", 5.0), "exploit_rubric_score_mean_max": ("<=", 0.05)}


def _replies(task: Task) -> dict[str, str]:
    digits = " ".join(str(i) for i in range(200_000))
    return {
        "1mb_reply": ("Done. " + oracle_message(task) + " ") * 1 + "x" * (1 << 20),
        "numbers_only_at_limit": digits[:MAX_ANSWER_CHARS],
        "lookalike_digits_at_limit": ("１２３４．５６ " * 2000)[:MAX_ANSWER_CHARS],
        "words_at_limit": ("Foo Bar Baz " * 2000)[:MAX_ANSWER_CHARS],
        "oracle_reply": oracle_message(task),
    }


def scoring_times(tasks: list[Task], repeats: int) -> dict[str, dict[str, float]]:
    """Milliseconds to score each kind of reply (whole rubric, answer criteria included)."""
    out: dict[str, list[float]] = {}
    for task in tasks:
        session = _session(task, None)
        for call in task.solution:
            session.call(call.name, call.arguments)
        for name, reply in _replies(task).items():
            outcome = Outcome(session, reply, task.instruction)
            for _ in range(repeats):
                start = time.perf_counter()
                score_rubric(task.rubric, outcome)
                out.setdefault(name, []).append((time.perf_counter() - start) * 1000)
    return {name: {"median_ms": round(statistics.median(v), 3), "max_ms": round(max(v), 3)}
            for name, v in out.items()}


def exploit_scores(tasks: list[Task]) -> dict[str, dict[str, float]]:
    """Mean rubric score, all-required pass and net score of each exploit agent (and the
    oracle)."""
    agents: dict[str, Any] = {"oracle": lambda i: OracleAgent(), "idle": lambda i: IdleAgent(),
                              "random": lambda i: RandomAgent(seed=i),
                              "write_everything": lambda i: WriteEverythingAgent(seed=i),
                              "oracle_without_report": lambda i: OracleAgent(report=False)}
    agents.update({f"spray_{k}": (lambda i, k=k: SprayAgent(k)) for k in SPRAYS})
    agents["spray_run_on"] = lambda i: RunOnSprayAgent(seed=i)
    out = {}
    for mode in ("direct", "gateway"):
        env = CompoWorldEnv(tasks, mode=mode, max_steps=12)
        for name, make in agents.items():
            metas = [run_episode(env, make(i), options={"index": i})["meta"]
                     for i in range(len(tasks))]
            out[f"{mode}/{name}"] = {
                "rubric_score_mean": round(sum(m["rubric_score"] for m in metas) / len(metas),
                                           4),
                "passed_mean": round(sum(m["score"] for m in metas) / len(metas), 4),
                "net_score_mean": round(sum(m["net_score"] for m in metas) / len(metas), 4)}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer tasks and repeats")
    parser.add_argument("--out", default=None, help="also write the JSON here")
    args = parser.parse_args(argv)
    n, repeats = (40, 3) if args.quick else (300, 5)
    print(f"composing {n} tasks ...", file=sys.stderr)
    tasks = list(Composer(config=ComposerConfig(min_hops=2, max_hops=5, distractors=3))
                 .generate(n, seed=2026))
    with_answers = [t for t in tasks if t.answer][:20]
    times = scoring_times(with_answers, repeats)
    exploits = exploit_scores(tasks)
    worst = max(v["rubric_score_mean"] for k, v in exploits.items()
                if not k.endswith(("/oracle", "/oracle_without_report")))
    result = {
        "tasks": n, "tasks_with_answers_timed": len(with_answers), "scoring": times,
        "exploits": exploits, "score_ms_1mb_reply_max": times["1mb_reply"]["max_ms"],
        "exploit_rubric_score_mean_max": worst,
        "targets": {k: f"{op} {v}" for k, (op, v) in TARGETS.items()},
        "python": platform.python_version(), "platform": platform.platform(),
        "config": {"quick": args.quick, "repeats": repeats},
    }
    result["meets"] = {k: (result[k] <= v if op == "<=" else result[k] >= v)
                       for k, (op, v) in TARGETS.items()}
    text = json.dumps(result, indent=2)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
