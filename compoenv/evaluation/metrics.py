"""What an evaluation run measured: pass rates, pass@k and pass^k, breakdowns, tool-call
errors, tokens, time, and the noise floor of the score.

Estimators, over a task played ``n`` times of which ``c`` passed (score 1: every required
criterion passed):

- pass@k = 1 - C(n - c, k) / C(n, k): the chance that at least one of k episodes drawn
  without replacement from the n passes (the unbiased estimator of Chen et al., 2021);
- pass^k = C(c, k) / C(n, k): the chance that all k pass (tau-bench's reliability measure).

Both are averaged over tasks, for k = 1 .. n (pass@1 = pass^1 = the pass rate).

The noise floor is the spread of the mean score over the k repeats: repeat r is every
task's episode ``rollout_idx == r``; its standard deviation across repeats says how far two
runs of the same model may differ by chance, so a difference smaller than about twice it
is not a difference.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter, defaultdict
from typing import Any, Iterable, Mapping

__all__ = ["pass_at_k", "pass_hat_k", "summarize"]


def pass_at_k(n: int, c: int, k: int) -> float:
    """1 - C(n-c, k) / C(n, k): at least one of k drawn episodes passes."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """C(c, k) / C(n, k): all of k drawn episodes pass."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    return math.comb(c, k) / math.comb(n, k)


def _rates(records: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(records)
    return {"episodes": n,
            "pass_rate": round(sum(r["meta"]["score"] for r in records) / n, 4) if n else 0.0,
            "mean_score": round(sum(r["meta"]["rubric_score"] for r in records) / n, 4)
            if n else 0.0}


def _tool_errors(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    calls, by_code = 0, Counter()
    for record in records:
        for message in record["messages"]:
            if message.get("role") != "tool":
                continue
            calls += 1
            try:
                envelope = json.loads(message["content"])
            except (ValueError, TypeError):
                continue
            if isinstance(envelope, dict) and envelope.get("success") is False:
                code = (envelope.get("error") or {}).get("code")
                by_code[str(code)] += 1
    errors = sum(by_code.values())
    return {"tool_calls": calls, "tool_errors": errors,
            "tool_error_rate": round(errors / calls, 4) if calls else 0.0,
            "tool_error_rate_by_code": {code: round(count / calls, 4)
                                        for code, count in sorted(by_code.items())}}


def summarize(records: Iterable[dict[str, Any]], tasks: Mapping[str, Any], k: int
              ) -> dict[str, Any]:
    """The results of a run from its records (trajectories and failure records) and the
    tasks they played (by id: the breakdowns read their capabilities, domain and hops).

    Failure records (an endpoint that never answered) count as failed episodes and are
    counted apart in ``errored_episodes``.
    """
    records = list(records)
    played = [r for r in records if "error" not in r]
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        by_task[record["meta"]["task_id"]].append(record)
    complete = {tid: rs for tid, rs in by_task.items() if len(rs) >= k}
    curves = {"pass@k": {}, "pass^k": {}}
    for j in range(1, k + 1):
        at = [pass_at_k(len(rs), sum(int(r["meta"]["score"]) for r in rs), j)
              for rs in complete.values()]
        hat = [pass_hat_k(len(rs), sum(int(r["meta"]["score"]) for r in rs), j)
               for rs in complete.values()]
        curves["pass@k"][str(j)] = round(statistics.fmean(at), 4) if at else 0.0
        curves["pass^k"][str(j)] = round(statistics.fmean(hat), 4) if hat else 0.0
    repeats = defaultdict(list)
    for record in records:
        repeats[record["meta"]["rollout_idx"]].append(record["meta"]["rubric_score"])
    means = [round(statistics.fmean(v), 4) for _, v in sorted(repeats.items())]
    breakdowns: dict[str, dict[str, Any]] = {}
    for name, keys in (("capability", lambda t: t.get("capabilities") or ["none"]),
                       ("domain", lambda t: [t.get("domain") or "none"]),
                       ("hops", lambda t: [str(t.get("hops"))]),
                       ("mode", None)):
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for record in records:
            task = tasks.get(record["meta"]["task_id"], {})
            labels = ([record["meta"].get("discover_mode") or "error"] if keys is None
                      else keys(task))
            for label in labels:
                groups[label].append(record)
        breakdowns[name] = {label: _rates(rs) for label, rs in sorted(groups.items())}
    prompt = sum(r["meta"].get("prompt_tokens", 0) for r in records)
    completion = sum(r["meta"].get("completion_tokens", 0) for r in records)
    seconds = [r["meta"].get("seconds", 0.0) for r in records]
    return {
        **_rates(records),
        "tasks": len(by_task), "k": k, "errored_episodes": len(records) - len(played),
        "pass_at_k": curves["pass@k"], "pass_hat_k": curves["pass^k"],
        "noise_floor": {"repeat_mean_scores": means,
                        "std": round(statistics.pstdev(means), 4) if len(means) > 1 else 0.0,
                        "spread": round(max(means) - min(means), 4) if means else 0.0},
        "breakdowns": breakdowns,
        **_tool_errors(played),
        "calls_per_episode": round(statistics.fmean(r["meta"]["n_tool_calls"] for r in played),
                                   2) if played else 0.0,
        "tokens": {"prompt": prompt, "completion": completion,
                   "per_episode": round((prompt + completion) / len(records), 1)
                   if records else 0.0},
        "episode_seconds": {"mean": round(statistics.fmean(seconds), 3) if seconds else 0.0,
                            "max": round(max(seconds), 3) if seconds else 0.0},
    }
