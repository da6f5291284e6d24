"""The world never contradicts itself: records remembered across views, and invariants per record.

Two halves, shared by the simulator, the ``verify`` check, the tests and ``bench.world``:

* **Identity and recall.** A record a simulated service shows is known by its id (the ``id``
  field, or the ``<kind>_id`` field of its own kind), else by its name or title within its
  kind (the noun of the list that holds it, or of the tool that returned it) and the record
  holding it. ``reconcile`` makes an answer agree with what the episode was shown before: a
  field shown before keeps its value (a fresh draw gives way), a field not shown before is
  added to what is remembered. A tool naming one record by its key (``key_param``) answers
  that record: its id is the key asked for (``simulator.recall``). A write's own decisions
  (its arguments, the status it leaves, the time it was made) are not overruled: they are the
  change, remembered from then on.
* **Invariants.** ``violations`` lists what a record says that cannot be true of one thing:
  amounts that do not multiply, percentiles out of order, a part above its total, a count
  beside a list it does not count, a word count that does not follow the text, a failed status
  on a successful write, an email off its employer's domain, a "since" date in the future.
  The offline model builds records that hold to them (``coherence.settle``); the rest is
  checked (``compoenv verify``'s consistency check, ``bench.world``).
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import random
import re
from collections.abc import Mapping
from typing import Any

from compoenv.schema import is_valid

__all__ = ["FAILED", "CHANGES", "makes_new", "kind_of", "identity", "shown_records", "review",
           "refer", "key_param", "named", "id_field",
           "mend", "reconcile", "remembered", "remember", "stamped", "violations",
           "creates", "created_before", "INVARIANTS", "WRITE_MADE", "PROTECTED", "Recall"]

Recall = dict[str, tuple[tuple[str, ...], dict[str, Any]]]
"""What an episode remembers: identity key -> (every key of that record, its fields). Entries
are replaced, never changed in place, so a fork of the mapping keeps its own view. A key is
``id<US>value``, ``id<US>kind<US>value`` (a short number names a record of its kind only) or
``name<US>kind<US>name`` (<US>: the unit separator)."""
_US = "\x1f"

_SCALAR = (str, int, float, bool, type(None))
_GENERIC_LISTS = frozenset({"results", "items", "data", "records", "entries", "list",
                            "matches", "hits", "rows", "values", "page", "content"})
_DETAIL_WORDS = frozenset({"detail", "details", "info", "information", "summary", "status",
                           "profile", "record", "data", "result", "results", "by", "id",
                           "overview", "full", "lookup"})
_NAMES = ("name", "title")
_SHORT_ID = re.compile(r"^\d{1,6}$")
# fields a write decides, whatever was shown of the record before
PROTECTED = frozenset({"status", "state", "updated", "updated_at", "modified", "modified_at",
                       "last_updated", "last_modified", "cancelled_at", "canceled_at",
                       "deleted_at", "closed_at", "completed_at", "paid_at"})
# fields that say when a record was written: a write's new record is made now
WRITE_MADE = frozenset({"created", "created_at", "created_on", "date_created", "creation_date",
                        "submitted", "submitted_at", "submitted_on", "submission_date",
                        "booked", "booked_at", "booked_on", "booking_date", "placed_at",
                        "ordered_at", "order_date", "requested_at", "request_date",
                        "applied_at", "application_date", "sent_at", "logged_at",
                        "recorded_at", "registered_at", "registration_date", "issued_at",
                        "opened_at", "filed_at", "reported_at", "timestamp", "added_at",
                        "uploaded_at", "posted_at", "scheduled_at", "enrolled_at"})
# fields that say since when something holds: never after today
_SINCE = re.compile(r"^(?:member_since|since|customer_since|joined|joined_at|joined_on|"
                    r"join_date|date_joined|hire_date|hired_at|hired_on|start_date_employment|"
                    r"created|created_at|created_on|date_created|registered_at|"
                    r"registration_date|signup_date|signed_up_at|established|founded|"
                    r"founded_on|opened_on|account_created|first_seen|employee_since)$")


def _singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


@functools.lru_cache(maxsize=8192)
def kind_of(noun: str) -> str:
    """The kind of record a noun speaks of: its last word that is not a view's
    ("restaurant_details" -> "restaurant", "nearby_restaurants" -> "restaurant")."""
    words = [w for w in re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", noun).lower().split("_") if w]
    while len(words) > 1 and words[-1] in _DETAIL_WORDS:
        words.pop()
    return _singular(words[-1]) if words else ""


def _id_field(record: Mapping[str, Any], kind: str) -> str | None:
    """The field holding the record's own id, if it has one."""
    if isinstance(record.get("id"), (str, int)) and not isinstance(record.get("id"), bool):
        return "id"
    own = f"{kind}_id"
    if isinstance(record.get(own), (str, int)) and not isinstance(record.get(own), bool):
        return own
    return None  # a policy_id in a payment names the policy, not the payment


