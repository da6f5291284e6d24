"""Rubric scoring of an episode, and the completion-focused group reward for RL.

No work, no reward: an episode that passes none of its required criteria (the work: records
written, values reported) scores 0, whatever its guards say; guards (``unchanged`` and ``call``
criteria) add only to episodes that did some of the work.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from pydantic import BaseModel

from compoenv.answers import check_answer, worked_values
from compoenv.session import CallRecord, Session
from compoenv.task import (
    MAX_WEIGHT, AnswerCriterion, CallCriterion, Criterion, OrderCriterion, StateCriterion, Task,
    UnchangedCriterion,
)

__all__ = [
    "Outcome", "CriterionResult", "RubricResult", "score_rubric", "completion_focused",
    "same_value", "normalize_text", "record_dict", "check_criterion",
]

_MISSING = object()
_PLAIN = frozenset({str, int, float})
_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?")
GUARDS = frozenset({"unchanged"})  # criteria that fail on collateral damage
_PUNCT = re.compile(r"[\s\"'`.,;:!?()\[\]{}]+")


@dataclass(frozen=True)
class Outcome:
    """What the rubric looks at: the session (states and call log) and the final message."""

    session: Session
    final_message: str = ""
    instruction: str = ""  # the request: values it states may be echoed in the reply


class CriterionResult(BaseModel):
    id: str
    kind: str
    description: str
    passed: bool
    weight: float
    required: bool
    detail: str = ""


class RubricResult(BaseModel):
    """Scores of one episode.

    The names are the vocabulary of scores everywhere (``info``, trajectories, exports, eval
    results; docs/rubric.md "Scores").

    Attributes:
        criteria: Each criterion's result (``passed`` is the criterion's own verdict).
        rubric_score: Weighted mean of passed criteria, 0 when no required criterion passes.
        passed: Whether every required criterion passed (the all-required pass).
        net_score: The rubric score net of collateral damage: failed guards count against the
            score instead of just not adding to it (``max(0, (passed - failed guards) /
            total)`` by weight), 0 when no required criterion passes.
        worked: Whether some required criterion passed.
    """

    criteria: list[CriterionResult]
    rubric_score: float
    passed: bool
    net_score: float = 0.0
    worked: bool = True

    @property
    def passes(self) -> list[bool]:
        return [c.passed for c in self.criteria]


def normalize_text(text: Any) -> str:
    """Casefolded text with punctuation and runs of white space folded to single spaces."""
    return " " + _PUNCT.sub(" ", str(text).casefold()).strip() + " "


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and _NUMBER.fullmatch(value.strip().lstrip("$")):
        try:
            return float(value.strip().lstrip("$").replace(",", ""))
        except ValueError:
            return None
    return None


def same_value(expected: Any, actual: Any) -> bool:
    """Equality up to case, white space, trailing punctuation, number formatting and list order."""
    if type(expected) is type(actual) and type(expected) in _PLAIN and expected == actual:
        return True  # the common case, before any normalising
    if type(expected) is dict or isinstance(expected, Mapping):
        return (type(actual) is dict or isinstance(actual, Mapping)) and all(
            k in actual and same_value(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(expected) != len(actual):
            return False
        return sorted(map(normalize_text, expected)) == sorted(map(normalize_text, actual))
    a, b = _as_number(expected), _as_number(actual)
    if a is not None and b is not None:
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=0.005)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected == actual
    return normalize_text(expected) == normalize_text(actual)


def record_dict(record: Any) -> dict[str, Any]:
    """A state record as a dict (a plain value ``v`` is ``{"value": v}``)."""
    if isinstance(record, BaseModel):
        return record.model_dump(mode="json")
    return dict(record) if isinstance(record, Mapping) else {"value": record}


def _records(session: Session, service: str, collection: str, initial: bool = False) -> dict:
    state = session.initial_state(service) if initial else session.state(service)
    value = state.collections().get(collection)
    if value is None:  # a whole container, such as a simulated service's records
        value = state.__dict__.get(collection)
    return value if isinstance(value, dict) else {}


def _record_matches(match: Mapping[str, Any], record: Any) -> bool:
    """``same_value(match, record_dict(record))``, without dumping records that differ early."""
    if not isinstance(record, BaseModel):
        return same_value(match, record_dict(record))
    for field, expected in match.items():
        actual = getattr(record, field, _MISSING)
        if actual is _MISSING:
            return False
        if isinstance(actual, BaseModel):
            actual = actual.model_dump(mode="json")
        elif isinstance(actual, tuple):
            actual = list(actual)
        if not same_value(expected, actual):
            return False
    return True


def _check_state(c: StateCriterion, out: Outcome) -> tuple[bool, str]:
    records = _records(out.session, c.service, c.collection)
    if c.key is not None:
        candidates = [records[c.key]] if c.key in records else []
        if c.changed and candidates:
            old = _records(out.session, c.service, c.collection, initial=True).get(c.key)
            if old is candidates[0] or old == candidates[0]:
                return False, f"{c.service}.{c.collection} {c.key} was not changed"
    else:  # a created record: only records the episode added or replaced can be it
        before = _records(out.session, c.service, c.collection, initial=True)
        candidates = [r for k, r in records.items() if before.get(k) is not r]
    hit = any(_record_matches(c.match, r) for r in candidates)
    if c.exists:
        return hit, "" if hit else f"no record in {c.service}.{c.collection} matches {c.match}"
    return not hit, "" if not hit else f"record still present in {c.service}.{c.collection}"


def _worked(out: Outcome) -> dict[str, frozenset[str]]:
    """``answers.worked_values`` of the episode's calls, read once per scoring of an outcome
    (the last outcome's are kept: its answer criteria are checked one after another)."""
    global _LAST_WORKED
    log = out.session.log
    last = _LAST_WORKED
    if last[0] is out and last[1] == len(log):
        return last[2]

    def is_write(name: str) -> bool:
        spec = out.session.spec(name)
        return spec is not None and not spec.read_only

    values = worked_values(log, is_write, out.session.world)
    _LAST_WORKED = (out, len(log), values)
    return values


_LAST_WORKED: tuple[Any, int, dict[str, frozenset[str]]] = (None, 0, {})


def _check_answer(c: AnswerCriterion, out: Outcome) -> tuple[bool, str]:
    return check_answer(c.value, out.final_message, out.session.world, kind=c.value_kind,
                        allowed=c.allowed, instruction=out.instruction, worked=_worked(out))


def _call_matches(c: CallCriterion, record: CallRecord) -> bool:
    return (record.name == c.name and record.result.get("success", False)
            and isinstance(record.arguments, Mapping) and same_value(c.arguments, record.arguments))


def _check_call(c: CallCriterion, out: Outcome) -> tuple[bool, str]:
    hit = any(_call_matches(c, r) for r in out.session.log)
    return hit, "" if hit else f"no successful call {c.name}({c.arguments})"


def _check_order(c: OrderCriterion, out: Outcome) -> tuple[bool, str]:
    first = CallCriterion(id=c.id, description="", name=c.first.name,
                          arguments=c.first.arguments)
    seen = False
    for record in out.session.log:
        if _call_matches(first, record):
            seen = True
        elif record.name == c.then and record.result.get("success", False):
            return (True, "") if seen else (
                False, f"{c.then} was called before {c.first.name}({c.first.arguments})")
    return False, f"no successful call {c.then}" if seen else f"no call {c.first.name}"


def _check_keys(c: UnchangedCriterion, out: Outcome) -> tuple[bool, str]:
    """Only the records ``c.keys`` (in one collection, or in any with ``"*"``) are guarded."""
    initial = out.session.initial_state(c.service).collections()
    final = out.session.state(c.service).collections()
    names = sorted(set(initial) | set(final)) if c.collection == "*" else [c.collection]
    for name in names:
        before, after = initial.get(name, {}), final.get(name, {})
        for key in c.keys:
            if before.get(key) is not after.get(key) and before.get(key) != after.get(key):
                return False, f"{c.service}.{name}: {key} was changed"
    return True, ""


def _check_unchanged(c: UnchangedCriterion, out: Outcome) -> tuple[bool, str]:
    if c.keys:
        return _check_keys(c, out)
    if c.collection == "*":
        initial = out.session.initial_state(c.service).collections()
        final = out.session.state(c.service).collections()
        for name in sorted(set(initial) | set(final)):
            if name in c.except_collections:
                continue
            one = UnchangedCriterion(id=c.id, description="", service=c.service,
                                     collection=name)
            passed, why = _check_unchanged(one, out)
            if not passed:
                return passed, why
        return True, ""
    before = _records(out.session, c.service, c.collection, initial=True)
    after = _records(out.session, c.service, c.collection)
    keep = set(c.except_keys)
    # records are immutable and shared until written, so identity settles almost every key
    changed = [k for k, v in before.items()
               if k not in keep and after.get(k) is not v and after.get(k) != v]
    added = len(set(after) - set(before))
    if changed:
        return False, f"{c.service}.{c.collection}: unexpected changes to {changed[:5]}"
    if added > c.allow_new:
        return False, f"{c.service}.{c.collection}: {added} records added, {c.allow_new} expected"
    return True, ""


_CHECKS: dict[str, Callable[[Any, Outcome], tuple[bool, str]]] = {
    "state": _check_state, "answer": _check_answer, "call": _check_call,
    "unchanged": _check_unchanged, "order": _check_order,
}


def check_criterion(c: Criterion, outcome: Outcome) -> tuple[bool, str]:
    """Whether one criterion passes, and why not; a broken criterion fails itself, never the
    episode."""
    try:
        return _CHECKS[c.kind](c, outcome)
    except Exception as exc:  # noqa: BLE001 - reported as the criterion's own failure
        return False, f"criterion error: {type(exc).__name__}: {exc}"


def _weight(c: Criterion) -> float:
    """A criterion's weight as scores count it: a Task admits only finite weights in
    (0, MAX_WEIGHT]; one that skipped validation (built with ``model_construct`` or changed by
    ``model_copy``) counts 0 when not a finite positive number, MAX_WEIGHT when above it, so the
    scores stay numbers in [0, 1]."""
    w = c.weight
    if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w <= 0:
        return 0.0
    return min(float(w), MAX_WEIGHT)


def score_rubric(rubric: Sequence[Criterion], outcome: Outcome) -> RubricResult:
    """Check every criterion: ``rubric_score`` = weighted mean of passes and ``passed`` = all
    required pass, 0 and False when no required criterion passes (no work, no reward)."""
    results = []
    for c in rubric:
        passed, detail = check_criterion(c, outcome)
        results.append(CriterionResult(id=c.id, kind=c.kind, description=c.description,
                                       passed=passed, weight=_weight(c), required=c.required,
                                       detail=detail))
    required = [r for r in results if r.required]
    worked = any(r.passed for r in required) if required else True
    if not worked:
        return RubricResult(criteria=results, rubric_score=0.0, passed=False, net_score=0.0,
                            worked=False)
    total = sum(r.weight for r in results)
    passed_weight = sum(r.weight for r in results if r.passed)
    damage = sum(r.weight for r in results if not r.passed and r.kind in GUARDS)
    score = passed_weight / total if total > 0 else 0.0
    net = max(0.0, (passed_weight - damage) / total) if total > 0 else 0.0
    return RubricResult(criteria=results, rubric_score=score,
                        passed=all(r.passed for r in required), net_score=net)


def score_task(task: Task, outcome: Outcome) -> RubricResult:
    return score_rubric(task.rubric, outcome)


def completion_focused(passes: Sequence[Sequence[bool | float]],
                       weights: Sequence[float] | None = None,
                       required: Sequence[bool] | None = None,
                       alpha: float = 1.0, eps: float = 0.05, lam: float = 0.5) -> list[float]:
    """Completion-focused rubric reward over a rollout group of one task.

    With pass matrix ``P[G, K]`` (rollout i, criterion k) and base weights ``w0``:
    ``p_k = mean_i P[i, k]``, ``w_k ∝ w0_k (1 - p_k + eps) ** alpha`` (normalised), and
    ``r_i = (1 - lam) * sum_k w_k P[i, k] + lam * 1[all required pass for rollout i]``.

    Criteria every rollout passes weigh least, rarely passed ones dominate, and a rollout that
    completes the task always gets the group's top reward. No work, no reward: a rollout that
    passes no required criterion gets 0, the lowest reward there is. ``alpha=0`` gives the plain weighted
    rubric (plus the completion bonus); ``lam=0`` drops the bonus.

    Args:
        passes: G rows of K criterion results (bools or 0/1).
        weights: Base weights w0 (default 1 each).
        required: Which criteria count for completion (default all).
        alpha: Sharpness of the rarity re-weighting (0 disables it).
        eps: Floor that keeps all-pass criteria from vanishing entirely.
        lam: Share of the reward given by full completion.

    Returns:
        One reward per rollout, in [0, 1].
    """
    rows = [[float(bool(x)) for x in row] for row in passes]
    if not rows:
        return []
    k = len(rows[0])
    if any(len(row) != k for row in rows):
        raise ValueError(f"every rollout needs {k} criterion results; got lengths "
                         f"{sorted({len(r) for r in rows})}")
    base = [1.0] * k if weights is None else [float(w) for w in weights]
    bad = [w for w in base if not math.isfinite(w)]
    if bad:
        raise ValueError(f"weights must be finite numbers, got {bad[:3]}")
    top = max(base, default=0.0)
    if top > 0:  # only ratios matter: scaled to at most 1, huge weights cannot overflow
        base = [w / top for w in base]
    need = [True] * k if required is None else [bool(r) for r in required]
    if len(base) != k or len(need) != k:
        raise ValueError(f"weights and required need {k} entries")
    if k == 0:
        return [lam * 1.0 for _ in rows]
    g = len(rows)
    rate = [sum(row[j] for row in rows) / g for j in range(k)]
    raw = [max(base[j], 0.0) * (1.0 - rate[j] + eps) ** alpha for j in range(k)]
    total = sum(raw)
    w = [x / total for x in raw] if total > 0 else [1.0 / k] * k
    out = []
    gate = any(need)
    for row in rows:
        if gate and not any(row[j] for j in range(k) if need[j]):
            out.append(0.0)
            continue
        partial = sum(w[j] * row[j] for j in range(k))
        complete = float(all(row[j] for j in range(k) if need[j]))
        out.append(min(1.0, max(0.0, (1.0 - lam) * partial + lam * complete)))  # fp: stay in [0, 1]
    return out
