"""CRUD resources of a spec: tools that list, get, create, update or delete one kind of record.

A spec service's tools are answered by the world model one call at a time. Many of them are the
list / get / create / update / delete operations of one kind of record (a task, a booking, an
API's ``users``); ``recognise`` finds those, so that ``compoenv.worldmodel.store`` can run them
against real records kept in the service's state. A tool joins a resource only when the
recognition is confident:

* its name is a verb and a noun (``get_task``, ``list_tasks``, ``cancel_rental``, or an imported
  ``users_get_2`` / ``post_users`` / ``get_users_by_id``), the noun singular;
* every tool of the resource returns one record schema (an object with a key field: ``id``,
  ``<noun>_id``, or one marked ``x-key``), or a list of it (bare or in a page object), or a
  view of it (some of its fields, key included: a list of summaries beside a detailed get);
* a get, update, cancel or delete names the record by one required parameter (``id``,
  ``<noun>_id``, or the key's ``x-key``); a list takes only record fields, a search text and
  paging; a cancel has a status whose enum holds a cancelled value; a list that must be given
  a person, company, city or job title searches the World's directory and stays with the
  world model (the resource is then ``open``);
* the resource has at least two operations, one of them a read (list or get) unless the world
  model's search reads it.

Every other tool, and every tool of a shape this does not know, stays with the world model.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

from compoenv.service import ToolSpec
from compoenv.worldmodel.offline import collection_of

__all__ = ["Resource", "Operation", "recognise", "QUERY_PARAMS", "LIMIT_PARAMS",
           "PAGING_PARAMS", "DIRECTORY"]

# the verb of a name, and the operation it asks for (the shape decides list or get for reads)
_VERBS: dict[str, str] = {
    "get": "read", "list": "read", "search": "read", "find": "read", "fetch": "read",
    "read": "read", "show": "read", "view": "read", "retrieve": "read",
    "create": "create", "add": "create", "post": "create", "new": "create", "book": "create",
    "insert": "create", "register": "create",
    "update": "update", "put": "update", "patch": "update", "edit": "update",
    "modify": "update", "change": "update", "replace": "update",
    "delete": "delete", "remove": "delete", "destroy": "delete",
    "cancel": "cancel",
}
# parameters a list may take besides record fields
QUERY_PARAMS = frozenset({"query", "q", "search", "keyword", "keywords", "term", "text"})
LIMIT_PARAMS = frozenset({"limit", "max_results", "page_size", "per_page", "count", "top",
                          "size", "pagesize", "maxresults", "perpage"})
PAGING_PARAMS = frozenset({"offset", "page", "cursor", "skip", "start", "page_token",
                           "pagetoken", "next_token", "after"})
# interfaces of the World's directory: a list that must be given one searches the World
DIRECTORY = frozenset({"PersonName", "EmailAddress", "PhoneNumber", "OrganizationName",
                       "JobTitle", "City"})
_PAGE_WRAPPERS = 4  # a page object holds the records' array and at most this many other fields


@dataclass(frozen=True, slots=True)
class Operation:
    """One tool of a resource: what it does, the parameter naming the record (get, update,
    cancel, delete), and where its answer holds the records (a list in a page object)."""

    tool: str
    kind: str                  # list, get, create, update, cancel, delete
    param: str | None = None   # the parameter that names the record
    items: str | None = None   # a list's records are under this field of a page object
    returns_record: bool = True  # a delete that returns the record (else a generated status)
    view: tuple[str, ...] | None = None  # the fields it shows, when not all (a summary)


@dataclass(frozen=True)
class Resource:
    """One kind of record a spec's tools manage.

    Attributes:
        name: The noun ("task"); the 404 messages say it.
        collection: Where the records live in the service's simulated state (the collection
            the offline world model reads and writes for this noun, so its answers see them).
        key: The record's key field.
        record: The record's JSON schema.
        operations: The resource's tools by name.
        cancelled: The status value a cancel sets (None without a cancel).
        open: Some of its records are found by the world model (a list that searches the
            World's people or companies): a key the store does not hold is asked of it too.
    """

    name: str
    collection: str
    key: str
    record: dict[str, Any] = field(repr=False)
    operations: dict[str, Operation] = field(default_factory=dict)
    cancelled: str | None = None
    open: bool = False

    def tools_of(self, kind: str) -> list[str]:
        return [op.tool for op in self.operations.values() if op.kind == kind]


def _singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "uses", "xes", "ches", "shes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _split(name: str) -> tuple[str, str] | None:
    """(verb, singular noun) of a tool name, or None when it is not a verb and a noun."""
    words = [w for w in re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower().split("_") if w]
    while words and words[-1].isdigit():  # users_get_2: a second operation of one path
        words.pop()
    if len(words) < 2:
        return None
    if words[0] in _VERBS:
        verb, rest = words[0], words[1:]
    elif words[-1] in _VERBS:
        verb, rest = words[-1], words[:-1]
    else:
        return None
    while len(rest) > 1 and rest[-1] in ("id", "by", "all"):  # get_users_by_id, get_users_id
        rest = rest[:-1]
    if rest and rest[0] == "all":
        rest = rest[1:]
    if not rest or any(w in _VERBS for w in rest):
        return None  # two verbs (get_and_update_x): not one CRUD operation
    return verb, "_".join(rest[:-1] + [_singular(rest[-1])])


def _key_of(record: Mapping[str, Any], noun: str) -> str | None:
    """The key field of a record schema."""
    props = record.get("properties") or {}
    last = noun.rsplit("_", 1)[-1]
    for name in ("id", f"{noun}_id", f"{last}_id", "Id", "ID", "uuid"):
        if _is_scalar_key(props.get(name)):
            return name
    keyed = [n for n, s in props.items() if isinstance(s, dict) and s.get("x-key")
             and _is_scalar_key(s)]
    return keyed[0] if len(keyed) == 1 else None


def _is_scalar_key(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") in ("string", "integer")


def _is_record(schema: Any) -> bool:
    return (isinstance(schema, dict) and schema.get("type") == "object"
            and bool(schema.get("properties")))


def _list_of(returns: Mapping[str, Any]) -> tuple[dict[str, Any], str | None] | None:
    """(record schema, page field) of a list's return: an array of records, or a page object
    with one array of records beside a few other fields."""
    if returns.get("type") == "array" and _is_record(returns.get("items")):
        return dict(returns["items"]), None
    if returns.get("type") != "object":
        return None
    props = returns.get("properties") or {}
    arrays = [n for n, s in props.items() if isinstance(s, dict) and s.get("type") == "array"
              and _is_record(s.get("items"))]
    if len(arrays) != 1 or len(props) > _PAGE_WRAPPERS + 1:
        return None
    return dict(props[arrays[0]]["items"]), arrays[0]


# what a schema says about a value without constraining it: tools that differ only there
# return the same record (each answer is still checked against the tool's own schema)
_NOTES = frozenset({"description", "title", "examples", "x-role", "x-label", "x-enum-labels"})


def _plain(node: Any) -> Any:
    if isinstance(node, list):
        return [_plain(item) for item in node]
    if not isinstance(node, dict):
        return node
    return {k: (v if k in ("properties", "enum", "const") and not isinstance(v, dict)
                else {n: _plain(s) for n, s in v.items()} if k == "properties" else _plain(v))
            for k, v in node.items() if k not in _NOTES}


def _canonical(schema: Mapping[str, Any]) -> str:
    return json.dumps(_plain(schema), sort_keys=True, default=str)


def _id_param(spec: ToolSpec, noun: str, key: str, record: Mapping[str, Any]) -> str | None:
    """The one required parameter that names the record."""
    props = spec.parameters.get("properties") or {}
    required = set(spec.parameters.get("required") or ())
    last = noun.rsplit("_", 1)[-1]
    mark = ((record.get("properties") or {}).get(key) or {}).get("x-key")
    named = [p for p in (f"{noun}_id", f"{last}_id", f"{last}Id", key, "id")
             if p in required and _is_scalar_key(props.get(p))]
    if mark:
        named += [p for p in required if (props.get(p) or {}).get("x-key") == mark]
    named = list(dict.fromkeys(named))
    if not named:  # get_tickets(booking_id): the one id it is given names the record
        named = [p for p in required if p.lower().endswith("_id") and _is_scalar_key(props[p])]
        named = named if len(required) == len(named) else []
    return named[0] if len(named) == 1 else None


def _list_params_known(spec: ToolSpec, record: Mapping[str, Any]) -> bool:
    """Whether every parameter of a list is a record field, a search text or paging."""
    fields = set(record.get("properties") or {})
    known = fields | QUERY_PARAMS | LIMIT_PARAMS | PAGING_PARAMS
    return all(p.lower() in known or p in fields for p in spec.parameters.get("properties", {}))


def _classify(spec: ToolSpec, verb: str, noun: str) -> tuple[str, dict[str, Any], str | None,
                                                               bool] | None:
    """(kind, record schema, page field, returns record) of one tool, by shape and verb."""
    op, returns = _VERBS[verb], spec.returns
    listed = _list_of(returns)
    if op == "read" and spec.read_only:
        if listed is not None:
            return "list", listed[0], listed[1], True
        return ("get", dict(returns), None, True) if _is_record(returns) else None
    if spec.read_only or op == "read":
        return None  # a write named like a read, or a read named like a write
    if op == "delete":
        return ("delete", dict(returns), None, True) if _is_record(returns) and \
            _key_of(returns, noun) else ("delete", {}, None, False)
    return (op, dict(returns), None, True) if _is_record(returns) else None


def _cancel_value(record: Mapping[str, Any]) -> str | None:
    status = (record.get("properties") or {}).get("status") or {}
    ended = [v for v in status.get("enum") or () if isinstance(v, str)
             and v.lower().startswith("cancel")]
    return ended[0] if ended else None


def recognise(tools: Mapping[str, ToolSpec]) -> dict[str, Resource]:
    """The CRUD resources among a spec service's tools, by noun.

    Args:
        tools: The service's ToolSpecs by name (``spec.spec_tools``).

    Returns:
        Resources with at least one read and two operations; tools of other shapes are in
        none of them.
    """
    found: dict[str, list[tuple[ToolSpec, str, dict[str, Any], str | None, bool]]] = {}
    for spec in tools.values():
        split = _split(spec.name)
        if split is None:
            continue
        verb, noun = split
        shaped = _classify(spec, verb, noun)
        if shaped is not None:
            found.setdefault(noun, []).append((spec, *shaped))
    out = {}
    for noun, members in found.items():
        resource = _resource(noun, members)
        if resource is not None:
            out[noun] = resource
    return out


def _resource(noun: str, members: list[tuple[ToolSpec, str, dict[str, Any], str | None,
                                               bool]]) -> Resource | None:
    """The resource of one noun's tools: those that return its record (or a view of it: a
    list of summaries) and name it by its key."""
    read = [m[2] for m in members if m[2] and m[1] in ("get", "list") and _key_of(m[2], noun)]
    if not read:
        return None
    counts = Counter(_canonical(schema) for schema in read)
    # the fullest record a read returns (a get's detail over a list's summary), then the
    # most common; as the tools declare it (roles and labels make the records coherent)
    text = max(counts, key=lambda t: (len(json.loads(t).get("properties") or {}), counts[t]))
    record = next(schema for schema in read if _canonical(schema) == text)
    key = _key_of(record, noun)
    if key is None:
        return None
    cancelled = _cancel_value(record)
    operations: dict[str, Operation] = {}
    kinds: set[str] = set()
    opened = False
    for spec, kind, schema, items, returns_record in members:
        view = _view(schema, record, key) if returns_record else None
        if returns_record and (view is None or (view and kind == "create")):
            continue  # another record, or a create that would not make a whole one
        param = None
        if kind == "list" and _searches_the_world(spec, record):
            opened = True  # the world model finds these: records the store does not hold
            continue
        if kind == "list" and not _list_params_known(spec, record):
            continue
        if kind not in ("list", "create"):
            param = _id_param(spec, noun, key, record)
            if param is None or (kind == "cancel" and cancelled is None):
                continue
        if kind in kinds and kind != "list":
            continue  # two gets of one noun: which is which is not clear, the first one only
        kinds.add(kind)
        operations[spec.name] = Operation(spec.name, kind, param, items, returns_record,
                                          view or None)
    # an open resource may be read by the world model alone: its reads see the records
    if len(operations) < 2 or not (kinds & {"list", "get"} or opened):
        return None
    # the offline model's own collection for the noun: its answers see the records
    first = next(m[0] for m in members if m[1] in ("get", "list"))
    collection = collection_of(first.name, first.returns)
    return Resource(noun, collection, key, record, operations,
                    cancelled if "cancel" in kinds else None, opened)


def _view(schema: Mapping[str, Any], record: Mapping[str, Any],
          key: str) -> tuple[str, ...] | None:
    """() when ``schema`` is the record's, its fields when it shows some of the record's
    fields (key included) as the record has them, else None."""
    if _canonical(schema) == _canonical(record):
        return ()
    props, full = schema.get("properties") or {}, record.get("properties") or {}
    if key not in props or any(n not in full or _canonical(s) != _canonical(full[n])
                               for n, s in props.items() if isinstance(s, dict)):
        return None
    return tuple(props)


def _searches_the_world(spec: ToolSpec, record: Mapping[str, Any]) -> bool:
    """Whether a list must be given a person, company, place or job of the World's own
    directory: the world model finds everyone there, more than a handful of records hold."""
    props = spec.parameters.get("properties") or {}
    return any((props.get(p) or {}).get("x-interface") in DIRECTORY
               for p in spec.parameters.get("required") or ())
