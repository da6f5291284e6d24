"""Variants of a task's solution: wrong work the rubric must fail, right work it must pass.

A task is an exam: its rubric accepts every right way of doing the job and no wrong one. The
variants here are what ``python -m bench.grader`` and the exploit agents play against composed
tasks:

- wrong work: one argument of one write changed to another valid value of the same kind
  (another restaurant from the same search, another amount, another recipient), one fan-out
  item dropped, the decoy a house rule names touched, a write to a record or a service the task
  is not about, one of the solution's own writes undone afterwards;
- right work: independent calls reordered, extra reads, the report written as bullets, a
  numbered list, a table or labelled sentences, and an honest verbose report that also lists
  what was created and how many.

Each builder returns ``Play`` objects (the calls and the final message), or nothing when the
task offers nothing to vary.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from typing import Any, Iterator

from compoenv.compose.goal import BODIES
from compoenv.compose.records import record_keys
from compoenv.compose.values import MISSING, fresh_value
from compoenv.compose.verify import free_wording, oracle_message
from compoenv.registry import Registry, RegistryError
from compoenv.schema import free_text as is_free_text
from compoenv.reward import same_value, scalars, siblings
from compoenv.service import ToolSpec, split_qualified
from compoenv.session import Session
from compoenv.task import Call, CallCriterion, OrderCriterion, Task, UnchangedCriterion
from compoenv.world import World

__all__ = ["Play", "WRONG", "RIGHT", "wrong_arguments", "fanout_drops", "decoy_touches",
           "collateral_writes", "undo_own", "reordered", "extra_reads", "reformatted",
           "verbose_report", "is_free_text", "session_for", "writes_of", "facts_dropped",
           "reworded"]

# what a person changes by undoing a write: the verbs of tools that take a record back
_UNDO = re.compile(r"^(cancel|delete|remove|close|withdraw|void|revoke|refund|"
                   r"unpublish|decline|reject|deactivate|unfollow|unsubscribe)")
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")
_ID_NAME = re.compile(r"(^|_)(id|ids|key|number|reference|code)$")


@dataclass(frozen=True)
class Play:
    """One way of doing (or failing) a task: the calls in order and the final message."""

    kind: str
    calls: tuple[Call, ...]
    message: str
    detail: str = ""


def session_for(task: Task, registry: Registry | None = None) -> Session:
    """A fresh session of the task's services and distractors, as an episode starts."""
    from compoenv.compose.verify import replay_simulator

    world = World.get(task.seed, task.today())
    return Session.for_names(task.services + task.distractors, world, registry,
                             replay_simulator(task))


def writes_of(task: Task, registry: Registry) -> list[int]:
    """Indices of the solution's calls that write."""
    out = []
    for i, call in enumerate(task.solution):
        try:
            if not registry.spec(call.name).read_only:
                out.append(i)
        except RegistryError:
            continue
    return out


def work_of(task: Task, registry: Registry) -> list[int]:
    """Indices of the solution's calls that are the job's work: its writes, and the reads the
    request asks for as acts ("scale that recipe to 20 servings"), which the rubric requires."""
    asked = [(c.name, c.arguments) for c in task.rubric
             if isinstance(c, CallCriterion) and c.required]
    writes = set(writes_of(task, registry))
    return [i for i, call in enumerate(task.solution) if i in writes or any(
        call.name == name and same_value(arguments, {k: call.arguments.get(k)
                                                     for k in arguments})
        for name, arguments in asked)]


def _results(task: Task, registry: Registry) -> list[Any]:
    """The data each solution call returns in a fresh replay."""
    session = session_for(task, registry)
    return [session.call(c.name, c.arguments).get("data") for c in task.solution]