_VERB = re.compile(r"^[a-z]+_")


def key_param(tool: str, parameters: Mapping[str, Any], kind: str) -> str | None:
    """The required parameter by which a tool names the one record of ``kind`` it reads,
    changes or removes: ``id``, ``<kind>_id`` or ``<noun>_id`` (the tool's noun:
    ``get_parking_reservation(reservation_id)``, ``get_expense_report(expense_report_id)``);
    None for a tool that names no record of its own kind (``add_ticket_comment(ticket_id)``
    makes a comment)."""
    required = parameters.get("required") or ()
    noun = _VERB.sub("", tool)
    for param in ("id", f"{kind}_id", f"{noun}_id", f"{_singular(noun)}_id"):
        if param in required:
            return param
    return None


def id_field(record: Mapping[str, Any], kind: str) -> str | None:
    """The field holding the record's own id (``id``, else ``<kind>_id``), if it has one."""
    return _id_field(record, kind)


def named(record: Any, kind: str, key: Any, param: str | None = None) -> bool:
    """Whether ``record`` is the record of ``kind`` whose key is ``key``: by the field of the
    key parameter's name where it has one (a cookbook entry's ``recipe_id``), else by its
    own id."""
    if not isinstance(record, Mapping):
        return False
    field = param if param is not None and param in record else _id_field(record, kind)
    return field is not None and str(record[field]).strip() == str(key).strip()


def identity(record: Mapping[str, Any], kind: str, scope: str = "") -> tuple[str, ...]:
    """The keys a record is known by (id first, then its name within its kind); none for a
    record that names itself by neither. ``scope``: the key of the record holding this one
    (a policy's coverage "trip cancellation" is that policy's, not every policy's): names and
    short numbers name a record within it, an id like "EVT-0042" names one anywhere."""
    keys: list[str] = []
    field = _id_field(record, kind)
    if field is not None:
        value = str(record[field]).strip()
        if value:
            keys.append(f"id{_US}{scope}{kind}{_US}{value}" if _SHORT_ID.match(value)
                        else f"id{_US}{value}")
    for name in (*_NAMES, f"{kind}_name"):
        value = record.get(name)
        if isinstance(value, str) and value.strip():
            keys.append(f"name{_US}{scope}{kind}{_US}{' '.join(value.lower().split())}")
            break
    return tuple(keys)


def _inner(field: str, kind: str) -> str:
    """The kind of the records under ``field`` of a record of ``kind``."""
    return kind if field in _GENERIC_LISTS else kind_of(field)


def shown_records(data: Any, kind: str) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    """Every record an answer shows that names itself, with its keys (``identity``), as
    ``reconcile`` reads them: the top-level records of ``kind``, records under a field of
    the field's kind, within the record that holds them."""
    out: list[tuple[tuple[str, ...], dict[str, Any]]] = []

    def walk(node: Any, kind: str, scope: str) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item, kind, scope)
        elif isinstance(node, dict):
            keys = identity(node, kind, scope)
            if keys:
                out.append((keys, node))
            inner = f"{keys[0]}/" if keys else scope
            for field, value in node.items():
                if isinstance(value, (dict, list)):
                    walk(value, _inner(field, kind), inner)

    walk(data, kind, "")
    return out


def remembered(recall: Recall, keys: tuple[str, ...]) -> Any:
    """The remembered entry of a record with these keys: by id, else by name when the
    remembered one does not carry another id."""
    ids = [k for k in keys if k.startswith("id" + _US)]
    for key in ids:
        if key in recall:
            return recall[key]
    for key in keys:
        if key.startswith("name" + _US) and key in recall:
            entry = recall[key]
            other = [k for k in entry[0] if k.startswith("id" + _US)]
            if not ids or not other:
                return entry
    return None


def _props(schema: Any) -> dict[str, Any]:
    if not isinstance(schema, dict):
        return {}
    if "anyOf" in schema or "oneOf" in schema:
        options = [b for b in schema.get("anyOf") or schema.get("oneOf") or ()
                   if isinstance(b, dict) and b.get("type") != "null"]
        schema = options[0] if options else {}
    return schema.get("properties") or {}


