"""Coherence of offline answers: what a record's values must agree on, and what a request asks.

A record's schema is read once (``record_plan``): which fields describe one person (identity
groups, by prefix: ``customer_name`` and ``customer_email`` are one person, ``name`` and
``email`` the record's own), which dates and numbers come in order (start before end, min
below max), which amounts add up (subtotal + fees = total, gross - deductions = net). A tool's
parameters are read once too (``request_plan``): which arguments ask for a day, a range or a
bound. ``settle`` then moves a generated record's free values until it holds to both; every
value it changes is checked against its field's schema, and one that does not fit is left as
it was (a valid answer comes before a coherent one).
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import random
import re
from dataclasses import dataclass
from typing import Any, Callable

from compoenv._cache import ByIdentity
from compoenv.businesses import KINDS as BUSINESS_KINDS
from compoenv.schema import is_valid
from compoenv.worldmodel.consistency import mend

__all__ = ["RecordPlan", "RequestPlan", "Targets", "record_plan", "request_plan", "targets",
           "settle", "first_branch"]

# interfaces that say who someone is, by the suffix their field names carry
_IDENTITY = {"PersonName": "name", "EmailAddress": "email", "PhoneNumber": "phone"}
# interfaces whose values belong to whoever the record (or a group in it) is about
_FOLLOWERS = frozenset({"City", "StreetAddress", "PostalCode", "CountryCode", "JobTitle",
                       "OrganizationName"})
DATES = frozenset({"Date", "DateTime"})
_NUMBER = frozenset({"number", "integer"})
_VAGUE_ROLES = frozenset({None, "date", "period"})  # they do not say which day is meant
_BOOKKEEPING = frozenset({"created", "updated"})    # when a record was written, not its subject
# first word -> last word: start_date/end_date, check_in/check_out, pickup_at/return_at
_DATE_ORDER = {"start": ("end",), "starts": ("ends",), "begin": ("end",), "from": ("to",),
               "since": ("until",), "departure": ("arrival",), "departs": ("arrives",),
               "pickup": ("dropoff", "return"), "in": ("out",), "opens": ("closes",),
               "issued": ("expires",), "issue": ("expiry",)}
_NUMBER_ORDER = {"min": ("max",), "low": ("high",), "minimum": ("maximum",)}
_LOWER = frozenset({"start_date", "from", "from_date", "after", "since", "start", "begin",
                    "date_from", "start_time"})
_UPPER = frozenset({"end_date", "to", "to_date", "before", "until", "end", "date_to",
                    "end_time"})
_BOUND = re.compile(r"^(?:(max|min)_(\w+)|(\w+)_(max|min))$")
_FILTERS = frozenset({"City", "PersonName", "EmailAddress", "PhoneNumber", "OrganizationName",
                      "JobTitle", "Category"})
_TOTALS = frozenset({"total", "total_price", "total_amount", "total_cost", "total_due",
                     "total_value", "grand_total"})
_PARTS = frozenset({"tax", "fee", "fees", "tip", "shipping", "cash", "surcharge"})
_DEDUCTIONS = frozenset({"tax", "deduction", "deductions", "withheld", "withholding"})
_LINE_AMOUNTS = ("amount", "line_total", "total", "subtotal", "value", "market_value", "price",
                 "unit_price")
_TIME = re.compile(r"^\d{2}:\d{2}$")

Slot = tuple[Any, Any, Any]  # a field's (type, x-interface, x-role)


def _branch_of(schema: dict[str, Any]) -> dict[str, Any]:
    key = "anyOf" if "anyOf" in schema else "oneOf"
    options = [b for b in schema[key] if b.get("type") != "null"] or schema[key]
    return {**options[0], **{k: v for k, v in schema.items() if k != key}}


# the first non-null branch of an anyOf/oneOf (Optional[X] is X), made once per schema object:
# checks are compiled per schema object
first_branch: Callable[[dict[str, Any]], dict[str, Any]] = ByIdentity(_branch_of)


def branch(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` itself, or for an anyOf/oneOf its first non-null branch."""
    return first_branch(schema) if "anyOf" in schema or "oneOf" in schema else schema


def _slot(schema: dict[str, Any]) -> Slot:
    """A field's type, interface and role, looking through ``Optional``'s anyOf."""
    node = branch(schema)
    return node.get("type"), node.get("x-interface"), node.get("x-role")


