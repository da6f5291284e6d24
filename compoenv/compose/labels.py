"""Plain English for composed requests: labels for fields, nouns for results, plurals and
articles (``inflect``), enum values as words.

A field is named by, in order: its schema's ``x-label``; the curated ``FIELD_LABELS``; its
words, with the owner's noun dropped where it repeats ("the restaurant's restaurant name" is
"the restaurant's name") and units dropped ("duration minutes" is "duration").
"""

from __future__ import annotations

import re
from functools import lru_cache
from collections.abc import Mapping
from typing import Any

from compoenv.roles import ROLES

__all__ = ["FIELD_LABELS", "field_label", "with_employer", "plural", "singular", "with_article", "words",
           "enum_words", "fix_articles", "service_label", "default_service_label", "named_for"]


@lru_cache(maxsize=1)
def _engine() -> Any:
    """inflect's engine, imported at first use: its import instruments the module with
    typeguard, seconds that a process playing given tasks never needs to spend."""
    import inflect

    return inflect.engine()


_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_UNCOUNTED = frozenset({"news", "data", "media", "info", "information", "software", "series",
                        "species", "feedback", "advice", "equipment", "weather"})
_UNITS = ("minutes", "minute", "km", "kg", "percent", "pct", "usd", "eur", "count", "num")

# field name -> how a person says it after "the <owner>'s"
FIELD_LABELS: dict[str, str] = {
    "applied_on": "application date", "created": "creation date", "created_at": "creation time",
    "modified": "last modified time", "updated": "last update", "updated_at": "last update",
    "due": "due date", "expires": "expiry date", "since": "start date", "placed": "order date",
    "member_since": "membership start date", "customer_since": "customer start date",
    "sent_at": "sending time", "posted_at": "posting time", "posted": "posting date",
    "published": "publication date", "submitted_on": "submission date",
    "submitted_at": "submission time", "logged_on": "log date", "logged_at": "log time",
    "last_edited": "last edit", "edited_at": "last edit", "last_commit": "last commit time",
    "last_active": "last activity", "last_sold_on": "last sale date",
    "listed_on": "listing date", "connected_on": "connection date", "visited": "visit date",
    "joined": "joining date", "added": "date added", "start": "start time", "end": "end time",
    "at": "time", "as_of": "date", "until": "end date", "valid_until": "expiry date",
    "duration_minutes": "duration", "nights": "number of nights", "stock": "stock level",
    "seats_left": "seats left", "rooms_left": "rooms left", "rating": "rating",
    "counterparty": "counterparty", "counterparty_email": "counterparty's email",
    "billing_email": "billing email", "ship_to": "shipping address", "origin_city": "origin",
    "destination_city": "destination", "high": "high temperature", "low": "low temperature",
    "precipitation_chance": "chance of rain", "nightly_rate": "nightly rate",
    "is_active": "active status", "to": "recipient", "tax_due": "amount due", "ytd_gross": "year-to-date gross pay",
    "ytd_withheld": "year-to-date tax withheld", "ev_charging": "EV charging",
    "check_in": "check-in date", "check_out": "check-out date",
}


def words(name: str) -> str:
    """``billing_email`` -> "billing email", ``WeatherReport`` -> "weather report"."""
    return _CAMEL.sub(" ", name).replace("_", " ").lower()


@lru_cache(maxsize=8192)
def plural(phrase: str) -> str:
    """The phrase with its last word made plural ("company" -> "companies")."""
    head, _, last = phrase.rpartition(" ")
    if last.lower() in _UNCOUNTED:
        return phrase
    return f"{head} {_engine().plural_noun(last)}" if head else _engine().plural_noun(last)


@lru_cache(maxsize=8192)
def singular(phrase: str) -> str:
    """The phrase with its last word made singular ("open invoices" -> "open invoice")."""
    head, _, last = phrase.rpartition(" ")
    if last.lower() in _UNCOUNTED or last.endswith(("is", "us", "ss")):
        return phrase  # "analysis", "status", "class" are one already
    one = _engine().singular_noun(last) or last
    return f"{head} {one}" if head else one


@lru_cache(maxsize=8192)
def with_article(phrase: str) -> str:
    """"a"/"an" and the phrase ("an hourly rate", "a user")."""
    return _engine().a(phrase)


@lru_cache(maxsize=8192)
def _article_for(word: str) -> str:
    return _engine().a(word).split(" ", 1)[0]  # inflect is thorough, and slow: once a word


_A_AN = re.compile(r"\b([Aa]n?) (\w+)")


def fix_articles(text: str) -> str:
    """Every "a"/"an" agreeing with the word after it ("a Engineer" -> "an Engineer")."""
    def agree(match: re.Match[str]) -> str:
        article = _article_for(match.group(2))
        if match.group(1)[0].isupper():
            article = article.capitalize()
        return f"{article} {match.group(2)}"
    return _A_AN.sub(agree, text)


def _schema_at(schema: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any] | None:
    node: Any = schema
    for key in path:
        if not isinstance(node, dict):
            return None
        for alt in node.get("anyOf") or node.get("oneOf") or ():
            if isinstance(alt, dict) and alt.get("type") != "null":
                node = alt
                break
        if key == "*":
            node = node.get("items") or node.get("additionalProperties")
        else:
            node = (node.get("properties") or {}).get(key)
    return node if isinstance(node, dict) else None


