"""Grader benchmark: does the rubric fail wrong work and pass right work?

Composes default tasks (the scenario jobs ``compoenv generate`` makes, 10 distractors each),
then plays variants of each task's solution (``compoenv.agents.variants``) and counts how many
still pass every required criterion (``binary``):

- wrong work (each should pass <= 1%): one write argument changed to another valid value of
  its kind (``wrong_argument``; dictated wording is counted apart as ``wrong_free_text``),
  one fan-out item dropped, the decoy touched, a collateral write (a record or a service the
  task is not about), one of its own writes undone, a goal task's message worded without
  the facts it must carry (``facts_dropped``), a report that hedges one value with the same
  field of another record (``hedged``) or with a made-up neighbour ("TKT-7735 or maybe
  TKT-7736", ``hedged_or``), a message or document worded "ok" (``placeholder``);
- right work (each should pass 100%): independent calls reordered, extra reads, the report
  reformatted, an honest verbose report, a goal task's messages in other words that keep
  their facts (``reworded``: the wording of a goal-level request is the agent's).

Also: the oracle's pass rate, and the rubric score of a run that makes the reads but none of
the writes and reports the true values (``reads_only_score``, mean; <= 0.25 wanted).

Run ``python -m bench.grader [--quick] [--num N] [--tasks FILE] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from compoenv.agents import variants as v
from compoenv.compose.verify import oracle_message
from compoenv.registry import Registry
from compoenv.reward import Outcome, score_rubric
from compoenv.task import Task, load_tasks

TARGETS = {"wrong": 0.01, "right": 1.0, "reads_only_score": 0.25}


def log(message: str) -> None:
    print(f"[bench.grader] {message}", file=sys.stderr, flush=True)


def compose(num: int, seed: int) -> list[Task]:
    from compoenv.cli.common import composer_config
    from compoenv.compose.parallel import generate_parallel

    config = composer_config(scenarios="all", distractors=10)
    tasks, _ = generate_parallel(num, seed, config, workers=1)
    return tasks


def play(task: Task, p: v.Play, registry: Registry) -> tuple[float, float]:
    """(binary, rubric score) of one play."""
    session = v.session_for(task, registry)
    for call in p.calls:
        session.call(call.name, call.arguments)
    result = score_rubric(task.rubric, Outcome(session, p.message, task.instruction))
    return float(result.passed), result.rubric_score


def reads_only(task: Task, registry: Registry) -> v.Play | None:
    work = set(v.work_of(task, registry))
    if not work:
        return None
    calls = tuple(c for i, c in enumerate(task.solution) if i not in work)
    return v.Play("reads_only", calls, oracle_message(task))


def run(tasks: list[Task], registry: Registry, max_per_task: int = 40) -> dict[str, Any]:
    passed: dict[str, Counter[str]] = defaultdict(Counter)
    examples: dict[str, list[str]] = defaultdict(list)
    oracle = 0
    reads_scores = []
    start = time.perf_counter()
    for n, task in enumerate(tasks):
        if n and n % 50 == 0:
            log(f"{n} tasks, {time.perf_counter() - start:.0f} s")
        binary, _ = play(task, v.Play("oracle", tuple(task.solution), oracle_message(task)),
                         registry)
        oracle += binary == 1.0
        ro = reads_only(task, registry)
        if ro is not None:
            reads_scores.append(play(task, ro, registry)[1])
        plays: list[tuple[str, str, v.Play]] = []
        for p in v.wrong_arguments(task, registry, seed=n)[:max_per_task]:
            plays.append(("wrong", "wrong_argument", p))
        for p in v.wrong_arguments(task, registry, seed=n, free_text=True)[:max_per_task]:
            plays.append(("wrong", "wrong_free_text", p))
        for name, build in v.WRONG.items():
            if name == "wrong_argument":
                continue
            for p in build(task, registry):
                plays.append(("wrong", p.kind, p))
        for name, build in v.RIGHT.items():
            for p in build(task, registry):
                plays.append(("right", p.kind, p))
        for group, kind, p in plays:
            binary, _ = play(task, p, registry)
            passed[kind]["tried"] += 1
            passed[kind]["passed"] += binary == 1.0
            wrong_pass = group == "wrong" and binary == 1.0
            right_fail = group == "right" and binary != 1.0
            if (wrong_pass or right_fail) and len(examples[kind]) < 5:
                examples[kind].append(f"{task.id}: {p.detail}")
    rates = {kind: {"tried": c["tried"], "passed": c["passed"],
                    "pass_rate": round(c["passed"] / c["tried"], 4) if c["tried"] else None}
             for kind, c in sorted(passed.items())}
    wrong_kinds = ["wrong_argument", "wrong_free_text", "fanout_drop", "decoy_touched",
                   "collateral_record", "collateral_service", "undo_own", "facts_dropped", "hedged",
                   "hedged_or", "placeholder"]
    out: dict[str, Any] = {
        "tasks": len(tasks),
        "seconds": round(time.perf_counter() - start, 1),
        "oracle_pass_rate": round(oracle / max(len(tasks), 1), 4),
        "reads_only_score": round(sum(reads_scores) / len(reads_scores), 4)
        if reads_scores else None,
        "reads_only_tasks": len(reads_scores),
        "variants": rates,
        "examples": dict(examples),
    }
    meets = {}
    for kind, rate in rates.items():
        if rate["pass_rate"] is None:
            continue
        if kind in wrong_kinds:
            meets[kind] = rate["pass_rate"] <= TARGETS["wrong"]
        else:
            meets[kind] = rate["pass_rate"] >= TARGETS["right"]
    if out["reads_only_score"] is not None:
        meets["reads_only_score"] = out["reads_only_score"] <= TARGETS["reads_only_score"]
    out["targets"] = {"wrong work passing": "<= 1%", "right work passing": "100%",
                      "reads_only_score": "<= 0.25"}
    out["meets"] = meets
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.grader", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="30 tasks: a smoke run")
    parser.add_argument("--num", type=int, default=300, help="tasks to compose (default 300)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tasks", type=Path, help="grade these tasks instead of composing")
    parser.add_argument("--out", type=Path, help="also write the JSON to this file")
    args = parser.parse_args(argv)
    registry = Registry.default()
    if args.tasks:
        tasks = list(load_tasks(args.tasks))
    else:
        num = 30 if args.quick else args.num
        log(f"composing {num} default tasks")
        tasks = compose(num, args.seed)
    text = json.dumps(run(tasks, registry), indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