def _items(schema: Any) -> Any:
    if isinstance(schema, dict) and ("anyOf" in schema or "oneOf" in schema):
        options = [b for b in schema.get("anyOf") or schema.get("oneOf") or ()
                   if isinstance(b, dict) and b.get("type") == "array"]
        schema = options[0] if options else {}
    return schema.get("items") if isinstance(schema, dict) else None


def reconcile(data: Any, schema: Any, kind: str, recall: Recall,
              protected: frozenset[str] | set[str] = frozenset(), top_write: bool = False,
              trust: bool = False) -> tuple[Any, bool]:
    """``data`` agreeing with ``recall`` (which it updates), and whether anything changed.

    Args:
        data: An answer (a record, a list of them, a page object with a list).
        schema: Its JSON schema (a value from memory replaces a fresh one only if it fits).
        kind: The kind of the top-level record (``kind_of`` the tool's noun).
        recall: What the episode remembers; updated with what ``data`` shows.
        protected: Fields of the top-level record a write decides (its arguments).
        top_write: Whether ``data`` is a write's record: its protected fields (and
            ``PROTECTED``) are the change, not contradictions.
        trust: ``data`` is the truth (records a store keeps): nothing in it changes, and it
            is remembered as it is.
    """
    later: list[tuple[tuple[str, ...], Mapping[str, Any]]] = []
    out = _walk(data, schema, kind, recall, frozenset(protected) | PROTECTED
                if top_write else frozenset(protected), trust, "", later)
    # remembered once the answer is read: its records agree with earlier answers, not with
    # each other (two coverages of one name in one policy are two lines, not one record)
    for keys, record in later:
        remember(recall, keys, record)
    return out


def _walk(node: Any, schema: Any, kind: str, recall: Recall, protected: frozenset[str],
          trust: bool, scope: str, later: list[Any]) -> tuple[Any, bool]:
    if isinstance(node, list):
        items, changed, out = _items(schema), False, []
        for item in node:
            new, moved = _walk(item, items, kind, recall, frozenset(), trust, scope, later)
            out.append(new)
            changed |= moved
        return (out, True) if changed else (node, False)
    if not isinstance(node, dict):
        return node, False
    props = _props(schema)
    out: dict[str, Any] | None = None
    keys = identity(node, kind, scope)
    if keys and not trust:
        entry = remembered(recall, keys)
        # a text a write gives (a document's new content) brings its counts with it
        follows = _TEXT_COUNTS if protected and not protected.isdisjoint(_TEXT) else ()
        if entry is not None:
            for field, value in node.items():
                if field in protected or field in follows or field not in entry[1] \
                        or not isinstance(value, _SCALAR):
                    continue
                known = entry[1][field]
                if known != value and isinstance(known, _SCALAR) and field in props \
                        and is_valid(known, props[field]):
                    if out is None:
                        out = dict(node)
                    out[field] = known
        if out is not None:  # the fresh fields beside the remembered ones follow them
            _follow(out, props, (set(entry[1]) - set(follows)) | protected, keys[0])
    if not trust:
        referred = refer(out if out is not None else node, props, kind, recall, protected)
        if referred is not None:
            out = referred
    record = out if out is not None else node
    inner = f"{keys[0]}/" if keys else scope
    for field, value in record.items():
        if isinstance(value, (dict, list)):
            new, moved = _walk(value, props.get(field), _inner(field, kind), recall,
                               frozenset(), trust, inner, later)
            if moved:
                if out is None:
                    out = record = dict(node)
                out[field] = new
    if keys:
        later.append((keys, record))
    return (out, True) if out is not None else (node, False)


def review(recall: Recall, data: Any, kind: str, write: bool = False) -> tuple[int, list[str]]:
    """An observer's reading of one answer: how many records it shows again and how each
    that disagrees with its earlier view does (one line per record). A write's records are
    the change: they are what the records are from then on, never a disagreement. ``recall``
    is the observer's own memory (not the simulator's), updated with what the answer shows."""
    again, differ = 0, []
    shown = shown_records(data, kind)
    for keys, record in shown:
        earlier = remembered(recall, keys)
        if earlier is not None and not write:
            again += 1
            fields = [f"{f}: {earlier[1][f]!r} then {v!r}" for f, v in record.items()
                      if f in earlier[1] and isinstance(v, _SCALAR) and earlier[1][f] != v]
            if fields:
                differ.append(f"{keys[0].replace(_US, ' ')}: {'; '.join(fields[:3])}")
        if write and earlier is not None:
            for alias in earlier[0]:
                recall.pop(alias, None)
    for keys, record in shown:  # once the answer is read, as ``reconcile`` does
        remember(recall, keys, record)
    return again, differ


