"""Verification every published task passes: oracle 1.0, empty run fails, no leaks, grounding."""

from __future__ import annotations

from typing import Any

from compoenv.compose.identity import call_problem
from compoenv.compose.rubric import STATUS_FIELDS, answer_text
from compoenv.compose.walk import Rejected, Walk
from compoenv.registry import Registry, RegistryError
from compoenv.reward import (
    GUARDS, Outcome, RubricResult, check_criterion, normalize_text, score_rubric, scores_full,
)
from compoenv.schema import brief, extract, free_text
from compoenv.session import Session
from compoenv.service import split_qualified
from compoenv.task import Call, CallCriterion, RuleChange, StateCriterion, Task
from compoenv.world import World

__all__ = ["verify_task", "verify_walk", "verify_order", "replay", "replay_simulator",
           "verify_alternative", "free_wording",
           "oracle_message"]


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
    world = World.get(task.seed, task.today())
    return Session.for_names(task.services + task.distractors, world, registry,
                             replay_simulator(task))


def replay(task: Task, calls: bool = True, registry: Registry | None = None) -> RubricResult:
    """Score the task's solution (or, with ``calls=False``, an empty run) on a fresh World."""
    session = _session(task, registry)
    message = ""
    if calls:
        for call in task.solution:
            session.call(call.name, call.arguments)
        message = oracle_message(task)
    return score_rubric(task.rubric, Outcome(session, message, task.instruction))


def verify_task(task: Task, registry: Registry | None = None) -> None:
    """Checks that need only the task: no answer is given away by the instruction, every call
    names one person per role and nobody acts on themself (``identity``), the oracle scores 1.0, an empty run fails every required criterion, the oracle still scores 1.0 with
    its optional parameters passed explicitly (at their defaults, or at values the rubric
    states), a solution ignoring any one house rule fails that rule's criteria, and a solution
    with one wrong argument scores below 1.0.

    Raises:
        Rejected: with the reason (``leak``, ``no_required``, ``identity``, ``oracle_fails``,
            ``trivial``, ``optional_sensitive``, ``rule_not_needed``, ``insensitive``).
    """
    text = task.instruction.casefold()
    for value in task.answer:  # as a word or number: a tax rate of 3 is not in "2026-04-03"
        if appears(value.casefold(), text):
            raise Rejected("leak", f"answer {value!r} appears in the instruction")
    if not any(c.required and c.kind not in GUARDS for c in task.rubric):
        raise Rejected("no_required")
    registry = registry or Registry.default()
    world = World.get(task.seed, task.today())
    for call in task.solution:  # one person per role, nobody acting on themself, ...
        problem = call_problem(registry.spec(call.name), call.arguments, world)
        if problem is not None:
            raise Rejected("identity", f"{problem} in {call.name}({brief(call.arguments)})",
                           (call.name,))
    # what the rubric holds, normalised: the same for every call's check
    graded = _graded_texts(task) if task.guidance != "steps" else set()
    wrong = _one_wrong_argument(task, registry, graded)
    explicit = _explicit_optional(task, registry)
    branch_at = {i for i, _ in explicit} | ({wrong[0]} if wrong is not None else set())
    session, points = _session(task, registry), {}
    for i, call in enumerate(task.solution):
        if i in branch_at:
            points[i] = session.checkpoint()  # variant runs share every call before this one
        session.call(call.name, call.arguments)
    # each run needs only a yes or no, so checks stop at the first criterion that settles it
    oracle = Outcome(session, oracle_message(task), task.instruction)
    if not all(check_criterion(c, oracle)[0] for c in task.rubric):
        failed = [c.description for c in score_rubric(task.rubric, oracle).criteria
                  if not c.passed]
        raise Rejected("oracle_fails", "; ".join(failed[:3]))
    empty = Outcome(_session(task, registry), "", task.instruction)
    passed = [c.id for c in task.rubric if c.required and c.kind not in GUARDS
              and check_criterion(c, empty)[0]]
    if passed:
        raise Rejected("trivial", f"an empty run passes {passed}")
    for index, variant in explicit:
        outcome = _variant(task, session, points[index], index, variant)
        failed = [c.id for c in task.rubric if not check_criterion(c, outcome)[0]]
        if failed:
            extra = sorted(set(variant.arguments) - set(task.solution[index].arguments))
            raise Rejected("optional_sensitive", f"passing {extra} of {variant.name} "
                           f"explicitly fails {failed}", (variant.name,))
    for rule in task.rules:  # each rule is needed: ignoring it fails one of its criteria
        if rule.without is None:
            continue
        outcome = _ignoring(task, rule.without, registry)
        own = [c for c in task.rubric if c.id in rule.criteria]
        if not own or all(check_criterion(c, outcome)[0] for c in own):
            raise Rejected("rule_not_needed", f"a solution ignoring house rule {rule.id} "
                           f"({rule.kind}) still passes its criteria")
    if wrong is not None:
        index, changed = wrong
        # scored whole: two criteria alike (two emails to one person) need a call each
        if scores_full(task.rubric, _variant(task, session, points[index], index, changed)):
            raise Rejected("insensitive", "a solution with a wrong argument still scores 1.0",
                           (changed.name,))