@dataclass(frozen=True, slots=True)
class Total:
    """``field`` = base (+ parts): the base is ``("field", name, factor)`` (subtotal, base
    fare times surge, price times quantity), ``("items", list, amount, quantity)`` (line
    items) or ``("days", rate, start, end)`` (a daily rate over a stay)."""

    field: str
    base: tuple[Any, ...]
    parts: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NetGross:
    gross: str
    net: str
    deductions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RecordPlan:
    """What one object schema's fields must agree on (computed once per schema object).

    Attributes:
        props: The schema's properties.
        fields: Per property, in order (name, type, group or None, first non-null branch,
            interface): what the generator walks.
        index: The same entries by name; by_interface: by interface, in order.
        slots: Each field's (type, interface, role).
        people: Identity and follower fields -> their group ("" or a prefix such as
            "customer"); each group is one person.
        groups: The person groups, in field order; selves: those that are the user (a field
            with role "self"); members: each group's (name/email/phone field, interface).
        owner: The group that un-prefixed fields (city, street, employer) belong to.
        business: The field naming the business the record is about, when no person owns it
            (then the owner's fields are that business's).
        owner_city: The owner's City field, if any.
        identified: Whether a field names someone (a name, an email or a phone).
        dates: Date and DateTime fields; same_day: fields of one role (a reservation's date
            and start); ordered: (first, last) pairs (start/end, min/max, created/updated);
            duration: the one DurationMinutes field (a start plus it is the end).
        totals, net_gross: Amounts that add up.
        links: The Url fields and their roles (a website, an article, a document).
        invariants: Whether any of the above holds for records of this schema.
    """

    props: dict[str, Any]
    fields: tuple[tuple[str, Any, str | None, dict[str, Any], Any], ...]
    index: dict[str, tuple[Any, ...]]
    by_interface: dict[Any, tuple[tuple[Any, ...], ...]]
    slots: dict[str, Slot]
    people: dict[str, str]
    groups: tuple[str, ...]
    selves: frozenset[str]
    members: dict[str, tuple[tuple[str, str], ...]]
    owner: str
    business: str | None
    owner_city: str | None
    identified: bool
    dates: tuple[str, ...]
    same_day: tuple[tuple[str, ...], ...]
    ordered: tuple[tuple[str, str], ...]
    duration: str | None
    totals: tuple[Total, ...]
    net_gross: tuple[NetGross, ...]
    links: tuple[tuple[str, Any], ...]
    invariants: bool


def _prefix(key: str, suffix: str) -> str:
    """The identity a field names: "customer" for customer_email, "" for email, "assignee"
    for a bare assignee."""
    if key == suffix:
        return ""
    return key[:-len(suffix) - 1] if key.endswith("_" + suffix) else key


def _identity_groups(slots: dict[str, Slot]) -> tuple[dict[str, str], set[str]]:
    """Identity fields -> group, and the groups with a name. A group with no name joins the
    one named group that shares a role with it (``manager_email`` and ``account_manager``;
    a trainer's un-prefixed ``email`` and ``trainer_name``)."""
    found: dict[str, str] = {}
    for key, (kind, interface, _) in slots.items():
        if interface in _IDENTITY and kind not in ("array", "object"):
            found[key] = _prefix(key, _IDENTITY[interface])
    named = {g for k, g in found.items() if slots[k][1] == "PersonName"}
    roles: dict[str, set[Any]] = {}
    for key, group in found.items():
        roles.setdefault(group, set()).add(slots[key][2])
    for group in set(roles) - named:
        hosts = [h for h in named if (roles[group] - {None}) & roles[h]]
        if len(hosts) == 1:
            found = {k: hosts[0] if g == group else g for k, g in found.items()}
    return found, named


def _people(slots: dict[str, Slot], about: str | None = None,
            ) -> tuple[dict[str, str], str, str | None]:
    """(field -> group, the owner group, the field of the business the record is about).
    Followers (city, street, employer) join the group their prefix names, else the owner:
    the group of the un-prefixed name, email or phone (or of the one person a record of
    that role, ``about``, names), or the business when no person is named there (a
    restaurant's phone and street are the restaurant's)."""
    people, named = _identity_groups(slots)
    owner = next((g for k, g in people.items() if _prefix(k, _IDENTITY[slots[k][1]]) == ""), "")
    identities = set(people.values())
    if owner == "" and about is not None and len(named) == 1 and identities == named and \
            about in {slots[k][2] for k in people}:
        owner = next(iter(named))  # a customer profile's customer_* fields: its company is theirs
    businesses = [k for k, (kind, i, role) in slots.items()
                  if i == "OrganizationName" and role in BUSINESS_KINDS and kind == "string"]
    business = businesses[0] if businesses and owner == "" and "" not in named else None
    for key, (kind, interface, role) in slots.items():
        if interface in _FOLLOWERS and kind not in ("array", "object") and key != business and \
                not (interface == "OrganizationName" and role in BUSINESS_KINDS):
            prefix = key.rsplit("_", 1)[0] if "_" in key else ""
            people[key] = prefix if prefix in identities else owner
    return people, owner, business


