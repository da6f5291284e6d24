"""The offline simulator answers coherently: one property test per invariant, each run over every
spec tool that has the fields the invariant is about, with a few seeds per tool.

The rules are stated here on their own, from field names, interfaces and roles (as a reader of
a spec would apply them), not taken from the simulator's own analysis of the schemas.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from typing import Any, Iterator

from compoenv.businesses import KINDS
from compoenv.registry import Registry
from compoenv.world import World
from compoenv.worldmodel import SimulatedService
from compoenv.worldmodel.offline import _FITS, example_arguments
from compoenv.worldmodel.store import naming_a_record

REGISTRY = Registry.default()
SPECS = {spec.qualified_name: spec for cls in REGISTRY if issubclass(cls, SimulatedService)
         for spec in cls.tool_specs().values()}
WORLD = World.get(0)
SEEDS = (1, 2, 3)
DATES = {"Date", "DateTime"}
LOWER = {"start_date", "from", "from_date", "after", "since", "start", "begin"}
UPPER = {"end_date", "to", "to_date", "before", "until", "end"}
VAGUE = {None, "date", "period"}          # roles that do not say which day is meant
BOOKKEEPING = {"created", "updated"}      # when a record was written
Tag = tuple[Any, Any, Any]


# -- helpers: calls, records and the fields in them -------------------------------------------

@functools.lru_cache(maxsize=None)
def _call(name: str, seed: int,
          currency: str | None = None) -> tuple[dict[str, Any], Any] | None:
    spec = SPECS[name]
    args = example_arguments(spec, WORLD, seed)
    if currency is not None:
        args = {k: currency if tag(v)[1] == "CurrencyCode" else args[k]
                for k, v in params(spec).items() if k in args}
    service = REGISTRY.get(spec.service).create(WORLD)
    args = naming_a_record(service, spec.name, args)  # a CRUD resource's tool finds a record
    result = service.call(spec.name, args)
    if not result["success"] and result["error"]["code"] == 409 \
            and spec.name.startswith("cancel_"):
        return None  # every record of its resource is cancelled already: nothing to check
    assert result["success"], (name, args, result)
    return args, result["data"]


def calls(spec: Any) -> Iterator[tuple[dict[str, Any], Any]]:
    for seed in SEEDS:
        if (call := _call(spec.qualified_name, seed)) is not None:
            yield call


def branch(schema: dict[str, Any]) -> dict[str, Any]:
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return next((b for b in schema[key] if b.get("type") != "null"), schema[key][0])
    return schema


def tag(schema: dict[str, Any]) -> Tag:
    node = branch(schema)
    return node.get("type"), node.get("x-interface"), node.get("x-role")


def params(spec: Any) -> dict[str, Any]:
    return spec.parameters.get("properties") or {}


def records(schema: dict[str, Any], data: Any
            ) -> Iterator[tuple[dict[str, Tag], dict[str, Any], dict[str, Any]]]:
    """Every object in an answer: its fields' (type, interface, role), its values, and its
    schema's properties."""
    node = branch(schema)
    if node.get("type") == "object" and isinstance(data, dict):
        props = node.get("properties") or {}
        yield {k: tag(v) for k, v in props.items()}, data, props
        for key, sub in props.items():
            if key in data:
                yield from records(sub, data[key])
    elif node.get("type") == "array" and isinstance(data, list):
        for item in data:
            yield from records(node.get("items", {}), item)


def strings(data: Any) -> Iterator[tuple[str, str]]:
    """(field name, value) of every string in an answer or in arguments."""
    if isinstance(data, dict):
        for key, value in data.items():
            if isinstance(value, str):
                yield key, value
            else:
                for name, text in strings(value):
                    yield name or key, text
    elif isinstance(data, list):
        for item in data:
            if isinstance(item, str):
                yield "", item
            else:
                yield from strings(item)


def swapped(name: str, first: str, last: str) -> str | None:
    words = name.split("_")
    return "_".join(last if w == first else w for w in words) if first in words else None


def day(value: str) -> dt.date:
    return dt.date.fromisoformat(value[:10])


def number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def report(failures: list[Any], covered: set[str], least: int) -> None:
    assert not failures, failures[:10]
    assert len(covered) >= least, sorted(covered)  # the rule found the fields it is about


# -- 1. the request is respected --------------------------------------------------------------

