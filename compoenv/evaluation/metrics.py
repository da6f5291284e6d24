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

Confidence intervals (``*_ci``: the 2.5th and 97.5th percentiles) come from a bootstrap over
tasks: tasks are drawn with replacement (a task's episodes stay together, as they are not
independent) 1,000 times with a fixed seed, and the measure is taken on each draw.

The noise floor is the spread of the pass rate over the k repeats: repeat r is every task's
episode ``rollout_idx == r``; its standard deviation across repeats says how far two runs of
the same model may differ by chance, so a difference smaller than about twice it is not a
difference.

``flips`` are the tasks whose episodes disagree (some pass, some fail): where a model is
unreliable, and what a rerun may change. ``failed_criteria`` counts the criteria that failed,
by kind and by the house rule they check.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter, defaultdict
from typing import Any, Iterable, Mapping, Sequence

__all__ = ["pass_at_k", "pass_hat_k", "summarize", "bootstrap_ci"]

BOOTSTRAP_DRAWS = 1000


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


def bootstrap_ci(per_task: Sequence[tuple[int, int]], measure: Any = None,
                 draws: int = BOOTSTRAP_DRAWS, seed: int = 0) -> list[float]:
    """The 95% interval of a measure over tasks, by drawing the tasks with replacement.

    Args:
        per_task: (episodes, passes) of each task.
        measure: Per-task value from (episodes, passes); default: the pass share. A draw's
            measure is the episode-weighted mean for the default, else the mean over tasks.
    Returns:
        [low, high], rounded to 4 places ([0, 0] without tasks).
    """
    import numpy as np

    if not per_task:
        return [0.0, 0.0]
    n = np.array([e for e, _ in per_task], dtype=float)
    if measure is None:
        values, weights = np.array([c for _, c in per_task], dtype=float), n
    else:
        values = np.array([measure(e, c) for e, c in per_task], dtype=float)
        weights = np.ones(len(per_task))
    rng = np.random.default_rng(seed)
    means = np.empty(draws)
    chunk = max(1, 2_000_000 // len(per_task))  # bounded memory for large task sets
    for start in range(0, draws, chunk):
        picks = rng.integers(0, len(per_task), size=(min(chunk, draws - start), len(per_task)))
        means[start:start + len(picks)] = values[picks].sum(1) / weights[picks].sum(1)
    low, high = np.percentile(means, [2.5, 97.5])
    return [round(float(low), 4), round(float(high), 4)]


class _Rate:
    """Episodes, passes and the score sum of a group of episodes, and each task's episodes
    and passes (for the group's interval)."""

    __slots__ = ("episodes", "passes", "rubric_score", "tasks")

    def __init__(self) -> None:
        self.episodes, self.passes, self.rubric_score = 0, 0, 0.0
        self.tasks: dict[str, list[int]] = defaultdict(lambda: [0, 0])

    def add(self, meta: Mapping[str, Any]) -> None:
        self.episodes += 1
        self.passes += int(meta["score"])
        self.rubric_score += meta["rubric_score"]
        counts = self.tasks[meta["task_id"]]
        counts[0], counts[1] = counts[0] + 1, counts[1] + int(meta["score"])

    def view(self, ci: bool = True) -> dict[str, Any]:
        n = self.episodes
        out = {"episodes": n, "tasks": len(self.tasks),
               "pass_rate": round(self.passes / n, 4) if n else 0.0,
               "mean_rubric_score": round(self.rubric_score / n, 4) if n else 0.0}
        if ci:
            out["pass_rate_ci"] = bootstrap_ci(_by_task(self.tasks))
        return out


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


def _difficulty(value: Any) -> str:
    """A task's difficulty (0..1) as the level the composer gives it (``difficulty.level``:
    what ``generate --difficulty`` draws and its summary counts), or "none" without one."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "none"
    from compoenv.compose.difficulty import level

    return level(min(max(float(value), 0.0), 1.0))


def _count_failures(meta: Mapping[str, Any], task: Mapping[str, Any], checked: Counter[str],
                    failed: Counter[str], rules: Counter[str]) -> None:
    """Count an episode's criteria by kind (checked, failed) and its failed criteria by the
    kind of house rule that owns them (naming, source_of_truth, threshold, ordering, never)."""
    kinds = {c.get("id"): c.get("kind", "?") for c in task.get("rubric") or []}
    owner = {cid: str(rule.get("kind")) for rule in task.get("rules") or []
             for cid in rule.get("criteria") or []}
    for mark in meta.get("rubric") or []:
        kind = kinds.get(mark.get("id"), "?")
        checked[kind] += 1
        if not mark.get("passed"):
            failed[kind] += 1
            if mark.get("id") in owner:
                rules[owner[mark["id"]]] += 1


def _by_task(counts: Mapping[str, Sequence[int]]) -> list[tuple[int, ...]]:
    """Per-task counts in the order of the task ids."""
    return [tuple(counts[tid]) for tid in sorted(counts)]


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
                                           ("capability", "domain", "difficulty", "hops",
                                            "mode")}
    failed_kinds: Counter[str] = Counter()
    failed_rules: Counter[str] = Counter()
    checked_kinds: Counter[str] = Counter()
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
        groups["difficulty"][_difficulty(task.get("difficulty"))].add(meta)
        _count_failures(meta, task, checked_kinds, failed_kinds, failed_rules)
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
    # the bootstrap resamples tasks in the order of their ids, not of the records: the
    # intervals are the same whatever order the episodes finished in
    complete = [counts for counts in _by_task(per_task) if counts[0] >= k]
    curves: dict[str, dict[str, float]] = {"pass@k": {}, "pass^k": {}}
    for j in range(1, k + 1):
        at = [pass_at_k(n, c, j) for n, c in complete]
        hat = [pass_hat_k(n, c, j) for n, c in complete]
        curves["pass@k"][str(j)] = round(statistics.fmean(at), 4) if at else 0.0
        curves["pass^k"][str(j)] = round(statistics.fmean(hat), 4) if hat else 0.0
    intervals: dict[str, dict[str, list[float]]] = {"pass@k": {}, "pass^k": {}}
    for j in range(1, k + 1):
        intervals["pass@k"][str(j)] = bootstrap_ci(
            complete, lambda n, c, j=j: pass_at_k(n, c, j))
        intervals["pass^k"][str(j)] = bootstrap_ci(
            complete, lambda n, c, j=j: pass_hat_k(n, c, j))
    views = [rate.view(ci=False) for _, rate in sorted(repeats.items())]
    rates = [v["pass_rate"] for v in views]
    means = [v["mean_rubric_score"] for v in views]
    episodes = overall.episodes
    errors = sum(codes.values())
    flips = sorted(({"task_id": tid, "episodes": n, "passes": c}
                    for tid, (n, c) in per_task.items() if 0 < c < n),
                   key=lambda f: (abs(f["passes"] / f["episodes"] - 0.5), f["task_id"]))
    return {
        **overall.view(ci=False),
        "pass_rate_ci": bootstrap_ci(_by_task(per_task)),
        "tasks": len(per_task), "k": k, "errored_episodes": errored,
        "pass_at_k": curves["pass@k"], "pass_hat_k": curves["pass^k"],
        "pass_at_k_ci": intervals["pass@k"], "pass_hat_k_ci": intervals["pass^k"],
        "noise_floor": {"repeat_pass_rates": rates,
                        "std": round(statistics.pstdev(rates), 4) if len(rates) > 1 else 0.0,
                        "spread": round(max(rates) - min(rates), 4) if rates else 0.0,
                        "repeat_mean_rubric_scores": means,
                        "rubric_score_std": round(statistics.pstdev(means), 4)
                        if len(means) > 1 else 0.0},
        "flips": flips,
        "failed_criteria": {
            "by_kind": {kind: {"failed": failed_kinds[kind], "checked": checked_kinds[kind],
                               "fail_rate": round(failed_kinds[kind] / checked_kinds[kind], 4)}
                        for kind in sorted(checked_kinds, key=lambda x: -failed_kinds[x])},
            "by_rule": dict(failed_rules.most_common())},
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