# fields a record copies from a record it refers to (a ticket's event: its name, venue, city,
# day and start), when both carry them under the same name
_DESCRIPTIVE = frozenset({"city", "date", "start", "end", "start_time", "end_time", "starts_at",
                          "ends_at", "duration_minutes", "venue", "venue_name", "venue_address",
                          "street_address", "address", "location", "category", "performer",
                          "country", "neighborhood", "cuisine", "property_type", "airline",
                          "origin", "destination", "departure", "arrival", "flight_number",
                          "make", "model", "brand", "currency"})


def refer(record: Mapping[str, Any], props: Mapping[str, Any], kind: str, recall: Recall,
          protected: frozenset[str] | set[str] = frozenset()) -> dict[str, Any] | None:
    """``record`` agreeing with the records it refers to by id (``<other>_id``: a ticket's
    ``event_id``) that the episode was shown: the fields it copies from them (the other's
    name, ``<other>_<field>``, and descriptive fields both carry, such as venue, city, date)
    take their shown values; None when nothing changes. ``protected`` fields (a write's
    arguments) stay."""
    out: dict[str, Any] | None = None
    for field, value in record.items():
        if not field.endswith("_id") or field == f"{kind}_id" or field == "id" \
                or not isinstance(value, (str, int)) or isinstance(value, bool):
            continue
        other = field[:-3]
        text = str(value).strip()
        entry = recall.get(f"id{_US}{text}") if not _SHORT_ID.match(text) else None
        if entry is None:
            continue
        shown = entry[1]
        for key, old in record.items():
            if key in protected or not isinstance(old, _SCALAR) or key == field:
                continue
            if key.startswith(other + "_"):
                rest = key[len(other) + 1:]
                known = shown.get(key, shown.get(rest))
            elif key in _DESCRIPTIVE:
                known = shown.get(key)
            else:
                continue
            if known is None or known == old or not isinstance(known, _SCALAR) \
                    or key not in props or not is_valid(known, props[key]):
                continue
            if out is None:
                out = dict(record)
            out[key] = known
    return out


def _follow(record: dict[str, Any], props: dict[str, Any], pinned: set[str], key: str) -> None:
    """``mend`` a record some of whose fields memory set: the others move to agree."""
    def put(field: str, value: Any) -> bool:
        if field in props and is_valid(value, props[field]):
            record[field] = value
            return True
        return False

    mend(record, put, pinned, random.Random(key))


def remember(recall: Recall, keys: tuple[str, ...],
              record: Mapping[str, Any]) -> None:
    entry = remembered(recall, keys)
    shown = {k: v for k, v in record.items() if isinstance(v, _SCALAR)}
    if entry is None:
        all_keys, fields = keys, shown
    else:
        all_keys = tuple(dict.fromkeys((*entry[0], *keys)))
        fields = {**entry[1], **shown}
    new = (all_keys, fields)
    for key in all_keys:
        recall[key] = new


# -- invariants -----------------------------------------------------------------------------

_PERCENTILE = re.compile(r"^(?:(.*?)_)?(?:p(\d{2})|percentile_?(\d{2})|(median))(?:_(.*))?$")
_MIN_MAX = re.compile(r"^(?:(min|minimum|lowest|low|avg|average|mean|max|maximum|highest|high)"
                      r"(?:_(.+))?|(.+)_(min|minimum|avg|average|mean|max|maximum))$")
_ORDER = {"min": 0, "minimum": 0, "lowest": 0, "low": 0, "avg": 1, "average": 1, "mean": 1,
          "max": 2, "maximum": 2, "highest": 2, "high": 2}
_PARTS = ("open", "active", "unread", "pending", "completed", "closed", "resolved", "used",
          "failed", "available", "remaining", "booked", "sold", "occupied", "overdue")
_QUANTITY = ("quantity", "qty", "amount", "units", "shares", "volume", "count")
_PRICE = ("unit_price", "price", "rate", "exchange_rate", "price_per_unit", "price_usd",
          "unit_cost")
_VALUE = ("value", "total_value", "market_value", "fiat_value", "value_usd", "total",
          "total_price", "total_cost", "line_total", "subtotal", "cost")
FAILED = frozenset({"failed", "failure", "error", "errored", "declined", "rejected",
                     "denied", "refused", "unsuccessful", "bounced", "invalid"})