def _other_value(param: str, value: Any, schema: dict[str, Any], earlier: list[Any],
                 world: World, rng: random.Random, service: str) -> Any:
    """Another valid value of the same kind as ``value``: a sibling from an earlier result,
    another enum member, another amount, or a fresh value of the parameter's interface."""
    for data in reversed(earlier):
        for other in siblings(value, data):
            return other
    if "anyOf" in schema:
        schema = next((b for b in schema["anyOf"] if b.get("type") != "null"), schema)
    if "enum" in schema:
        others = [v for v in schema["enum"] if v != value]
        return rng.choice(others) if others else MISSING
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        low = schema.get("minimum", -10**9)
        high = schema.get("maximum", 10**9)
        for other in (value + 1, value - 1, value * 2):
            if low <= other <= high and other != value:
                return other
        return MISSING
    if isinstance(value, float):
        other = round(value * 1.37 + 1.0, 2)
        return other if other <= schema.get("maximum", float("inf")) else round(value * 0.7, 2)
    if isinstance(value, list) and value:
        other = _other_value(param, value[0], schema.get("items", {}), earlier, world, rng,
                             service)
        return MISSING if other is MISSING else [other, *value[1:]]
    for _ in range(8):
        person = rng.choice(world.people[1:])
        other = fresh_value(param, schema, world, rng, person, service)
        if other is MISSING:
            break
        if not same_value(value, other):
            return other
    if isinstance(value, str) and is_free_text(schema):
        return value + " (revised)"
    return MISSING


def wrong_arguments(task: Task, registry: Registry, seed: int = 0,
                    free_text: bool = False) -> list[Play]:
    """The solution with one argument of one write changed to another valid value of its
    kind, one play per (write, argument); wording the agent may choose is left out unless
    ``free_text``."""
    rng = random.Random(seed)
    world = World.get(task.seed, task.today())
    results = _results(task, registry)
    message = oracle_message(task)
    # a house rule's own calls (a sign-off email) say only what the rule says: their wording
    # is the agent's
    added = {i for rule in task.rules if rule.without is not None for i in rule.without.drop}
    out = []
    for i in writes_of(task, registry):
        call = task.solution[i]
        spec = registry.spec(call.name)
        props = spec.parameters.get("properties", {})
        loose = free_wording(task, call, registry)  # a goal task's wording: any is right
        for param, value in call.arguments.items():
            schema = props.get(param, {})
            if is_free_text(schema) and (not free_text or i in added or param in loose):
                continue
            if free_text and not is_free_text(schema):
                continue
            other = _other_value(param, value, schema, results[:i], world, rng, spec.service)
            if other is MISSING or same_value(value, other):
                continue
            changed = Call(name=call.name, arguments={**call.arguments, param: other})
            calls = (*task.solution[:i], changed, *task.solution[i + 1:])
            out.append(Play("wrong_argument", calls, message,
                            f"{call.name}.{param}: {value!r} -> {other!r}"))
    return out


def fanout_drops(task: Task, registry: Registry) -> list[Play]:
    """The solution without one of the calls of a write it makes more than once."""
    writes = writes_of(task, registry)
    names = [task.solution[i].name for i in writes]
    out = []
    for name in dict.fromkeys(names):
        if names.count(name) < 2:
            continue
        last = max(i for i in writes if task.solution[i].name == name)
        calls = tuple(c for j, c in enumerate(task.solution) if j != last)
        out.append(Play("fanout_drop", calls, oracle_message(task), f"dropped {name} #{last}"))
    return out


def _id_params(spec: ToolSpec) -> list[str]:
    props = spec.parameters.get("properties", {})
    required = spec.parameters.get("required", [])
    ids = [p for p in required if _ID_NAME.search(p) or str(
        props.get(p, {}).get("x-interface", "")).endswith("Id")]
    return ids


def _fill(spec: ToolSpec, fixed: dict[str, Any], world: World, rng: random.Random
          ) -> dict[str, Any] | None:
    props = spec.parameters.get("properties", {})
    out = dict(fixed)
    person = rng.choice(world.people[1:])
    for param in spec.parameters.get("required", []):
        if param in out:
            continue
        value = fresh_value(param, props.get(param, {}), world, rng, person, spec.service)
        if value is MISSING:
            return None
        out[param] = value
    return out


