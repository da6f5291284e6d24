"""Rubric scoring of an episode, and the completion-focused group reward for RL.

No work, no reward: an episode that passes none of its required criteria (the work: records
written, values reported) scores 0, whatever its guards say; guards (``unchanged`` and ``call``
criteria) add only to episodes that did some of the work.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping  # isinstance checks: typing's alias checks the same, slower
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Sequence

from pydantic import BaseModel

from compoenv.answers import check_answer, worked_values
from compoenv.schema import names_record
from compoenv.service import split_qualified
from compoenv.session import CallRecord, Session
from compoenv.task import (
    MAX_WEIGHT, AnswerCriterion, CallCriterion, Criterion, OrderCriterion, StateCriterion, Task,
    UnchangedCriterion,
)

__all__ = [
    "Outcome", "CriterionResult", "RubricResult", "score_rubric", "completion_focused",
    "same_value", "normalize_text", "record_dict", "check_criterion", "scores_full", "Shown", "GUARDS",
    "WRITE_SHARE", "UNDONE", "STATUS_FIELDS", "undone", "scalars", "siblings", "CRITERION_KINDS", "kind_pass_rates",
    "kind_counts",
]

_MISSING = object()
_PLAIN = frozenset({str, int, float})
_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?")
GUARDS = frozenset({"unchanged"})  # criteria that fail on collateral damage
# share of the rubric score the writes carry on a task that writes (the rest: answers, reads,
# rules); reads and a true report without the writes score at most 1 - WRITE_SHARE
WRITE_SHARE = 0.75
# statuses that take a record back: a booking cancelled, a post deleted, a payment voided
UNDONE = frozenset({"cancelled", "canceled", "deleted", "removed", "void", "voided", "revoked",
                    "withdrawn", "refunded", "declined", "rejected", "closed", "archived",
                    "inactive", "unpublished", "retracted", "failed"})
STATUS_FIELDS = ("status", "state")


def undone(record: Any) -> bool:
    """Whether a record's status says it was taken back."""
    fields = record_dict(record)
    return any(isinstance(fields.get(f), str) and fields[f].strip().casefold() in UNDONE
               for f in STATUS_FIELDS)
_PUNCT = re.compile(r"[\s\"'`.,;:!?()\[\]{}]+")


@dataclass(frozen=True)
class Outcome:
    """What the rubric looks at: the session (states and call log) and the final message."""

    session: Session
    final_message: str = ""
    instruction: str = ""  # the request: values it states may be echoed in the reply

    @cached_property
    def shown(self) -> "Shown":
        """Every value the episode's successful tool results showed."""
        return Shown.of(r.result.get("data") for r in self.session.log
                        if r.result.get("success", False))

    @cached_property
    def worked_values(self) -> dict[str, frozenset[str]]:
        """What the episode's own calls account for (``answers.worked_values``): values an
        honest report may name beside the answers."""
        def is_write(name: str) -> bool:
            spec = self.session.spec(name)
            return spec is not None and not spec.read_only

        return worked_values(self.session.log, is_write, self.session.world)

    @cached_property
    def mounted(self) -> frozenset[str]:
        return frozenset(self.session.names)

    @cached_property
    def writes(self) -> list[CallRecord]:
        """The episode's successful calls of tools that write."""
        out = []
        for record in self.session.log:
            if not record.result.get("success", False):
                continue
            spec = self.session.spec(record.name)
            if spec is not None and not spec.read_only:
                out.append(record)
        return out


_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
MAX_WORDED = 20_000  # characters of one argument read for its words

