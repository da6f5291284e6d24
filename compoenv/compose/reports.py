"""What a long task asks the final message to report: values the job turned up (reads, write
references) and totals over the items it acted on, none of them stated in the request."""

from __future__ import annotations

import re
from typing import Any

from compoenv.compose.labels import field_label
from compoenv.compose.records import Binding, Rejected
from compoenv.compose.render import noun, plural, reference
from compoenv.compose.steps import worth_reporting
from compoenv.compose.walk import Walker
from compoenv.reward import scalars
from compoenv.roles import label as role_label
from compoenv.schema import extract

__all__ = ["choose_reports"]

# who and where a job already acted on: asking for them back tells nothing
_ECHOES = frozenset({"EmailAddress", "PersonName", "PhoneNumber", "OrganizationName", "City",
                     "StreetAddress", "JobTitle"})
# the references a person asks back for after a job (the transfer, the booking, the ticket),
# not those of the note, message or calendar entry just made
_CONFIRMATION = re.compile(r"(Transaction|Order|Booking|Reservation|Ticket|Claim|Offer|Payment|"
                           r"Rental|Appointment|Deal|Invoice|Expense|Refill|Viewing|Request|"
                           r"Case|Shipment|Return|Refund|Application)Id$")


def choose_reports(walker: Walker, low: int, high: int) -> None:
    """Ask for ``low``..``high`` values the job turned up and the request does not state: one
    per step at most, latest steps first, of kinds worth asking about."""
    walk, rng = walker.walk, walker.rng
    if high <= 0:
        return
    stated = walker.stated() | {str(v).casefold() for v in walk.hidden}
    picked, kinds = [], set()
    by_step: dict[int, list[Any]] = {}
    carried = {str(b.value).casefold() for s in walk.steps for b in s.bindings}
    # a rule's call placed earlier may shift the ids later writes of its service get
    shifted = {walk.steps[i].spec.service for i in walk.rule_steps
               if not walk.steps[i].spec.read_only}
    # "the product's price" names the last product the request mentions: an earlier one's
    # values would be asked for by a name a later step took over
    nouns = [noun(s.spec) for s in walk.steps]
    for value in walker.available:
        if value.step in walk.rule_steps or value.slot.path[:1] == ("*",):
            continue  # a field every listed item shares reads as one item's ("the candidate's")
        if _renamed(walk, nouns, value):
            continue
        if walk.steps[value.step].spec.read_only:
            if not worth_reporting(value):
                continue
        elif (not value.slot.interface.endswith("Id") or value.slot.path[-1:] != ("id",)
              or not _CONFIRMATION.search(value.slot.interface)
              or walk.steps[value.step].spec.service in shifted):
            continue  # of what a write returns, only its reference is news (the transfer id)
        text = str(value.value).casefold()
        if text in stated or len(text) > 80 or (
                text in carried and value.slot.interface in _ECHOES):
            continue  # "the transaction's counterparty" of the address just paid is no news
        by_step.setdefault(value.step, []).append(value)
    for index in sorted(by_step, reverse=True):
        options = [v for v in by_step[index] if v.slot.interface not in kinds
                   and all(str(v.value).casefold() != str(p.value).casefold() for p in picked)]
        if not options:
            continue
        value = rng.choice(options)
        picked.append(value)
        kinds.add(value.slot.interface)
        if len(picked) >= high:
            break
    totals = _totals(walker)
    if totals and len(picked) >= high:
        picked.pop()
    picked.sort(key=lambda v: v.step)
    reports = [(Binding("answer", v.value, v.step, v.slot.path, v.slot.interface),
                _made_beside(_nth(_ask(walk.steps[v.step].spec, v.slot.path, v.slot.interface),
                                  _records_before(walk, nouns, v.step)), walk, nouns, v.step))
               for v in picked] + totals[:1]
    if len(reports) < low:
        raise Rejected("nothing_to_report", f"{len(reports)} values to report, need {low}",
                       (walk.steps[-1].spec.qualified_name,))
    walk.reports = [b for b, _ in reports]
    walk.asks = [ask for _, ask in reports]
    walk.hidden.extend(b.value for b, _ in totals[:1])
    if len(walk.reports) == 1:
        walk.report = walk.reports[0]
        walk.report_text = f"Tell me {walk.asks[0]}."