def _write_on(task: Task, registry: Registry, service: str, key: str, session: Session,
              rng: random.Random, prefer_undo: bool = False) -> Call | None:
    """A write of ``service`` that succeeds on the record ``key`` (called in ``session``)."""
    world = session.world
    specs = [s for s in registry.tools([service]) if not s.read_only and _id_params(s)]
    specs.sort(key=lambda s: (not (_UNDO.match(s.name) and prefer_undo), s.name))
    for spec in specs:
        for param in _id_params(spec):
            arguments = _fill(spec, {param: key}, world, rng)
            if arguments is None:
                continue
            point = session.checkpoint()
            result = session.call(spec.qualified_name, arguments)
            if result.get("success"):
                return Call(name=spec.qualified_name, arguments=arguments)
            session.rollback(point)
    return None


def _oracle_session(task: Task, registry: Registry) -> Session:
    session = session_for(task, registry)
    for call in task.solution:
        session.call(call.name, call.arguments)
    return session


def decoy_touches(task: Task, registry: Registry, seed: int = 0) -> list[Play]:
    """The solution plus one write to the decoy a house rule says to leave alone."""
    rng = random.Random(seed)
    out = []
    for rule in task.rules:
        if rule.kind != "never":
            continue
        guards = [c for c in task.rubric if c.id in rule.criteria
                  and isinstance(c, UnchangedCriterion) and c.keys]
        for guard in guards:
            session = _oracle_session(task, registry)
            for key in guard.keys:
                touch = _write_on(task, registry, guard.service, key, session, rng)
                if touch is not None:
                    out.append(Play("decoy_touched", (*task.solution, touch),
                                    oracle_message(task), f"{touch.name} on {key}"))
                    break
    return out


def _record_keys(session: Session, service: str, initial: bool = True) -> list[str]:
    state = session.initial_state(service) if initial else session.state(service)
    return [k for records in state.collections().values() if isinstance(records, dict)
            for k in records if isinstance(k, str)]


def _shown_ids(task: Task, registry: Registry, service: str) -> list[str]:
    """Ids of records the solution's reads of ``service`` showed."""
    results = _results(task, registry)
    out = []
    for call, data in zip(task.solution, results):
        if split_qualified(call.name)[0] != service:
            continue
        for item in data if isinstance(data, list) else [data]:
            if isinstance(item, dict):
                out += [v for f, v in item.items() if isinstance(v, str) and _ID_NAME.search(f)]
    return out


def collateral_writes(task: Task, registry: Registry, seed: int = 0) -> list[Play]:
    """The solution plus one write the task does not ask for: to a record of a used service
    the task is not about, and (a second play) to a service the task does not use."""
    rng = random.Random(seed)
    carried = {json.dumps(v, sort_keys=True, default=str) for c in task.solution
               for v in c.arguments.values()}
    guarded = {k for c in task.rubric if isinstance(c, UnchangedCriterion) for k in c.keys}
    out = []
    session = _oracle_session(task, registry)
    for service in task.services:
        own = set(_written(session, service))  # taking back its own work is undo_own
        keys = [k for k in dict.fromkeys(_record_keys(session, service)
                                         + _shown_ids(task, registry, service))
                if json.dumps(k) not in carried and k not in guarded and k not in own]
        rng.shuffle(keys)
        for key in keys[:6]:
            touch = _write_on(task, registry, service, key, session, rng)
            if touch is not None:
                out.append(Play("collateral_record", (*task.solution, touch),
                                oracle_message(task), f"{touch.name} on {key}"))
                break
        if out:
            break
    world = session.world
    for service in task.distractors:
        for spec in sorted(registry.tools([service]), key=lambda s: s.name):
            if spec.read_only:
                continue
            arguments = _fill(spec, {}, world, rng)
            if arguments is None:
                continue
            point = session.checkpoint()
            # a write that changed no record (an imported read sent as a POST) did no harm
            # a rubric could see: not collateral work
            if session.call(spec.qualified_name, arguments).get("success") \
                    and _written(session, service):
                out.append(Play("collateral_service",
                                (*task.solution, Call(name=spec.qualified_name,
                                                      arguments=arguments)),
                                oracle_message(task), f"{spec.qualified_name}"))
                return out
            session.rollback(point)
    return out


