"""Variety benchmark: do default tasks read alike?

Composes default tasks (``compoenv generate``'s defaults) or reads a task file, masks what
changes between copies of one skeleton (quoted text, emails, numbers, ids, dates, names) and
measures:

- ``near_duplicate_share``: tasks whose masked request shares >= 80 % of its word 3-grams
  (Jaccard) with another task's (target <= 0.25);
- ``distinct_dates``: distinct ``date`` values (target >= 20);
- ``distinct_openings_share``: distinct masked first sentences of the request, over tasks
  (target >= 0.5);
- ``scenarios``, ``domains``: distinct jobs and lines of work; ``distinct_email_bodies`` in
  the solutions.

Run ``python -m bench.variety [--num 400] [--tasks FILE] [--seed S]``; one JSON object on
stdout.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from compoenv.task import Task, load_tasks

TARGETS = {"near_duplicate_share": ("<=", 0.25), "distinct_dates": (">=", 20),
           "distinct_openings_share": (">=", 0.5)}
NEAR = 0.8

_QUOTED = re.compile(r'"[^"]*"')
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_DIGITS = re.compile(r"\S*\d\S*")
_NAME = re.compile(r"(?<=[a-z,;] )(?:[A-Z][\w'&-]+)(?: [A-Z][\w'&-]+)*")
_WORD = re.compile(r"[a-z]+|[QENP]")


def mask(text: str) -> str:
    """The request with what varies between copies of one skeleton masked."""
    text = text.split("Request: ", 1)[-1]
    text = _QUOTED.sub(" Q ", text)
    text = _EMAIL.sub(" E ", text)
    text = _DIGITS.sub(" N ", text)
    text = _NAME.sub("P", text)
    return " ".join(text.split())


def grams(text: str) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.casefold().replace(" q ", " Q ").replace(" e ", " E ")
                          .replace(" n ", " N ").replace(" p ", " P "))
    return {tuple(words[i:i + 3]) for i in range(len(words) - 2)}


def near_duplicates(texts: list[str]) -> list[float]:
    """For each text, the largest Jaccard similarity of its word 3-grams to another's."""
    sets = [grams(mask(t)) for t in texts]
    best = [0.0] * len(sets)
    for i in range(len(sets)):
        a = sets[i]
        for j in range(i + 1, len(sets)):
            b = sets[j]
            if not a or not b:
                continue
            inter = len(a & b)
            if inter == 0:
                continue
            score = inter / (len(a) + len(b) - inter)
            if score > best[i]:
                best[i] = score
            if score > best[j]:
                best[j] = score
    return best


def opening(text: str) -> str:
    request = text.split("Request: ", 1)[-1]
    return mask(re.split(r"(?<=[.!?])\s", request, maxsplit=1)[0])


def measure(tasks: list[Task]) -> dict[str, Any]:
    best = near_duplicates([t.instruction for t in tasks])
    bodies = {c.arguments.get("body") for t in tasks for c in t.solution
              if c.name == "email__send_email"}
    out = {
        "tasks": len(tasks),
        "near_duplicate_share": round(sum(b >= NEAR for b in best) / max(1, len(tasks)), 4),
        "mean_nearest_similarity": round(sum(best) / max(1, len(best)), 4),
        "distinct_dates": len({t.date for t in tasks}),
        "distinct_openings_share": round(len({opening(t.instruction) for t in tasks})
                                         / max(1, len(tasks)), 4),
        "scenarios": len({t.scenario for t in tasks}),
        "domains": len({t.domain for t in tasks}),
        "distinct_email_bodies": len(bodies),
        "guidance": dict(sorted(
            {g: sum(t.guidance == g for t in tasks) for g in {t.guidance for t in tasks}}
            .items())),
    }
    out["meets"] = {k: (out[k] <= v if op == "<=" else out[k] >= v)
                    for k, (op, v) in TARGETS.items()}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.variety", description=__doc__)
    parser.add_argument("--num", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tasks", type=Path, help="measure this task file instead")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    if args.tasks is not None:
        tasks = list(load_tasks(args.tasks))
    else:
        from click.testing import CliRunner

        from compoenv.cli import main as cli

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "tasks.jsonl"
            result = CliRunner().invoke(cli, ["generate", "--num", str(args.num), "--seed",
                                              str(args.seed), "-o", str(path), "--json"])
            if result.exit_code != 0:
                print(result.output, file=sys.stderr)
                return 1
            tasks = list(load_tasks(path))
    out = measure(tasks)
    out["seconds"] = round(time.perf_counter() - start, 1)
    out["targets"] = {k: f"{op} {v}" for k, (op, v) in TARGETS.items()}
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