def _members(people: dict[str, str], slots: dict[str, Slot]
             ) -> dict[str, tuple[tuple[str, str], ...]]:
    members: dict[str, list[tuple[str, str]]] = {}
    for key, group in people.items():
        if slots[key][1] in _IDENTITY:
            members.setdefault(group, []).append((key, slots[key][1]))
    return {group: tuple(keys) for group, keys in members.items()}


def _record_plan(schema: dict[str, Any]) -> RecordPlan:
    props = schema.get("properties") or {}
    slots = {k: _slot(v) for k, v in props.items()}
    about = schema.get("x-role")
    people, owner, business = _people(slots, about if isinstance(about, str) else None)
    group_of = {**people, **({business: owner} if business else {})}
    fields = tuple((k, slots[k][0], group_of.get(k), branch(v), slots[k][1])
                   for k, v in props.items())
    by_interface: dict[Any, list[tuple[Any, ...]]] = {}
    for entry in fields:
        by_interface.setdefault(entry[4], []).append(entry)
    dates = tuple(k for k, (kind, i, _) in slots.items() if i in DATES and kind == "string")
    by_role: dict[Any, list[str]] = {}
    for key in dates:
        by_role.setdefault(slots[key][2], []).append(key)
    numbers = [k for k, (kind, _, _) in slots.items() if kind in _NUMBER]
    ordered = _pairs(dates, _DATE_ORDER) + _pairs(numbers, _NUMBER_ORDER) + [
        (a, b) for a in by_role.get("created", ()) for b in by_role.get("updated", ())]
    same_day = tuple(tuple(keys) for role, keys in by_role.items()
                     if role not in _VAGUE_ROLES and len(keys) > 1)
    durations = [k for k, s in slots.items() if s[1] == "DurationMinutes"]
    net_gross = _net_gross(slots)
    totals = _totals(props, slots, ordered, {f for n in net_gross for f in (n.gross, n.net)})
    return RecordPlan(
        props=props, fields=fields, index={entry[0]: entry for entry in fields},
        by_interface={k: tuple(v) for k, v in by_interface.items()}, slots=slots,
        people=people, groups=tuple(dict.fromkeys(
            g for g in people.values() if not (business and g == owner))),
        selves=frozenset(g for k, g in people.items() if slots[k][2] == "self"),
        members=_members(people, slots),
        owner=owner, business=business,
        owner_city=next((k for k, g in people.items() if g == owner and slots[k][1] == "City"),
                        None),
        identified=any(slots[k][1] in _IDENTITY for k in people), dates=dates,
        same_day=same_day, ordered=tuple(ordered),
        duration=durations[0] if len(durations) == 1 else None, totals=totals,
        net_gross=net_gross,
        links=tuple((k, role) for k, (kind, i, role) in slots.items()
                    if i == "Url" and kind == "string"),
        invariants=bool(same_day or ordered or totals or net_gross))


def _pairs(names: list[str] | tuple[str, ...], order: dict[str, tuple[str, ...]]
           ) -> list[tuple[str, str]]:
    """(first, last) fields whose names differ in one word, first word to last."""
    words = {n: n.split("_") for n in names}
    out = []
    for name, parts in words.items():
        for i, word in enumerate(parts):
            for last in order.get(word, ()):
                other = "_".join(parts[:i] + [last] + parts[i + 1:])
                if other in words:
                    out.append((name, other))
    return out


def _money(slots: dict[str, Slot]) -> list[str]:
    return [k for k, (kind, i, _) in slots.items() if kind in _NUMBER and i == "Money"]


