"""Rubric building: state criteria for every write, answer criteria, call and unchanged guards.

Criteria check only what the request determines: a created record is matched on the values the
solution's calls were given (stated by the user or carried from earlier steps), never on what a
tool or the world model chose by itself (an invented label, a count, an id), so an agent that
passes an optional argument the request leaves open is not punished for it.
"""

from __future__ import annotations

from typing import Any, Iterator

from compoenv.answers import SLACK, canonical, kind_of
from compoenv.compose.goal import BODIES, asked_reads, free_params, message_facts
from compoenv.compose.records import Binding, Walk
from compoenv.reward import (
    STATUS_FIELDS, Shown, _as_number, normalize_text, record_dict, same_value, scalars, siblings,
    undone, worded,
)
from compoenv.schema import brief, extract, free_text, names_record
from compoenv.session import Session
from compoenv.task import (
    MAX_RIVALS, MAX_VALUE_CHARS, AnswerCriterion, CallCriterion, Criterion, StateCriterion,
    UnchangedCriterion,
)
from compoenv.world import World
from compoenv.worldmodel.base import SimState

__all__ = ["build_rubric", "answer_text", "rule_ids", "STATUS_FIELDS"]


def answer_text(value: Any) -> str:
    """How a reported value is written in ``Task.answer``."""
    if isinstance(value, float):
        return f"{value:.2f}" if value != int(value) else str(int(value))
    return str(value)


def _summary(match: dict[str, Any], limit: int = 4) -> str:
    shown = [f"{k} = {brief(v, 40)}" for k, v in list(match.items())[:limit]]
    more = len(match) - limit
    return ", ".join(shown) + (f" and {more} more field(s)" if more > 0 else "")




def _step_given(walk: Walk, steps: list[int],
                free: dict[int, frozenset[str]] | None = None) -> dict[str, list[Any]]:
    """The values the calls ``steps`` were given, by parameter name: whatever the source
    (stated, carried from any service, fixed by a house rule), the request decides them; but
    not the wording a goal-level request leaves to the agent (``free``)."""
    given: dict[str, list[Any]] = {}
    for index in steps:
        left = (free or {}).get(index, frozenset())
        for param, value in walk.steps[index].arguments.items():
            if param not in left:
                given.setdefault(param, []).append(value)
    return given


def _defaults(walk: Walk, steps: list[int]) -> list[Any]:
    """The defaults of the optional parameters the calls ``steps`` left out: values the
    request does not fix."""
    out = []
    for index in steps:
        step = walk.steps[index]
        for param, schema in step.spec.parameters.get("properties", {}).items():
            if param not in step.arguments and "default" in schema:
                out.append(schema["default"])
    return out


def _writers(walk: Walk, service: str) -> dict[tuple[str, str], list[int]]:
    """The write steps of ``service`` that touched each record, by (collection, key)."""
    out: dict[tuple[str, str], list[int]] = {}
    for index, step in enumerate(walk.steps):
        if step.spec.service != service or step.spec.read_only:
            continue
        for collection, key, _ in walk.effects.get(index, []):
            out.setdefault((collection, key), []).append(index)
    return out


def _among(value: Any, values: list[Any]) -> bool:
    return any(same_value(v, value) for v in values)
class _Given:
    """The values some calls were given, ready to be matched against record fields."""

    def __init__(self, given: dict[str, list[Any]]) -> None:
        self.by_param = given
        self.all = [v for values in given.values() for v in values]
        # a text that is no number equals a given value only as normalised text (no
        # container or bool equals a str): one set lookup instead of a scan
        self.texts = {normalize_text(v) for v in self.all
                      if not isinstance(v, (dict, list, tuple, bool))}

    def fixed(self, field: str, value: Any, simulated: bool) -> bool:
        """Whether the request fixes a record's field: a typed tool is a function of its
        arguments, so a field holding an argument's value holds it because of the request; a
        simulated tool echoes an argument under the argument's own name, and any other field
        is the world model's choice (its "source language" may happen to equal the target)."""
        if simulated:
            return _among(value, self.by_param.get(field, []))
        if type(value) is str and _as_number(value) is None:
            return normalize_text(value) in self.texts
        if isinstance(value, list) and value and all(
                type(v) is str and normalize_text(v) in self.texts for v in value):
            return True  # the attendees one call created and later calls invited
        return _among(value, self.all)


