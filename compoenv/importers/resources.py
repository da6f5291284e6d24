"""Resource ids of an imported API: which collection a path addresses, which parameters hold the
id of one of its records, and which field of the records its operations return is that id.

A ``{repo_id}`` path parameter (or ``{id}`` right after ``/repos/``, or ``{repo}``) and the
``id`` of the records ``GET /repos`` lists both carry ``"x-key": "repo"``, so the graph joins
them within one API (``compoenv.schema.key_slots``) and never across APIs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from compoenv.importers.infer import field_key, singular
from compoenv.importers.naming import snake

__all__ = ["Resources", "resource_of", "path_key", "record_field", "find_record",
           "is_record_path", "records_of", "param_key"]

_VERBS = re.compile(r"^(get|describe|list|create|delete|update|put|batch_get|batch_delete|"
                    r"batch|start|stop|modify|remove|add|register|deregister|tag|untag|reset|"
                    r"enable|disable|associate|disassociate|search|set|import|export|cancel|"
                    r"copy|restore|run|send|test|check|validate|fetch|retrieve|patch|post)_")
_VERSION = re.compile(r"^(v\d+[a-z0-9.]*|\d[\d.-]*|api|rest|latest|beta|alpha)$", re.I)
_BARE_IDS = {"id", "uuid", "guid", "key", "name", "slug", "sid", "arn", "identifier"}
_NAMED = ("name", "names", "slug")  # a parameter that names, not numbers, its record
_SUFFIXES = ("id", "ids", "uuid", "guid", "sid", "arn", "name", "slug", "identifier")
_QUALIFIERS = {"short", "display", "full", "unique", "friendly", "first", "last", "nick",
               "given", "family", "common", "canonical"}
# a parameter that says only that it picks something: /ChecklistLibraries/{parentId}/Items
_GENERIC = {"parent", "object", "entity", "resource", "item", "record", "node", "target"}
_LISTS = ("value", "items", "data", "results", "records", "entries", "list", "content")
_NOUNS = {"owner": "owner", "user": "user", "username": "user", "bucket": "bucket",
          "org": "org", "team": "team", "project": "project", "workspace": "workspace",
          "account": "account", "channel": "channel", "site": "site", "repo": "repo"}


def _segments(path: str) -> list[str]:
    """A path's segments, without query or action suffixes (``{name}:cancel`` -> ``{name}``)."""
    path = path.split("?")[0].split("#")[0]
    return [s.split(":")[0] for s in path.split("/") if s.split(":")[0]]


def _noun(segment: str, operation_id: str = "") -> str:
    """``resourceGroups`` -> ``resource_group``, ``device-roles`` -> ``device_role``; a
    segment written as one word is split as the operation id writes it
    (``travelreimbursements`` of ``GetTravelReimbursementPdf`` -> ``travel_reimbursement``)."""
    noun = singular(snake(segment.split(".")[-1], 60))
    if "_" in noun or not operation_id:
        return noun
    words = snake(operation_id, 200).split("_")
    for start in range(len(words)):
        for end in range(start + 2, len(words) + 1):
            joined = "_".join(words[start:end])
            if singular(joined).replace("_", "") == noun:
                return singular(joined)
    return noun


def _action(path: str) -> str | None:
    """The record an RPC-style operation acts on: ``#X-Amz-Target=Svc.GetCampaign`` ->
    ``campaign``; None for a REST path."""
    match = re.search(r"#(?:X-Amz-Target=[^.]*\.|Action=)(\w+)", path)
    name = match.group(1) if match else ""
    rest = _VERBS.sub("", snake(name, 80)) if name else ""
    return singular(rest) if rest and rest != snake(name, 80) else None


def resource_of(path: str, operation_id: str = "") -> str | None:
    """The collection an operation addresses: ``/repos/{owner}/{repo}/issues`` -> ``issue``,
    ``/pets/{id}`` -> ``pet``, Google's ``/v1/{name}`` by its operation id
    (``x.projects.models.delete`` -> ``model``), AWS's ``#X-Amz-Target=...GetCampaign`` ->
    ``campaign``."""
    if "#" in path:
        return _action(path)
    literal = [s for s in _segments(path) if not s.startswith("{") and not _VERSION.match(s)
               and not s.lower().startswith(("microsoft.", "providers"))]
    parts = operation_id.split(".")
    if _segments(path) and _segments(path)[-1] in ("{name}", "{resource}") and len(parts) > 2:
        return _noun(parts[-2])
    return _noun(literal[-1], operation_id) if literal else None


