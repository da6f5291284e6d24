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

Run ``python -m bench.world [--tasks N] [--out FILE]``: one JSON object on stdout.
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
from compoenv.worldmodel.consistency import (Recall, created_before, forget, identity, kind_of,
                                             makes_new, remember, remembered, violations)
from compoenv.worldmodel.offline import collection_of

TARGETS = {"disagreeing_views": ("<=", 0), "created_before_today": ("<=", 0)}


def log(message: str) -> None:
    print(f"[bench.world] {message}", file=sys.stderr, flush=True)


def _records(node: Any, kind: str, out: list[tuple[str, dict[str, Any]]]) -> None:
    """Every record in an answer with the kind it is of."""
    if isinstance(node, list):
        for item in node:
            _records(item, kind, out)
    elif isinstance(node, dict):
        out.append((kind, node))
        for key, value in node.items():
            if isinstance(value, (dict, list)):
                sub = kind if key in ("results", "items", "data", "records", "entries",
                                      "list", "matches", "hits", "rows") else kind_of(key)
                _records(value, sub, out)


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
        new = write and makes_new(spec.name)  # a create, a booking, a payment
        if new:
            tally["writes"] += 1
            made = created_before(data, world.today)
            tally["created_records"] += isinstance(data, dict)
            if made:
                tally["created_before_today"] += 1
                tally["created_before_today_simulated"] += simulated
        for problem in violations(data, world.today, world, success_write=new):
            tally["invariant_violations"] += 1
            tally["invariant_violations_simulated"] += simulated
            tally[f"violation:{_kind_of_problem(problem)}"] += 1
        found: list[tuple[str, dict[str, Any]]] = []
        _records(data, kind_of(collection_of(spec.name, spec.returns)), found)
        recall = seen.setdefault(service_name, {})
        touched = {str(v) for v in call.arguments.values() if isinstance(v, (str, int))} \
            if write else set()
        for kind, record in found:
            keys = identity(record, kind)
            if not keys:
                continue
            tally["records_shown"] += 1
            earlier = remembered(recall, keys)
            changed = write and (touched & {k.rpartition("\x1f")[2] for k in keys})
            if earlier is not None and not write:
                tally["records_shown_again"] += 1
                differ = [f for f, v in record.items() if f in earlier[1]
                          and earlier[1][f] != v and not isinstance(v, (dict, list))]
                if differ:
                    if os.environ.get("BENCH_WORLD_SHOW"):
                        log(f"{call.name}: {[(f, earlier[1][f], record[f]) for f in differ]}")
                    tally["disagreeing_views"] += 1
                    tally["disagreeing_views_simulated"] += simulated
            if changed or write:  # a write's view is the record from now on
                forget(recall, *[k.rpartition("\x1f")[2] for k in keys[:1]])
            remember(recall, keys, record)
    score = score_rubric(task.rubric, Outcome(session, oracle_message(task),
                                              task.instruction)).score
    return score >= 1.0 - 1e-9


def _kind_of_problem(problem: str) -> str:
    for word, name in (("status", "failed_status"), ("email", "email_domain"),
                       ("after today", "since_future"), ("words", "word_count"),
                       ("characters", "char_count"), ("holds", "count_vs_list"),
                       (" x ", "quantity_price_value"), ("quarter", "fee_share")):
        if word in problem:
            return name
    return "order" if ">" in problem else "other"


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