_EMPLOYER = ("employer", "company", "organization", "organisation", "company_name")
_TEXT = ("body", "content", "text", "description", "message", "transcript")
_TEXT_COUNTS = frozenset({"word_count", "char_count", "character_count", "characters"})


def _num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(
        value)


def _day(value: Any) -> dt.date | None:
    if not isinstance(value, str) or len(value) < 10:
        return None
    try:
        return dt.date.fromisoformat(value[:10])
    except ValueError:
        return None


def _words(text: str) -> int:
    return len(text.split())


INVARIANTS = ("product", "fee", "percentiles", "min_avg_max", "parts", "counts", "word_count",
              "char_count", "status", "email_domain", "since")


def violations(record: Any, today: dt.date | None = None, world: Any = None,
               success_write: bool = False, given: Mapping[str, Any] | None = None
               ) -> list[str]:
    """What ``record`` (and every record inside it) says that cannot all be true, one line
    each, ``<invariant>: <where> <what>`` (``INVARIANTS`` names them).

    Args:
        record: A record, or an answer holding records.
        today: The World's date ("since" dates may not come after it).
        world: The World (an email beside a World organisation's name is at its domain).
        success_write: Whether ``record`` is the answer of a successful write (its status
            may not say it failed).
        given: The call's arguments: a value the caller gave (a date asked about, the email
            and company of a contact being added) is the caller's, not the world's word.
    """
    out: list[str] = []
    said = frozenset(str(v).casefold() for v in (given or {}).values()
                     if isinstance(v, (str, int, float)))
    _check(record, today, world, success_write, out, "", said)
    return out


def _check(node: Any, today: dt.date | None, world: Any, success: bool, out: list[str],
           where: str, said: frozenset[str] = frozenset()) -> None:
    if isinstance(node, list):
        for i, item in enumerate(node):
            _check(item, today, world, False, out, f"{where}[{i}]", said)
        return
    if not isinstance(node, dict):
        return
    _percentiles(node, out, where)
    _min_max(node, out, where)
    _parts(node, out, where)
    _counts(node, out, where)
    _text_counts(node, out, where)
    _product(node, out, where)
    if success:
        status = node.get("status")
        if isinstance(status, str) and status.lower() in FAILED:
            out.append(f"status: {where}a successful write says its status is {status!r}")
    if world is not None and not said & {str(node.get(k)).casefold() for k in
                                         ("email", *_EMPLOYER) if k in node}:
        _email_domain(node, world, out, where)
    if today is not None:
        for key, value in node.items():
            day = _day(value) if _SINCE.match(key) and str(value).casefold() not in said \
                else None
            if day is not None and day > today:
                out.append(f"since: {where}{key}: {value} is after today ({today})")
    for key, value in node.items():
        if isinstance(value, (dict, list)):
            _check(value, today, world, False, out, f"{where}{key}.", said)


def _percentiles(node: dict[str, Any], out: list[str], where: str) -> None:
    groups: dict[str, list[tuple[int, str, float]]] = {}
    for key, value in node.items():
        match = _PERCENTILE.match(key)
        if match and _num(value):
            level = 50 if match.group(4) else int(match.group(2) or match.group(3))
            stem = f"{match.group(1) or ''}|{match.group(5) or ''}"
            groups.setdefault(stem, []).append((level, key, value))
    for found in groups.values():
        found.sort()
        for (_, a, x), (_, b, y) in zip(found, found[1:]):
            if x > y:
                out.append(f"percentiles: {where}{a}={x} > {b}={y}")


def _min_max(node: dict[str, Any], out: list[str], where: str) -> None:
    groups: dict[str, list[tuple[int, str, float]]] = {}
    for key, value in node.items():
        match = _MIN_MAX.match(key)
        if match is None or not _num(value):
            continue
        word = match.group(1) or match.group(4)
        stem = match.group(2) if match.group(1) else match.group(3)
        groups.setdefault(stem or "", []).append((_ORDER[word], key, value))
    for found in groups.values():
        found.sort()
        for (i, a, x), (j, b, y) in zip(found, found[1:]):
            if i < j and x > y + 1e-9:
                out.append(f"min_avg_max: {where}{a}={x} > {b}={y}")


