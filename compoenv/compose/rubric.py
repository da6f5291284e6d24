"""Rubric building: state criteria for every write, answer criteria, call and unchanged guards."""

from __future__ import annotations

from typing import Any

from compoenv.compose.walk import Walk
from compoenv.reward import record_dict
from compoenv.schema import brief
from compoenv.session import Session
from compoenv.task import (
    AnswerCriterion, CallCriterion, Criterion, StateCriterion, UnchangedCriterion,
)

__all__ = ["build_rubric", "answer_text"]


def answer_text(value: Any) -> str:
    """How a reported value is written in ``Task.answer``."""
    if isinstance(value, float):
        return f"{value:.2f}" if value != int(value) else str(int(value))
    return str(value)


def _summary(match: dict[str, Any], limit: int = 4) -> str:
    shown = [f"{k} = {brief(v, 40)}" for k, v in list(match.items())[:limit]]
    more = len(match) - limit
    return ", ".join(shown) + (f" and {more} more field(s)" if more > 0 else "")


def _state_criteria(service: str, session: Session) -> list[Criterion]:
    before_all = session.initial_state(service).collections()
    out: list[Criterion] = []
    for collection, after in session.state(service).collections().items():
        before = before_all.get(collection, {})
        noun = collection.rstrip("s").replace("_", " ")
        created = [k for k in after if k not in before]
        modified = [k for k in after
                    if k in before and after[k] is not before[k] and after[k] != before[k]]
        deleted = [k for k in before if k not in after]
        for key in created:
            match = {f: v for f, v in record_dict(after[key]).items() if v != key}
            out.append(StateCriterion(
                id="", service=service, collection=collection, match=match,
                description=f"A new {noun} exists in {service} with {_summary(match)}"))
        for key in modified:
            old, new = record_dict(before[key]), record_dict(after[key])
            match = {f: v for f, v in new.items() if old.get(f) != v}
            out.append(StateCriterion(
                id="", service=service, collection=collection, key=key, match=match,
                description=f"{noun.capitalize()} {key} in {service} now has {_summary(match)}"))
        for key in deleted:
            out.append(StateCriterion(
                id="", service=service, collection=collection, key=key, exists=False,
                description=f"{noun.capitalize()} {key} was removed from {service}"))
        if not (created or modified or deleted):
            continue  # guards sit beside the writes; an untouched collection earns no credit
        out.append(UnchangedCriterion(
            id="", service=service, collection=collection, except_keys=modified + deleted,
            allow_new=len(created), required=False, weight=0.5,
            description=f"No other {collection.replace('_', ' ')} in {service} were changed"))
    return out


def build_rubric(walk: Walk, session: Session, answers: list[str]) -> list[Criterion]:
    """Criteria for a walk executed in ``session`` (whose final state the oracle reaches)."""
    criteria: list[Criterion] = []
    for service in walk.services:
        criteria.extend(_state_criteria(service, session))
    for service in walk.guarded:  # the branch not taken must leave its service alone
        if service in walk.services:
            continue
        collections = [c for c, r in session.state(service).__dict__.items()
                       if isinstance(r, dict)]
        for collection in collections:  # together they weigh like one guard (0.5)
            criteria.append(UnchangedCriterion(
                id="", service=service, collection=collection, required=False,
                weight=0.5 / len(collections),
                description=f"Nothing in {service} {collection.replace('_', ' ')} was "
                            f"changed (the other branch was not taken)"))
    for value in answers:
        criteria.append(AnswerCriterion(id="", value=value,
                                        description=f"The final message reports {value}"))
    for step in walk.steps:
        if step.spec.read_only:
            criteria.append(CallCriterion(
                id="", name=step.spec.qualified_name, arguments=step.arguments, required=False,
                weight=0.5, description=f"Called {step.spec.qualified_name} with "
                                        f"{_summary(step.arguments)}"))
    # required criteria first, then guards; ids follow that order
    criteria.sort(key=lambda c: (not c.required, c.kind != "state"))
    return [c.model_copy(update={"id": f"c{i}"}) for i, c in enumerate(criteria)]
