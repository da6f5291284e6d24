"""JSON-schema helpers: compact tool schemas and the interface slots found inside them."""

from __future__ import annotations

import re

from dataclasses import dataclass
from typing import Any, Callable, Iterator

from compoenv._cache import ByIdentity
from compoenv.schema_check import check_for

__all__ = ["Slot", "free_text", "names_record", "compact_schema", "inline_refs", "ref_names", "interface_slots", "key_slots",
           "SCOPE_KEYS", "scope_interfaces",
           "extract", "brief", "validator_for", "is_valid", "REF_DEPTH", "INLINE_BUDGET"]

_DROP = frozenset({"title"})
_VALUES = frozenset({"default", "const", "enum", "examples"})


@dataclass(frozen=True, slots=True)
class Slot:
    """An interface-tagged place in a schema.

    Attributes:
        interface: The ``x-interface`` name.
        path: Keys from the root to the value; ``"*"`` stands for every item of a list (or every
            value of a mapping).
        required: For parameters, whether the tool requires it.
        kind: JSON type at that place (``string``, ``number``, ``object``, ...).
        role: The ``x-role`` there (``compoenv.roles``), or for a person's name, email or phone
            without one, the role of the object it sits in.
    """

    interface: str
    path: tuple[str, ...]
    required: bool = True
    kind: str = "string"
    role: str | None = None

    @property
    def many(self) -> bool:
        return "*" in self.path


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Inline ``$ref``s and drop auto-generated titles: the form agents and validators see."""
    defs = schema.get("$defs", {})

    def walk(node: Any, depth: int) -> Any:
        if depth > 32:
            raise ValueError("schema nests deeper than 32 levels (recursive model?)")
        if isinstance(node, dict):
            if "$ref" in node:
                target = defs[node["$ref"].rsplit("/", 1)[-1]]
                merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
                return walk(merged, depth + 1)
            out = {}
            for k, v in node.items():
                if k in _DROP or k == "$defs":
                    continue
                if k in _VALUES:  # data, not schema: copied as is
                    out[k] = v
                elif k == "properties":
                    out[k] = {pk: walk(pv, depth + 1) for pk, pv in v.items()}
                else:
                    out[k] = walk(v, depth + 1)
            return out
        if isinstance(node, list):
            return [walk(item, depth + 1) for item in node]
        return node

    return walk(schema, 0)


REF_DEPTH = 8  # references followed along one path when a schema with $defs is inlined
NEST_DEPTH = 24  # levels an inlined schema may nest: below ``compact_schema``'s 32, with room
INLINE_BUDGET = 5_000  # schema nodes one inlined schema may grow to


def inline_refs(schema: Any, defs: dict[str, Any], depth: int = REF_DEPTH,
                budget: int = INLINE_BUDGET) -> Any:
    """``schema`` with every ``{"$ref": "#/$defs/<name>"}`` replaced by ``defs[name]`` (a ref's
    siblings override its target). A ref met again inside itself (a recursive schema), nested
    more than ``depth`` refs deep, unknown, or met after ``budget`` nodes were built becomes a
    plain object, so a recursive or deeply shared schema costs bounded memory; a schema nested
    ``NEST_DEPTH`` levels deep keeps only its own words (type, description, enum), not what
    nests in it: components each shallow can chain deeper than a validator goes."""
    left = [budget]

    def walk(node: Any, seen: tuple[str, ...], level: int = 0) -> Any:
        if isinstance(node, list):
            return [walk(item, seen, level + 1) for item in node]
        if not isinstance(node, dict):
            return node
        if level >= NEST_DEPTH:
            kind = node.get("type", "object" if "properties" in node else None)
            node = {k: v for k, v in node.items() if k in _VALUES or k == "$ref" or not
                    isinstance(v, (dict, list))}
            node.update({"type": kind} if kind else {})
        left[0] -= 1
        ref = node.get("$ref")
        if isinstance(ref, str):
            name = ref.removeprefix("#/$defs/")
            rest = {k: v for k, v in node.items() if k != "$ref"}
            if (name in seen or len(seen) >= depth or left[0] <= 0 or name == ref
                    or not isinstance(defs.get(name), dict)):
                return {"type": "object", **{k: v for k, v in rest.items() if k in _PLAIN}}
            return walk({**defs[name], **rest}, (*seen, name), level)
        return {k: v if k in _VALUES else {name: walk(sub, seen, level + 1) for name, sub in
                                           v.items()}
                if k in _NAMED and isinstance(v, dict) else walk(v, seen, level + 1)
                for k, v in node.items()}

    return walk(schema, ())


_PLAIN = frozenset({"description", "x-label"})  # what a cut reference keeps of its place
_NAMED = frozenset({"properties", "patternProperties", "$defs"})  # maps of names to schemas


def ref_names(schema: Any) -> set[str]:
    """The ``$defs`` names a schema refers to (``#/$defs/<name>``; a ref elsewhere is kept
    whole), looking into property maps but not into values (``enum``, ``default``)."""
    found: set[str] = set()
    todo = [schema]
    while todo:
        node = todo.pop()
        if isinstance(node, list):
            todo.extend(node)
        elif isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                found.add(ref.removeprefix("#/$defs/"))
            for key, value in node.items():
                if key in _NAMED and isinstance(value, dict):
                    todo.extend(value.values())
                elif key not in _VALUES:
                    todo.append(value)
    return found


def _branches(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The non-null alternatives of a node (``Optional[X]`` is ``anyOf: [X, null]``)."""
    alternatives = node.get("anyOf") or node.get("oneOf")
    if alternatives:
        for alt in alternatives:
            if alt.get("type") != "null":
                yield alt
    else:
        yield node