def same_day_fields(arg: str, role: Any, fields: dict[str, Tag], alone: bool) -> list[str]:
    """The fields that mean the day ``arg`` asks about: the field of its name, the fields of
    its role (or of the role of the field of its name), else the one date a record is about."""
    dates = {k: t for k, t in fields.items() if t[1] in DATES}
    roles = {role, dates[arg][2] if arg in dates else None} - VAGUE
    found = [k for k, t in dates.items() if k == arg or t[2] in roles]
    topical = [k for k, t in dates.items() if t[2] not in BOOKKEEPING]
    return found or (topical if alone and len(topical) == 1 else [])


def test_a_date_filter_returns_items_on_that_day():
    failures, covered = [], set()
    for name, spec in SPECS.items():
        dated = {k: tag(v) for k, v in params(spec).items() if tag(v)[1] in DATES}
        days = [(k, t[2]) for k, t in dated.items() if k not in LOWER | UPPER]
        alone = len(days) == 1 and len(dated) == 1
        for args, data in calls(spec):
            for fields, record, _ in records(spec.returns, data):
                for arg, role in days:
                    for key in same_day_fields(arg, role, fields, alone):
                        if arg in args and key in record:
                            covered.add(name)
                            if day(record[key]) != day(args[arg]):
                                failures.append((name, key, record[key], args[arg]))
    report(failures, covered, 34)


def test_a_range_filter_returns_items_within_the_range():
    failures, covered = [], set()
    for name, spec in SPECS.items():
        dated = {k for k, v in params(spec).items() if tag(v)[1] in DATES}
        lower, upper = dated & LOWER, dated & UPPER
        if not lower | upper:
            continue
        for args, data in calls(spec):
            low = day(args[min(lower)]) if lower and min(lower) in args else dt.date.min
            high = day(args[min(upper)]) if upper and min(upper) in args else dt.date.max
            for fields, record, _ in records(spec.returns, data):
                for key, (_, interface, role) in fields.items():
                    if interface in DATES and key not in dated and role not in BOOKKEEPING \
                            and key in record and (low, high) != (dt.date.min, dt.date.max):
                        covered.add(name)
                        if not low <= day(record[key]) <= high:
                            failures.append((name, key, record[key], str(low), str(high)))
    report(failures, covered, 12)


def test_a_city_argument_returns_items_in_that_city():
    failures, covered = [], set()
    for name, spec in SPECS.items():
        required = set(spec.parameters.get("required", ()))
        cities = {k: tag(v)[2] for k, v in params(spec).items() if tag(v)[1] == "City"}
        for args, data in calls(spec):
            for fields, record, _ in records(spec.returns, data):
                in_record = [k for k, t in fields.items() if t[1] == "City" and k in record]
                for arg, role in cities.items():
                    same = [k for k in in_record if k == arg or (fields[k][2] == role
                                                                 and k not in cities)]
                    if not same and arg in required and len(in_record) == 1 and \
                            len(cities) == 1:
                        same = in_record  # the one city the record is in
                    for key in same[:1] if arg not in same else [arg]:
                        if arg in args:
                            covered.add(name)
                            if record[key] != args[arg]:
                                failures.append((name, key, record[key], args[arg]))
    report(failures, covered, 65)


def test_max_and_min_arguments_bound_the_field_they_name():
    failures, covered = [], set()
    for name, spec in SPECS.items():
        bounds = []
        for key, schema in params(spec).items():
            found = re.match(r"^(?:(max|min)_(\w+)|(\w+)_(max|min))$", key)
            if found and tag(schema)[0] in ("number", "integer"):
                bounds.append((key, "max" in (found[1], found[4]), found[2] or found[3]))
        for args, data in calls(spec):
            for fields, record, _ in records(spec.returns, data):
                numbers = [k for k, t in fields.items() if t[0] in ("number", "integer")]
                for arg, is_max, what in bounds:
                    named = [what] if what in numbers else \
                        [k for k in numbers if k.endswith("_" + what) and k != arg]
                    for key in named:
                        if arg in args and number(record.get(key)):
                            covered.add(name)
                            value, bound = record[key], args[arg]
                            if (value > bound) if is_max else (value < bound):
                                failures.append((name, key, value, arg, bound))
    report(failures, covered, 12)


# -- 2. records keep their own invariants ----------------------------------------------------

ORDER = (("start", "end"), ("starts", "ends"), ("from", "to"), ("since", "until"),
         ("departure", "arrival"), ("pickup", "dropoff"), ("pickup", "return"), ("in", "out"),
         ("begin", "end"))


