"""World coherence benchmark: does the simulated world contradict itself in oracle replays?

Composes default (scenario) and free-walk tasks, replays each task's solution as the oracle
does (a fresh session on the task's World, its recorded answers first), and reads every
answer of a simulated service:

* ``disagreeing_views``: records shown again (same id, or same name within their kind) whose
  fields differ from an earlier view, where no write in between touched them;
* ``created_before_today``: records a write made whose creation date lies before today;
* ``invariant_violations``: records breaking an invariant (``worldmodel.consistency``), by
  kind of invariant;
* ``oracle_pass``: the share of replays scoring 1.0.

Run ``python -m bench.world [--tasks N] [--out FILE]``: one JSON object on stdout
(``BENCH_WORLD_SHOW=1`` also logs each disagreement and violation on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from typing import Any

from compoenv.compose import ComposerConfig
from compoenv.compose.parallel import worker_composer
from compoenv.compose.verify import oracle_message, replay_simulator
from compoenv.reward import Outcome, score_rubric
from compoenv.session import Session
from compoenv.task import Task
from compoenv.world import World
from compoenv.worldmodel.base import SimState
from compoenv.worldmodel.consistency import (Recall, created_before, creates, kind_of, review,
                                             shown_records, violations)
from compoenv.worldmodel.offline import collection_of

TARGETS = {"disagreeing_views": ("<=", 0), "created_before_today": ("<=", 0)}


def log(message: str) -> None:
    print(f"[bench.world] {message}", file=sys.stderr, flush=True)


def audit(task: Task, tally: Counter[str]) -> bool:
    """Replay ``task``'s solution, counting what the world said; True when it scores 1.0."""
    world = World.get(task.seed, task.today())
    session = Session.for_names(task.services + task.distractors, world, None,
                                replay_simulator(task))
    seen: dict[str, Recall] = {}  # per service: what was shown of each record
    for call in task.solution:
        result = session.call(call.name, call.arguments)
        spec = session.spec(call.name)
        if spec is None or not result.get("success"):
            continue
        service_name = call.name.split("__", 1)[0]
        service = session.service(service_name)
        simulated = spec.simulated or isinstance(service.state, SimState) \
            or "simulated" in result
        data = result.get("data")
        tally["answers"] += 1
        tally["simulated_answers"] += simulated
        write = not spec.read_only
        kind = kind_of(collection_of(spec.name, spec.returns))
        recall = seen.setdefault(service_name, {})
        new = write and creates(recall, spec.name, data, kind)  # a create, a booking, a payment
        if new:
            made = created_before(data, world.today)
            tally["created_records"] += isinstance(data, dict)
            if made:
                tally["created_before_today"] += 1
                tally["created_before_today_simulated"] += simulated
        for problem in violations(data, world.today, world, new, call.arguments):
            tally["invariant_violations"] += 1
            tally["invariant_violations_simulated"] += simulated
            tally[f"violation:{problem.partition(':')[0]}"] += 1
            if os.environ.get("BENCH_WORLD_SHOW"):
                log(f"{call.name}: {problem}")
        tally["records_shown"] += len(shown_records(data, kind))
        if write and not isinstance(service.state, SimState):
            # a typed service's write may change any record (its state is the truth): views
            # of its records start again after it
            recall.clear()
            continue
        again, differ = review(recall, data, kind, write)
        tally["records_shown_again"] += again
        tally["disagreeing_views"] += len(differ)
        tally["disagreeing_views_simulated"] += len(differ) if simulated else 0
        for line in differ if os.environ.get("BENCH_WORLD_SHOW") else ():
            log(f"{call.name}: {line}")
    score = score_rubric(task.rubric, Outcome(session, oracle_message(task),
                                              task.instruction)).rubric_score
    return score >= 1.0 - 1e-9


def run(n: int) -> dict[str, Any]:
    from compoenv.scenarios import ScenarioRegistry

    tally: Counter[str] = Counter()
    passed = total = 0
    start = time.perf_counter()
    configs = {"default": ComposerConfig(scenarios=tuple(ScenarioRegistry.default().names())),
               "free_walk": ComposerConfig()}
    for name, config in configs.items():
        composer = worker_composer(config)
        for task in composer.generate(n // 2, seed=7):
            total += 1
            passed += audit(task, tally)
        log(f"{name}: {total} tasks replayed")
    shown_again = tally["records_shown_again"]
    return {
        "tasks": total,
        "oracle_pass": round(passed / max(total, 1), 4),
        "answers": tally["answers"],
        "simulated_answers": tally["simulated_answers"],
        "records_shown": tally["records_shown"],
        "records_shown_again": shown_again,
        "disagreeing_views": tally["disagreeing_views"],
        "disagreeing_views_simulated": tally["disagreeing_views_simulated"],
        "disagreeing_share": round(tally["disagreeing_views"] / max(shown_again, 1), 4),
        "created_records": tally["created_records"],
        "created_before_today": tally["created_before_today"],
        "created_before_today_simulated": tally["created_before_today_simulated"],
        "invariant_violations": tally["invariant_violations"],
        "invariant_violations_simulated": tally["invariant_violations_simulated"],
        "violations_by_kind": {k.split(":", 1)[1]: v for k, v in sorted(tally.items())
                               if k.startswith("violation:")},
        "seconds": round(time.perf_counter() - start, 1),
        "targets": {k: f"{op} {v}" for k, (op, v) in TARGETS.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.world", description=__doc__)
    parser.add_argument("--tasks", type=int, default=1000,
                        help="tasks to replay, half default, half free walk")
    parser.add_argument("--out", help="also write the JSON here")
    args = parser.parse_args(argv)
    result = run(args.tasks)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