_IDENTITY = frozenset({"PersonName", "EmailAddress", "PhoneNumber"})


def interface_slots(schema: dict[str, Any], required: bool = True,
                    path: tuple[str, ...] = (), role: str | None = None) -> list[Slot]:
    """Every interface-tagged place in a compact schema, outermost first (``role``: the role
    of the enclosing object, which its identity fields take when they carry none)."""
    slots: list[Slot] = []
    for node in _branches(schema):
        here = node.get("x-role", schema.get("x-role"))
        inherited = here or role
        if "x-interface" in node:
            interface = node["x-interface"]
            own = here if here is not None else (role if interface in _IDENTITY else None)
            slots.append(Slot(interface, path, required, node.get("type", "object"), own))
        if node.get("type") == "array" and isinstance(node.get("items"), dict):
            slots.extend(interface_slots(node["items"], required, path + ("*",), inherited))
        if isinstance(node.get("additionalProperties"), dict):
            slots.extend(interface_slots(node["additionalProperties"], required, path + ("*",),
                                         inherited))
        for key, child in (node.get("properties") or {}).items():
            child_required = required and key in node.get("required", ())
            slots.extend(interface_slots(child, child_required, path + (key,), inherited))
    return slots


def key_slots(schema: dict[str, Any], owner: str, required: bool = True,
              path: tuple[str, ...] = (), api: str | None = None) -> list[Slot]:
    """Resource ids of a compact schema as slots of a key interface.

    A node marked ``"x-key": "<resource>"`` (an importer's mark: a ``{repo_id}`` parameter,
    the ``id`` of the repos a list returns) is a key of ``api`` (default ``owner``), so ids
    join across the services split from one API and never across APIs
    (``github`` + ``repo`` -> ``GithubRepoId``). An untagged ``<thing>_id`` string is a key of
    its own service (``events_tickets`` + ``event_id`` -> ``EventsTicketsEventId``): a spec
    that names the event a search found ``event_id`` and the booking's input ``event_id``
    joins them, and nothing else (another service's ids, its other ids)."""
    slots: list[Slot] = []
    for node in _branches(schema):
        if node.get("type") == "array" and isinstance(node.get("items"), dict):
            slots.extend(key_slots(node["items"], owner, required, path + ("*",), api))
        for key, child in (node.get("properties") or {}).items():
            if not isinstance(child, dict):
                continue
            child_required = required and key in node.get("required", ())
            field = key if key.endswith("_id") else _described_id(key, child)
            if isinstance(child.get("x-key"), str):
                slots.append(Slot(key_interface(api or owner, child["x-key"]), path + (key,),
                                  child_required, str(child.get("type", "string"))))
            elif (field is not None and child.get("type") == "string"
                    and "x-interface" not in child and "enum" not in child):
                slots.append(Slot(key_interface(owner, field), path + (key,), child_required,
                                  "string"))
            elif child.get("type") in ("object", "array"):
                slots.extend(key_slots(child, owner, child_required, path + (key,), api))
    return slots


_DESCRIBED_ID = re.compile(r"^([A-Za-z][A-Za-z ]{0,40}) id\.?$")


