"""Offline world model: deterministic, schema-valid, interface-aware answers drawn from the World.

No model is needed. Values that carry an interface come from the World (a PersonName is a
real person's name, that person's email goes with it), arguments are echoed back where a field
matches them, writes store records that later reads return, and everything is a pure function
of (world seed, tool, arguments, simulated state).
"""

from __future__ import annotations

import random
import re
from collections import Counter
from typing import Any, Callable

from compoenv._cache import ByIdentity
from compoenv.schema import is_valid
from compoenv.schema_check import check_for
from compoenv.businesses import KINDS as BUSINESS_KINDS
from compoenv.magnitudes import draw
from compoenv.world import Person, World
from compoenv.worldmodel.base import ToolAnswer, ToolRequest, WorldModelError

__all__ = ["OfflineWorldModel", "collection_of", "example_arguments"]

_VERBS = re.compile(r"^(get|list|search|find|lookup|fetch|read|show|view|create|add|new|save|"
                    r"store|update|edit|set|change|delete|remove|cancel|send|post|submit|book|"
                    r"reserve|request|schedule|make|generate|check|log|record|register|open|"
                    r"close|archive|start|stop|end|extend|rate|transfer|pay|buy|order|share|"
                    r"upload|invite|approve|reject|assign|publish|renew|refund)_")
_WORDS = ("alpha", "bright", "clear", "daily", "early", "fresh", "grand", "harbor", "island",
          "jade", "keen", "lively", "modern", "north", "open", "prime", "quiet", "river")


def collection_of(tool: str, returns: dict[str, Any]) -> str:
    """Where a tool's records live: the returned entity's interface, else the tool's noun."""
    node = returns.get("items", returns) if returns.get("type") == "array" else returns
    if isinstance(node, dict) and node.get("x-interface") and node.get("type") == "object":
        return str(node["x-interface"])
    noun = _VERBS.sub("", tool)
    if noun.endswith("ies"):
        return noun[:-3] + "y"
    return noun[:-1] if noun.endswith("s") and not noun.endswith("ss") else noun


_PERSON_FIELDS = {"PersonName": "name", "EmailAddress": "email", "PhoneNumber": "phone",
                  "OrganizationName": "employer", "JobTitle": "title", "City": "city",
                  "StreetAddress": "street", "PostalCode": "postal_code",
                  "CountryCode": "country"}


def _person_value(interface: str, person: Person) -> Any:
    field = _PERSON_FIELDS.get(interface)
    return getattr(person, field) if field is not None else None


_SEMANTIC: dict[str, Callable[[random.Random, World, Person], Any]] = {
    "Date": lambda rng, world, _: world.date(rng.randint(-20, 20)),
    "DateTime": lambda rng, world, _: world.at(rng.randint(-20, 20), rng.randint(8, 18)),
    "TimeOfDay": lambda rng, _, __: f"{rng.randint(8, 18):02d}:{rng.choice((0, 15, 30, 45)):02d}",
    "Money": lambda rng, _, __: round(rng.uniform(5, 900), 2),
    "CurrencyCode": lambda _, __, ___: "USD",
    "Url": lambda rng, world, _: (f"https://www.{rng.choice(world.orgs).domain}/"
                                  f"{rng.choice(_WORDS)}"),
    "AirportCode": lambda rng, world, _: rng.choice(world.cities).airport,
    "Temperature": lambda rng, _, __: round(rng.uniform(-5, 32), 1),
    "Percentage": lambda rng, _, __: float(rng.randint(0, 100)),
    "Quantity": lambda rng, _, __: rng.randint(1, 20),
    "DurationMinutes": lambda rng, _, __: rng.choice((15, 30, 45, 60, 90, 120)),
    "Category": lambda rng, _, __: rng.choice(("general", "priority", "billing", "support")),
    "EmailSubject": lambda rng, _, __: f"{rng.choice(_WORDS).title()} update",
    "Text": lambda rng, _, person: f"{rng.choice(_WORDS).title()} notes from {person.name}.",
}