def test_net_is_at_most_gross():
    failures, covered = [], set()
    for name, spec in SPECS.items():
        for _, data in calls(spec):
            for fields, record, _ in records(spec.returns, data):
                for net in fields:
                    gross = swapped(net, "net", "gross")
                    if gross in fields and number(record.get(net)) and number(record.get(gross)):
                        covered.add(name)
                        if record[net] > record[gross]:
                            failures.append((name, net, record[net], record[gross]))
    report(failures, covered, 4)


def test_every_end_is_at_or_after_its_start():
    failures, covered = [], set()
    for name, spec in SPECS.items():
        for args, data in calls(spec):
            asked = {k: tag(v) for k, v in params(spec).items()}
            for fields, record, _ in [(asked, args, {}), *records(spec.returns, data)]:
                for first, last in ORDER:
                    for start in fields:
                        end = swapped(start, first, last)
                        if end not in fields or {fields[start][1], fields[end][1]} - DATES \
                                or not isinstance(record.get(start), str) \
                                or not isinstance(record.get(end), str):
                            continue
                        covered.add(name)
                        a, b = record[start], record[end]
                        timed = len(a) > 10 and len(b) > 10
                        if (b[:16] < a[:16]) if timed else (b[:10] < a[:10]):
                            failures.append((name, start, a, end, b))
    report(failures, covered, 36)


def test_every_low_is_at_or_below_its_high():
    failures, covered = [], set()
    for name, spec in SPECS.items():
        for _, data in calls(spec):
            for fields, record, _ in records(spec.returns, data):
                for first, last in (("min", "max"), ("low", "high")):
                    for low in fields:
                        high = swapped(low, first, last)
                        if high in fields and number(record.get(low)) and \
                                number(record.get(high)):
                            covered.add(name)
                            if record[low] > record[high]:
                                failures.append((name, low, record[low], high, record[high]))
    report(failures, covered, 6)


PARTS = {"tax", "fee", "fees", "tip", "shipping", "cash", "surcharge"}
TOTALS = {"total", "total_price", "total_amount", "total_cost", "total_due", "total_value"}


def money(fields: dict[str, Tag]) -> list[str]:
    return [k for k, t in fields.items() if t[1] == "Money" and t[0] in ("number", "integer")]


def line_sum(fields: dict[str, Tag], record: dict[str, Any], props: dict[str, Any]
             ) -> tuple[str, float] | None:
    """The first list of line items with amounts, and their sum (price times quantity)."""
    for key, (kind, _, _) in fields.items():
        items = (branch(props[key]).get("items") or {}) if kind == "array" else {}
        lines, line_fields = record.get(key), items.get("properties") or {}
        present = [a for a in ("amount", "line_total", "total", "subtotal", "value",
                               "market_value", "price") if a in line_fields]
        amount = next((a for a in present if tag(line_fields[a])[1] == "Money"),
                      present[0] if present else None)  # money before a count of coins
        if amount and isinstance(lines, list):
            return key, sum(line[amount] * (line.get("quantity", 1) if amount == "price" else 1)
                            for line in lines)
    return None


def base_of(fields: dict[str, Tag], record: dict[str, Any], props: dict[str, Any]
            ) -> tuple[str, float] | None:
    """What a record's total is made of before its parts, and its amount: the subtotal, a
    base fare (times a surge), line items, a price times a quantity, a daily rate times
    the days between a start and an end."""
    amounts = money(fields)
    if "subtotal" in amounts:
        return "subtotal", record["subtotal"]
    based = [k for k in amounts if k.startswith("base_")]
    if based:
        factor = next((record[k] for k in fields if "multiplier" in k), 1)
        return based[0], record[based[0]] * factor
    lines = line_sum(fields, record, props)
    if lines:
        return lines
    quantity = next((k for k, t in fields.items() if t[1] == "Quantity" or k == "shares"), None)
    if "price" in amounts and quantity:
        return "price", record["price"] * record[quantity]
    pairs = [(s, e) for s in fields for f, l in ORDER
             if (e := swapped(s, f, l)) in fields and fields[s][1] in DATES]
    if "daily_rate" in amounts and pairs:
        start, end = pairs[0]
        return "daily_rate", record["daily_rate"] * max(1, (day(record[end]) -
                                                            day(record[start])).days)
    return None


def near(a: float, b: float) -> bool:
    return abs(a - b) <= 0.011 + 1e-9 * abs(b)