def _state_criteria(service: str, session: Session, walk: Walk,
                    free: dict[int, frozenset[str]]) -> list[Criterion]:
    """Criteria for the records the solution wrote in ``service``: created records must hold
    the values the calls that wrote them were given, as they stand at the end (their status
    too); modified ones their changes; deleted ones be gone; required guards around them.
    Values a tool or the world model chose by itself are not checked."""
    before_all = session.initial_state(service).collections()
    simulated = isinstance(session.state(service), SimState)
    writers = _writers(walk, service)
    every = [i for i, s in enumerate(walk.steps) if s.spec.service == service
             and not (simulated and s.spec.read_only)]
    out: list[Criterion] = []
    touched: list[str] = []
    ruled = {(c, k) for i in walk.rule_steps if walk.steps[i].spec.service == service
             for c, k, _ in walk.effects.get(i, [])}  # the rules' criteria check these
    for collection, after in session.state(service).collections().items():
        before = before_all.get(collection, {})
        noun = collection.rstrip("s").replace("_", " ")
        created = [k for k in after if k not in before]
        modified = [k for k in after
                    if k in before and after[k] is not before[k] and after[k] != before[k]]
        deleted = [k for k in before if k not in after]
        for key in created:
            if (collection, key) in ruled:
                continue
            steps = writers.get((collection, key), every)
            given = _Given(_step_given(walk, steps, free))
            record = record_dict(after[key])
            # a key the world model drew is its choice (later writes naming it included); one
            # the first write of the record named is the request's (an update of a record a
            # read of the world model showed, which the store then holds: the ticket the
            # search found, not another)
            first = walk.steps[min(steps)] if (collection, key) in writers else None
            named_key = first is not None and _among(key, [
                v for v in first.arguments.values() if isinstance(v, (str, int))])
            match = {f: v for f, v in record.items() if (v != key and given.fixed(f, v, simulated))
                     or (named_key and v == key and not isinstance(v, bool))}
            out.append(StateCriterion(
                id="", service=service, collection=collection, match=match, distinct=True,
                standing=not undone(record),
                description=f"A new {noun} exists in {service}"
                            + (f" with {_summary(match)}" if match else "")))
        for key in modified:
            if (collection, key) in ruled:
                continue
            steps = writers.get((collection, key), every)
            given, defaults = _Given(_step_given(walk, steps, free)), _defaults(walk, steps)
            old, new = record_dict(before[key]), record_dict(after[key])
            # a typed tool's own effects (a status moved to "cancelled") are the request's
            # doing; a simulated tool's are the world model's choice unless an argument says
            match = {f: v for f, v in new.items() if old.get(f) != v
                     and (given.fixed(f, v, simulated)
                          or not (simulated or _among(v, defaults)))}
            out.append(StateCriterion(
                id="", service=service, collection=collection, key=key, match=match,
                changed=True, standing=not undone(new),
                description=f"{noun.capitalize()} {key} in {service} was changed"
                            + (f" to have {_summary(match)}" if match else "")))
        for key in deleted:
            out.append(StateCriterion(
                id="", service=service, collection=collection, key=key, exists=False,
                description=f"{noun.capitalize()} {key} was removed from {service}"))
        if not (created or modified or deleted):
            continue
        touched.append(collection)
        out.append(UnchangedCriterion(
            id="", service=service, collection=collection, except_keys=modified + deleted,
            allow_new=len(created), weight=0.5,
            description=f"No other {collection.replace('_', ' ')} in {service} were changed"))
    # the records the solution's writes name, and the keys its records point to (a survey's
    # ticket): a write may name these and no other
    named = {str(v) for s in walk.steps if s.spec.service == service
             and not s.spec.read_only for p, v in s.arguments.items()
             if isinstance(v, str) and names_record(p, s.spec.parameters.get(
                 "properties", {}).get(p, {}))}
    final = session.state(service).collections()
    for index in {i for steps in writers.values() for i in steps}:
        for collection, key, _ in walk.effects.get(index, []):
            record = record_dict(final.get(collection, {}).get(key)) if key in final.get(
                collection, {}) else {}
            named.update(v for f, v in record.items() if isinstance(v, str)
                         and names_record(f, {}))
    acts_on = sorted(named)
    out.append(UnchangedCriterion(
        id="", service=service, collection="*", except_collections=touched,
        weight=0.5, acts_on=acts_on,
        description=f"Nothing else in {service} was changed"))
    return out