def _parts(node: dict[str, Any], out: list[str], where: str) -> None:
    for key, value in node.items():
        if not _num(value):
            continue
        for part in _PARTS:
            stem = key[len(part) + 1:] if key.startswith(part + "_") else \
                key[:-len(part) - 1] if key.endswith("_" + part) else None
            if not stem:
                continue
            for whole in (f"total_{stem}", f"{stem}_total", "total", f"{stem}_count"
                          if stem != "count" else "total_count", "total_count", "capacity"):
                total = node.get(whole)
                if whole != key and _num(total) and value > total:
                    out.append(f"parts: {where}{key}={value} > {whole}={total}")
                    break
            break


def _counts(node: dict[str, Any], out: list[str], where: str) -> None:
    lists = {k: v for k, v in node.items() if isinstance(v, list)}
    if not lists:
        return
    only = next(iter(lists.values())) if len(lists) == 1 else None
    for key, value in node.items():
        if not _num(value) or isinstance(value, float):
            continue
        counted = None
        for name, items in lists.items():
            if key in (f"{name}_count", f"num_{name}", f"number_of_{name}", f"{name}_total",
                       f"total_{name}", f"count_{name}"):
                counted = (name, items)
        if counted is None and only is not None and key in ("count", "result_count",
                                                            "results_count", "num_results"):
            counted = (next(iter(lists)), only)
        if counted is not None and value != len(counted[1]) and not (
                key.startswith("total") and value > len(counted[1])):
            out.append(f"counts: {where}{key}={value} but {counted[0]} holds {len(counted[1])}")


def _text_counts(node: dict[str, Any], out: list[str], where: str) -> None:
    text = next((node[k] for k in _TEXT if isinstance(node.get(k), str)), None)
    if text is None:
        return
    words = node.get("word_count")
    if _num(words) and words != _words(text):
        out.append(f"word_count: {where}word_count={words} but the text has {_words(text)} words")
    for key in ("char_count", "character_count", "characters"):
        chars = node.get(key)
        if _num(chars) and chars != len(text):
            out.append(f"char_count: {where}{key}={chars} but the text has {len(text)} characters")


def _product(node: dict[str, Any], out: list[str], where: str) -> None:
    quantity = next((k for k in _QUANTITY if _num(node.get(k))), None)
    price = next((k for k in _PRICE if _num(node.get(k)) and k != quantity), None)
    value = next((k for k in _VALUE if _num(node.get(k)) and k not in (quantity, price)), None)
    if quantity and price and value and not _adds_parts(node, value):
        want = node[quantity] * node[price]
        if abs(want - node[value]) > max(0.02, 0.01 * abs(want)):
            out.append(f"product: {where}{quantity}={node[quantity]} x {price}={node[price]} is "
                       f"{want:.2f}, not {value}={node[value]}")
    fee = next((k for k in ("fee", "fees", "network_fee", "transaction_fee", "commission")
                if _num(node.get(k))), None)
    base = next((k for k in ("value", "fiat_value", "value_usd", "amount_usd", "total_value",
                             "market_value", "amount") if _num(node.get(k)) and k != fee), None)
    if fee and base and node[base] > 0 and node[fee] > 0.25 * node[base]:
        out.append(f"fee: {where}{fee}={node[fee]} is more than a quarter of {base}={node[base]}")


def _adds_parts(node: dict[str, Any], value: str) -> bool:
    """Whether a total adds fees or taxes to the product (then it is more than it)."""
    return value.startswith("total") and any(
        _num(node.get(k)) for k in ("tax", "fee", "fees", "tip", "shipping", "discount"))


def _email_domain(node: dict[str, Any], world: Any, out: list[str], where: str) -> None:
    email = node.get("email")
    employer = next((node[k] for k in _EMPLOYER if isinstance(node.get(k), str)), None)
    if not isinstance(email, str) or "@" not in email or employer is None:
        return
    org = world.organization(employer)
    if org is not None and email.rpartition("@")[2].lower() != org.domain.lower():
        out.append(f"email_domain: {where}email {email} is not at {employer}'s domain {org.domain}")


def stamped(record: Any, schema: Any, now: str) -> Any:
    """A write's new record made ``now`` (an ISO datetime): each field saying when it was
    made (``WRITE_MADE``) set to now, written as the field writes moments (a date, a
    datetime with or without seconds, a trailing ``Z``), where the value fits its schema."""
    if not isinstance(record, dict):
        return record
    props, out = _props(schema), None
    for key, value in record.items():
        if key not in WRITE_MADE or not isinstance(value, str) or _day(value) is None:
            continue
        if len(value) == 10:
            new = now[:10]
        else:
            new = now[:len(value)] if len(value) <= len(now) else now
            if value.endswith("Z") and not new.endswith("Z"):
                new = now + "Z"
        if new != value and key in props and is_valid(new, props[key]):
            if out is None:
                out = dict(record)
            out[key] = new
    return out if out is not None else record