def test_totals_equal_their_parts():
    failures, covered = [], set()
    for name, spec in SPECS.items():
        for _, data in calls(spec):
            for fields, record, props in records(spec.returns, data):
                amounts = money(fields)
                lines = line_sum(fields, record, props)
                if "subtotal" in record and lines:
                    covered.add(name)
                    if not near(record["subtotal"], lines[1]):
                        failures.append((name, "subtotal", record["subtotal"], lines))
                found = base_of(fields, record, props)
                for total in (k for k in amounts if k in TOTALS and k in record and found):
                    base, amount = found
                    parts = [k for k in amounts if k not in (total, base)
                             and PARTS & set(k.split("_"))]
                    covered.add(name)
                    if not near(record[total], amount + sum(record[p] for p in parts)):
                        failures.append((name, total, record[total], base, amount, parts))
                for gross, net in ((g, n) for n in amounts
                                   if (g := swapped(n, "net", "gross")) in fields):
                    cut = [k for k in amounts if k not in (gross, net) and (
                        fields[k][2] in ("tax", "deduction") or
                        {"tax", "deduction", "deductions", "withheld"} & set(k.split("_")))]
                    if cut:
                        covered.add(name)
                        if not near(record[gross] - sum(record[k] for k in cut), record[net]):
                            failures.append((name, gross, net, cut, record))
    report(failures, covered, 12)


def test_an_answer_has_one_currency_the_one_asked_for():
    failures, covered = [], set()
    for name, spec in SPECS.items():
        asked = [k for k, v in params(spec).items() if tag(v)[1] == "CurrencyCode"]
        runs = [*calls(spec), *([_call(name, 1, "EUR")] if asked else [])]
        runs = [run for run in runs if run is not None]
        for args, data in runs:
            found = {record[k] for fields, record, _ in records(spec.returns, data)
                     for k, t in fields.items() if t[1] == "CurrencyCode" and k in record}
            wanted = {args[k] for k in asked if k in args}
            if found:
                covered.add(name)
                if len(found) > 1 or (wanted and found != wanted):
                    failures.append((name, found, wanted))
    report(failures, covered, 160)


# -- 3. people and businesses come from the World ---------------------------------------------

SUFFIX = {"PersonName": "name", "EmailAddress": "email", "PhoneNumber": "phone"}


def identity_groups(fields: dict[str, Tag]) -> dict[str, list[str]]:
    """Person fields by the identity they name: the prefix of customer_email is customer, of
    email the record's own; a group without a name is the named group of its role."""
    groups: dict[str, list[str]] = {}
    for key, (kind, interface, _) in fields.items():
        if interface in SUFFIX and kind == "string":
            suffix = SUFFIX[interface]
            prefix = "" if key == suffix else key[:-len(suffix) - 1] \
                if key.endswith("_" + suffix) else key
            groups.setdefault(prefix, []).append(key)
    named = {g for g, keys in groups.items() if any(fields[k][1] == "PersonName" for k in keys)}
    for group in set(groups) - named:
        roles = {fields[k][2] for k in groups[group]} - {None}
        hosts = [h for h in named if roles & {fields[k][2] for k in groups[h]}]
        if len(hosts) == 1:
            groups[hosts[0]] += groups.pop(group)
    return groups


def whose(interface: str, value: str) -> Any:
    return {"PersonName": WORLD.person, "EmailAddress": WORLD.person_by_email,
            "PhoneNumber": WORLD.person_by_phone}[interface](value)


def test_each_identity_group_is_one_world_person_and_groups_are_different_people():
    failures, covered = [], set()
    for name, spec in SPECS.items():
        for args, data in calls(spec):
            echoed = {v for v in args.values() if isinstance(v, str)}
            for fields, record, _ in records(spec.returns, data):
                business = any(t[1] == "OrganizationName" and t[2] in KINDS
                               for t in fields.values())
                people = {}
                for group, keys in identity_groups(fields).items():
                    if group == "" and business and not any(
                            fields[k][1] == "PersonName" for k in keys):
                        continue  # a business's own phone and email: the business test
                    own = [k for k in keys if k in record and record[k] not in echoed]
                    found = {whose(fields[k][1], record[k]) for k in own}
                    if own:
                        covered.add(name)
                        if None in found or len(found) > 1:
                            failures.append((name, group, {k: record[k] for k in keys}))
                        elif all(k in own for k in keys):
                            people[group] = found.pop()
                if len(set(people.values())) < len(people):
                    failures.append((name, "same person in two groups", people))
    report(failures, covered, 170)