def _net_gross(slots: dict[str, Slot]) -> tuple[NetGross, ...]:
    """net_pay/gross_pay-like pairs, with the deductions between them (taxes withheld,
    benefits; a total of deductions alone when the record has one)."""
    numbers = {k for k, s in slots.items() if s[0] in _NUMBER}
    pairs = [(g, n) for n, g in _pairs(sorted(numbers), {"net": ("gross",)})]
    paired = {f for pair in pairs for f in pair}
    deductions = [k for k in _money(slots) if k not in paired and (
        slots[k][2] in ("tax", "deduction") or _DEDUCTIONS & set(k.split("_")))]
    summed = [k for k in deductions if k in ("total_deductions", "deductions")]
    return tuple(NetGross(g, n, tuple(summed or deductions)) for g, n in pairs)


def _totals(props: dict[str, Any], slots: dict[str, Slot], ordered: list[tuple[str, str]],
            paired: set[str]) -> tuple[Total, ...]:
    """Totals the record can add up: a subtotal from line items, then each total from its
    base and its parts (taxes, fees, tips, shipping, cash)."""
    money = _money(slots)
    items = _line_items(props)
    out = []
    if "subtotal" in money and items is not None:
        out.append(Total("subtotal", ("items", *items)))
    for total in (k for k in money if k in _TOTALS and k not in paired):
        base = _base(money, slots, items, ordered)
        if base is not None:
            used = {total, *base[1:]}
            parts = tuple(k for k in money if k not in used and k not in paired
                          and _PARTS & set(k.split("_")))
            out.append(Total(total, base, parts))
    return tuple(out)


def _base(money: list[str], slots: dict[str, Slot], items: tuple[str, str, str | None] | None,
          ordered: list[tuple[str, str]]) -> tuple[Any, ...] | None:
    """What a total is made of before fees and taxes, if the record says."""
    if "subtotal" in money:
        return ("field", "subtotal", None)
    based = [k for k in money if k.startswith("base_")]
    if based:
        factor = next((k for k, s in slots.items() if s[0] in _NUMBER and "multiplier" in k),
                      None)
        return ("field", based[0], factor)
    if items is not None:
        return ("items", *items)
    price = next((k for k in ("price", "unit_price") if k in money), None)
    quantity = next((k for k, s in slots.items() if s[0] == "integer"
                     and (s[1] == "Quantity" or k in ("quantity", "shares"))), None)
    if price and quantity:
        return ("field", price, quantity)
    dated = [(a, b) for a, b in ordered if slots[a][1] in DATES]
    if "daily_rate" in money and dated:
        return ("days", "daily_rate", *dated[0])
    return None


def _line_items(props: dict[str, Any]) -> tuple[str, str, str | None] | None:
    """The first list of objects with an amount: (list field, amount field, quantity field
    when the amount is a unit price)."""
    for key, schema in props.items():
        node = schema.get("items") if schema.get("type") == "array" else None
        if not isinstance(node, dict) or node.get("type") != "object":
            continue
        sub = {k: _slot(v) for k, v in (node.get("properties") or {}).items()}
        present = [a for a in _LINE_AMOUNTS if a in sub and sub[a][0] in _NUMBER]
        # money first: a wallet's balance has an amount of coins and a value in money
        amount = next((a for a in present if sub[a][1] == "Money"), present[0] if present
                      else None)
        if amount is None:
            continue
        quantity = next((k for k, s in sub.items() if s[1] == "Quantity" or k == "quantity"),
                        None) if amount in ("price", "unit_price") else None
        return key, amount, quantity
    return None


record_plan: Callable[[dict[str, Any]], RecordPlan] = ByIdentity(_record_plan)


@dataclass(frozen=True, slots=True)
class RequestPlan:
    """What a tool's arguments ask of its answer (computed once per tool).

    Attributes:
        on: Single-day filters (argument, role): items are on that day.
        lower, upper: Range bounds (since, until, start_date, end_date, ...).
        time: A TimeOfDay argument (the time a booked start takes).
        bounds: (argument, is_max, field name): ``max_price`` bounds ``price``.
        filters: Optional (argument, interface, role) that items echo by interface and role.
        currency: CurrencyCode arguments; cities: City arguments.
        echoing: Required (argument, interface, role): they echo into a field of their
            interface (the graph joins by interface, so a required one names the subject).
    """

    on: tuple[tuple[str, Any], ...]
    lower: str | None
    upper: str | None
    time: str | None
    bounds: tuple[tuple[str, bool, str], ...]
    filters: tuple[tuple[str, str, Any], ...]
    currency: tuple[str, ...]
    cities: tuple[str, ...]
    echoing: tuple[tuple[str, str, Any], ...]