# verbs of writes that change, cancel or remove a record there rather than make one
CHANGES = ("update_", "edit_", "share_", "attach_", "link_", "tag_", "unshare_", "modify_",
           "change_", "set_", "patch_", "cancel_", "delete_", "remove_", "close_", "archive_",
           "approve_", "reject_", "assign_", "renew_", "extend_", "refund_", "mark_",
           "complete_", "resolve_", "move_", "rename_", "decline_", "deny_", "revoke_",
           "unsubscribe_", "disable_", "stop_", "end_")


def makes_new(tool: str) -> bool:
    """Whether a write tool makes a new record (a create, a booking, a payment), not one
    that changes, cancels or removes a record there."""
    return not tool.startswith(CHANGES)


def creates(recall: Recall, tool: str, data: Any, kind: str) -> bool:
    """Whether a write's answer is a record it made: a tool that makes records
    (``makes_new``) answering a record the episode was not shown before (``recall``: the
    observer's memory, before ``review`` reads this answer)."""
    if not makes_new(tool) or not isinstance(data, dict):
        return False
    keys = identity(data, kind)
    return not keys or remembered(recall, keys) is None


def created_before(record: Any, today: dt.date) -> list[str]:
    """Fields of a write's new record that say it was made before today."""
    if not isinstance(record, dict):
        return []
    return [f"{k}={v}" for k, v in record.items()
            if k in WRITE_MADE and (day := _day(v)) is not None and day < today]


# -- mending a generated record --------------------------------------------------------------

def mend(record: dict[str, Any], put: Any, pinned: set[str] | frozenset[str],
         rng: Any, today: dt.date | None = None, world: Any = None) -> None:
    """Move ``record``'s free values (not ``pinned``) until ``violations`` finds nothing in it
    (this record only, not those inside it): ``put(key, value)`` sets a value if it fits the
    field's schema and says whether it did. Used by ``coherence.settle`` on every record the
    offline model makes."""
    steps = _steps(tuple(record))
    if not steps or all(k in pinned for k in record):
        return
    if "text" in steps:
        _mend_text(record, put, pinned)
    for group in _ordered_groups(record) if "order" in steps else ():
        if not any(k in pinned for _, k in group):
            values = sorted(record[k] for _, k in group)
            for (_, key), value in zip(group, values):
                if record[key] != value:
                    put(key, value)
            continue
        # some are fixed: each free one kept between the ones below and the fixed above it
        for i, (_, key) in enumerate(group):
            if key in pinned:
                continue
            low = max((record[k] for _, k in group[:i]), default=-math.inf)
            high = min((record[k] for _, k in group[i + 1:] if k in pinned), default=math.inf)
            value = min(max(record[key], low), high)
            if value != record[key]:
                put(key, value)
    if "parts" in steps:
        _mend_parts(record, put, pinned, rng)
    if "counts" in steps:
        _mend_counts(record, put, pinned)
    if "product" in steps:
        _mend_product(record, put, pinned, rng)
    if today is not None and "since" in steps:
        for key, value in list(record.items()):
            day = _day(value) if _SINCE.match(key) and key not in pinned else None
            if day is not None and day > today:
                past = today - dt.timedelta(days=rng.randint(30, 900))
                put(key, past.isoformat() + value[10:])
    if world is not None and "email" in steps and "email" not in pinned:
        email = record.get("email")
        employer = next((record[k] for k in _EMPLOYER if isinstance(record.get(k), str)), None)
        org = world.organization(employer) if isinstance(employer, str) else None
        if org is not None and isinstance(email, str) and "@" in email \
                and email.rpartition("@")[2].lower() != org.domain.lower():
            put("email", f"{email.rpartition('@')[0]}@{org.domain}")


_COUNTING = re.compile(r"^(?:count|result_count|results_count|num_results|num_\w+|"
                       r"number_of_\w+|total_\w+|count_\w+|\w+_count|\w+_total)$")
_FEES = ("fee", "fees", "network_fee", "transaction_fee", "commission")