def verify_alternative(walk: Walk, task: Task, registry: Registry | None = None) -> None:
    """A goal-level task's rubric checks the outcome, so another valid plan must score 1.0
    like the oracle: the solution run as a plan, each found value taken from what this run's
    own calls returned, with every message worded otherwise (carrying the facts its criterion
    asks for), the first and last reads repeated, and each run of calls to one tool that do
    not feed each other (a fan-out's items) in reverse order.

    Raises:
        Rejected: ``alternative_fails``, with the criteria the other plan failed.
    """
    if task.guidance == "steps":
        return
    registry = registry or Registry.default()
    order = walk.order or list(range(len(walk.steps)))
    facts: dict[str, list[str]] = {}
    for c in task.rubric:
        if isinstance(c, CallCriterion) and c.mentions:
            facts.setdefault(c.name, []).extend(c.mentions)
    plan: list[int] = []
    run: list[int] = []
    for index in order + [-1]:
        same = index >= 0 and run and walk.steps[index].spec.qualified_name == \
            walk.steps[run[-1]].spec.qualified_name
        if run and not same:
            fed = any(b.source in run for i in run for b in walk.steps[i].bindings)
            plan.extend(run if fed else reversed(run))
            run = []
        if index >= 0:
            run.append(index)
    reads = [i for i in order if walk.steps[i].spec.read_only]
    # the first read is repeated first only if it needs nothing found before it (a re-check
    # of what the job made cannot run before it is made)
    first = [i for i in reads[:1] if all(b.source is None for b in walk.steps[i].bindings)]
    plan = first + plan + reads[-1:]
    session = _session(task, registry)
    graded = _graded_texts(task)
    results: dict[int, Any] = {}
    for index in plan:
        step = walk.steps[index]
        call = Call(name=step.spec.qualified_name, arguments={})
        args: dict[str, Any] = {}
        for b in step.bindings:
            if b.source is None:
                args[b.param] = b.value
                continue
            # what this run found there, unless it is what the walk found (then the value as
            # the walk used it: the day of a found time)
            found = extract(results.get(b.source), b.path)
            args[b.param] = found[0] if found and found != extract(
                walk.steps[b.source].result, b.path) else b.value
        call = Call(name=call.name, arguments=args)
        free = sorted(free_wording(task, call, registry, graded))
        said = list(dict.fromkeys(facts.get(call.name, [])))
        for k, param in enumerate(free):
            args[param] = ("Following up as discussed, thank you." if k else
                           "A quick update from me" + (": " + ", ".join(said) if said else "")
                           + ".")
        results.setdefault(index, session.call(call.name, args).get("data"))
    other = score_rubric(task.rubric, Outcome(session, oracle_message(task), task.instruction))
    if other.rubric_score < 1.0:
        failed = [c.description for c in other.criteria if not c.passed]
        raise Rejected("alternative_fails", "another valid plan (reordered, extra reads, "
                       "other wording) fails: " + "; ".join(failed[:3]))


def _read_only(name: str, registry: Registry) -> bool:
    try:
        return registry.spec(name).read_only
    except RegistryError:
        return False


def _ignoring(task: Task, change: RuleChange, registry: Registry) -> Outcome:
    """The outcome of the solution with a house rule ignored: its calls left out, the
    arguments it fixed passed as they would be without it."""
    session = _session(task, registry)
    replace = {r.call: r.arguments for r in change.replace}
    for i, call in enumerate(task.solution):
        if i not in change.drop:
            session.call(call.name, replace.get(i, call.arguments))
    return Outcome(session, oracle_message(task), task.instruction)


def _variant(task: Task, session: Session, point: Any, index: int, call: Call) -> Outcome:
    """The outcome of the solution with call ``index`` replaced by ``call``."""
    session.rollback(point)
    for step in [call, *task.solution[index + 1:]]:
        session.call(step.name, step.arguments)
    return Outcome(session, oracle_message(task), task.instruction)


def _explicit_optional(task: Task, registry: Registry) -> list[tuple[int, Call]]:
    """Solution calls with their left-out optional parameters passed explicitly: at their
    defaults, and (a second variant) at the values the rubric states for fields of the same
    name. A correct agent may be that explicit; the rubric must not mind."""
    stated: dict[str, dict[str, Any]] = {}
    for c in task.rubric:
        if isinstance(c, StateCriterion):  # a record's status is where it stands, not a value
            stated.setdefault(c.service, {}).update(  # the request gives its calls
                {f: v for f, v in c.match.items() if f not in STATUS_FIELDS})
    out = []
    for i, call in enumerate(task.solution):
        service, _ = split_qualified(call.name)
        try:
            parameters = registry.spec(call.name).parameters
        except RegistryError:
            continue
        optional = [p for p in parameters.get("properties", {})
                    if p not in call.arguments and p not in parameters.get("required", ())]
        schemas = parameters.get("properties", {})
        defaults = {p: schemas[p]["default"] for p in optional if "default" in schemas[p]}
        known = {p: stated[service][p] for p in optional if p in stated.get(service, {})}
        for extra in (defaults, known):
            if extra:
                out.append((i, Call(name=call.name, arguments={**call.arguments, **extra})))
    return out


