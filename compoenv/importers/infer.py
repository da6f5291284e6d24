"""What an imported field is: its interface (by name, type and format) and whether its object is
a person or an organisation."""

from __future__ import annotations

from typing import Any

from compoenv.importers.naming import snake

__all__ = ["infer_interface", "object_hint", "SKIP_HEADERS"]

SKIP_HEADERS = {"authorization", "accept", "content_type", "cookie", "user_agent", "api_key"}
_PERSON = set("owner customer person user contact client patient vet employee member author "
              "assignee reporter requester passenger guest attendee agent staff doctor people "
              "recipient sender".split())
_ORG = set("company organization organisation org vendor supplier employer merchant business "
           "team".split())
_RULES = [(interface, kind, set(words.split()), set(formats.split())) for interface, kind, words,
          formats in (  # interface, JSON type, words of the field's name, formats
    ("DateTime", "string", "datetime timestamp", "date-time"), ("City", "string", "city", ""),
    ("Date", "string", "date birthday dob", "date"), ("EmailAddress", "string", "email", "email"),
    ("Url", "string", "url uri website homepage link", "uri url uri-reference"),
    ("PhoneNumber", "string", "phone mobile telephone tel", ""),
    ("Money", "number", "price amount cost total fee subtotal", ""),
    ("Quantity", "integer", "quantity qty count", ""), ("CurrencyCode", "string", "currency", ""),
    ("OrganizationName", "string", "company organization organisation employer", ""),
    ("CountryCode", "string", "country", ""), ("PostalCode", "string", "zip postcode postal", ""))]



def _has(name: str | list[str], vocab: set[str]) -> bool:
    """Whether a word of ``name`` (or of a list of words) is in ``vocab``, plural or not."""
    words = snake(name, 200).split("_") if isinstance(name, str) else name
    return any(w in vocab or (w.endswith("s") and w[:-1] in vocab) for w in words)


def object_hint(names: list[str], keys: Any = ()) -> str:
    """Whether an object is a "person", an "org" or neither (""), by its schema or property
    name, or by its own keys (first + last name, email, phone)."""
    own, names = {snake(k, 200) for k in keys}, [n for n in names if n]
    person = {"first_name", "last_name"} <= own or own & {"email", "email_address", "phone"}
    return "org" if any(_has(n, _ORG) for n in names) else "person" if person or any(
        _has(n, _PERSON) for n in names) else ""


def infer_interface(name: str, kind: Any, fmt: Any = None, hint: str = "") -> str | None:
    """The ``x-interface`` a field called ``name`` of JSON type ``kind`` most likely carries;
    ``hint`` tells whether the field's object is a "person" or an "org" (for a bare ``name``)."""
    not_dates = ("update", "candidate", "validate", "mandate", "liquidate")
    words = [("date" if w.endswith("date") and not w.endswith(not_dates) else
              "email" if "email" in w else w) for w in snake(name or "id", 200).split("_")]
    if words[-1] in ("id", "ids", "uuid"):
        return None
    for interface, json_type, vocab, formats in _RULES:
        if kind == json_type and (fmt in formats or _has(words, vocab)):
            return interface
    if kind != "string" or (words[-1] != "name" and len(words) > 1):
        return None
    head, alone = words[:-1], words == ["name"]
    if _has(head, _ORG) or (alone and hint == "org"):
        return "OrganizationName"
    people = _PERSON | {"full", "display"} if head else _PERSON - {"user", "agent"}
    return "PersonName" if _has(head or words, people) or (alone and hint == "person") else None

