"""Decisions as business criteria: which item of a list a job takes, and why, in the words a
person would use ("the cheapest hotel", "the invoice due soonest").

A scenario's ``pick`` stage names its criteria (``compoenv.scenarios.Pick``); a stage that
names none orders by a field whose meaning is plain (a price, a due date, a duration), said
as ``plain`` says it. Either way the criterion must name exactly one item of the list the
walk found: a tie or a near-tie (two prices within 2 %, two times within the hour) would
leave the request with two right answers, so the seed is passed over (``tied_pick``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Sequence

from compoenv.compose.labels import field_label
from compoenv.schema import Slot, extract
from compoenv.service import ToolSpec

__all__ = ["ORDERED", "orderable", "plain", "choose", "Choice", "NEAR"]

ORDERED = frozenset({"Money", "DurationMinutes", "Quantity", "Temperature", "Percentage",
                     "Date", "DateTime"})
# how far apart the taken item and the next best must be: a share of the value for amounts,
# minutes for times, days for dates
NEAR = {"amount": 0.02, "DateTime": 60.0, "Date": 1.0}

_PRICE = frozenset({"price", "fare", "rate", "fee", "cost", "premium", "rent", "total"})
_AMOUNT = frozenset({"amount_due", "claim", "payment", "expense", "value", "estimate",
                     "revenue", "balance", "spend", "pay", "salary", "budget", "deposit",
                     "refund", "tax", "deduction", "income", "bonus", "limit", "gain"})
_NEW = frozenset({"created", "posted", "updated", "application_date", "date"})
_SOON = frozenset({"due_date", "deadline"})


class Choice:
    """A criterion a pick may use: order a list's items by ``slot`` and take the ``order``
    end, said as ``says``."""

    __slots__ = ("slot", "order", "says")

    def __init__(self, slot: Slot, order: str, says: str) -> None:
        self.slot, self.order, self.says = slot, order, says

    def __repr__(self) -> str:
        return f"Choice({'.'.join(self.slot.path[1:])}, {self.order}, {self.says!r})"


def orderable(spec: ToolSpec) -> list[Slot]:
    """The top-level fields of a list tool's items that a pick may order by."""
    return [s for s in spec.outputs if len(s.path) == 2 and s.path[0] == "*"
            and s.interface in ORDERED and s.kind in ("number", "integer", "string")]


def plain(slot: Slot, order: str, kind: str, returns: dict[str, Any]) -> str | None:
    """How a person says "the item with the lowest/highest ``slot``" when the field's meaning
    makes it a reason to choose ("the cheapest hotel", "the newest lead", "the shortest
    flight"); None for a field no one chooses by."""
    low = order == "min"
    role, interface = slot.role or _role_by_name(slot.path[-1], interface=slot.interface), \
        slot.interface
    label = field_label(returns, slot.path, kind)
    if interface == "Money":
        if role in _PRICE:
            return f"the cheapest {kind}" if low else f"the most expensive {kind}"
        if role in _AMOUNT:
            return f"the {kind} with the {'smallest' if low else 'largest'} {label}"
        return None
    if interface in ("Date", "DateTime"):
        if role in _SOON:
            return f"the {kind} due soonest" if low else f"the {kind} due last"
        if role in _NEW:
            return f"the oldest {kind}" if low else f"the most recent {kind}"
        if role in ("event_date", "departure", "pay_date"):
            return f"the earliest {kind}" if low else f"the latest {kind}"
        return None
    if interface == "DurationMinutes":
        return f"the shortest {kind}" if low else f"the longest {kind}"
    if interface in ("Quantity", "Percentage", "Temperature"):
        return f"the {kind} with the {'lowest' if low else 'highest'} {label}"
    return None


_NAMED = (("price", "price"), ("fee", "fee"), ("cost", "cost"), ("rate", "rate"),
          ("fare", "fare"), ("rent", "rent"), ("total", "total"), ("amount", "payment"),
          ("balance", "balance"), ("salary", "salary"), ("budget", "budget"),
          ("due", "due_date"), ("deadline", "deadline"), ("created", "created"),
          ("posted", "posted"), ("published", "posted"), ("updated", "updated"),
          ("start", "event_date"), ("date", "event_date"), ("departure", "departure"))


def _role_by_name(field: str, interface: str) -> str:
    """A role read off a field's name when its service gave none (``visit_price`` is a price,
    ``due_on`` a due date): a user's service need not tag every field to be chosen by it."""
    name = field.casefold()
    for part, role in _NAMED:
        if part in name:
            if interface == "Money" and role in _PRICE | _AMOUNT:
                return role
            if interface in ("Date", "DateTime") and role not in _PRICE | _AMOUNT:
                return role
    return ""


def _gap(interface: str, best: Any, other: Any) -> float | None:
    """How far ``other`` is from ``best``, in the unit ``NEAR`` uses; None if incomparable."""
    if interface in ("Date", "DateTime"):
        try:
            a, b = datetime.fromisoformat(str(best)), datetime.fromisoformat(str(other))
        except ValueError:
            return None
        seconds = abs((a - b).total_seconds())
        return seconds / 86400 if interface == "Date" else seconds / 60
    if isinstance(best, bool) or not isinstance(best, (int, float)) \
            or not isinstance(other, (int, float)):
        return None
    scale = max(abs(best), abs(other), 1e-9)
    return abs(best - other) / scale


def choose(items: Sequence[Any], slot: Slot, order: str) -> tuple[int | None, str]:
    """The index of the one item ``order`` takes by ``slot``, or None and why not: a field
    some item lacks (``missing``), two items level with it or nearly so (``tied_pick``)."""
    values = [extract(item, slot.path[1:]) for item in items]
    if not values or any(len(v) != 1 or v[0] is None for v in values):
        return None, "missing"
    flat = [v[0] for v in values]
    try:
        ranked = sorted(range(len(flat)), key=lambda k: flat[k], reverse=order == "max")
    except TypeError:
        return None, "missing"
    if len(ranked) < 2:
        return ranked[0], ""
    best, runner_up = flat[ranked[0]], flat[ranked[1]]
    gap = _gap(slot.interface, best, runner_up)
    need = NEAR.get(slot.interface, NEAR["amount"])
    if gap is None or gap < need:
        return None, "tied_pick"
    return ranked[0], ""