def _one_wrong_argument(task: Task, registry: Registry,
                        graded: set[str] | None = None) -> tuple[int, Call] | None:
    """The last string argument of the solution changed: (call index, changed call). Not
    wording a goal-level request leaves to the agent (``free_wording``), nor a read's."""
    for i in range(len(task.solution) - 1, -1, -1):
        call = task.solution[i]
        if task.guidance != "steps" and _read_only(call.name, registry):
            continue  # an outcome rubric leaves the reads to the agent
        free = free_wording(task, call, registry, graded)
        for key, value in call.arguments.items():
            if isinstance(value, str) and value and key not in free:
                return i, Call(name=call.name, arguments={**call.arguments, key: value + "x"})
    return None


def free_wording(task: Task, call: Call, registry: Registry,
                 graded: set[str] | None = None) -> set[str]:
    """The parameters of a solution call whose wording the task leaves to the agent: in a
    goal-level task, free text (a subject, a body) whose value no criterion holds.
    ``graded``: the task's ``_graded_texts``, when the caller has them already (checking
    several calls of one task)."""
    if task.guidance == "steps":
        return set()
    try:
        props = registry.spec(call.name).parameters.get("properties", {})
    except RegistryError:
        return set()
    if graded is None:
        graded = _graded_texts(task)
    return {p for p, v in call.arguments.items() if isinstance(v, str)
            and free_text(props.get(p, {})) and normalize_text(v) not in graded}


def _graded_texts(task: Task) -> set[str]:
    """Every string value a criterion of the task holds, normalised."""
    out: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, str):
            out.add(normalize_text(value))
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for c in task.rubric:
        walk(getattr(c, "match", None))
        walk(getattr(c, "arguments", None))
        walk(getattr(c, "then_arguments", None))
        first = getattr(c, "first", None)
        if first is not None:
            walk(first.arguments)
    return out


def appears(value: str, text: str) -> bool:
    """Whether ``value`` occurs in ``text`` as a whole word or number: "vie" is not in
    "vienna", nor "12.5" in "112.50" or "12.55"."""
    start = text.find(value)
    while start != -1:
        end = start + len(value)
        before = text[start - 1] if start else " "
        after = text[end:end + 2]
        if not (_word(before) or before == ".") and not (
                after[:1] and (_word(after[0]) or (after[0] == "." and after[1:2].isdigit()))):
            return True
        start = text.find(value, start + 1)
    return False


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"


def verify_walk(walk: Walk, task: Task) -> None:
    """Checks that need the walk's provenance: intermediate values never appear in the
    instruction, and every value carried between steps resolves to exactly one value."""
    text = task.instruction.casefold()
    stated = {str(b.value).casefold() for s in walk.steps for b in s.bindings if b.source is None}
    for value in walk.hidden:  # compared numbers and aggregates stay for the agent to find
        if appears(answer_text(value).casefold(), text):
            raise Rejected("leak", f"hidden value {value!r} appears in the instruction")
    for step in walk.steps:
        for b in step.bindings:
            if b.source is None:
                continue
            value = str(b.value).casefold()
            # as a word: the airport code "VIE" inside "Vienna" gives nothing away
            if len(value) >= 3 and value not in stated and appears(value, text):
                raise Rejected("leak", f"intermediate value {b.value!r} appears in the instruction")
            found = extract(walk.steps[b.source].result, b.path)
            if not found or any(v != found[0] for v in found):  # one value (items may share it)
                raise Rejected("ambiguous_grounding", f"{b.param} resolves to {len(found)} values",
                               (walk.steps[b.source].spec.qualified_name,))


def verify_order(walk: Walk, task: Task, registry: Registry | None = None) -> None:
    """A solution whose calls run in another order than the walk ran them (a house rule's
    step placed before the step it is for) must see every walk step's result again: an id
    the walk reported or carried must not depend on the order.

    Raises:
        Rejected: ``order_dependent``.
    """
    order = walk.order or list(range(len(walk.steps)))
    if order == sorted(order):
        return
    used: dict[int, list[tuple[str, ...]]] = {}
    for b in [b for s in walk.steps for b in s.bindings] + walk.answers:
        if b.source is not None:
            used.setdefault(b.source, []).append(b.path)
    session = _session(task, registry)
    for index, call in zip(order, task.solution):
        result = session.call(call.name, call.arguments)
        if any(extract(result.get("data"), path) != extract(walk.steps[index].result, path)
               for path in used.get(index, ())):
            raise Rejected("order_dependent", f"{call.name} returns something else when the "
                           f"house rules' calls come first", (call.name,))