def _request_plan(spec: Any) -> RequestPlan:
    props = spec.parameters.get("properties") or {}
    required = set(spec.parameters.get("required", ()))
    slots = {k: _slot(v) for k, v in props.items()}
    dates = [k for k, s in slots.items() if s[1] in DATES]
    bounds = []
    for key, (kind, _, _) in slots.items():
        found = _BOUND.match(key) if kind in _NUMBER else None
        if found:
            bounds.append((key, "max" in (found[1], found[4]), found[2] or found[3]))
    return RequestPlan(
        on=tuple((k, slots[k][2]) for k in dates if k not in _LOWER and k not in _UPPER),
        lower=next((k for k in dates if k in _LOWER), None),
        upper=next((k for k in dates if k in _UPPER), None),
        time=next((k for k, s in slots.items() if s[1] == "TimeOfDay"), None),
        bounds=tuple(bounds),
        filters=tuple((k, s[1], s[2]) for k, s in slots.items()
                      if k not in required and s[1] in _FILTERS),
        currency=tuple(k for k, s in slots.items() if s[1] == "CurrencyCode"),
        cities=tuple(k for k, s in slots.items() if s[1] == "City"),
        echoing=tuple((s.path[0], s.interface, s.role) for s in spec.inputs
                      if len(s.path) == 1 and s.path[0] in required))


request_plan: Callable[[Any], RequestPlan] = ByIdentity(_request_plan)


@dataclass(frozen=True, slots=True)
class Targets:
    """Where a request's asks land in one record schema: (field, argument) pairs."""

    on: tuple[tuple[str, str], ...]
    within: tuple[str, ...]
    bounds: tuple[tuple[str, str, bool], ...]
    filters: tuple[tuple[str, str], ...]
    lower: str | None
    upper: str | None
    time: str | None
    asks: bool  # whether the request asks anything of records of this schema


def _targets(ask: RequestPlan, plan: RecordPlan) -> Targets:
    on = _days_asked(ask, plan)
    named, pinned = {a for a, _ in ask.on} | {ask.lower, ask.upper}, {k for k, _ in on}
    within = tuple(k for k in plan.dates if (ask.lower or ask.upper) and k not in named
                   and k not in pinned and plan.slots[k][2] not in _BOOKKEEPING)
    bounds = tuple((k, arg, is_max) for arg, is_max, what in ask.bounds
                   for k in _bounded(plan, arg, what))
    filters = []
    for arg, interface, role in ask.filters:
        same = [k for k, s in plan.slots.items() if s[1] == interface and s[2] == role
                and s[0] not in ("array", "object")]
        if arg not in plan.slots and same:
            filters.append((same[0], arg))
    return Targets(on, within, bounds, tuple(filters), ask.lower, ask.upper, ask.time,
                   asks=bool(on or within or bounds))


def _days_asked(ask: RequestPlan, plan: RecordPlan) -> tuple[tuple[str, str], ...]:
    """(field, argument) for each date field meaning the day an argument asks about: the
    field of its name, the fields of its role (or of that field's role), else, for a tool
    asking about one day, the one day a record is about (list_classes(date) -> start)."""
    slots, out = plan.slots, []
    for arg, role in ask.on:
        roles = ({role} | {slots[arg][2]} if arg in slots else {role}) - _VAGUE_ROLES
        hits = [k for k in plan.dates if k == arg or slots[k][2] in roles]
        if not hits and len(ask.on) == 1 and not (ask.lower or ask.upper):
            topical = [k for k in plan.dates if slots[k][2] not in _BOOKKEEPING]
            hits = topical if len(topical) == 1 else []
        out += [(k, arg) for k in hits]
    return tuple(out)


def _bounded(plan: RecordPlan, arg: str, what: str) -> list[str]:
    """The numeric fields a ``max_``/``min_`` argument bounds: the one it names, else those
    ending in its name (``max_price`` -> an event's ``min_price``)."""
    numeric = [k for k, s in plan.slots.items() if s[0] in _NUMBER and k != arg]
    return [what] if what in numeric else [k for k in numeric if k.endswith("_" + what)]


_TARGETS: dict[tuple[int, int], tuple[RequestPlan, RecordPlan, Targets]] = {}


