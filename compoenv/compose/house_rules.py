"""House rules of long tasks: standing instructions stated before the request, each with its own
criteria, each needed (a solution that ignores it fails them).

- naming: what the job creates is labelled ``<prefix>-<the anchor's id>`` (``Naming``, applied
  while the walk runs, so the records hold the label);
- source_of_truth: the request quotes a figure that differs from the record's, and the rule
  says the record wins;
- threshold: a payment at or above a figure needs a sign-off email first (a step per payment);
- ordering: a record is re-checked before anything changes in the service that acts on it;
- never: a near-duplicate record (a decoy) is to be left alone (a guard, no step).

Each rule function returns a ``Draft`` or None when the walk offers it nothing to act on.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from compoenv.compose.identity import person_of
from compoenv.compose.labels import plural, service_label
from compoenv.compose.records import Binding, Walk
from compoenv.compose.render import NAMED, noun, reference, words
from compoenv.compose.rubric import answer_text
from compoenv.compose.steps import as_list_path, single_result
from compoenv.reward import record_dict, same_value
from compoenv.schema import Slot, extract
from compoenv.service import ToolSpec
from compoenv.task import (
    Call, CallCriterion, Criterion, OrderCriterion, StateCriterion, UnchangedCriterion,
)
from compoenv.worldmodel.base import SimState

__all__ = ["NAMED", "Draft", "Naming", "naming_for", "source_of_truth", "threshold", "ordering",
           "never", "solution_order"]

_NAMES = ("title", "name", "memo")  # the parameters a naming scheme fills, in that order
_IDS = frozenset({"FlightNumber", "BookingReference", "TrackingNumber"})
# amounts that commit the company's money: what a second signature is for (not a price alert)
_SIGNED_OFF = frozenset({"payment", "amount_due", "salary", "budget", "fee", "total", "fare",
                         "rent", "premium", "cost", "refund", "deposit", "value", "claim",
                         "bonus", "expense", "deduction", "spend", "pay"})


@dataclass
class Draft:
    """A house rule being built: its text, the steps it adds (to be placed before ``before``),
    the arguments it changes (step, parameter, value without the rule; None = left out), and
    its criteria."""

    kind: str
    text: str
    added: list[int] = field(default_factory=list)
    before: dict[int, int] = field(default_factory=dict)  # added step -> the step it precedes
    changes: list[tuple[int, str, Any]] = field(default_factory=list)
    criteria: list[Criterion] = field(default_factory=list)


def _id_like(interface: str | None, path: tuple[str, ...]) -> bool:
    kind = interface or ""
    return kind.endswith("Id") or kind in _IDS or (path[-1:] == ("id",) and kind != "")


def _texty(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "string" and schema.get("x-interface") in (None, "Text") \
        and "enum" not in schema and "format" not in schema


class Naming:
    """The naming scheme ``value`` (``close-INV-2047``): every write of the walk with a title,
    name or memo parameter gets it, and the record it creates holds it."""

    def __init__(self, value: str, label: str, walk: Walk) -> None:
        self.value, self.label, self.walk = value, label, walk
        self.applied: list[tuple[int, str, Any]] = []  # (step, param, value without the rule)

    def apply(self, spec: ToolSpec, bindings: list[Binding]) -> list[Binding]:
        props = spec.parameters.get("properties", {})
        param = next((p for p in _NAMES if p in props and _texty(props[p])), None)
        if param is None:
            return bindings
        old = next((b for b in bindings if b.param == param), None)
        if old is not None and old.source is not None:
            return bindings  # a carried title is the record's own
        self.walk.shown[(spec.qualified_name, param)] = NAMED
        self._pending = (param, None if old is None else old.value)
        new = Binding(param, self.value, None, (), "Text")
        return [new if b.param == param else b for b in bindings] + ([] if old else [new])

    def kept(self, index: int) -> None:
        """The step just run at ``index`` was kept: its change counts."""
        pending = getattr(self, "_pending", None)
        if pending is not None:
            self.applied.append((index, *pending))
        self._pending = None

    def dropped(self) -> None:
        self._pending = None


def naming_for(walk: Walk, prefix: str, picks: list[tuple[int, int]], today: Any) -> Naming:
    """A naming scheme from the job's anchor (the first stage): ``<prefix>-<its id>``; for a
    job over a whole list, ``<prefix>-<year and month>``."""
    first = walk.steps[0]
    item = next((k for i, k in picks if i == 0), None)
    for slot in first.spec.outputs:
        if not _id_like(slot.interface, slot.path) or slot.kind != "string":
            continue
        path = slot.path
        if path[:1] == ("*",):
            if item is None:
                continue
            path = (f"#{item}",) + path[1:]
        found = extract(first.result, path)
        if len(found) == 1 and isinstance(found[0], str) and 2 <= len(found[0]) <= 40:
            return Naming(f"{prefix}-{found[0]}", reference(first.spec, path, slot.interface),
                          walk)
    return Naming(f"{prefix}-{today:%Y-%m}", "the year and month, as YYYY-MM", walk)


def naming_rule(naming: Naming, walk: Walk, session: Any) -> Draft | None:
    """The naming rule's text and criteria, once the walk has run."""
    draft = Draft("naming", "")
    things = []
    for index, param, old in naming.applied:
        criteria = _holding(walk, session, index, naming.value, f"is labelled {naming.value}")
        if not criteria:  # no record shows it (a payment's memo): the call must carry it
            spec = walk.steps[index].spec
            criteria = [CallCriterion(
                id="", name=spec.qualified_name, arguments={param: naming.value},
                required=True, description=f"House rule: {spec.qualified_name} is labelled "
                                           f"{naming.value} ({param})")]
        draft.criteria += criteria
        draft.changes.append((index, param, old))
        things.append(f"the {words(param)} of every {noun(walk.steps[index].spec)}")
    if not draft.criteria:
        return None
    walk.ruled.append(naming.value)
    listed = list(dict.fromkeys(things))
    what = ", ".join(listed[:-1]) + " and " + listed[-1] if len(listed) > 1 else listed[0]
    prefix = naming.value.split("-")[0]
    draft.text = (f'Label what you create for this job "{prefix}-<'
                  f'{naming.label}>": {what}.')
    return draft