def scalars(value: Any) -> Iterator[Any]:
    """The leaves of a JSON-like value: everything that is not a mapping, list or tuple."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)  # the plain types first: no ABC check for them
        if kind is str:
            yield item
        elif kind is dict or isinstance(item, Mapping):
            stack.extend(item.values())
        elif kind is list or isinstance(item, (list, tuple)):
            stack.extend(item)
        else:
            yield item


class Shown:
    """The scalar values some tool results showed: numbers, and text (normalised) both as
    whole values and as one text to find names and phrases in."""

    __slots__ = ("numbers", "texts", "joined")

    def __init__(self, numbers: set[float], texts: set[str]) -> None:
        self.numbers, self.texts = numbers, texts
        self.joined = "".join(sorted(texts))

    @classmethod
    def of(cls, results: Iterable[Any]) -> "Shown":
        numbers: set[float] = set()
        texts: set[str] = set()
        for item in scalars(list(results)):
            if type(item) is str:  # most are: their facts are kept (``_shown_text``)
                number, text = _shown_text(item)
            elif item is None or isinstance(item, bool):
                continue
            else:
                number, text = _as_number(item), normalize_text(item)
                if number is not None:
                    number = round(number, 2)
            if number is not None:
                numbers.add(number)
            texts.add(text)
        return cls(numbers, texts)

    def has(self, value: Any) -> bool:
        """Whether ``value`` was shown: an equal number, or its text as a whole value or as
        words within a shown text (a name inside "Dinner with Ana Silva")."""
        number = _as_number(value)
        if number is not None and round(number, 2) in self.numbers:
            return True
        text = normalize_text(value)
        return text.strip() != "" and (text in self.texts or text in self.joined)


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
        rubric_score: The writes' weighted pass rate (``WRITE_SHARE`` of it) and the rest's
            (answers, rules, reads); 0 when no required criterion of the work passes or a
            required guard failed.
        passed: Whether every required criterion passed, guards included (the all-required
            pass).
        net_score: The same mix less the share of guard weight that failed (a softer penalty
            for collateral damage than the void), 0 when no required criterion of the work
            passes.
        worked: Whether some required criterion of the work (not a guard) passed.
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
    if type(text) is str:  # the common case: the same few texts, checked again and again
        return _normalize_str(text)
    return _normalize(str(text))


def _normalize(text: str) -> str:
    return " " + _PUNCT.sub(" ", text.casefold()).strip() + " "


# bounded; keys and values are strings, so nothing a caller holds can change an entry
_normalize_str = lru_cache(maxsize=1 << 15)(_normalize)


@lru_cache(maxsize=1 << 15)  # bounded; a number and a string: nothing a caller can change
def _shown_text(value: str) -> tuple[float | None, str]:
    """A shown string's number (rounded to cents, as ``Shown`` keeps it), if it is one, and
    its normalised text."""
    number = _as_number(value)
    return (None if number is None else round(number, 2)), normalize_text(value)


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


def siblings(value: Any, data: Any, field: str | None = None) -> Iterator[Any]:
    """Other values found beside ``value`` in a list of records: the same field of the other
    items (another restaurant's id, another candidate's email); with ``field``, of that field
    only (a completion rate is no rival of another form's question count that equals it)."""
    if isinstance(data, dict):
        for v in data.values():
            yield from siblings(value, v, field)
    elif isinstance(data, list):
        records = [r for r in data if isinstance(r, dict)]
        for name in {f for r in records for f, v in r.items()
                     if _alike(f, field) and same_value(value, v)}:
            for r in records:
                other = r.get(name)
                if other is not None and not same_value(value, other) \
                        and type(other) is type(value):
                    yield other
        for r in records:
            yield from siblings(value, r, field)


def _alike(name: str, field: str | None) -> bool:
    """Whether a field is ``field`` or says it of its record (``product_name`` of ``name``)."""
    return field is None or name == field or name.endswith("_" + field) \
        or field.endswith("_" + name)


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
        if c.standing and candidates and undone(candidates[0]):
            return False, f"{c.service}.{c.collection} {c.key} was taken back"
        if c.changed and candidates:
            old = _records(out.session, c.service, c.collection, initial=True).get(c.key)
            if old is candidates[0] or old == candidates[0]:
                return False, f"{c.service}.{c.collection} {c.key} was not changed"
    else:  # a created record: only records the episode added can be it (not one it overwrote)
        candidates = [records[k] for k in _created_keys(c, out)]
    hit = any(_record_matches(c.match, r) for r in candidates)
    if c.exists:
        return hit, "" if hit else f"no record in {c.service}.{c.collection} matches {c.match}"
    return not hit, "" if not hit else f"record still present in {c.service}.{c.collection}"


def _created_keys(c: StateCriterion, out: Outcome) -> list[str]:
    """Keys of the records of ``c``'s collection that the episode added and that hold
    ``c.match``."""
    records = _records(out.session, c.service, c.collection)
    before = _records(out.session, c.service, c.collection, initial=True)
    return [k for k, r in records.items() if k not in before and _record_matches(c.match, r)
            and not (c.standing and undone(r))]


def _check_answer(c: AnswerCriterion, out: Outcome) -> tuple[bool, str]:
    if c.shown and not out.shown.has(c.value):
        return False, f"{c.value!r} was reported but no tool showed it in this episode"
    return check_answer(c.value, out.final_message, out.session.world, kind=c.value_kind,
                        allowed=c.allowed, instruction=out.instruction, worked=out.worked_values,
                        rivals=c.rivals)


def _call_matches(c: CallCriterion, record: CallRecord) -> bool:
    return (record.name == c.name and record.result.get("success", False)
            and isinstance(record.arguments, Mapping) and same_value(c.arguments, record.arguments)
            and (not c.mentions or mentions(c.mentions, record.arguments))
            and (not c.min_words or worded(record.arguments, c.wording) >= c.min_words))


def worded(arguments: Mapping[str, Any], params: Iterable[str]) -> int:
    """How many words the text arguments ``params`` of a call hold together."""
    return sum(len(_WORD.findall(v[:MAX_WORDED])) for p in params
               if isinstance(v := arguments.get(p), str))


def mentions(facts: Iterable[str], arguments: Mapping[str, Any]) -> bool:
    """Whether the text arguments of a call (a subject and a body, together) carry every fact
    as whole words, whatever the rest of the wording."""
    text = normalize_text(" ".join(v for v in arguments.values() if isinstance(v, str)))
    return all(normalize_text(fact) in text for fact in facts)


def _check_call(c: CallCriterion, out: Outcome) -> tuple[bool, str]:
    hit = any(_call_matches(c, r) for r in out.session.log)
    naming = f" naming {c.mentions}" if c.mentions else ""
    naming += f" in {c.min_words} words or more" if c.min_words else ""
    return hit, "" if hit else f"no successful call {c.name}({c.arguments}){naming}"


def _check_order(c: OrderCriterion, out: Outcome) -> tuple[bool, str]:
    first = CallCriterion(id=c.id, description="", name=c.first.name,
                          arguments=c.first.arguments)
    then = CallCriterion(id=c.id, description="", name=c.then,
                         arguments=c.then_arguments or {})
    seen = False
    for record in out.session.log:
        if _call_matches(first, record):
            seen = True
        elif _call_matches(then, record):
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
    # a record a simulated read showed need not be held in the state: a write naming it is
    # a write to it (booking the decoy hotel, deleting the decoy lead)
    keys = {normalize_text(k) for k in c.keys}
    for record in out.writes:
        if _names_any(record.arguments, keys):
            return False, f"{record.name} was called on {sorted(c.keys)[0]}"
    return True, ""


def _names_any(arguments: Any, keys: set[str]) -> bool:
    return any(isinstance(item, str) and normalize_text(item) in keys
               for item in scalars(arguments))


def _check_acts_on(c: UnchangedCriterion, out: Outcome) -> tuple[bool, str]:
    """Writes of ``c.service`` named only the records ``c.acts_on`` allows, or ones the
    episode created."""
    allowed = {normalize_text(k) for k in c.acts_on or ()}
    created: set[str] | None = None
    for record in out.writes:
        if split_qualified(record.name)[0] != c.service or not isinstance(record.arguments,
                                                                          Mapping):
            continue
        props = out.session.spec(record.name).parameters.get("properties", {})  # type: ignore
        for param, value in record.arguments.items():
            if not isinstance(value, str) or not names_record(param, props.get(param, {})) \
                    or normalize_text(value) in allowed:
                continue
            if created is None:
                before = out.session.initial_state(c.service).collections()
                created = {normalize_text(k) for name, records in
                           out.session.state(c.service).collections().items()
                           for k in records if k not in before.get(name, {})}
            if normalize_text(value) not in created:
                return False, f"{record.name} was called on {value}, a record the task is " \
                              f"not about"
    return True, ""


def _check_unchanged(c: UnchangedCriterion, out: Outcome) -> tuple[bool, str]:
    if c.service not in out.mounted or not out.session.used(c.service):
        return True, ""  # a service the episode did not mount, or never called, is unchanged
    if c.keys:
        return _check_keys(c, out)
    if c.acts_on is not None:
        passed, why = _check_acts_on(c, out)
        if not passed:
            return passed, why
    if c.collection == "*":
        initial = out.session.initial_state(c.service).collections()
        final = out.session.state(c.service).collections()
        for name in sorted(set(initial) | set(final)):
            if name in c.except_collections:
                continue
            if name == "*":  # a collection named "*" guards every one again, as a criterion
                one = UnchangedCriterion(id=c.id, description="", service=c.service,
                                         collection=name)
                passed, why = _check_unchanged(one, out)
            else:  # each collection as a criterion of it with the defaults would check it
                passed, why = _collection_unchanged(c.service, name, (), 0, out)
            if not passed:
                return passed, why
        return True, ""
    return _collection_unchanged(c.service, c.collection, c.except_keys, c.allow_new, out)


def _collection_unchanged(service: str, collection: str, except_keys: Iterable[str],
                          allow_new: int, out: Outcome) -> tuple[bool, str]:
    """No record of ``service.collection`` but ``except_keys`` changed, and at most
    ``allow_new`` added."""
    before = _records(out.session, service, collection, initial=True)
    after = _records(out.session, service, collection)
    keep = set(except_keys)
    # records are immutable and shared until written, so identity settles almost every key
    changed = [k for k, v in before.items()
               if k not in keep and after.get(k) is not v and after.get(k) != v]
    added = len(set(after) - set(before))
    if changed:
        return False, f"{service}.{collection}: unexpected changes to {changed[:5]}"
    if added > allow_new:
        return False, f"{service}.{collection}: {added} records added, {allow_new} expected"
    return True, ""


_CHECKS: dict[str, Callable[[Any, Outcome], tuple[bool, str]]] = {
    "state": _check_state, "answer": _check_answer, "call": _check_call,
    "unchanged": _check_unchanged, "order": _check_order,
}


CRITERION_KINDS = tuple(_CHECKS)


def kind_pass_rates(episodes: Iterable[tuple[Sequence[str], Sequence[bool]]],
                    prefix: str = "criteria/") -> dict[str, float]:
    """Per criterion kind, the share of criteria of that kind that passed over ``episodes``
    (each: its criteria's kinds and passes, in one order), as metrics named
    ``{prefix}{kind}_pass_rate``; a kind no episode's rubric has is left out (not 0).
    What the trainer integrations log beside the rubric score."""
    passed: dict[str, int] = {}
    total: dict[str, int] = {}
    for kinds, passes in episodes:
        for kind, ok in zip(kinds, passes, strict=True):
            total[kind] = total.get(kind, 0) + 1
            passed[kind] = passed.get(kind, 0) + int(bool(ok))
    return {f"{prefix}{kind}_pass_rate": passed[kind] / total[kind] for kind in sorted(total)}


def kind_counts(kinds: Sequence[str], passes: Sequence[bool],
                prefix: str = "criteria/") -> dict[str, float]:
    """One episode's criteria per kind, as the same keys for every episode: for each kind of
    ``CRITERION_KINDS``, ``{prefix}{kind}_passed`` and ``{prefix}{kind}_checked`` (0 for a
    kind its rubric lacks). For trainers that log a per-sample dict and average it over a
    batch (verl's ``reward_extra_info``, OpenRLHF's ``extra_logs``): the batch's pass rate of
    a kind is the mean of ``_passed`` over the mean of ``_checked`` (``kind_pass_rates``)."""
    out = {f"{prefix}{kind}_{name}": 0.0 for kind in CRITERION_KINDS
           for name in ("passed", "checked")}
    for kind, ok in zip(kinds, passes, strict=True):
        if kind in CRITERION_KINDS:
            out[f"{prefix}{kind}_checked"] += 1.0
            out[f"{prefix}{kind}_passed"] += float(bool(ok))
    return out


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


def _one_to_one(candidates: list[list[Any]]) -> list[bool]:
    """Which of several criteria keep a pass when each needs a thing of its own: a maximum
    matching of criteria to the records (or calls) each one accepts."""
    if len(candidates) < 2:
        return [bool(c) for c in candidates]
    if len(candidates) <= 256 and _everyone_matched(candidates):  # every maximum matching keeps every criterion
        return [True] * len(candidates)
    import networkx as nx  # who keeps a pass depends on the matching: networkx's, as always

    graph = nx.Graph()
    left = [("criterion", i) for i in range(len(candidates))]
    graph.add_nodes_from(left)
    for i, things in enumerate(candidates):
        graph.add_edges_from((("criterion", i), ("thing", t)) for t in things)
    matching = nx.bipartite.hopcroft_karp_matching(graph, top_nodes=left)
    return [("criterion", i) in matching for i in range(len(candidates))]


def _everyone_matched(candidates: list[list[Any]]) -> bool:
    """Whether each criterion can have a thing of its own at once (a matching that covers
    every criterion: augmenting paths, as small as these groups are)."""
    owner: dict[Any, int] = {}

    def place(i: int, seen: set[Any]) -> bool:
        for thing in candidates[i]:
            if thing in seen:
                continue
            seen.add(thing)
            if thing not in owner or place(owner[thing], seen):
                owner[thing] = i
                return True
        return False

    return all(place(i, set()) for i in range(len(candidates)))


def _distinct(rubric: Sequence[Criterion], results: list[CriterionResult],
              outcome: Outcome) -> None:
    """Criteria that each need a record or a call of their own (a fan-out of n created
    records, n payments) pass only as many times as there are distinct ones: a passing
    criterion whose record another one took fails."""
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, c in enumerate(rubric):
        if not results[i].passed:
            continue
        if isinstance(c, StateCriterion) and c.distinct and c.key is None and c.exists:
            groups.setdefault(("state", c.service, c.collection), []).append(i)
        elif isinstance(c, CallCriterion) and c.distinct:
            groups.setdefault(("call", c.name), []).append(i)
    for (kind, *_), members in groups.items():
        if len(members) < 2:
            continue
        if kind == "state":
            things = [_created_keys(rubric[i], outcome) for i in members]  # type: ignore[arg-type]
        else:
            things = [[n for n, r in enumerate(outcome.session.log)
                       if _call_matches(rubric[i], r)] for i in members]  # type: ignore[arg-type]
        for i, keep in zip(members, _one_to_one(things)):
            if not keep:
                results[i] = results[i].model_copy(update={
                    "passed": False,
                    "detail": "the only matching record or call is another criterion's"})


def _mean(results: list[CriterionResult]) -> float:
    total = sum(r.weight for r in results)
    return sum(r.weight for r in results if r.passed) / total if total > 0 else 0.0


def score_rubric(rubric: Sequence[Criterion], outcome: Outcome) -> RubricResult:
    """Check every criterion.

    - ``passed``: whether every required criterion passes (guards included).
    - ``rubric_score``: the writes (required ``state`` and ``call`` criteria) carry
      ``WRITE_SHARE`` of it and the rest (answers, rules, reads) the remainder, each part a
      weighted mean of passes; 0 when no required criterion of the work passes (no work, no reward) or a
      required guard failed (collateral damage voids the episode).
    - ``net_score``: the same mix less the share of guard weight that failed, 0 without work.
    """
    results = []
    for c in rubric:
        passed, detail = check_criterion(c, outcome)
        fields = dict(id=c.id, kind=c.kind, description=c.description, passed=passed,
                      weight=_weight(c), required=c.required, detail=detail)
        if (type(passed) is bool and type(detail) is str and type(c.id) is str
                and type(c.kind) is str and type(c.description) is str
                and type(c.required) is bool):  # valid as they are: nothing to check
            results.append(CriterionResult.model_construct(**fields))
        else:
            results.append(CriterionResult(**fields))
    _distinct(rubric, results, outcome)
    return _scores(results)


def _scores(results: list[CriterionResult]) -> RubricResult:
    """The scores of checked criteria (``score_rubric``'s mix)."""
    score, passed, net, worked = _mix(results)
    if not worked:
        return RubricResult(criteria=results, rubric_score=score, passed=passed, net_score=net,
                            worked=False)
    return RubricResult(criteria=results, rubric_score=score, passed=passed, net_score=net)


def _mix(results: Sequence[Any]) -> tuple[float, bool, float, bool]:
    """(rubric_score, passed, net_score, worked) of checked criteria: anything with their
    ``kind``, ``required``, ``weight`` and ``passed``."""
    positive = [r for r in results if r.kind not in GUARDS]
    guards = [r for r in results if r.kind in GUARDS]
    work = [r for r in positive if r.required]
    worked = any(r.passed for r in work) if work else True
    passed = all(r.passed for r in results if r.required)
    if not worked:
        return 0.0, False, 0.0, False
    writes = [r for r in work if r.kind in ("state", "call")]
    rest = [r for r in positive if not (r.required and r.kind in ("state", "call"))]
    if writes and rest:
        mix = WRITE_SHARE * _mean(writes) + (1 - WRITE_SHARE) * _mean(rest)
    else:
        mix = _mean(writes or rest)
    damaged = any(r.required and not r.passed for r in guards)
    failed_share = 1.0 - _mean(guards) if guards else 0.0
    score = 0.0 if damaged else mix
    net = max(0.0, mix - failed_share)
    return min(1.0, score), passed, min(1.0, net), True


class _Checked(NamedTuple):
    """What ``_mix`` reads of a criterion's result."""

    kind: str
    required: bool
    weight: float
    passed: bool


def scores_full(rubric: Sequence[Criterion], outcome: Outcome) -> bool:
    """Whether ``score_rubric(rubric, outcome).rubric_score`` is 1.0, checking criteria only
    until a failed one settles that it is not: one whose failure alone, every other criterion
    passing, already scores below 1 (scores only fall as more criteria fail)."""
    results = []
    for i, c in enumerate(rubric):
        passed, detail = check_criterion(c, outcome)
        if not passed and _below_one(rubric, i):
            return False
        results.append(CriterionResult(id=c.id, kind=c.kind, description=c.description,
                                       passed=passed, weight=_weight(c), required=c.required,
                                       detail=detail))
    _distinct(rubric, results, outcome)
    return _mix(results)[0] >= 1.0


def _below_one(rubric: Sequence[Criterion], failed: int) -> bool:
    """Whether the rubric scores below 1.0 when criterion ``failed`` fails and all others
    pass."""
    return _mix([_Checked(c.kind, c.required, _weight(c), i != failed)
                 for i, c in enumerate(rubric)])[0] < 1.0


def score_task(task: Task, outcome: Outcome) -> RubricResult:
    return score_rubric(task.rubric, outcome)


def _write_share(base: list[float], writes: list[bool], guard: list[bool]) -> list[float]:
    """``base`` rescaled as ``score_rubric`` mixes it: the required writes share
    ``WRITE_SHARE`` and the other positive criteria the rest (when both are present)."""
    part = [sum(max(w, 0.0) for w, is_w, is_g in zip(base, writes, guard) if is_w == want
                and not is_g) for want in (True, False)]
    if not all(x > 0 for x in part):
        return base
    share = (WRITE_SHARE / part[0], (1.0 - WRITE_SHARE) / part[1])
    return [w if is_g else w * share[0 if is_w else 1]
            for w, is_w, is_g in zip(base, writes, guard)]


def completion_focused(passes: Sequence[Sequence[bool | float]],
                       weights: Sequence[float] | None = None,
                       required: Sequence[bool] | None = None,
                       alpha: float = 1.0, eps: float = 0.05, lam: float = 0.5,
                       kinds: Sequence[str] | None = None) -> list[float]:
    """Completion-focused rubric reward over a rollout group of one task.

    With pass matrix ``P[G, K]`` (rollout i, criterion k) and base weights ``w0``:
    ``p_k = mean_i P[i, k]``, ``w_k ∝ w0_k (1 - p_k + eps) ** alpha`` (normalised), and
    ``r_i = (1 - lam) * sum_k w_k P[i, k] + lam * 1[all required pass for rollout i]``.

    Criteria every rollout passes weigh least, rarely passed ones dominate, and a rollout that
    completes the task always gets the group's top reward. No work, no reward: a rollout that
    passes no required criterion gets 0, the lowest reward there is. ``alpha=0`` gives the rubric score's
    weighting (with ``kinds``, the writes' share as ``score_rubric`` mixes it; plus the
    completion bonus); ``lam=0`` drops the bonus.

    Args:
        passes: G rows of K criterion results (bools or 0/1).
        weights: Base weights w0 (default 1 each).
        required: Which criteria count for completion (default all).
        alpha: Sharpness of the rarity re-weighting (0 disables it).
        eps: Floor that keeps all-pass criteria from vanishing entirely.
        lam: Share of the reward given by full completion.
        kinds: Each criterion's kind. With them, guards (``unchanged``) are gates, as in the
            rubric score: they add no reward, a required one that failed gives the rollout 0,
            and passing them alone is no work.

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
    if kinds is not None and len(kinds) != k:
        raise ValueError(f"kinds needs {k} entries")
    guard = [kinds is not None and kinds[j] in GUARDS for j in range(k)]
    if kinds is not None:  # the rubric score's mix: the writes carry WRITE_SHARE of it
        base = _write_share(base, [need[j] and kinds[j] in ("state", "call") for j in range(k)],
                            guard)
    g = len(rows)
    rate = [sum(row[j] for row in rows) / g for j in range(k)]
    raw = [0.0 if guard[j] else max(base[j], 0.0) * (1.0 - rate[j] + eps) ** alpha
           for j in range(k)]
    total = sum(raw)
    w = [x / total for x in raw] if total > 0 else [1.0 / k] * k
    out = []
    work = [need[j] and not guard[j] for j in range(k)]
    gate = any(work)
    for row in rows:
        if (gate and not any(row[j] for j in range(k) if work[j])) or any(
                guard[j] and need[j] and not row[j] for j in range(k)):
            out.append(0.0)  # no work, or collateral damage: the group's lowest reward
            continue
        partial = sum(w[j] * row[j] for j in range(k))
        complete = float(all(row[j] for j in range(k) if need[j]))
        out.append(min(1.0, max(0.0, (1.0 - lam) * partial + lam * complete)))  # fp: stay in [0, 1]
    return out