def _described_id(key: str, node: dict[str, Any]) -> str | None:
    """A record's own ``id`` described as "Pull request id." is its ``pull_request_id``."""
    if key != "id" or not isinstance(node.get("description"), str):
        return None
    match = _DESCRIBED_ID.match(node["description"].strip())
    return "_".join(match.group(1).lower().split()) + "_id" if match else None


# resources that hold a user's own work in an API rather than being a thing of it: the
# subscription, resource group, project or tenant an operation runs in. Their keys are ones
# the user knows and states ("our subscription ..., resource group rg-billing-prod"), so a
# task may start from them. (An "account" or a "workspace" is as often a thing an API makes,
# a Cognitive Services account, a Machine Learning workspace: not one of them.)
SCOPE_KEYS = frozenset({"subscription", "resource_group", "project", "tenant", "organization"})


def scope_interfaces(parameters: dict[str, Any], owner: str,
                     api: str | None = None) -> list[str]:
    """The key interfaces of a tool's top-level parameters that name one of its user's own
    scopes (``SCOPE_KEYS``): statable wherever the tool is loaded."""
    return [key_interface(api or owner, node["x-key"])
            for node in (parameters.get("properties") or {}).values()
            if isinstance(node, dict) and node.get("x-key") in SCOPE_KEYS]


def key_interface(owner: str, field: str) -> str:
    """``("car_rental", "offer_id")`` -> ``CarRentalOfferId``; ``("github.repos", "repo")``
    -> ``GithubReposRepoId``."""
    words = f"{owner}_{field.removesuffix('_id')}".replace(".", "_").split("_")
    return "".join(w.capitalize() for w in words) + "Id"


def extract(value: Any, path: tuple[str, ...]) -> list[Any]:
    """Values found at ``path`` inside ``value``: ``"*"`` fans out over a list's items (or a
    mapping's values), ``"#k"`` takes item k of a list."""
    found = [value]
    for key in path:
        nxt: list[Any] = []
        for item in found:
            if key == "*":
                if isinstance(item, list):
                    nxt.extend(item)
                elif isinstance(item, dict):
                    nxt.extend(item.values())
            elif key[:1] == "#" and isinstance(item, list):  # "#3": the fourth item only
                index = int(key[1:])
                if 0 <= index < len(item):
                    nxt.append(item[index])
            elif isinstance(item, dict) and key in item:
                nxt.append(item[key])
        found = nxt
    return found


def free_text(schema: dict[str, Any]) -> bool:
    """Whether a parameter takes wording its caller chooses (a subject, a body, a note):
    a plain string of no interface but text, no enum, pattern, format or resource key."""
    if "anyOf" in schema:
        schema = next((b for b in schema["anyOf"] if b.get("type") != "null"), schema)
    return (schema.get("type") == "string" and "enum" not in schema
            and schema.get("x-interface") in (None, "Text", "EmailSubject")
            and "pattern" not in schema and "format" not in schema
            and "x-key" not in schema)  # an imported API's resource key names a record


_RECORD_NUMBERS = frozenset({"FlightNumber", "BookingReference", "TrackingNumber"})
_ID_PARAM = re.compile(r"(^|_)id$")


def names_record(param: str, schema: dict[str, Any]) -> bool:
    """Whether a parameter names a record by its key (an id, a booking reference, an
    imported API's resource key, ``x-key``)."""
    if "anyOf" in schema:
        schema = next((b for b in schema["anyOf"] if b.get("type") != "null"), schema)
    interface = schema.get("x-interface") or ""
    return schema.get("type") in ("string", None) and (
        interface.endswith("Id") or interface in _RECORD_NUMBERS
        or bool(_ID_PARAM.search(param)) or isinstance(schema.get("x-key"), str))


def brief(value: Any, limit: int = 80) -> str:
    """A short, safe rendering of untrusted input for error messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _validator(schema: dict[str, Any]) -> Any:
    import jsonschema

    return jsonschema.Draft202012Validator(schema)


# a jsonschema validator per schema object (tool schemas live as long as their ToolSpec)
validator_for: Callable[[dict[str, Any]], Any] = ByIdentity(_validator)


def is_valid(value: Any, schema: dict[str, Any]) -> bool:
    """Draft 2020-12 validity: a compiled check where the schema allows one, else jsonschema."""
    check = check_for(schema)
    return check(value) if check is not None else bool(validator_for(schema).is_valid(value))