def _renamed(walk: Any, nouns: list[str], value: Any) -> bool:
    """Whether a later step found another record of the value's kind that says otherwise
    (a second product, priced differently): its name now means that one."""
    path = tuple(p for p in value.slot.path if p[:1] != "#")
    for index in range(value.step + 1, len(walk.steps)):
        if index in walk.rule_steps or nouns[index] != nouns[value.step]:
            continue
        result = walk.steps[index].result
        if not isinstance(result, dict) or extract(result, path) != [value.value]:
            return True  # the paid invoice mark_paid returns is the same invoice: no rename
    return False


_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth")


def _made_beside(ask: str, walk: Any, nouns: list[str], step: int) -> str:
    """"the payment's id" of a payment the job made, where it also found one (the payment it
    refunds), reads "the new payment's id": the request names one record."""
    # made by the write, not a record a read showed that the write stored as it changed it
    shown = {str(v) for i in range(step) if walk.steps[i].spec.read_only
             for v in scalars(walk.steps[i].result)}
    created = any(kind == "created" and key not in shown
                  for _, key, kind in walk.effects.get(step, []))
    if (walk.steps[step].spec.read_only or not created or not ask.startswith("the ")
            or not any(nouns[i] == nouns[step] and walk.steps[i].spec.read_only
                       for i in range(step))):
        return ask
    return f"the new {ask[4:]}"


def _records_before(walk: Any, nouns: list[str], step: int) -> int:
    """How many records of step ``step``'s kind the request looked up before it, each in its
    own sentence (0 for what a write returned: "the transfer's id" names the one made)."""
    if not walk.steps[step].spec.read_only:
        return 0
    leads = {segment.steps[0] for segment in walk.segments if len(segment.steps) == 1}
    # a lookup of one record fed by an earlier one of its kind reads that record again ("get
    # the phone of the restaurant" found by a search)
    again = {b.source for b in walk.steps[step].bindings} \
        if isinstance(walk.steps[step].result, dict) else set()
    return sum(1 for i in range(step) if i in leads and i not in walk.rule_steps | again
               and walk.steps[i].spec.read_only and nouns[i] == nouns[step])


def _nth(ask: str, before: int) -> str:
    """"the article's city" after an earlier article reads "the second article's city"."""
    if before == 0 or before >= len(_ORDINALS) or not ask.startswith("the "):
        return ask
    return f"the {_ORDINALS[before]} {ask[4:]}"


def _totals(walker: Walker) -> list[tuple[Binding, str]]:
    """"The total amount of those invoices": the sum of a field a fan-out carried from each
    item of its list into its writes."""
    walk = walker.walk
    out = []
    for index in getattr(walker, "fanned", []):
        step = walk.steps[index]
        fields = {b.path[1:] for s in walk.steps for b in s.bindings
                  if b.source == index and b.interface in ("Money", "DurationMinutes")
                  and len(b.path) == 2 and b.path[0][:1] == "#"}
        for path in sorted(fields):
            values = [item.get(path[0]) if isinstance(item, dict) else None
                      for k, item in enumerate(step.result)
                      if k != walk.left_out.get(index, (None,))[0]]
            if any(not isinstance(v, (int, float)) or isinstance(v, bool) for v in values):
                continue
            total = round(sum(values), 2)
            interface = next(s.interface for s in step.spec.outputs if s.path == ("*",) + path)
            kind = noun(step.spec)
            label = field_label(step.spec.returns, ("*",) + path, kind)
            out.append((Binding("answer", total, index, (), interface),
                        f"the total {label} of those {plural(kind)}"))
    return out


def _ask(spec: Any, path: tuple[str, ...], interface: str) -> str:
    """How the closing sentence names a value: "the invoice's due date"; a tool's whole
    answer by what the tool gives ("the total due"), not "that money"."""
    if not [p for p in path if p != "*" and p[:1] != "#"]:
        role = next((s.role for s in spec.outputs if s.path == path and s.role), None)
        return f"the {role_label(role)}" if role else f"the {noun(spec)}"
    return reference(spec, path, interface)