def _holding(walk: Walk, session: Any, index: int, value: Any, says: str) -> list[Criterion]:
    """Criteria that the records step ``index`` wrote hold ``value`` in the fields that hold
    it now (a created record by its fields; a changed one by its key)."""
    spec = walk.steps[index].spec
    state = session.state(spec.service)
    out: list[Criterion] = []
    for collection, key, kind in walk.effects.get(index, []):
        if kind == "deleted":
            continue
        record = record_dict(state.collections().get(collection, {}).get(key))
        # an outgoing payment may be booked as a negative amount
        match = {f: v for f, v in record.items() if v != key and (same_value(value, v) or (
            isinstance(value, (int, float)) and isinstance(v, (int, float))
            and not isinstance(v, bool) and v < 0 and same_value(value, -v)))}
        if not match:
            continue
        noun_ = collection.rstrip("s").replace("_", " ")
        out.append(StateCriterion(
            id="", service=spec.service, collection=collection,
            key=key if kind == "modified" else None, match=match,
            description=f"House rule: the {noun_} in {spec.service} {says}"))
    return out


def source_of_truth(walk: Walk, session: Any, rng: random.Random) -> Draft | None:
    """A write's amount came from a record; the request quotes another figure, and the rule
    says the record's figure is the one to use."""
    uses = [s.spec.qualified_name for s in walk.steps]
    options = []
    for i, step in enumerate(walk.steps):
        if step.spec.read_only or i in walk.rule_steps or uses.count(step.spec.qualified_name) > 1:
            continue
        for b in step.bindings:
            if (b.source is not None and b.interface == "Money"
                    and isinstance(b.value, (int, float)) and not isinstance(b.value, bool)
                    and b.value > 0 and walk.steps[b.source].spec.read_only):
                options.append((i, b))
    if not options:
        return None
    index, b = rng.choice(options)
    spec, producer = walk.steps[index].spec, walk.steps[b.source].spec  # type: ignore[index]
    quoted = _quoted(b.value, rng)
    criteria = _holding(walk, session, index, b.value, "holds the recorded amount")
    if not criteria:
        return None
    walk.shown[(spec.qualified_name, b.param)] = answer_text(quoted)
    walk.ruled.append(b.value)
    field_ = reference(producer, b.path, b.interface).removeprefix("the ")
    text = (f"Figures come from the records, not from my messages: when an amount I quote "
            f"differs from the {field_} on record in "
            f"{service_label(session.classes, producer.service)}, use the recorded one.")
    return Draft("source_of_truth", text, changes=[(index, b.param, quoted)], criteria=criteria)