def field_label(schema: dict[str, Any], path: tuple[str, ...], owner: str = "") -> str:
    """How a person names the field at ``path`` of ``schema`` after "the <owner>'s"."""
    field = next((p for p in reversed(path) if p != "*" and p[:1] != "#"), "")
    node = _schema_at(schema, tuple("*" if p[:1] == "#" else p for p in path))
    if node is not None and isinstance(node.get("x-label"), str):
        return node["x-label"]
    if field in FIELD_LABELS:
        return FIELD_LABELS[field]
    parent = [p for p in path[:-1] if p != "*" and p[:1] != "#"][-1:]
    if parent and field.casefold() in _PERSONAL and words(parent[0]) in _PERSON_ROLES:
        return f"{words(parent[0])}'s {_plain(field, owner)}"  # the app's owner's email
    return _plain(field, owner)


@lru_cache(maxsize=4096)
def _plain(field: str, owner: str) -> str:
    parts = words(field).split()
    while len(parts) > 1 and parts[-1] in _UNITS:
        parts.pop()  # "duration minutes" -> "duration"
    owner_words = owner.split()
    if owner_words and parts == owner_words[-len(parts):]:
        return "name"  # the "city" of a visitor city is its name
    if owner_words and len(parts) > len(owner_words) and parts[:len(owner_words)] == owner_words:
        parts = parts[len(owner_words):]  # "restaurant name" of a restaurant -> "name"
    elif owner_words and len(parts) > 1 and parts[0] == owner_words[-1]:
        parts = parts[1:]  # "profile url" of a reviewer profile -> "url"
    if len(parts) >= 2 and parts[-1] in _PERSONAL and parts[-2] in _PERSON_ROLES:
        parts[-2] += "'s"  # "the interview's candidate's email"
    return " ".join(parts)


_PERSONAL = frozenset({"email", "phone", "name"})
_PERSON_ROLES = frozenset(r for r in ROLES["person"]) | {"customer", "manager", "owner"}


def enum_words(value: Any, schema: dict[str, Any] | None) -> str:
    """An enum value as words: its ``x-enum-labels`` entry, else its words ("off_peak" ->
    "off peak")."""
    labels = (schema or {}).get("x-enum-labels") or {}
    if isinstance(labels, dict) and str(value) in labels:
        return str(labels[str(value)])
    return str(value).replace("_", " ")


def with_employer(line: str, employer: str) -> str:
    """A persona or context line with the user's employer filled in; its possessive is
    "Quarry Labs'", not "Quarry Labs's"."""
    if employer.endswith("s"):
        line = line.replace("{employer}'s", "{employer}'")
    return line.format(employer=employer)


# last words of a name that already say what kind of thing the service is ("the project
# tracker", not "the project tracker app"); letters said one by one ("the CRM app")
_KINDS = frozenset({"app", "service", "site", "system", "portal", "tracker", "manager", "editor",
                    "wallet", "platform", "desk", "helpdesk", "dashboard", "store", "shop",
                    "bank", "calendar", "inbox", "directory", "registry", "board", "tool"})
_LETTERS = frozenset({"crm", "hr", "erp", "cms", "sms", "ats", "pos", "cdn", "dns", "vpn",
                      "sql", "ci", "cd", "ai", "ml", "id", "url", "ev", "tv", "pdf", "faq"})


@lru_cache(maxsize=1024)
def default_service_label(name: str) -> str:
    """How a person names a service that sets no display name: the words of its name (its
    last segment, for ``github.repos``) as an app, or as a service when the name ends in
    "api" (``real_estate`` -> "the real estate app", ``billing_api`` -> "the billing service",
    ``project_tracker`` -> "the project tracker")."""
    parts = [p for p in words(name.rsplit(".", 1)[-1]).split() if p]
    if not parts:
        return "the app"
    kind = "app"
    if parts[-1] == "api":
        parts, kind = parts[:-1] or ["web"], "service"
    elif parts[-1] in _KINDS:
        kind = ""
    said = " ".join(p.upper() if p in _LETTERS else p for p in parts)
    return f"the {said} {kind}".rstrip()


def service_label(source: Any, name: str | None = None) -> str:
    """How a person names a service in a request: its display name ("the real-estate app",
    "my calendar", the ``display`` class attribute or spec key), else one made from its name
    (``default_service_label``).

    Args:
        source: Where the service is found: a ``Registry`` or a mapping of names to service
            classes (``Session.classes``), both read with ``name``; or the service itself: its
            class, an instance, its ``ServiceInfo``, or its spec (a dict with ``"name"`` and
            maybe ``"display"``); or None (the label made from ``name`` alone).
        name: The service's name (in a registry, the name it is registered under); needed
            with a registry or a mapping, else taken from the service.

    Raises:
        ValueError: a registry or mapping without ``name``, or a service without a name.

    A name the registry or mapping does not hold gets the label made from it, so a task of a
    service that is gone still reads.
    """
    found: Any = source
    if isinstance(source, Mapping) and not isinstance(source.get("name"), str):  # names to classes
        if name is None:
            raise ValueError("service_label: a mapping of services needs the service's name")
        found = source.get(name)
    elif hasattr(source, "info") and hasattr(source, "names"):  # a Registry
        if name is None:
            raise ValueError("service_label: a registry needs the service's name")
        found = source.info(name) if name in source else None
    if isinstance(found, Mapping):
        display, own = found.get("display"), found.get("name")
    else:
        display, own = getattr(found, "display", None), getattr(found, "name", None)
    if isinstance(display, str) and display.strip():
        return display.strip()
    name = name or (own if isinstance(own, str) else None)
    if not name:
        raise ValueError(f"service_label: no service name in {source!r}")
    return default_service_label(name)


def named_for(*verbs: str) -> re.Pattern[str]:
    """A pattern that finds a tool named for one of ``verbs``: the verb leads a built-in
    tool's name ("update_playlist") and may trail an imported one's ("repos_patch",
    "accounts_delete_2")."""
    return re.compile(r"(^|_)(%s)(_|\d|$)" % "|".join(map(re.escape, verbs)))