def _holds(match: dict[str, Any], value: Any) -> bool:
    for v in match.values():
        if same_value(value, v) or (isinstance(v, list) and not isinstance(value, list)
                                    and any(same_value(value, x) for x in v)):
            return True
        if isinstance(value, (int, float)) and isinstance(v, (int, float)) \
                and not isinstance(v, bool) and v < 0 and same_value(value, -v):
            return True  # an outgoing payment booked as a negative amount
    return False


def _uncovered(walk: Walk, criteria: list[Criterion],
               free: dict[int, frozenset[str]]) -> list[Criterion]:
    """A required call criterion for each write whose arguments no state criterion checks:
    the restaurant a booking is for when the booking record names only the table, the
    recipient of a sign-off. Every argument of every write is then checked, wherever its
    value came from; but wording left to the agent (``free``) only for the facts it must
    carry (``goal.message_facts``): an email naming the hotel the job chose."""
    states: dict[tuple[str, str], list[StateCriterion]] = {}
    for c in criteria:
        if isinstance(c, StateCriterion):
            states.setdefault((c.service, c.collection), []).append(c)
    out: list[Criterion] = []
    for index, step in enumerate(walk.steps):
        if step.spec.read_only:
            continue
        records = walk.effects.get(index, [])
        # the record a write acts on is named by its key, which its own criterion checks
        matches = [{"": key} for _, key, _ in records] + [
            c.match for collection, key, _ in records
            for c in states.get((step.spec.service, collection), [])
            if c.key is None or c.key == key]
        props = step.spec.parameters.get("properties", {})
        # a house rule's own call states only what the rule says (the sign-off's recipient
        # and subject): its wording is the agent's
        own = free.get(index, frozenset())
        left = {p: v for p, v in step.arguments.items()
                if not any(_holds(m, v) for m in matches) and p not in own
                and not (index in walk.rule_steps and free_text(props.get(p, {})))}
        facts = [name for _, name in message_facts(walk, index)] if own else []
        # a message or document the agent words is a message, not a placeholder ("lol")
        # (never more than the job's own wording holds: an authored note may be short)
        floor = min(MIN_MESSAGE_WORDS, worded(step.arguments, own)) if own & BODIES else 0
        if facts or floor:  # told apart by its recipient, then checked for what it carries
            left = {p: v for p, v in step.arguments.items() if p not in own}
        if not left and not facts and not floor:
            continue
        said = [f"with {_summary(left)}"] if left else []
        said += [f"naming {', '.join(facts)}"] if facts else []
        said += [f"in {floor} words or more"] if floor else []
        out.append(CallCriterion(
            id="", name=step.spec.qualified_name, arguments=left, required=True, distinct=True,
            mentions=facts, min_words=floor, wording=sorted(own) if floor else [],
            description=f"Called {step.spec.qualified_name} {', '.join(said)}"))
    return out


MIN_MESSAGE_WORDS = 4  # "Happy holidays!" is no message about a booking; any real one is longer