def test_businesses_are_the_worlds_of_their_kind_in_the_records_city():
    failures, covered = [], set()
    for name, spec in SPECS.items():
        cities = [k for k, v in params(spec).items() if tag(v)[1] == "City"]
        for args, data in calls(spec):
            echoed = {v for v in args.values() if isinstance(v, str)}
            for fields, record, _ in records(spec.returns, data):
                for key, (_, interface, role) in fields.items():
                    value = record.get(key)
                    if interface != "OrganizationName" or role not in KINDS or value in echoed:
                        continue
                    covered.add(name)
                    found = WORLD.business(value)
                    own_city = [k for k, t in fields.items() if t[1] == "City" and "_" not in k]
                    city = record[own_city[0]] if own_city else \
                        args.get(cities[0]) if len(cities) == 1 else None
                    if found is None or found.kind != role or (city and found.city != city):
                        failures.append((name, key, value, city, found))
                    elif key.endswith("_name") or key in ("business", "company", "insurer"):
                        _check_contact(fields, record, found, echoed, failures, name)
    report(failures, covered, 45)


def _check_contact(fields: dict[str, Tag], record: dict[str, Any], business: Any,
                   echoed: set[str], failures: list[Any], name: str) -> None:
    """A record about a business (no person of its own) lists the business's phone, email
    and street (unless the request gave them)."""
    if any(t[1] == "PersonName" and k == "name" for k, t in fields.items()):
        return
    groups = identity_groups(fields)
    if "" not in groups or any(fields[k][1] == "PersonName" for k in groups[""]):
        return
    streets = [k for k, t in fields.items() if t[1] == "StreetAddress" and k.split("_")[0]
               not in groups]
    for key in groups[""] + streets:
        wanted = {"PhoneNumber": business.phone, "EmailAddress": business.email,
                  "StreetAddress": business.street}[fields[key][1]]
        if record.get(key) not in (wanted, *echoed):
            failures.append((name, key, record.get(key), business))


def _domains(fields: dict[str, Tag], record: dict[str, Any], roles: set[Any]) -> set[str]:
    """The domains of the World businesses and organisations the record names in fields of
    ``roles`` (None: any role)."""
    out = set()
    for key, (_, interface, role) in fields.items():
        value = record.get(key)
        if interface == "OrganizationName" and isinstance(value, str) and (
                None in roles or role in roles or key in roles):
            found = WORLD.business(value) or WORLD.organization(value)
            if found is not None:
                out.add(found.domain)
    return out


def test_a_link_is_on_the_site_of_whom_the_record_is_about():
    """A business's or a company's website is on its own domain; an article is on the site
    of the publication that ran it."""
    failures, covered = [], set()
    for name, spec in SPECS.items():
        for args, data in calls(spec):
            echoed = {v for v in args.values() if isinstance(v, str)}
            for fields, record, _ in records(spec.returns, data):
                for key, (_, interface, role) in fields.items():
                    link = record.get(key)
                    if interface != "Url" or not isinstance(link, str) or link in echoed:
                        continue
                    if role == "website":
                        domains = _domains(fields, record, {None}) - _domains(
                            fields, record, {"publisher"})
                    elif role == "article":
                        domains = _domains(fields, record, {"publisher", "publication"})
                    else:
                        continue
                    if not domains:
                        continue
                    covered.add(name)
                    host = link.split("/")[2] if link.count("/") >= 2 else ""
                    if host.removeprefix("www.") not in domains:
                        failures.append((name, key, link, sorted(domains)))
    report(failures, covered, 12)


AHEAD = {"event_date", "departure", "arrival", "check_in", "check_out", "appointment",
         "renewal_date", "expiry"}
BEHIND = {"created", "posted", "issue_date", "application_date", "updated"}


def test_what_is_booked_lies_ahead_and_what_was_written_behind():
    """A show, a flight or a check-in is after today; a posting or a record's creation is
    before it (unless the request asked about a day: then items fall on it), or today for the
    records a write makes (made now)."""
    failures, covered = [], set()
    today = WORLD.today
    for name, spec in SPECS.items():
        if any(tag(v)[1] in DATES for v in params(spec).values()):
            continue  # the request names a day or a range: items follow it
        for args, data in calls(spec):
            for fields, record, _ in records(spec.returns, data):
                for key, (kind, interface, role) in fields.items():
                    value = record.get(key)
                    if interface not in DATES or not isinstance(value, str) or (
                            role not in AHEAD | BEHIND):
                        continue
                    covered.add(name)
                    made_now = not spec.read_only and day(value) == today
                    if (day(value) <= today) if role in AHEAD else (day(value) >= today
                                                                    and not made_now):
                        failures.append((name, key, role, value))
    report(failures, covered, 20)