@functools.lru_cache(maxsize=8192)
def _steps(keys: tuple[str, ...]) -> frozenset[str]:
    """Which of ``mend``'s steps a record of these fields may need (once per field set: the
    records of one schema share it; most need none)."""
    names = set(keys)
    steps = set()
    if names & set(_TEXT) and names & {"word_count", "char_count", "character_count",
                                       "characters"}:
        steps.add("text")
    if sum(1 for k in keys if _PERCENTILE.match(k) or _MIN_MAX.match(k)) > 1:
        steps.add("order")
    if any(k.startswith(p + "_") or k.endswith("_" + p) for k in keys for p in _PARTS):
        steps.add("parts")
    if any(_COUNTING.match(k) for k in keys):
        steps.add("counts")
    if (names & set(_QUANTITY) and names & set(_PRICE)) or names & set(_FEES):
        steps.add("product")
    if any(_SINCE.match(k) for k in keys):
        steps.add("since")
    if "email" in names and names & set(_EMPLOYER):
        steps.add("email")
    return frozenset(steps)


def _mend_text(record: dict[str, Any], put: Any, pinned: Any) -> None:
    field = next((k for k in _TEXT if isinstance(record.get(k), str)), None)
    if field is None:
        return
    text = record[field]
    count = record.get("word_count")
    if _num(count) and "word_count" in pinned and field not in pinned \
            and isinstance(count, int) and 0 <= count != _words(text):
        # a count shown before and a fresh text: the text is as long as the count says
        words = text.split() or ["note"]
        if put(field, " ".join(words[i % len(words)] for i in range(count))):
            text = record[field]
    if _num(count) and "word_count" not in pinned:
        put("word_count", _words(text))
    for key in ("char_count", "character_count", "characters"):
        if _num(record.get(key)) and key not in pinned:
            put(key, len(text))


def _ordered_groups(record: dict[str, Any]) -> list[list[tuple[int, str]]]:
    """Groups of fields that come in order (percentiles of one stem, min/avg/max of one)."""
    groups: dict[str, list[tuple[int, str]]] = {}
    for key, value in record.items():
        if not _num(value):
            continue
        match = _PERCENTILE.match(key)
        if match:
            level = 50 if match.group(4) else int(match.group(2) or match.group(3))
            groups.setdefault(f"p|{match.group(1) or ''}|{match.group(5) or ''}", []).append(
                (level, key))
            continue
        match = _MIN_MAX.match(key)
        if match:
            word = match.group(1) or match.group(4)
            stem = match.group(2) if match.group(1) else match.group(3)
            groups.setdefault(f"m|{stem or ''}", []).append((_ORDER[word], key))
    out = []
    for found in groups.values():
        found.sort()
        if len(found) > 1 and len({level for level, _ in found}) == len(found):
            out.append(found)
    return out


def _mend_parts(record: dict[str, Any], put: Any, pinned: Any, rng: Any) -> None:
    problems: list[str] = []
    _parts(record, problems, "")
    for problem in (p.partition(": ")[2] for p in problems):
        part, _, rest = problem.partition("=")
        whole = rest.partition(" > ")[2].partition("=")[0]
        total = record.get(whole)
        if part in pinned or not _num(total):
            continue
        value = rng.randint(0, int(total)) if isinstance(record[part], int) else \
            round(rng.uniform(0, total), 2)
        put(part, value)


def _mend_counts(record: dict[str, Any], put: Any, pinned: Any) -> None:
    problems: list[str] = []
    _counts(record, problems, "")
    for problem in (p.partition(": ")[2] for p in problems):
        key = problem.partition("=")[0]
        holds = int(problem.rpartition(" holds ")[2])
        if key not in pinned:
            put(key, holds)


def _mend_product(record: dict[str, Any], put: Any, pinned: Any, rng: Any) -> None:
    quantity = next((k for k in _QUANTITY if _num(record.get(k))), None)
    price = next((k for k in _PRICE if _num(record.get(k)) and k != quantity), None)
    value = next((k for k in _VALUE if _num(record.get(k)) and k not in (quantity, price)),
                 None)
    if quantity and price and value and not _adds_parts(record, value):
        want = record[quantity] * record[price]
        if abs(want - record[value]) > max(0.02, 0.01 * abs(want)):
            if value not in pinned:
                put(value, round(want, 2) if isinstance(record[value], float) else round(want))
            elif price not in pinned and record[quantity]:
                put(price, round(record[value] / record[quantity], 6))
    fee = next((k for k in _FEES if _num(record.get(k))), None)
    base = next((k for k in ("value", "fiat_value", "value_usd", "amount_usd", "total_value",
                             "market_value", "amount") if _num(record.get(k)) and k != fee), None)
    if fee and base and fee not in pinned and record[base] > 0 \
            and record[fee] > 0.25 * record[base]:
        put(fee, round(record[base] * rng.uniform(0.002, 0.03), 2))