def _written(session: Session, service: str) -> list[str]:
    """Keys of records created or changed in ``service`` since the episode began."""
    before = session.initial_state(service).collections()
    after = session.state(service).collections()
    out = []
    for name, records in after.items():
        old = before.get(name, {})
        out += [k for k, r in records.items() if isinstance(k, str)
                and (k not in old or (old[k] is not r and old[k] != r))]
    return out


def _records_now(session: Session, service: str) -> dict[str, dict[str, Any]]:
    return {c: r for c, r in record_keys(session.state(service)).items() if r}


def undo_own(task: Task, registry: Registry, seed: int = 0) -> list[Play]:
    """The solution plus one call that takes back a record it created or changed (cancels the
    booking it made, deletes the post it wrote)."""
    rng = random.Random(seed)
    session = _oracle_session(task, registry)
    for service in dict.fromkeys(split_qualified(c.name)[0] for c in task.solution):
        for key in _written(session, service):
            specs = [s for s in registry.tools([service]) if not s.read_only
                     and _UNDO.match(s.name) and _id_params(s)]
            for spec in specs:
                for param in _id_params(spec):
                    arguments = _fill(spec, {param: key}, session.world, rng)
                    if arguments is None:
                        continue
                    point = session.checkpoint()
                    was = _records_now(session, service)
                    if session.call(spec.qualified_name, arguments).get("success") \
                            and _records_now(session, service) != was:
                        undo = Call(name=spec.qualified_name, arguments=arguments)
                        return [Play("undo_own", (*task.solution, undo), oracle_message(task),
                                     f"{spec.qualified_name} on {key}")]
                    session.rollback(point)
    return []


def facts_dropped(task: Task, registry: Registry) -> list[Play]:
    """A goal task's message that must name what the job chose (the hotel), worded without
    it: one play per such call."""
    named = [c for c in task.rubric if isinstance(c, CallCriterion) and c.mentions]
    out = []
    for i, call in enumerate(task.solution):
        loose = sorted(free_wording(task, call, registry))
        facts = {f for c in named if c.name == call.name for f in c.mentions}
        if not loose or not any(f.casefold() in json.dumps(call.arguments).casefold()
                                for f in facts):
            continue
        changed = Call(name=call.name, arguments={**call.arguments, **{
            p: "All done as you asked, thanks." for p in loose}})
        calls = (*task.solution[:i], changed, *task.solution[i + 1:])
        out.append(Play("facts_dropped", calls, oracle_message(task),
                        f"{call.name} worded without {sorted(facts)}"))
    return out


def hedged(task: Task, registry: Registry) -> list[Play]:
    """The oracle's calls with a report that hedges one value: the value asked for and the
    same field of another record the calls showed ("either 31066 or 98379"), one play per
    value that has such a rival. A value the request states, or the job's own writes were
    given or answered, is one an honest report names too: no rival."""
    results = _results(task, registry)
    writes = set(writes_of(task, registry))
    own = [v for i in writes for v in (*scalars(task.solution[i].arguments), *scalars(results[i]))]
    own += [v[:10] for v in own if isinstance(v, str) and _DATETIME.match(v)]  # its day too
    out = []
    for i, value in enumerate(task.answer):
        other = next((o for data in results for o in siblings(_typed(value, data), data)
                      if str(o).strip() and not any(same_value(a, o) for a in task.answer)
                      and not any(same_value(o, v) for v in own)
                      and str(o).casefold() not in task.instruction.casefold()), None)
        if other is None:
            continue
        said = [f"either {value} or {other}" if k == i else a for k, a in enumerate(task.answer)]
        out.append(Play("hedged", tuple(task.solution), "Done. " + "; ".join(said) + ".",
                        f"{value!r} hedged with {other!r}"))
    return out