def _answer_criteria(walk: Walk, answers: list[str], world: World,
                     shown: Shown) -> list[Criterion]:
    """One criterion per value to report; each may stand beside as many other values of its
    kind as the request asks for, plus the kind's slack (``compoenv.answers``), but never the
    same detail of another candidate (``_rivals``). A value some tool showed must have been
    shown in the episode that reports it."""
    kinds = [kind_of(value, world) for value in answers]
    bindings = walk.answers if len(walk.answers) == len(answers) else [None] * len(answers)
    keep = {canonical(v, k, world) for v, k in zip(answers, kinds)} | _written(walk, world)
    return [AnswerCriterion(id="", value=value, value_kind=kind,
                            allowed=kinds.count(kind) + SLACK.get(kind, 0),
                            shown=shown.has(value),
                            rivals=_rivals(walk, binding, kind, world, keep),
                            description=f"The final message reports {value}")
            for value, kind, binding in zip(answers, kinds, bindings)]


_NUMERIC = {"integer", "decimal"}  # a count's rivals may be written either way
# a name the World knows and one it does not are rivals all the same (another ticket's customer)
_NAMED = {"person", "organization", "city", "title", "text"}
_WRITTEN = 400  # values of one write read for what its report may mention, at most
_SMALL = 32  # integers below this are counts and quantities a report may mention for itself


def _rivals(walk: Walk, binding: Binding | None, kind: str, world: World,
            keep: set[str]) -> list[str]:
    """The same detail of the other records the job's reads showed beside the reported one:
    the other items of the list it was taken from ("the cheapest hotel's postal code" from
    item #2 of a search), the other items where a lookup of the picked item reports a field
    they carry too, and the same field of the other items of any list that shows the value.
    Values the job reports or writes anyway (``keep``) and small integers are no rivals: an
    honest report may name them."""
    if binding is None or binding.source is None:
        return []
    found = [*_picked(walk, binding)] + [
        other for step in walk.steps if step.spec.read_only
        for other in siblings(binding.value, step.result, (binding.path or (None,))[-1])]
    out: list[str] = []
    for value in found:
        if isinstance(value, (bool, dict, list)) or value is None:
            continue
        if isinstance(value, int) and abs(value) < _SMALL:  # a count, not an amount
            continue
        text = answer_text(value)
        if not text.strip() or len(text) > MAX_VALUE_CHARS:
            continue
        own = kind_of(text, world)
        if own != kind and not {own, kind} <= _NUMERIC and not {own, kind} <= _NAMED:
            continue
        if canonical(text, own, world) not in keep and text not in out:
            out.append(text)
    return out[:MAX_RIVALS]


def _picked(walk: Walk, binding: Binding) -> Iterator[Any]:
    """The detail ``binding`` reports, of the other items of the list its record was picked
    from: read off the item itself, handed on from it (the invoice a payment marked paid), or
    the same field where a lookup of the item reports one its list items carry too."""
    step = walk.steps[binding.source]  # type: ignore[index]
    path = binding.path
    if not any(p[:1] == "#" for p in path):  # carried from, or a lookup of, a picked item?
        items = [b for b in step.bindings
                 if b.source is not None and any(p[:1] == "#" for p in b.path)]
        carried = next((b for b in items if same_value(b.value, binding.value)), None)
        if carried is not None:  # the item's own detail, handed on (the invoice paid)
            step, path = walk.steps[carried.source], carried.path  # type: ignore[index]
        elif items and step.spec.read_only:  # a lookup of the item: its other items' field
            at = next(i for i, p in enumerate(items[0].path) if p[:1] == "#")
            step = walk.steps[items[0].source]  # type: ignore[index]
            path = items[0].path[:at + 1] + path
        else:  # a write answers with its own record, not the item's
            return
    at = next(i for i, p in enumerate(path) if p[:1] == "#")
    index = int(path[at][1:])
    for items in extract(step.result, path[:at]):
        if isinstance(items, list):
            for i, item in enumerate(items[:MAX_RIVALS * 4]):
                if i != index:
                    yield from extract(item, path[at + 1:])