class _Maker:
    """Generates one answer: a private rng, the request's arguments, one person per object."""

    def __init__(self, request: ToolRequest) -> None:
        self.request, self.world = request, request.world
        self.rng = random.Random(request.seed)
        self.args = request.arguments
        self.params = request.spec.parameters.get("properties", {})
        required = set(request.spec.parameters.get("required", ()))
        # only required arguments echo by interface: an optional filter (max_price) says
        # nothing about what is found
        self.arg_by_interface = {s.interface: self.args[s.path[0]] for s in request.spec.inputs
                                 if len(s.path) == 1 and s.path[0] in self.args
                                 and s.path[0] in required}
        self.status = _status_for(request.spec.name)

    def value(self, schema: dict[str, Any], name: str, person: Person,
              echo: bool = True) -> Any:
        if "anyOf" in schema or "oneOf" in schema:
            return self.value(_first_branch(schema), name, person, echo)
        if name in self.args and _fits(self.args[name], schema, memo=False):
            return self.args[name]  # echo: get_forecast(city="Oslo") is about Oslo
        same = self.params.get(name)
        if same is not None and "enum" in same and "enum" not in schema:
            # a field named like a parameter takes the parameter's values: a run's department
            # is one of the departments the tool accepts
            schema = _with_enum(schema, same)
        interface = schema.get("x-interface")
        if echo and interface in self.arg_by_interface and schema.get("type") != "object" \
                and _fits(self.arg_by_interface[interface], schema, memo=False):
            return self.arg_by_interface[interface]
        kind = schema.get("type")
        if kind == "object":
            return self.record(schema)
        if kind == "array":
            low, high = schema.get("minItems", 1), schema.get("maxItems", 5)
            count = max(low, min(high, self.rng.randint(2, 4)))
            return [self.value(schema.get("items", {}), name, self.rng.choice(
                self.world.people[1:]), echo) for _ in range(count)]
        if name == "status" and "enum" in schema and self.status is not None:
            wanted = [v for v in schema["enum"] if str(v).lower().startswith(self.status)]
            if wanted:
                return wanted[0]
        if interface is not None:
            generated = self.by_role(interface, schema.get("x-role"), person)
            if generated is None:
                generated = self.semantic(interface, person)
            if generated is not None and _fits(generated, schema):
                return generated
        return self.plain(schema, name)

    def by_role(self, interface: str, role: str | None, person: Person) -> Any:
        """A value that fits the slot's role: a restaurant's name is one of the World's
        restaurants (in the city asked about), a salary one for the person's title and city,
        the user's own fields for the user (None: no role-specific value)."""
        if role is None:
            return None
        if interface == "OrganizationName" and role in BUSINESS_KINDS:
            city = self.arg_by_interface.get("City")
            found = self.world.businesses_in(role, city) or self.world.businesses_in(role)
            return self.rng.choice(found).name if found else None
        if role == "self":
            return _person_value(interface, self.world.user)
        if interface == "Money":
            return draw(role, self.rng, title=person.title, city=person.city)
        return None

    def record(self, schema: dict[str, Any]) -> dict[str, Any]:
        """An object: one person behind its personal fields, and each required argument echoed
        into one field only (the field of the same name, else the first of its interface)."""
        who = self.rng.choice(self.world.people[1:])
        props = schema.get("properties") or {}
        echoed: set[str] = set(props) & set(self.args)
        # how many echoed fields carry each interface: another field of it takes no echo
        carriers = Counter(props[k].get("x-interface") for k in echoed)
        out = {}
        for key, sub in props.items():
            interface = sub.get("x-interface")
            mine = key in echoed
            echo = mine or carriers[interface] == 0
            if echo and not mine and interface in self.arg_by_interface:
                echoed.add(key)
                carriers[interface] += 1
            out[key] = self.value(sub, key, who, echo)
        return out

    def semantic(self, interface: str, person: Person) -> Any:
        personal = _person_value(interface, person)
        if personal is not None:
            return personal
        make = _SEMANTIC.get(interface)
        return make(self.rng, self.world, person) if make is not None else None

    def plain(self, schema: dict[str, Any], name: str) -> Any:
        rng, kind = self.rng, schema.get("type")
        if "enum" in schema:
            return rng.choice(schema["enum"])
        if "const" in schema:
            return schema["const"]
        if kind == "integer":
            low, high = int(schema.get("minimum", 0)), int(schema.get("maximum", 100))
            return rng.randint(low, max(low, high))
        if kind == "number":
            low, high = float(schema.get("minimum", 0)), float(schema.get("maximum", 1000))
            return round(rng.uniform(low, max(low, high)), 2)
        if kind == "boolean":
            return rng.random() < 0.5
        if kind == "null":
            return None
        fmt = schema.get("format")
        if fmt == "date":
            return self.world.date(rng.randint(-20, 20))
        if fmt == "date-time":
            return self.world.at(rng.randint(-20, 20), rng.randint(8, 18)) + ":00"
        if fmt == "email":
            return rng.choice(self.world.people[1:]).email
        if fmt in ("uri", "url"):
            return f"https://example.org/{rng.choice(_WORDS)}"
        words = name.replace("_", " ") if name else "value"
        text = f"{rng.choice(_WORDS)} {words} {rng.randint(1, 999)}"
        low, high = schema.get("minLength", 0), schema.get("maxLength", 200)
        return (text * (1 + low // max(len(text), 1)))[:max(high, 1)] if low or high < len(text) \
            else text


def _branch_of(schema: dict[str, Any]) -> dict[str, Any]:
    key = "anyOf" if "anyOf" in schema else "oneOf"
    options = [b for b in schema[key] if b.get("type") != "null"] or schema[key]
    return {**options[0], **{k: v for k, v in schema.items() if k != key}}


# derived schemas are made once per library schema: checks are compiled per schema object
_first_branch: Callable[[dict[str, Any]], dict[str, Any]] = ByIdentity(_branch_of)
_ENUMS: dict[tuple[int, int], tuple[Any, Any, dict[str, Any]]] = {}


def _with_enum(schema: dict[str, Any], param: dict[str, Any]) -> dict[str, Any]:
    """``schema`` taking the values of the parameter of the same name (made once a pair)."""
    hit = _ENUMS.get((id(schema), id(param)))
    if hit is None or hit[0] is not schema or hit[1] is not param:
        if len(_ENUMS) >= 8192:
            _ENUMS.clear()
        hit = _ENUMS[(id(schema), id(param))] = (schema, param,
                                                 {**schema, "enum": param["enum"]})
    return hit[2]


def _status_for(tool: str) -> str | None:
    """The status a write leaves its record in: new ones start at the beginning, cancelled ones
    end cancelled (matched as a prefix of the schema's enum values)."""
    if tool.startswith(("cancel_", "delete_", "remove_")):
        return "cancel"
    if tool.startswith(("close_", "stop_", "end_")):
        return "close"
    if tool.startswith(("create_", "add_", "book_", "reserve_", "schedule_", "submit_", "open_",
                        "request_", "order_", "start_")):
        return ""  # "" matches the first value: the natural starting state
    return None


def _fits(value: Any, schema: dict[str, Any], memo: bool = True) -> bool:
    """``is_valid``, remembered for short plain values the World generates: the same names,
    emails and dates are checked against the same field schemas over and over. The memo is
    process-wide, so it never sees the agent's arguments (``memo=False``)."""
    if not memo or type(value) not in _PLAIN or (type(value) is str and len(value) > 64):
        return is_valid(value, schema)
    check = check_for(schema)  # one per live schema object, so it can key the memo
    if check is None:
        return is_valid(value, schema)
    key = (check, type(value), value)
    hit = _FITS.get(key)
    if hit is None:
        if len(_FITS) >= _FITS_SIZE:
            _FITS.clear()
        hit = _FITS[key] = check(value)
    return hit


_PLAIN = frozenset({str, int, float, bool})
_FITS_SIZE = 50_000  # entries of at most 64 characters: a few MB at most
_FITS: dict[tuple[Any, type, Any], bool] = {}


class OfflineWorldModel:
    """The default backend: deterministic answers, consistent with earlier writes."""

    name = "offline"
    valid_by_construction = True

    def answer(self, request: ToolRequest) -> ToolAnswer:
        spec, maker = request.spec, _Maker(request)
        collection = collection_of(spec.name, spec.returns)
        stored = request.records.get(collection, {})
        returns = spec.returns
        if spec.read_only:
            return ToolAnswer(self._read(maker, returns, stored))
        data = maker.value(returns, "", maker.rng.choice(request.world.people[1:]))
        if not isinstance(data, dict):
            return ToolAnswer(data)  # nothing to store: a write that reports a status
        key = _key_of(data, request.arguments, stored, collection)
        existing = stored.get(key)
        if existing is not None:  # an update keeps what it does not change
            data = {**existing, **{k: v for k, v in request.arguments.items() if k in existing}}
            status = (returns.get("properties") or {}).get("status", {})
            if maker.status and "status" in data and "enum" in status:  # cancel_, close_
                ended = [v for v in status["enum"] if str(v).lower().startswith(maker.status)]
                data["status"] = ended[0] if ended else data["status"]
        elif "id" in data and isinstance(data["id"], str) and not _fits_key(data, returns):
            data["id"] = key
        if not _fits(data, returns):
            raise WorldModelError("cannot_generate", f"no valid answer for {spec.qualified_name}")
        deleting = spec.name.startswith(("delete_", "remove_"))
        return ToolAnswer(data, {collection: {key: None if deleting else data}})

    @staticmethod
    def _read(maker: _Maker, returns: dict[str, Any], stored: dict[str, Any]) -> Any:
        args = maker.args
        matching = [r for r in stored.values() if isinstance(r, dict) and all(
            r.get(k) == v for k, v in args.items() if k in r)]
        if returns.get("type") == "array":
            items, most = returns.get("items", {}), returns.get("maxItems", 50)
            kept: list[Any] = []  # the newest records that fit, at most a page of them
            for record in reversed(matching):
                if len(kept) == most:
                    break
                if _fits(record, items):
                    kept.append(record)
            kept.reverse()
            generated = maker.value(returns, "", maker.rng.choice(maker.world.people[1:]))
            room = max(0, most - len(kept))
            return generated[:room] + kept  # what was there stays; stored records follow
        named = {str(v) for v in args.values()}  # once, not once per stored record
        by_key = [r for k, r in stored.items() if k in named]
        for record in by_key + matching:
            if _fits(record, returns):
                return record
        return maker.value(returns, "", maker.rng.choice(maker.world.people[1:]))


def _key_of(data: dict[str, Any], args: dict[str, Any], stored: dict[str, Any],
            collection: str) -> str:
    """The record's key: an argument naming a stored record (an update), else a new id."""
    for value in args.values():
        if isinstance(value, str) and value in stored:
            return value
    prefix = re.sub(r"[^A-Z]", "", collection.title())[:3] or "REC"
    return f"{prefix}-{len(stored) + 1:04d}"


def _fits_key(data: dict[str, Any], returns: dict[str, Any]) -> bool:
    """Whether the generated id already follows a pattern the schema insists on."""
    return "pattern" in (returns.get("properties", {}).get("id") or {})



def example_arguments(spec: Any, world: World, seed: int = 0) -> dict[str, Any]:
    """Schema-valid arguments for a tool (all its parameters), drawn like offline answers."""
    request = ToolRequest(spec, {}, world, {}, seed)
    maker = _Maker(request)
    return maker.value(spec.parameters, "", maker.rng.choice(world.people[1:]))