def param_key(path: str, param: str, place: str, operation_id: str = "",
              collections: frozenset[str] = frozenset()) -> str | None:
    """The resource a parameter holds the id (or name) of: a path parameter by the path's
    structure (``path_key``), a query's bare ``id`` by the collection the path addresses."""
    if place == "path":
        return path_key(path, param, operation_id, collections)
    if place == "query" and snake(param, 80) in ("id", "uuid", "guid"):
        return resource_of(path, operation_id)
    return None


def path_key(path: str, param: str, operation_id: str = "",
             collections: frozenset[str] = frozenset()) -> str | None:
    """The resource a path parameter holds the id (or name) of, by the path's structure: the
    collection it follows, unless it names another of the API's ``collections``
    (``/elements/{webId}`` is an element's, ``/users/{team_id}`` a team's)."""
    segments, key = _segments(path), snake(param, 80)
    here = segments.index("{" + param + "}") if "{" + param + "}" in segments else -1
    before = [s for s in segments[:max(here, 0)] if not s.startswith("{")
              and not _VERSION.match(s) and "." not in s]
    prev = segments[here - 1] if here > 0 and not segments[here - 1].startswith("{") else ""
    if key in ("name", "resource", "parent") and "." in operation_id:
        parts = operation_id.split(".")
        at = -2 if key != "parent" else -3
        return _noun(parts[at]) if len(parts) >= -at + 1 else None
    if key in _BARE_IDS:
        return _noun(prev, operation_id) if prev and not _VERSION.match(prev) else None
    words = key.split("_")
    if words[-1] in _SUFFIXES and len(words) > 1:
        stem = "_".join(words[:-1])
        if stem in _QUALIFIERS:
            return None  # a short name, a display name: of what, the path does not say
        collection = _noun(before[-1], operation_id) if before else ""
        if collection.replace("_", "") == stem.replace("_", ""):
            return stem
        last = here == len(segments) - 1  # the parameter that picks one of a collection
        if collection and (collection.split("_")[-1] == stem.split("_")[-1] or (prev and (
                stem in _GENERIC or (last and collections and stem not in collections)))):
            return collection
        return stem
    nouns = {_noun(s, operation_id) for s in before}
    return key if key in nouns else _NOUNS.get(key)


def _item(path: str) -> str | None:
    """The parameter a path ends in (snake_case), the one that picks a record."""
    segments = _segments(path)
    return snake(segments[-1].strip("{}"), 80) if segments and segments[-1].startswith(
        "{") else None


def _named(item: str) -> bool:
    """Whether a record's parameter names, not numbers, it (``run_book_name``, ``slug``,
    GitHub's ``repo``)."""
    return item.endswith(_NAMED) or not (item in _BARE_IDS or item.endswith(tuple(
        "_" + s for s in _SUFFIXES)))


def is_record_path(parents: list[str], resource: str) -> bool:
    """Whether fields under ``parents`` (keys from a response's root, ``"*"`` for a list's
    items) are a record's own fields, as ``find_record`` finds them."""
    names = [snake(p, 80) if p != "*" else p for p in parents]
    return names in ([], ["*"], ["data"], [resource]) or (
        len(names) == 2 and names[1] == "*" and names[0] in _LISTS + (resource + "s",))


def record_field(keys: list[str], resource: str, item: str | None = None) -> str | None:
    """Which of a record's fields is its key: the one named like the parameter that picks a
    record (``item``: ``web_id`` -> ``WebId``), else ``<resource>_id`` or ``id`` (``name``
    first when the collection's records are picked by name)."""
    by_snake = {snake(k, 80): k for k in keys}
    named = item is not None and _named(item)
    order = [f"{resource}_name", "name", f"{resource}_id", "id"] if named else [
        f"{resource}_id", "id", "uuid", "sid", f"{resource}_arn", "arn"]
    order = [item, *order] if item and item not in _BARE_IDS else order
    return next((by_snake[k] for k in order if k in by_snake), None)