# -- 4. no placeholder strings ----------------------------------------------------------------

OLD_WORDS = ("alpha|bright|clear|daily|early|fresh|grand|harbor|island|jade|keen|lively|modern|"
             "north|open|prime|quiet|river")
PLACEHOLDER = re.compile(r"^[a-z]+ [a-z ]+ \d+$")
ID_FIELD = re.compile(r"(^|_)id$")


def test_no_generated_string_is_a_placeholder():
    failures, seen = [], 0
    for name, spec in SPECS.items():
        for args, data in calls(spec):
            for key, text in [*strings(args), *strings(data)]:
                seen += 1
                words = key.replace("_", " ")
                shaped = re.match(rf"^(?:{OLD_WORDS}) (?:[a-z]+ )*{re.escape(words)}\b", text,
                                  re.IGNORECASE) if words else None
                if PLACEHOLDER.match(text) or shaped or re.search(
                        rf'^(?:{OLD_WORDS}) (?:update|notes from)', text, re.IGNORECASE):
                    failures.append((name, key, text))
                elif ID_FIELD.search(key) and not re.match(r"^[A-Z]+-?\d{4}$", text) and \
                        text not in args.values():
                    failures.append((name, key, text, "not id-shaped"))
    assert not failures, failures[:20]
    assert seen > 5000


def test_the_fit_memo_never_holds_an_argument():
    marker = "zq-marker-7"
    for spec in SPECS.values():
        args = example_arguments(spec, WORLD, 4)
        args = {k: f"{marker} {v}"[:len(v) + 12] if isinstance(v, str) and k not in (
            "currency",) and "pattern" not in branch(params(spec)[k]) and "enum" not in
            branch(params(spec)[k]) else v for k, v in args.items()}
        REGISTRY.get(spec.service).create(WORLD).call(spec.name, args)
    assert not any(marker in str(key) for key in _FITS)


def test_percentages_take_the_range_of_what_they_measure():
    """A federal tax rate is 10-37, a click-through rate a few percent, not any of 0-100."""
    from compoenv.magnitudes import PERCENTAGES

    ranges = {word: (low, high) for word, low, high, _ in PERCENTAGES}
    seen = 0
    for spec in SPECS.values():
        for args, data in calls(spec):
            for tags, values, _ in records(spec.returns, data):
                for key, (_, interface, _) in tags.items():
                    word = next((w for w in ranges if w in key), None)
                    if interface != "Percentage" or word is None or key not in values:
                        continue
                    low, high = ranges[word]
                    assert low <= values[key] <= high, (spec.qualified_name, key, values[key])
                    seen += 1
    assert seen >= 20


def test_people_found_at_a_company_work_there():
    """The leads "at Falcon Studios" are Falcon Studios' people (their email is on its domain,
    and a support profile of them names the same company)."""
    for name, param in (("crm__search_leads", "company"),
                        ("social_media__search_profiles", "employer")):
        spec = SPECS[name]
        for person in WORLD.people[1:6]:
            result = REGISTRY.get(spec.service).create(WORLD).call(
                spec.name, {param: person.employer})
            assert result["success"], result
            for item in result["data"]:
                found = WORLD.person_by_email(item["email"]) if "email" in item else \
                    WORLD.person(item["name"])
                assert found is not None and found.employer == person.employer, (name, item)
            staff = sum(p.employer == person.employer for p in WORLD.people[1:])
            high = (spec.returns.get("maxItems") or 5)
            if staff >= 2:  # everyone on record there, up to six
                assert len(result["data"]) == min(staff, 6, high), (name, person.employer)
    # and a profile of someone found by their email names where they work and live
    spec = SPECS["helpdesk__get_customer_profile"]
    for person in WORLD.people[1:6]:
        profile = REGISTRY.get("helpdesk").create(WORLD).call(
            spec.name, {"customer_email": person.email})["data"]
        assert (profile["company"], profile["customer_city"]) == (person.employer, person.city)