def hedged_or(task: Task, registry: Registry) -> list[Play]:
    """The oracle's calls with a report that offers a made-up alternative beside one value
    ("TKT-7735 or maybe TKT-7736", "1890 or maybe 2589.30"): one play per id or number
    asked for."""
    out = []
    for i, value in enumerate(task.answer):
        near = _neighbour(value)
        if near is None or any(same_value(near, a) for a in task.answer):
            continue
        said = [f"{value} or maybe {near}" if k == i else a for k, a in enumerate(task.answer)]
        out.append(Play("hedged_or", tuple(task.solution), "Done. " + "; ".join(said) + ".",
                        f"{value!r} or maybe {near!r}"))
    return out


def _neighbour(value: str) -> str | None:
    """A value next to ``value`` of its kind: the next id, a number a third higher."""
    if re.fullmatch(r"[A-Z]{1,5}-\d{2,}", value):
        head, _, digits = value.rpartition("-")
        return f"{head}-{int(digits) + 1:0{len(digits)}d}"
    try:
        number = float(value)
    except ValueError:
        return None
    return f"{number * 1.37 + 1:.2f}"


def _typed(answer: str, data: Any) -> Any:
    """``answer`` as the results hold it (Task.answer writes every value as text)."""
    for item in scalars(data):
        if not isinstance(item, bool) and same_value(answer, item):
            return item
    return answer


def placeholders(task: Task, registry: Registry) -> list[Play]:
    """A goal task's message or document worded as a placeholder ("ok" for the subject and
    the body): one play per such call."""
    # a sign-off a house rule adds says only what the rule fixes (its subject): its body is
    # anyone's, and no placeholder
    fixed = [q.split("<")[0] for r in task.rules if r.kind == "threshold"
             for q in re.findall(r'"([^"<]+)<', r.text)]
    out = []
    for i, call in enumerate(task.solution):
        loose = sorted(free_wording(task, call, registry))
        if not set(loose) & BODIES or any(
                isinstance(v, str) and v.startswith(q) for q in fixed
                for v in call.arguments.values()):
            continue
        changed = Call(name=call.name, arguments={**call.arguments, **dict.fromkeys(loose, "ok")})
        out.append(Play("placeholder", (*task.solution[:i], changed, *task.solution[i + 1:]),
                        oracle_message(task), f"{call.name} worded 'ok'"))
    return out


WRONG = {"wrong_argument": wrong_arguments, "fanout_drop": fanout_drops,
         "decoy_touched": decoy_touches, "collateral": collateral_writes, "undo_own": undo_own,
         "facts_dropped": facts_dropped, "hedged": hedged, "hedged_or": hedged_or,
         "placeholder": placeholders}


# --- right work ------------------------------------------------------------------------------

def _mentions(data: Any) -> set[str]:
    """The scalar values a result shows, as text."""
    return {str(item).casefold() for item in scalars(data)
            if item is not None and not isinstance(item, bool)}


def _uses(call: Call, shown: set[str]) -> bool:
    return bool(_mentions(call.arguments) & shown)


def reordered(task: Task, registry: Registry) -> list[Play]:
    """The solution with one pair of adjacent independent calls swapped: neither uses what
    the other returns, no house rule orders them, and they do not both write one service."""
    results = _results(task, registry)
    ordered = {(c.first.name, c.then) for c in task.rubric if isinstance(c, OrderCriterion)}
    writes = set(writes_of(task, registry))
    for i in range(len(task.solution) - 1):
        a, b = task.solution[i], task.solution[i + 1]
        if (a.name, b.name) in ordered or (b.name, a.name) in ordered:
            continue
        if i in writes and i + 1 in writes \
                and split_qualified(a.name)[0] == split_qualified(b.name)[0]:
            continue
        if _uses(b, _mentions(results[i])) or _uses(a, _mentions(results[i + 1])):
            continue
        calls = (*task.solution[:i], b, a, *task.solution[i + 2:])
        return [Play("reordered", calls, oracle_message(task), f"swapped {a.name}, {b.name}")]
    return []