def targets(ask: RequestPlan, plan: RecordPlan) -> Targets:
    """Where ``ask`` lands in records of ``plan`` (made once a pair)."""
    hit = _TARGETS.get((id(ask), id(plan)))
    if hit is None or hit[0] is not ask or hit[1] is not plan:
        if len(_TARGETS) >= 8192:
            _TARGETS.clear()
        hit = _TARGETS[(id(ask), id(plan))] = (ask, plan, _targets(ask, plan))
    return hit[2]


# -- settling a generated record ------------------------------------------------------------

def settle(record: dict[str, Any], plan: RecordPlan, aim: Targets, args: dict[str, Any],
           fixed: set[str], rng: random.Random, world: Any = None) -> None:
    """Move ``record``'s free values (``fixed``: those echoing the request stay) until it
    respects the request and its own invariants, in an order where later steps build on
    earlier ones: days asked for, ranges, same-day fields, order, bounds, totals, net pay,
    then the invariants of ``consistency`` (percentiles in order, parts within totals, counts
    of the lists beside them, word counts of the text, quantity x price = value, a fee a
    small share, "since" dates not after the ``world``'s today, emails at the employer's
    domain)."""
    if plan.invariants or aim.asks:
        _settle(record, plan, aim, args, fixed, rng)
    mend(record, functools.partial(_put, record, plan), fixed, rng,
         world.today if world is not None else None, world)


def _settle(record: dict[str, Any], plan: RecordPlan, aim: Targets, args: dict[str, Any],
            fixed: set[str], rng: random.Random) -> None:
    pinned = set(fixed)
    if aim.on:
        _on_days(record, plan, aim, args, pinned)
    limits = _within(record, plan, aim, args, pinned, rng) if aim.within else {}
    for group in plan.same_day:
        _same_day(record, plan, group, pinned)
    for low, high in plan.ordered:
        _order(record, plan, low, high, pinned, limits, rng)
    caps: dict[str, float] = {}  # a total asked to stay under a bound (max_total)
    for key, arg, is_max in aim.bounds:
        if key not in fixed:
            _bound(record, plan, key, args.get(arg), is_max, rng)
        if is_max and _number(args.get(arg)):
            caps[key] = min(caps.get(key, math.inf), args[arg])
    for total in plan.totals:
        if total.field not in fixed:
            _total(record, plan, total, fixed, rng, caps.get(total.field, math.inf))
    for pair in plan.net_gross:
        _net(record, plan, pair, fixed, rng)


def _put(record: dict[str, Any], plan: RecordPlan, key: str, value: Any) -> bool:
    """Set ``key`` if ``value`` fits its schema (never memoised: it may hold the request's
    values)."""
    if is_valid(value, plan.props[key]):
        record[key] = value
        return True
    return False


def _day(value: Any) -> dt.date | None:
    if not isinstance(value, str):
        return None
    try:
        return dt.date.fromisoformat(value[:10])
    except ValueError:
        return None


def _moved(value: str, day: dt.date, time: str | None = None) -> str:
    """``value`` (a Date or DateTime) on ``day``, at its own time of day or at ``time``."""
    rest = value[10:]
    if rest.startswith("T") and time:
        rest = "T" + time + rest[6:]
    return day.isoformat() + rest


def _on_days(record: dict[str, Any], plan: RecordPlan, aim: Targets, args: dict[str, Any],
             pinned: set[str]) -> None:
    """Fields meaning the day asked about move to it (a booked start to the time asked)."""
    time = args.get(aim.time) if aim.time else None
    time = time if isinstance(time, str) and _TIME.match(time) else None
    for key, arg in aim.on:
        day, value = _day(args.get(arg)), record.get(key)
        if key in pinned or day is None or _day(value) is None:
            continue
        if _put(record, plan, key, _moved(value, day, time)):
            pinned.add(key)


def _within(record: dict[str, Any], plan: RecordPlan, aim: Targets, args: dict[str, Any],
            pinned: set[str], rng: random.Random) -> dict[str, tuple[Any, Any]]:
    """Dates outside the range asked for are drawn again inside it; returns each field's
    (low, high) days, for the steps after this one to keep to."""
    low = _day(args.get(aim.lower)) if aim.lower else None
    high = _day(args.get(aim.upper)) if aim.upper else None
    if low is None and high is None or (low and high and low > high):
        return {}
    for key in aim.within:
        day = _day(record.get(key))
        if key in pinned or day is None or (low or day) <= day <= (high or day):
            continue
        if low and high:
            new = low + dt.timedelta(days=rng.randint(0, (high - low).days))
        else:
            new = low + dt.timedelta(days=rng.randint(0, 14)) if low else \
                high - dt.timedelta(days=rng.randint(0, 14))
        _put(record, plan, key, _moved(record[key], new))
    return {key: (low, high) for key in aim.within}