def _written(walk: Walk, world: World) -> set[str]:
    """The canonical values of every kind the solution's writes were given or answered (what
    an honest report may mention of its own work)."""
    out: set[str] = set()
    for step in walk.steps:
        if step.spec.read_only:
            continue
        for value in [*step.arguments.values(), *scalars(step.result)][:_WRITTEN]:
            if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                text = answer_text(value)
                if len(text) <= MAX_VALUE_CHARS:
                    own = kind_of(text, world)
                    out.add(canonical(text, own, world))
                    if own == "datetime":  # a report may give its day alone
                        out.add(text[:10])
    return out


def build_rubric(walk: Walk, session: Session, answers: list[str],
                 owned: list[list[Criterion]] = (),  # type: ignore[assignment]
                 distractors: list[str] = (),  # type: ignore[assignment]
                 outcome: bool = False) -> list[Criterion]:
    """Criteria for a walk executed in ``session`` (whose final state the oracle reaches),
    and the criteria of its house rules (``owned``, one list per rule: their ids are set in
    place of the given objects' order, see ``rule_ids``). Services the task does not use
    (``distractors``, and a branch not taken) get a required guard each: writing to them
    fails the task.

    With ``outcome`` (a goal-level request) the rubric checks the end state, the reported
    values and the rules only: no credit for reads, and a message's wording is the agent's,
    checked for its recipient and the facts it must carry (``goal.message_facts``)."""
    free = free_params(walk) if outcome else {}
    criteria: list[Criterion] = []
    for service in walk.services:
        criteria.extend(_state_criteria(service, session, walk, free))
    untouched = [s for s in dict.fromkeys([*walk.guarded, *distractors])
                 if s not in walk.services]
    for service in untouched:
        why = "the other branch was not taken" if service in walk.guarded else \
            "the task does not use it"
        criteria.append(UnchangedCriterion(
            id="", service=service, collection="*", weight=0.5, acts_on=[],
            description=f"Nothing in {service} was changed ({why})"))
    for group in owned:
        criteria.extend(group)
    criteria.extend(_uncovered(walk, criteria, free))
    shown = Shown.of(r.result.get("data") for r in session.log if r.result.get("success"))
    criteria.extend(_answer_criteria(walk, answers, session.world, shown))
    # a read the request asks for as an act ("scale that recipe to 20 servings") shows in no
    # record: a goal-level rubric requires the call itself
    for index in sorted(asked_reads(walk)) if outcome else ():
        step = walk.steps[index]
        criteria.append(CallCriterion(
            id="", name=step.spec.qualified_name, arguments=step.arguments, required=True,
            description=f"Called {step.spec.qualified_name} with {_summary(step.arguments)} "
                        f"(the request asks for it)"))
    for index, step in enumerate(walk.steps):
        if step.spec.read_only and index not in walk.rule_steps and not outcome:
            criteria.append(CallCriterion(
                id="", name=step.spec.qualified_name, arguments=step.arguments, required=False,
                weight=0.5, description=f"Called {step.spec.qualified_name} with "
                                        f"{_summary(step.arguments)}"))
    # required criteria first (the work, then the guards), then credit for the reads; ids
    # follow that order
    criteria.sort(key=lambda c: (not c.required, c.kind == "unchanged", c.kind != "state"))
    return [c.model_copy(update={"id": f"c{i}"}) for i, c in enumerate(criteria)]


def rule_ids(rubric: list[Criterion], owned: list[list[Criterion]]) -> list[list[str]]:
    """The ids ``build_rubric`` gave each rule's criteria (criteria equal but for the id)."""
    bare = [c.model_copy(update={"id": ""}) for c in rubric]
    out = []
    for group in owned:
        out.append([rubric[i].id for i, c in enumerate(bare) if c in group])
    return out