def extra_reads(task: Task, registry: Registry) -> list[Play]:
    """The solution with every read made once more at the start and at the end (after the
    writes, a careful agent re-checks)."""
    writes = set(writes_of(task, registry))
    reads = tuple(c for i, c in enumerate(task.solution) if i not in writes)
    if not reads:
        return []
    return [Play("extra_reads", (*task.solution, *reads), oracle_message(task),
                 f"{len(reads)} reads repeated")]


def reformatted(task: Task) -> list[Play]:
    """The oracle's calls with the report written the ways honest agents write it."""
    if not task.answer:
        return []
    values = task.answer
    nth = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")
    shapes = {
        "bullets": "Here is the summary:\n" + "\n".join(f"- {v}" for v in values),
        "numbered": "Summary:\n" + "\n".join(f"{i}. {v}" for i, v in enumerate(values, 1)),
        "table": "| what you asked | value |\n|---|---|\n" + "\n".join(
            f"| the {nth[i % 8]} | {v} |" for i, v in enumerate(values)),
        "sentences": " ".join(f"The {nth[i % 8]} one is {v}." for i, v in enumerate(values)),
        "labelled": "\n".join(f"Answer: {v}" for v in values),
    }
    return [Play(f"reformatted_{name}", tuple(task.solution), text, name)
            for name, text in shapes.items()]


def verbose_report(task: Task, registry: Registry) -> list[Play]:
    """The oracle's calls with an honest verbose report: what it did, how many calls of each
    kind, the ids of what it created, then the values asked for."""
    session = session_for(task, registry)
    created = []
    for call in task.solution:
        result = session.call(call.name, call.arguments)
        data = result.get("data")
        spec = session.spec(call.name)
        if spec is not None and not spec.read_only and isinstance(data, dict):
            created += [str(v) for f, v in data.items() if isinstance(v, str)
                        and _ID_NAME.search(f)][:1]
    writes = len(writes_of(task, registry))
    lines = [f"I made {len(task.solution)} calls, {writes} of them changes."]
    if created:
        lines.append("Created or updated: " + ", ".join(created[:6]) + ".")
    if task.answer:
        lines.append("What you asked for: " + "; ".join(task.answer) + ".")
    return [Play("verbose_report", tuple(task.solution), "\n".join(lines), "verbose")]


def reworded(task: Task, registry: Registry) -> list[Play]:
    """A goal task's messages in other words that still carry the facts they must: the
    wording is the agent's."""
    facts: dict[str, list[str]] = {}
    for c in task.rubric:
        if isinstance(c, CallCriterion) and c.mentions:
            facts.setdefault(c.name, []).extend(c.mentions)
    calls, changed = [], 0
    for call in task.solution:
        loose = sorted(free_wording(task, call, registry))
        if loose:
            said = ", ".join(dict.fromkeys(facts.get(call.name, [])))
            words = {p: (f"Hello! Quick note from me{': ' + said if said else ''}." if k == 0
                         else "Thanks, and talk soon.") for k, p in enumerate(loose)}
            call = Call(name=call.name, arguments={**call.arguments, **words})
            changed += 1
        calls.append(call)
    if not changed:
        return []
    return [Play("reworded", tuple(calls), oracle_message(task), f"{changed} calls reworded")]


RIGHT = {"reordered": reordered, "extra_reads": extra_reads, "reworded": reworded,
         "reformatted": lambda task, registry: reformatted(task),
         "verbose_report": verbose_report}