def find_record(schema: Any, resolve: Callable[[Any], tuple[Any, str | None]],
                resource: str) -> tuple[dict[str, Any], str | None] | None:
    """The record node of a response: the object itself, a list's items, the items of its one
    list property (``value``, ``data``, ...), or its ``data`` / ``<resource>`` object; with the
    component it came from (``resolve`` follows a reference)."""
    node, ref = resolve(schema)
    for _ in range(3):
        if not isinstance(node, dict):
            return None
        if node.get("type") == "array" or "items" in node:
            node, ref = resolve(node.get("items"))
            continue
        props = node.get("properties") or {}
        lists = [k for k, v in props.items() if isinstance(v, dict) and (
            resolve(v)[0] or {}).get("type") == "array"]
        inner = next((k for k in props if snake(k, 80) in ("data", resource)), None)
        if "id" not in props and len(lists) == 1 and snake(lists[0], 80) in _LISTS + (
                resource + "s",):
            node, ref = resolve(props[lists[0]])
            continue
        if "id" not in props and inner is not None:
            node, ref = resolve(props[inner])
            continue
        return (node, ref) if props else None
    return None


@dataclass
class Resources:
    """The collections of one API, for the keys of its fields.

    Attributes:
        collections: The resources its paths address (``repo``, ``issue``, ...).
        items: For each collection, the parameter its paths pick one record by (snake_case:
            ``repo_id``, GitHub's ``repo``).
    """

    collections: frozenset[str] = field(default_factory=frozenset)
    items: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, paths: Any) -> Resources:
        """The collections of an OpenAPI ``paths`` map."""
        found, items = set(), {}
        for path, item in (paths if isinstance(paths, dict) else {}).items():
            for op in item.values() if isinstance(item, dict) else ():
                resource = resource_of(path, str(op.get("operationId") or "")) if isinstance(
                    op, dict) else None
                found.add(resource)
                if resource and (param := _item(path)):
                    items.setdefault(resource, param)
        return cls(frozenset(f for f in found if f), items)

    def key(self, name: str) -> str | None:
        """The resource a field called ``name`` holds the id of, when the API has that
        collection: ``repo_id`` -> ``repo``, ``home_team_id`` -> ``team``."""
        thing = field_key(name)
        if thing is None:
            return None
        words = thing.split("_")
        return next((noun for i in range(len(words)) if (noun := "_".join(words[i:]))
                     in self.collections), None)

    def owner(self, parents: tuple[str, ...] | list[str]) -> str | None:
        """The collection whose records sit under ``parents`` (``campaigns.*`` -> ``campaign``),
        when the API has it: their ``id`` is that collection's key."""
        names = [p for p in parents if p != "*"]
        noun = singular(snake(names[-1], 80)) if names else ""
        return noun if noun in self.collections else None


def records_of(paths: Any, resources: Resources,
               resolve: Callable[[Any], tuple[Any, str | None]],
               response: Callable[[dict[str, Any]], Any]) -> dict[str, tuple[str, str]]:
    """Component refs that are the records of one collection, with their key field:
    ``{"#/components/schemas/Repo": ("repo", "id")}``; a component returned as the records of
    two collections is left out (it is no one resource's record).

    Args:
        paths: The document's ``paths``.
        resources: Its collections.
        resolve: Follows a schema's references: (schema, the component's ref or None).
        response: An operation's success response schema, or None.
    """
    found: dict[str, tuple[str, str] | None] = {}
    for path, item in (paths if isinstance(paths, dict) else {}).items():
        for op in item.values() if isinstance(item, dict) else ():
            resource = resource_of(path, str(op.get("operationId") or "")) if isinstance(
                op, dict) else None
            schema = response(op) if resource else None
            record = find_record(schema, resolve, resource) if schema else None
            if record is None or record[1] is None:
                continue
            key = record_field(list(record[0].get("properties") or {}), resource,
                               resources.items.get(resource))
            if key and record[1] in found and found[record[1]] != (resource, key):
                found[record[1]] = None
            elif key:
                found.setdefault(record[1], (resource, key))
    return {ref: mark for ref, mark in found.items() if mark is not None}