def _same_day(record: dict[str, Any], plan: RecordPlan, group: tuple[str, ...],
              pinned: set[str]) -> None:
    """Fields of one role (a reservation's date and its start) fall on one day."""
    leader = next((k for k in group if k in pinned), group[0])
    day = _day(record.get(leader))
    for key in group:
        if key not in pinned and day is not None and _day(record.get(key)) not in (None, day):
            _put(record, plan, key, _moved(record[key], day))


def _order(record: dict[str, Any], plan: RecordPlan, low: str, high: str, pinned: set[str],
           limits: dict[str, tuple[Any, Any]], rng: random.Random) -> None:
    """``low`` <= ``high``: swapped when both are free, else the free one moved."""
    a, b = record.get(low), record.get(high)
    if isinstance(a, str) and isinstance(b, str):
        _order_dates(record, plan, low, high, pinned, limits, rng)
    elif _number(a) and _number(b) and a > b:
        if low not in pinned and high not in pinned:
            _swap(record, plan, low, high)
        elif high not in pinned:
            _put(record, plan, high, _scaled(a, rng.uniform(1.0, 1.3), plan.props[high]))
        elif low not in pinned:
            _put(record, plan, low, _scaled(b, rng.uniform(0.7, 1.0), plan.props[low]))


def _order_dates(record: dict[str, Any], plan: RecordPlan, low: str, high: str,
                 pinned: set[str], limits: dict[str, tuple[Any, Any]],
                 rng: random.Random) -> None:
    a, b = record[low], record[high]
    if _day(a) is None or _day(b) is None:
        return
    timed = len(a) > 10 and len(b) > 10
    if timed and plan.duration and high not in pinned and _DATE_ORDER.keys() & set(
            low.split("_")) and _number(minutes := record.get(plan.duration)):
        # a start and its duration say when it ends
        if _put(record, plan, high, _shifted(a, b, dt.timedelta(minutes=minutes))):
            return
    if (a[:16] <= b[:16]) if timed else (a[:10] <= b[:10]):
        return
    if low not in pinned and high not in pinned and len(a) == len(b):
        _swap(record, plan, low, high)
    elif high not in pinned:
        moved = _shifted(a, b, _gap(a, b, rng))
        ceiling = limits.get(high, (None, None))[1]
        if ceiling is None or _day(moved) <= ceiling:
            _put(record, plan, high, moved)
    elif low not in pinned:
        moved = _shifted(b, a, -_gap(a, b, rng))
        floor = limits.get(low, (None, None))[0]
        if floor is None or _day(moved) >= floor:
            _put(record, plan, low, moved)


def _gap(a: str, b: str, rng: random.Random) -> dt.timedelta:
    """How far apart to set two ordered moments: hours for two DateTimes, days for two
    Dates, none for one of each (compared by day)."""
    if len(a) > 10 and len(b) > 10:
        return dt.timedelta(hours=rng.randint(1, 3))
    return dt.timedelta(days=rng.randint(1, 14)) if len(a) == len(b) == 10 else dt.timedelta()


def _shifted(origin: str, shape: str, gap: dt.timedelta) -> str:
    """``origin`` + ``gap``, written the way ``shape`` is (a Date, or a DateTime with or
    without seconds)."""
    if len(shape) == 10:
        return (dt.date.fromisoformat(origin[:10]) + gap).isoformat()
    if len(origin) == 10:
        return _moved(shape, dt.date.fromisoformat(origin) + gap)
    moment = dt.datetime.fromisoformat(origin[:19]) + gap
    return moment.isoformat(timespec="seconds")[:len(shape)]


def _swap(record: dict[str, Any], plan: RecordPlan, a: str, b: str) -> None:
    first, second = record[a], record[b]
    if is_valid(second, plan.props[a]) and is_valid(first, plan.props[b]):
        record[a], record[b] = second, first


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _scaled(value: float, factor: float, schema: dict[str, Any]) -> float:
    """``value`` times ``factor``, as the field writes numbers (whole, or cents)."""
    return round(value * factor) if _slot(schema)[0] == "integer" else round(value * factor, 2)


