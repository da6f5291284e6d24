"""A synthetic library shaped like an imported corpus, written as spec JSON files: APIs split
into services of resource collections (list, get, create, update, delete), resource ids marked
``x-key``, fields tagged with interfaces and roles from compoenv's own vocabulary."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from compoenv.roles import ROLE_INTERFACES, ROLES

__all__ = ["write_corpus"]

_VENDORS = ("acme", "globex", "initech", "umbrella", "hooli", "vandelay", "wonka", "tyrell",
            "cyberdyne", "soylent", "massive", "aperture", "gringotts", "oscorp", "wayne",
            "stark", "nakatomi", "monarch", "pied", "dunder", "prestige", "sterling", "vought",
            "zorg", "octan", "bluth", "kramerica", "duff", "krusty", "oceanic")
_PRODUCTS = ("cloud", "hub", "desk", "works", "flow", "base", "ops", "suite", "stack", "point",
             "line", "grid", "forge", "pilot", "track", "sync", "vault", "post", "link", "core")
_NOUNS = ("ticket", "invoice", "order", "project", "task", "contract", "shipment", "booking",
          "claim", "lease", "policy", "campaign", "lead", "deal", "quote", "payment", "refund",
          "visit", "case", "review", "survey", "course", "enrollment", "listing", "offer",
          "delivery", "incident", "request", "report", "subscription", "membership", "job",
          "application", "interview", "event", "reservation", "appointment", "prescription",
          "donation", "grant", "budget", "expense", "asset", "device", "license", "permit",
          "inspection", "repair", "rental", "trip", "venue", "vendor_account", "audit",
          "meeting", "note", "document", "agreement", "estimate", "bill", "order_line")
_DOMAINS = ("productivity", "finance", "sales", "support", "travel", "health", "hr",
            "real_estate", "education", "logistics", "marketing", "legal")
_SIZES = (1, 1, 1, 2, 3, 4, 6)  # services per API: most APIs are one service, some are split
_RESOURCES = 5                 # resource collections per service, five tools each
_KINDS = ("money", "date", "place", "organization", "link")
_INTERFACE = {kind: next(i for i, k in ROLE_INTERFACES.items() if k == kind)
              for kind in _KINDS}


def write_corpus(folder: Path, services: int, seed: int = 0) -> dict[str, int]:
    """Write ``services`` spec files (``5 * 5`` tools each) under ``folder``, one folder per
    API; the same files for the same seed. Returns counts of APIs, services and tools."""
    rng = random.Random(f"synthetic-corpus:{seed}")
    taken: set[str] = set()
    written = tools = apis = 0
    while written < services:
        size = min(rng.choice(_SIZES), services - written)
        api = _api_name(rng, taken)
        nouns = rng.sample(_NOUNS, size * _RESOURCES)
        names = [api] if size == 1 else [f"{api}.{_plural(nouns[i * _RESOURCES])}"
                                         for i in range(size)]
        domain = rng.choice(_DOMAINS)
        for i, name in enumerate(names):
            own = nouns[i * _RESOURCES:(i + 1) * _RESOURCES]
            spec = _spec(rng, name, api, domain, own, nouns, [n for n in names if n != name])
            path = folder / api / f"{name}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(spec, indent=1), encoding="utf-8")
            tools += len(spec["tools"])
        written += size
        apis += 1
    return {"apis": apis, "services": written, "tools": tools}


def _api_name(rng: random.Random, taken: set[str]) -> str:
    base = f"{rng.choice(_VENDORS)}_{rng.choice(_PRODUCTS)}"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    taken.add(name)
    return name


def _plural(noun: str) -> str:
    return noun[:-1] + "ies" if noun.endswith("y") and noun[-2] not in "aeiou" else noun + "s"


def _spec(rng: random.Random, name: str, api: str, domain: str, own: list[str],
          nouns: list[str], siblings: list[str]) -> dict[str, Any]:
    title = api.replace("_", " ").title()
    tools = []
    for noun in own:
        record = _record(rng, noun, [n for n in nouns if n != noun])
        tools.extend(_collection(noun, record, title))
    spec: dict[str, Any] = {
        "name": name, "api": api, "domain": domain, "version": "1", "source": "synthetic",
        "description": f"{title}: {', '.join(_plural(n).replace('_', ' ') for n in own)}.",
        "tools": tools,
    }
    if siblings:  # the services split from one API name each other
        spec["related"] = siblings
    return spec


def _field(interface: str, role: str | None, kind: str, what: str) -> dict[str, Any]:
    node: dict[str, Any] = {"type": kind, "x-interface": interface, "description": what}
    if role is not None:
        node["x-role"] = role
    return node


def _record(rng: random.Random, noun: str, others: list[str]) -> dict[str, Any]:
    """A resource's schema: its id, a name, one person (name and email), two or three tagged
    values, and sometimes the id of another resource of the API."""
    person = rng.choice([r for r in ROLES["person"] if r not in ("self", "business_contact")])
    label = noun.replace("_", " ")
    props: dict[str, Any] = {
        "id": {"type": "string", "x-key": noun, "description": f"{label.capitalize()} id."},
        "name": {"type": "string", "maxLength": 120, "description": f"Name of the {label}."},
        f"{person}_name": _field("PersonName", person, "string", f"The {label}'s {person}."),
        f"{person}_email": _field("EmailAddress", person, "string",
                                  f"Email of the {label}'s {person}."),
    }
    for kind in rng.sample(_KINDS, rng.choice((2, 3))):
        role = rng.choice(ROLES[kind])
        field = role if kind in ("money", "organization") or role.endswith(("date", "city")) \
            else f"{role}_{'url' if kind == 'link' else 'city' if kind == 'place' else 'date'}"
        props[field] = _field(_INTERFACE[kind], role, "number" if kind == "money" else "string",
                              f"The {label}'s {role.replace('_', ' ')}.")
    if rng.random() < 0.5:
        other = rng.choice(others)
        props[f"{other}_id"] = {"type": "string", "x-key": other,
                                "description": f"Id of the {other.replace('_', ' ')}."}
    return {"type": "object", "properties": props, "required": list(props)}


def _collection(noun: str, record: dict[str, Any], title: str) -> list[dict[str, Any]]:
    """list, get, create, update and delete tools over one resource."""
    props = record["properties"]
    label, plural = noun.replace("_", " "), _plural(noun)
    tagged = [k for k, v in props.items() if "x-interface" in v]
    person_email, person_name = tagged[1], tagged[0]
    key = {"type": "string", "x-key": noun, "description": f"Id of the {label}."}
    value = tagged[2]

    def tool(name: str, what: str, read_only: bool, params: dict[str, Any],
             required: list[str], returns: dict[str, Any]) -> dict[str, Any]:
        return {"name": name, "description": f"{what} ({title}).", "read_only": read_only,
                "parameters": {"type": "object", "properties": params, "required": required},
                "returns": returns}

    creates = {k: props[k] for k in (person_name, person_email, value)}
    return [
        tool(f"list_{plural}", f"List the {_plural(label)} of a {person_email[:-6]}", True,
             {person_email: props[person_email]}, [person_email],
             {"type": "array", "items": record}),
        tool(f"get_{noun}", f"Get one {label} by id", True, {f"{noun}_id": key},
             [f"{noun}_id"], record),
        tool(f"create_{noun}", f"Create a {label}", False,
             {**creates, "name": props["name"]}, list(creates), record),
        tool(f"update_{noun}", f"Change a {label}'s {value.replace('_', ' ')}", False,
             {f"{noun}_id": key, value: props[value]}, [f"{noun}_id", value], record),
        tool(f"delete_{noun}", f"Delete a {label}", False, {f"{noun}_id": key},
             [f"{noun}_id"], {"type": "object", "properties": {
                 "id": props["id"], "deleted": {"type": "boolean"}},
                 "required": ["id", "deleted"]}),
    ]