def _quoted(value: float, rng: random.Random) -> float:
    """A round figure near ``value`` but not equal to it (the gross, an old quote)."""
    for _ in range(8):
        raw = value * rng.choice((0.9, 0.92, 1.08, 1.1, 1.15, 1.2))
        step = 10 ** max(0, int(math.log10(max(raw, 1))) - 1)
        quoted = float(round(raw / step) * step)
        if quoted > 0 and abs(quoted - value) > 0.005:
            return quoted
    return float(math.floor(value)) + 7.0


def threshold(walker: Any, rng: random.Random) -> Draft | None:
    """Payments of a figure or more need a sign-off email to the user's manager first: one
    added step for each write whose amount reaches it, and none for those below."""
    walk, session = walker.walk, walker.session
    world = session.world
    sender = walker.graph.specs.get("email__send_email")
    approver = world.manager_of(world.user)
    if sender is None or approver is None:
        return None
    groups: dict[str, list[tuple[int, Binding]]] = {}
    for i, step in enumerate(walk.steps):
        if step.spec.read_only or i in walk.rule_steps:
            continue
        roles = {slot.path[0]: slot.role for slot in step.spec.inputs if len(slot.path) == 1}
        amount = next((b for b in step.bindings if b.interface == "Money"
                       and roles.get(b.param) in _SIGNED_OFF
                       and isinstance(b.value, (int, float)) and not isinstance(b.value, bool)
                       and b.value > 0), None)
        ref = _reference(walk, step.bindings)
        if amount is not None and ref is not None and person_of(ref[1].value, world) != approver:
            groups.setdefault(step.spec.qualified_name, []).append((i, amount))
    if not groups:
        return None
    tool = rng.choice(sorted(groups))
    values = sorted(b.value for _, b in groups[tool])
    limit = _policy_limit(values[len(values) // 2] if len(values) > 2 else values[0], rng)
    if limit is None:
        return None  # nobody signs off on a 40.00 payment
    spec = walk.steps[groups[tool][0][0]].spec
    draft = Draft("threshold", "")
    label = ""
    refs = [_reference(walk, walk.steps[i].bindings)[1].value  # type: ignore[index]
            for i, b in groups[tool] if b.value >= limit]
    shared = len(set(refs)) < len(refs)  # one payee paid twice: the amount tells them apart
    for index, amount in groups[tool]:
        if amount.value < limit:
            continue
        label, ref = _reference(walk, walk.steps[index].bindings) or ("", None)  # type: ignore
        subject = f"Sign-off: {ref.value}" + (f", {answer_text(amount.value)}" if shared else "")
        body = (f"Please sign off on the {noun(spec)} for {ref.value} ({words(amount.param)} "
                f"{answer_text(amount.value)}).")
        added = walker.rule_step(sender, [
            Binding("to", approver.email, None, (), "EmailAddress"),
            Binding("subject", subject, None, (), "EmailSubject"),
            Binding("body", body, None, (), "Text")])
        if added is None:
            return None
        draft.added.append(added)
        draft.before[added] = index
        held = _holding(walk, session, added, subject, f'has the subject "{subject}"')
        if len(held) != 1:
            return None
        payment = {amount.param: amount.value, ref.param: ref.value}
        draft.criteria += held + [OrderCriterion(
            id="", first=Call(name=sender.qualified_name,
                              arguments={"to": approver.email, "subject": subject}),
            then=spec.qualified_name, then_arguments=payment,
            description=f"House rule: {approver.name} was asked to sign off "
                        f'("{subject}") before the {noun(spec)} for {ref.value} went in')]
    if not draft.added:
        return None
    what = words(groups[tool][0][1].param)
    subject = f"Sign-off: <{label}>" + (f", <the {what}>" if shared else "")
    draft.text = (f"Any {noun(spec)} with {_a(what)} {what} of {limit:g} or more needs a "
                  f"sign-off: email {approver.name} ({approver.email}) with the subject "
                  f'"{subject}" before it goes in.')
    return draft


def _reference(walk: Walk, bindings: list[Binding]) -> tuple[str, Binding] | None:
    """What a payment is for, as the request would name it: the record it acts on, else its
    payee; with how the rule names it ("the invoice's id")."""
    for want in ("id", "person"):
        for b in bindings:
            if b.source is None or not isinstance(b.value, str):
                continue
            # the record the payment is for, not the user's own account it comes from
            fits = (_id_like(b.interface, b.path) and b.interface != "AccountId"
                    if want == "id"
                    else b.interface in ("EmailAddress", "OrganizationName", "PersonName"))
            if fits:
                producer = walk.steps[b.source].spec
                return reference(producer, b.path, b.interface), b
    return None


def _a(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


# the limits an approval policy sets: round figures a finance team would write down
_LIMITS = (100, 200, 250, 500, 1000, 2000, 2500, 5000, 10_000, 20_000, 25_000, 50_000,
           75_000, 100_000, 150_000, 200_000, 250_000, 500_000, 1_000_000)


def _policy_limit(value: float, rng: random.Random) -> float | None:
    """A policy's sign-off limit somewhat below ``value`` (so it applies to it): the largest
    of the usual round limits under 55-90% of it; None under the smallest (100)."""
    raw = value * rng.uniform(0.55, 0.9)
    fitting = [limit for limit in _LIMITS if limit <= raw]
    return float(fitting[-1]) if fitting else None


def ordering(walker: Any, rng: random.Random) -> Draft | None:
    """Before the first write that acts on a found record, that record is re-read with a tool
    that takes only its id; the rule says so, an order criterion checks it."""
    walk, graph = walker.walk, walker.graph
    order = solution_order(walk)
    seen_tools: set[str] = set()
    for index in order:
        step = walk.steps[index]
        first_call = step.spec.qualified_name not in seen_tools
        seen_tools.add(step.spec.qualified_name)
        if step.spec.read_only or index in walk.rule_steps or not first_call:
            continue
        for b in step.bindings:
            if b.source is None or not _id_like(b.interface, b.path):
                continue
            producer = walk.steps[b.source].spec
            for edge in graph.out_edges(producer.qualified_name):
                target = graph.specs[edge.target]
                if (not target.read_only or edge.interface != b.interface
                        or edge.path != as_list_path(b.path)
                        or set(target.parameters.get("required", ())) != {edge.param}):
                    continue
                earlier = order[:order.index(index)]
                args = {edge.param: b.value}
                if any(walk.steps[j].spec.qualified_name == target.qualified_name
                       and walk.steps[j].arguments == args for j in earlier):
                    continue
                at = walker.rule_step(target, [Binding(edge.param, b.value, b.source, b.path,
                                                       b.interface)])
                if at is None:
                    continue
                # what the rule's own read re-checks: the record, or the records of it
                owner = edge.param.removesuffix("_id").replace("_", " ")
                thing = noun(target) if single_result(target) else \
                    f"{plural(noun(target))} of the {owner or noun(producer)}"
                classes = walker.session.classes
                where = "" if target.service == step.spec.service else \
                    f" in {service_label(classes, target.service)}"
                text = (f"Nothing changes in {service_label(classes, step.spec.service)} until "
                        f"you have re-checked the {thing} it concerns{where}.")
                draft = Draft("ordering", text, added=[at], before={at: index})
                # every other record the same write changes is re-checked before its own
                # change ("the booking it concerns": each booking a fan-out cancels)
                others = _rechecks(walker, order[order.index(index) + 1:], step.spec, b,
                                   target, edge.param, draft)
                for value in [b.value, *others]:
                    draft.criteria.append(OrderCriterion(
                        id="", first=Call(name=target.qualified_name,
                                          arguments={edge.param: value}),
                        then=step.spec.qualified_name,
                        then_arguments={b.param: value} if others else None,
                        description=f"House rule: {target.qualified_name} re-checked the "
                                    f"{thing} {value} before {step.spec.qualified_name}"))
                return draft
    return None


def _rechecks(walker: Any, later: list[int], write: ToolSpec, first: Binding,
              target: ToolSpec, param: str, draft: Draft) -> list[Any]:
    """Re-checks (with ``target``) of the other records the write ``write`` changes later in
    ``later``, each placed before its write: the values re-checked."""
    walk, done = walker.walk, [first.value]
    for j in later:
        step = walk.steps[j]
        if step.spec.qualified_name != write.qualified_name or j in walk.rule_steps:
            continue
        b = next((x for x in step.bindings if x.param == first.param and x.source is not None
                  and x.value not in done), None)
        if b is None:
            continue
        at = walker.rule_step(target, [Binding(param, b.value, b.source, b.path, b.interface)])
        if at is None:
            continue
        draft.added.append(at)
        draft.before[at] = j
        done.append(b.value)
    return done[1:]


def _item_key(spec: ToolSpec) -> Slot | None:
    """The id-like field of a list's items that names them: the item's own id ("id",
    "<noun>_id") before another record's id it carries (a claim's ``policy_id``)."""
    own = {"id", noun(spec).replace(" ", "_") + "_id"}
    keys = [slot for slot in spec.outputs if slot.path[:1] == ("*",) and len(slot.path) == 2
            and _id_like(slot.interface, slot.path)]
    keys.sort(key=lambda slot: slot.path[1] not in own)
    return keys[0] if keys else None


def _key_noun(spec: ToolSpec, slot: Slot) -> str:
    """What the key ``slot`` names: the list's item for its own id, else the record the id
    is of (a claim's ``policy_id`` names a policy)."""
    field = slot.path[1]
    if field.endswith("_id") and field != noun(spec).replace(" ", "_") + "_id":
        return field.removesuffix("_id").replace("_", " ")
    return noun(spec)


def never(walker: Any, picks: list[tuple[int, int]], rng: random.Random) -> Draft | None:
    """A near-duplicate the job must not touch: an item of a list the job picked another
    item of, or a record sharing a person or company with one the job changes."""
    walk, session = walker.walk, walker.session
    touched = {key for effects in walk.effects.values() for _, key, _ in effects}
    carried = {str(b.value) for s in walk.steps for b in s.bindings}
    options: list[tuple[str, str, str, str]] = []  # (service, collection, key, what it is)
    for index, picked in picks:
        step = walk.steps[index]
        slot = _item_key(step.spec)
        if slot is None:
            continue
        for k, item in enumerate(step.result):
            key = item.get(slot.path[1]) if isinstance(item, dict) else None
            if k != picked and isinstance(key, str) and key not in touched \
                    and key not in carried:
                options.append((step.spec.service, "*", key, _key_noun(step.spec, slot)))
    for index, effects in walk.effects.items():
        service = walk.steps[index].spec.service
        state = session.state(service)
        if isinstance(state, SimState):
            continue
        for collection, key, kind in effects:
            if kind != "modified":
                continue
            records = session.initial_state(service).collections().get(collection, {})
            mine = {v for v in record_dict(records.get(key)).values()
                    if isinstance(v, str) and "@" in v}
            for other, record in records.items():
                if other != key and other not in touched and mine & set(
                        v for v in record_dict(record).values() if isinstance(v, str)):
                    options.append((service, collection, other,
                                    collection.rstrip("s").replace("_", " ")))
    if not options:
        return None
    service, collection, key, thing = rng.choice(sorted(set(options)))
    text = (f"Leave the {thing} {key} in {service_label(session.classes, service)} as it is: "
            f"it looks like a match, but it is not the one I mean.")
    guard = UnchangedCriterion(id="", service=service, collection=collection, keys=[key],
                               weight=1.0,
                               description=f"House rule: the {thing} {key} in {service} (a "
                                           f"decoy) was left alone")
    return Draft("never", text, criteria=[guard])


def solution_order(walk: Walk) -> list[int]:
    """The calls in the order the solution makes them: each added step just before the step
    it is for, the rest in walk order."""
    before: dict[int, list[int]] = {}
    for draft in walk.house:
        for added, target in draft.before.items():
            before.setdefault(target, []).append(added)
    placed = {a for adds in before.values() for a in adds}
    order: list[int] = []
    for i in range(len(walk.steps)):
        if i in placed:
            continue
        order.extend(sorted(before.get(i, [])))
        order.append(i)
    return order
