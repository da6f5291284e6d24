"""Verification every published task passes: oracle 1.0, empty run fails, no leaks, grounding."""

from __future__ import annotations

import re
from typing import Any

from compoenv.compose.rubric import answer_text
from compoenv.compose.walk import Rejected, Walk
from compoenv.registry import Registry
from compoenv.reward import Outcome, RubricResult, check_criterion, score_rubric
from compoenv.schema import extract
from compoenv.session import Session
from compoenv.task import Call, Task
from compoenv.world import World

__all__ = ["verify_task", "verify_walk", "replay", "replay_simulator", "oracle_message"]


def oracle_message(task: Task) -> str:
    """The oracle's final message: it reports every answer value."""
    if not task.answer:
        return "Done."
    return "Done. " + "; ".join(task.answer) + "."


def replay_simulator(task: Task) -> Any:
    """A simulator that answers from the task's recorded world-model answers (offline for the
    rest), so a replay sees exactly what the composer saw; None when nothing was recorded."""
    answers = task.recorded.get("answers") or {}
    if not answers:
        return None
    from compoenv.worldmodel import OfflineWorldModel, Simulator

    return Simulator(OfflineWorldModel(), recorded=answers)


def _session(task: Task, registry: Registry | None) -> Session:
    return Session.for_names(task.services + task.distractors, World.get(task.seed), registry,
                             replay_simulator(task))


def replay(task: Task, calls: bool = True, registry: Registry | None = None) -> RubricResult:
    """Score the task's solution (or, with ``calls=False``, an empty run) on a fresh World."""
    session = _session(task, registry)
    message = ""
    if calls:
        for call in task.solution:
            session.call(call.name, call.arguments)
        message = oracle_message(task)
    return score_rubric(task.rubric, Outcome(session, message))


def verify_task(task: Task, registry: Registry | None = None) -> None:
    """Checks that need only the task: no answer is given away by the instruction, oracle
    scores 1.0, an empty run fails every required criterion, and a solution with one wrong
    argument scores below 1.0.

    Raises:
        Rejected: with the reason (``leak``, ``no_required``, ``oracle_fails``, ``trivial``,
            ``insensitive``).
    """
    text = task.instruction.casefold()
    for value in task.answer:
        if value.casefold() in text:
            raise Rejected("leak", f"answer {value!r} appears in the instruction")
    if not any(c.required for c in task.rubric):
        raise Rejected("no_required")
    wrong = _one_wrong_argument(task)
    session, point = _session(task, registry), None
    for i, call in enumerate(task.solution):
        if wrong is not None and i == wrong[0]:
            point = session.checkpoint()  # the wrong run shares every call before this one
        session.call(call.name, call.arguments)
    # each run needs only a yes or no, so checks stop at the first criterion that settles it
    oracle = Outcome(session, oracle_message(task))
    if not all(check_criterion(c, oracle)[0] for c in task.rubric):
        failed = [c.description for c in score_rubric(task.rubric, oracle).criteria
                  if not c.passed]
        raise Rejected("oracle_fails", "; ".join(failed[:3]))
    empty = Outcome(_session(task, registry), "")
    passed = [c.id for c in task.rubric if c.required and check_criterion(c, empty)[0]]
    if passed:
        raise Rejected("trivial", f"an empty run passes {passed}")
    if wrong is not None and point is not None:
        session.rollback(point)
        index, changed = wrong
        for call in [changed, *task.solution[index + 1:]]:
            session.call(call.name, call.arguments)
        wronged = Outcome(session, oracle_message(task))
        if all(check_criterion(c, wronged)[0] for c in task.rubric):
            raise Rejected("insensitive", "a solution with a wrong argument still scores 1.0",
                           (changed.name,))


def _one_wrong_argument(task: Task) -> tuple[int, Call] | None:
    """The last string argument of the solution changed: (call index, changed call)."""
    for i in range(len(task.solution) - 1, -1, -1):
        call = task.solution[i]
        for key, value in call.arguments.items():
            if isinstance(value, str) and value:
                return i, Call(name=call.name, arguments={**call.arguments, key: value + "x"})
    return None


def verify_walk(walk: Walk, task: Task) -> None:
    """Checks that need the walk's provenance: intermediate values never appear in the
    instruction, and every value carried between steps resolves to exactly one value."""
    text = task.instruction.casefold()
    stated = {str(b.value).casefold() for s in walk.steps for b in s.bindings if b.source is None}
    for value in walk.hidden:  # compared numbers and aggregates stay for the agent to find
        if re.search(rf"(?<![\w.]){re.escape(answer_text(value).casefold())}(?![\w]|\.\d)", text):
            raise Rejected("leak", f"hidden value {value!r} appears in the instruction")
    for step in walk.steps:
        for b in step.bindings:
            if b.source is None:
                continue
            value = str(b.value).casefold()
            if len(value) >= 3 and value not in stated and value in text:
                raise Rejected("leak", f"intermediate value {b.value!r} appears in the instruction")
            found = extract(walk.steps[b.source].result, b.path)
            if len(found) != 1:
                raise Rejected("ambiguous_grounding", f"{b.param} resolves to {len(found)} values",
                               (walk.steps[b.source].spec.qualified_name,))
