"""What an evaluation run measured: pass rates, pass@k and pass^k, breakdowns, tool-call
errors, tokens, time, and the noise floor of the rubric score.

Estimators, over a task played ``n`` times of which ``c`` passed (every required criterion
passed: ``meta.score == 1``):

- pass@k = 1 - C(n - c, k) / C(n, k): the chance that at least one of k episodes drawn
  without replacement from the n passes (the unbiased estimator of Chen et al., 2021);
- pass^k = C(c, k) / C(n, k): the chance that all k pass (tau-bench's reliability measure).

Both are averaged over tasks, for k = 1 .. n (pass@1 = pass^1 = the pass rate).

``pass_rate`` is the share of episodes that passed, ``mean_rubric_score`` their mean rubric
score (the vocabulary of docs/rubric.md "Scores").

The noise floor is the spread of the mean rubric score over the k repeats: repeat r is every
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


class _Rate:
    """Episodes, passes and the score sum of a group of episodes."""

    __slots__ = ("episodes", "passes", "rubric_score")

    def __init__(self) -> None:
        self.episodes, self.passes, self.rubric_score = 0, 0, 0.0

    def add(self, meta: Mapping[str, Any]) -> None:
        self.episodes += 1
        self.passes += int(meta["score"])  # the published format's all-required pass, 0/1
        self.rubric_score += meta["rubric_score"]

    def view(self) -> dict[str, Any]:
        n = self.episodes
        return {"episodes": n, "pass_rate": round(self.passes / n, 4) if n else 0.0,
                "mean_rubric_score": round(self.rubric_score / n, 4) if n else 0.0}


def _error_codes(record: Mapping[str, Any]) -> tuple[int, list[str]]:
    """(tool results, the codes of those that are error envelopes) of one episode."""
    calls, codes = 0, []
    for message in record["messages"]:
        if message.get("role") != "tool":
            continue
        calls += 1
        try:
            envelope = json.loads(message["content"])
        except (ValueError, TypeError):
            continue
        if isinstance(envelope, dict) and envelope.get("success") is False:
            codes.append(str((envelope.get("error") or {}).get("code")))
    return calls, codes


def summarize(records: Iterable[dict[str, Any]], tasks: Mapping[str, Any], k: int
              ) -> dict[str, Any]:
    """The results of a run from its records (trajectories and failure records, in any
    order, read once: a stream of any length) and the tasks they played (by id: the
    breakdowns read their capabilities, domain and hops).

    Failure records (an endpoint that never answered) count as failed episodes and are
    counted apart in ``errored_episodes``.
    """
    overall = _Rate()
    per_task: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # episodes, passes
    repeats: dict[int, _Rate] = defaultdict(_Rate)
    groups: dict[str, dict[str, _Rate]] = {name: defaultdict(_Rate) for name in
                                           ("capability", "domain", "hops", "mode")}
    errored = calls = played = tool_calls = 0
    codes: Counter[str] = Counter()
    prompt = completion = 0
    seconds_sum, seconds_max = 0.0, 0.0
    for record in records:
        meta = record["meta"]
        overall.add(meta)
        counts = per_task[meta["task_id"]]
        counts[0], counts[1] = counts[0] + 1, counts[1] + int(meta["score"])
        repeats[meta["rollout_idx"]].add(meta)
        task = tasks.get(meta["task_id"], {})
        for label in task.get("capabilities") or ["none"]:
            groups["capability"][label].add(meta)
        groups["domain"][task.get("domain") or "none"].add(meta)
        groups["hops"][str(task.get("hops"))].add(meta)
        groups["mode"][meta.get("discover_mode") or "error"].add(meta)
        prompt += meta.get("prompt_tokens", 0)
        completion += meta.get("completion_tokens", 0)
        seconds = meta.get("seconds", 0.0)
        seconds_sum, seconds_max = seconds_sum + seconds, max(seconds_max, seconds)
        if "error" in record:
            errored += 1
            continue
        played += 1
        calls += meta["n_tool_calls"]
        results, failed = _error_codes(record)
        tool_calls += results
        codes.update(failed)
    complete = [counts for counts in per_task.values() if counts[0] >= k]
    curves: dict[str, dict[str, float]] = {"pass@k": {}, "pass^k": {}}
    for j in range(1, k + 1):
        at = [pass_at_k(n, c, j) for n, c in complete]
        hat = [pass_hat_k(n, c, j) for n, c in complete]
        curves["pass@k"][str(j)] = round(statistics.fmean(at), 4) if at else 0.0
        curves["pass^k"][str(j)] = round(statistics.fmean(hat), 4) if hat else 0.0
    means = [rate.view()["mean_rubric_score"] for _, rate in sorted(repeats.items())]
    episodes = overall.episodes
    errors = sum(codes.values())
    return {
        **overall.view(),
        "tasks": len(per_task), "k": k, "errored_episodes": errored,
        "pass_at_k": curves["pass@k"], "pass_hat_k": curves["pass^k"],
        "noise_floor": {"repeat_mean_rubric_scores": means,
                        "std": round(statistics.pstdev(means), 4) if len(means) > 1 else 0.0,
                        "spread": round(max(means) - min(means), 4) if means else 0.0},
        "breakdowns": {name: {label: rate.view() for label, rate in sorted(group.items())}
                       for name, group in groups.items()},
        "tool_calls": tool_calls, "tool_errors": errors,
        "tool_error_rate": round(errors / tool_calls, 4) if tool_calls else 0.0,
        "tool_error_rate_by_code": {code: round(count / tool_calls, 4)
                                    for code, count in sorted(codes.items())},
        "calls_per_episode": round(calls / played, 2) if played else 0.0,
        "tokens": {"prompt": prompt, "completion": completion,
                   "per_episode": round((prompt + completion) / episodes, 1)
                   if episodes else 0.0},
        "episode_seconds": {"mean": round(seconds_sum / episodes, 3) if episodes else 0.0,
                            "max": round(seconds_max, 3)},
    }
