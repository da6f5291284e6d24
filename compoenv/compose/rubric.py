"""Rubric building: state criteria for every write, answer criteria, call and unchanged guards.

Criteria check only what the request determines: a created record is matched on the values the
solution's calls were given (stated by the user or carried from earlier steps), never on what a
tool or the world model chose by itself (an invented label, a count, an id), so an agent that
passes an optional argument the request leaves open is not punished for it.
"""

from __future__ import annotations

from typing import Any

from compoenv.answers import SLACK, kind_of
from compoenv.compose.records import Walk
from compoenv.reward import _as_number, normalize_text, record_dict, same_value
from compoenv.schema import brief
from compoenv.session import Session
from compoenv.task import (
    AnswerCriterion, CallCriterion, Criterion, StateCriterion, UnchangedCriterion,
)
from compoenv.world import World
from compoenv.worldmodel.base import SimState

__all__ = ["build_rubric", "answer_text", "rule_ids"]


def answer_text(value: Any) -> str:
    """How a reported value is written in ``Task.answer``."""
    if isinstance(value, float):
        return f"{value:.2f}" if value != int(value) else str(int(value))
    return str(value)


def _summary(match: dict[str, Any], limit: int = 4) -> str:
    shown = [f"{k} = {brief(v, 40)}" for k, v in list(match.items())[:limit]]
    more = len(match) - limit
    return ", ".join(shown) + (f" and {more} more field(s)" if more > 0 else "")


def _arguments(walk: Walk, service: str, writes_only: bool = False,
               ) -> tuple[dict[str, list[Any]], list[Any]]:
    """What the request fixes for ``service``'s records: the values its calls were given
    (stated or carried), by parameter name, and the defaults of the optional parameters its
    writes left out (values the request does not fix). With ``writes_only`` (a simulated
    service), only what its writes were given: a search's "rent" filter does not fix the
    listing type of the alert a later call creates."""
    given: dict[str, list[Any]] = {}
    defaults = []
    for index, step in enumerate(walk.steps):
        if step.spec.service != service or index in walk.rule_steps:
            continue  # a house rule's calls are checked by the rule's own criteria
        if writes_only and step.spec.read_only:
            continue
        # a value carried from this service's own simulated answer (the street a booking
        # was given, passed on to the next booking) was the world model's choice, not the
        # request's: it fixes no field of the record it came from
        echoes = {b.param for b in step.bindings if b.source is not None
                  and walk.steps[b.source].spec.service == service
                  and walk.steps[b.source].spec.simulated}
        for param, value in step.arguments.items():
            if param not in echoes and not _among(value, walk.ruled):
                given.setdefault(param, []).append(value)
        if step.spec.read_only:
            continue
        for param, schema in step.spec.parameters.get("properties", {}).items():
            if param not in step.arguments and "default" in schema:
                defaults.append(schema["default"])
    return given, defaults


def _among(value: Any, values: list[Any]) -> bool:
    return any(same_value(v, value) for v in values)


class _Given:
    """The values a service's calls were given, ready to be matched against record fields."""

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


def _state_criteria(service: str, session: Session, walk: Walk) -> list[Criterion]:
    """Criteria for the records the solution wrote in ``service``: created records must hold
    the values the request fixes, modified ones their changes, deleted ones be gone; guards
    around them. Values a tool or the world model chose by itself are not checked."""
    before_all = session.initial_state(service).collections()
    simulated = isinstance(session.state(service), SimState)
    arguments, defaults = _arguments(walk, service, writes_only=simulated)
    given = _Given(arguments)
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
            match = {f: v for f, v in record_dict(after[key]).items()
                     if v != key and given.fixed(f, v, simulated)}
            out.append(StateCriterion(
                id="", service=service, collection=collection, match=match,
                description=f"A new {noun} exists in {service}"
                            + (f" with {_summary(match)}" if match else "")))
        for key in modified:
            if (collection, key) in ruled:
                continue
            old, new = record_dict(before[key]), record_dict(after[key])
            # a typed tool's own effects (a status moved to "cancelled") are the request's
            # doing; a simulated tool's are the world model's choice unless an argument says
            match = {f: v for f, v in new.items() if old.get(f) != v
                     and (given.fixed(f, v, simulated)
                          or not (simulated or _among(v, defaults)))}
            out.append(StateCriterion(
                id="", service=service, collection=collection, key=key, match=match,
                changed=True,
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
            allow_new=len(created), required=False, weight=0.5,
            description=f"No other {collection.replace('_', ' ')} in {service} were changed"))
    out.append(UnchangedCriterion(
        id="", service=service, collection="*", except_collections=touched, required=False,
        weight=0.5, description=f"Nothing else in {service} was changed"))
    return out


def _answer_criteria(answers: list[str], world: World) -> list[Criterion]:
    """One criterion per value to report; each may stand beside as many other values of its
    kind as the request asks for, plus the kind's slack (``compoenv.answers``)."""
    kinds = [kind_of(value, world) for value in answers]
    return [AnswerCriterion(id="", value=value, value_kind=kind,
                            allowed=kinds.count(kind) + SLACK.get(kind, 0),
                            description=f"The final message reports {value}")
            for value, kind in zip(answers, kinds)]


def build_rubric(walk: Walk, session: Session, answers: list[str],
                 owned: list[list[Criterion]] = ()) -> list[Criterion]:  # type: ignore[assignment]
    """Criteria for a walk executed in ``session`` (whose final state the oracle reaches),
    and the criteria of its house rules (``owned``, one list per rule: their ids are set in
    place of the given objects' order, see ``rule_ids``)."""
    criteria: list[Criterion] = []
    for service in walk.services:
        criteria.extend(_state_criteria(service, session, walk))
    for service in dict.fromkeys(walk.guarded):  # the branch not taken leaves its service be
        if service not in walk.services:
            criteria.append(UnchangedCriterion(
                id="", service=service, collection="*", required=False, weight=0.5,
                description=f"Nothing in {service} was changed (the other branch was not "
                            f"taken)"))
    criteria.extend(_answer_criteria(answers, session.world))
    for group in owned:
        criteria.extend(group)
    for index, step in enumerate(walk.steps):
        if step.spec.read_only and index not in walk.rule_steps:
            criteria.append(CallCriterion(
                id="", name=step.spec.qualified_name, arguments=step.arguments, required=False,
                weight=0.5, description=f"Called {step.spec.qualified_name} with "
                                        f"{_summary(step.arguments)}"))
    # required criteria first, then guards; ids follow that order
    criteria.sort(key=lambda c: (not c.required, c.kind != "state"))
    return [c.model_copy(update={"id": f"c{i}"}) for i, c in enumerate(criteria)]


def rule_ids(rubric: list[Criterion], owned: list[list[Criterion]]) -> list[list[str]]:
    """The ids ``build_rubric`` gave each rule's criteria (criteria equal but for the id)."""
    bare = [c.model_copy(update={"id": ""}) for c in rubric]
    out = []
    for group in owned:
        out.append([rubric[i].id for i, c in enumerate(bare) if c in group])
    return out