def _bound(record: dict[str, Any], plan: RecordPlan, key: str, bound: Any, is_max: bool,
           rng: random.Random) -> None:
    """A value beyond a ``max_``/``min_`` argument drawn again, just inside it."""
    value = record.get(key)
    if not (_number(value) and _number(bound)) or (value <= bound if is_max else value >= bound):
        return
    schema = plan.props[key]
    kind = _slot(schema)[0]
    if is_max:
        low, high = max(schema.get("minimum", -math.inf), bound * 0.6 if bound > 0
                        else bound - 10), bound
    else:
        low, high = bound, min(schema.get("maximum", math.inf), bound * 1.4 if bound > 0
                               else bound + 10)
    if kind == "integer":
        low, high = math.ceil(low), math.floor(high)
        if low <= high:
            _put(record, plan, key, rng.randint(low, high))
    elif low <= high:
        drawn = rng.uniform(low, high)
        _put(record, plan, key, math.floor(drawn * 100) / 100 if is_max
             else math.ceil(drawn * 100) / 100)


def _base_amount(record: dict[str, Any], base: tuple[Any, ...]) -> float | None:
    kind = base[0]
    if kind == "field":
        value, factor = record.get(base[1]), record.get(base[2]) if base[2] else 1
        return value * factor if _number(value) and _number(factor) else None
    if kind == "items":
        lines = record.get(base[1])
        if not isinstance(lines, list):
            return None
        amounts = [(line.get(base[2]), line.get(base[3]) if base[3] else 1) for line in lines
                   if isinstance(line, dict)]
        return sum(a * q for a, q in amounts if _number(a) and _number(q))
    rate, start, end = record.get(base[1]), _day(record.get(base[2])), _day(record.get(base[3]))
    if not _number(rate) or start is None or end is None:
        return None
    return rate * max(1, (end - start).days)


def _total(record: dict[str, Any], plan: RecordPlan, total: Total, fixed: set[str],
           rng: random.Random, cap: float = math.inf) -> None:
    """The total is its base plus its parts (a tip or a tax in proportion to the base); a
    base that would take the total over its maximum (or the request's ``cap``) is cut, a few
    times at most."""
    for _ in range(4):
        base = _base_amount(record, total.base)
        if base is None:
            return
        for part in total.parts:
            share = (0.08, 0.22) if "tip" in part else (0.05, 0.15) if "tax" in part else None
            if share and part not in fixed and _number(record.get(part)):
                _put(record, plan, part, round(base * rng.uniform(*share), 2))
        amount = base + sum(record[p] for p in total.parts if _number(record.get(p)))
        if amount <= cap and _put(record, plan, total.field, _scaled(
                amount, 1, plan.props[total.field])):
            return
        cut = 0.5 if amount <= cap else cap / amount * rng.uniform(0.6, 0.9)
        kind, base_field = total.base[0], total.base[1]
        if kind != "field" or base_field in fixed or not _number(record.get(base_field)) or \
                not _put(record, plan, base_field, _scaled(record[base_field], cut,
                                                          plan.props[base_field])):
            return


def _net(record: dict[str, Any], plan: RecordPlan, pair: NetGross, fixed: set[str],
         rng: random.Random) -> None:
    """Net = gross - deductions (net <= gross where the record lists no deductions)."""
    gross, net = record.get(pair.gross), record.get(pair.net)
    if not (_number(gross) and _number(net)) or {pair.gross, pair.net} <= fixed:
        return
    cut = [d for d in pair.deductions if _number(record.get(d))]
    if cut and pair.gross not in fixed and pair.net in fixed:
        _put(record, plan, pair.gross, round(net + sum(record[d] for d in cut), 2))
        return
    if pair.net in fixed:
        if gross < net:
            _put(record, plan, pair.gross, _scaled(net, rng.uniform(1.15, 1.6),
                                                   plan.props[pair.gross]))
        return
    if not cut:
        if net > gross:
            _put(record, plan, pair.net, _scaled(gross, rng.uniform(0.6, 0.85),
                                                 plan.props[pair.net]))
        return
    taken = sum(record[d] for d in cut)
    if taken >= gross:  # deductions drawn apart from the pay: a share of it instead
        factor = gross * rng.uniform(0.15, 0.35) / taken
        for d in cut:
            if d not in fixed:
                _put(record, plan, d, round(record[d] * factor, 2))
        taken = sum(record[d] for d in cut)
    _put(record, plan, pair.net, round(gross - taken, 2))
