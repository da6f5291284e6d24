"""What an imported field is: its interface (by name, type, format and description), its role,
the resource whose id it holds, whether its object is a person or an organisation, and whether
it is transport noise (auth, signing, paging, response shaping) that no user states."""

from __future__ import annotations

import re
from typing import Any, Callable

from compoenv.importers.naming import snake
from compoenv.roles import infer_role

__all__ = ["infer_interface", "object_hint", "tag_field", "field_key", "is_noise", "envelope_field",
           "singular", "person_role"]

_PERSON = set("owner customer person user contact client patient vet employee member author "
              "assignee reporter requester passenger guest attendee agent staff doctor people "
              "recipient sender".split())
_ORG = set("company organization organisation org vendor supplier employer merchant business "
           "team hotel restaurant gym pharmacy bank airline clinic agency venue insurer "
           "publisher advertiser".split())
_RULES = [(interface, kind, set(words.split()), set(formats.split())) for interface, kind, words,
          formats in (  # interface, JSON type, words of the field's name, formats
    ("DateTime", "string", "datetime timestamp", "date-time google-datetime"),
    ("City", "string", "city", ""), ("Date", "string", "date birthday dob birthdate", "date"),
    ("EmailAddress", "string", "email", "email"),
    ("Url", "string", "url uri website homepage link", "uri url uri-reference"),
    ("PhoneNumber", "string", "phone mobile telephone", ""),
    ("Money", "number", "price amount cost total fee subtotal spend spending salary revenue "
     "tax", ""),
    ("Quantity", "integer", "quantity qty", ""), ("CurrencyCode", "string", "currency", ""),
    ("OrganizationName", "string", "company organization organisation employer", ""),
    ("CountryCode", "string", "country", ""), ("PostalCode", "string", "zip postcode postal", ""),
    ("AirportCode", "string", "iata airport", ""),
    ("Percentage", "number", "percentage percent", ""))]
# described rather than named: "ISO 3166 country code", "ISO 4217 currency", "IATA airport"
_DESCRIBED = [(re.compile(p, re.I), interface) for p, interface in (
    (r"\bcountry code\b|\bISO[ -]?3166", "CountryCode"), (r"\bISO[ -]?4217\b", "CurrencyCode"),
    (r"\bIATA\b.*\b(airport|location) code\b|\bairport code\b", "AirportCode"),
    (r"^(the |an? )?e-?mail address\b", "EmailAddress"))]
_CODES = {"iata", "airport", "country", "currency", "postal", "zip", "phone", "telephone"}
_NOT_MONEY = {"rate", "percent", "percentage", "ratio", "count", "code", "type", "id"}
_NOT_COUNTRY = {"calling", "dialing", "dial", "phone"}  # a dialling prefix is no country
_MOMENTS = {"created", "updated", "modified", "deleted", "published", "posted", "started",
            "ended", "expired", "completed", "submitted", "last", "start", "end", "expiry"}
_STREET = {("street",), ("street", "address"), ("address", "line", "1"), ("address", "1"),
           ("address", "line1"), ("address1",), ("line1",), ("street", "1")}
# transport: auth, signing, content negotiation, paging, response shaping, request tracing
_NOISE = set("authorization proxy_authorization cookie user_agent accept accept_language "
             "accept_encoding accept_charset content_type content_length content_md5 "
             "if_match if_none_match if_modified_since cache_control api_key apikey "
             "access_token oauth_token auth_token api_token token api_version callback jsonp "
             "pretty_print pretty alt quota_user user_ip upload_type upload_protocol xgafv "
             "next_token next_page_token page_token continuation_token continuation cursor "
             "next_cursor next_marker marker next_link odata_next_link skip_token skiptoken "
             "etag request_id client_request_id correlation_id idempotency_key signature "
             "x_amz_date x_amz_target page offset client_secret secret_key".split())
_NOISE_TEXT = re.compile(
    r"\b(api key|access token|oauth|authenticat\w*|jsonp|pagination token|continuation token|"
    r"page token|token for the next page|next page of results|tracking the request|"
    r"request id|correlation id|idempotency|selector specifying which fields|"
    r"format of the response|response format|error format)\b", re.I)
_PAGING = set("meta metadata paging pagination links _links page_info pageinfo".split())
# a response's links to other pages of itself ("nextPageLink", "selfLink", "prev_url")
_PAGE_LINK = re.compile(r"^(next|prev|previous|first|last|self)(_page)?_(link|url|uri|href)$")
# objects of authorisation material in a request: a signed consent, a signature, credentials
_AUTH_OBJECTS = set("consent consent_artifact signature credentials authentication auth "
                    "authorization".split())
_PAGING_FIELDS = set("page limit offset first last next prev previous self href key total_pages "
                     "page_size per_page next_link next_token cursor".split())
_ID_SUFFIXES = ("id", "ids", "uuid", "guid", "sid", "arn")


def _has(name: str | list[str], vocab: set[str]) -> bool:
    """Whether a word of ``name`` (or of a list of words) is in ``vocab``, plural or not."""
    words = snake(name, 200).split("_") if isinstance(name, str) else name
    return any(w in vocab or (w.endswith("s") and w[:-1] in vocab) for w in words)


_HEADER = re.compile(r"(?:to|from|cc|bcc|reply_to)_email(?:_address(?:es)?|s)?")
_SAME_IN_PLURAL = frozenset({"series", "species", "news", "status", "analysis", "metadata",
                             "data", "media"})


def singular(words: str) -> str:
    """``resource_groups`` -> ``resource_group``, ``policies`` -> ``policy``."""
    head, _, last = words.rpartition("_")
    if last in _SAME_IN_PLURAL or last.endswith(("series", "species")):  # one time series
        return words
    for end, repl in (("ies", "y"), ("sses", "ss"), ("xes", "x"), ("ches", "ch"),
                      ("shes", "sh"), ("s", "")):
        if last.endswith(end) and not last.endswith(("ss", "us", "is")) and len(last) > 3:
            last = last[: -len(end)] + repl
            break
    return f"{head}_{last}" if head else last


def object_hint(names: list[str], keys: Any = ()) -> str:
    """Whether an object is a "person" (``"person:<role>"`` when its name says which:
    ``Customer`` -> ``person:customer``), an "org" or neither (""), by its schema or property
    name, or by its own keys (first + last name, email, phone)."""
    own, names = {snake(k, 200) for k in keys}, [n for n in names if n]
    person = {"first_name", "last_name"} <= own or own & {"email", "email_address", "phone"}
    if any(_has(n, _ORG) for n in names):
        return "org"
    if not (person or any(_has(n, _PERSON) for n in names)):
        return ""
    role = person_role(names)
    return f"person:{role}" if role else "person"


# what a list response's envelope says of the list beside it: how many, whether more follow,
# what kind of response it is ("kind": "youtube#videoListResponse")
_ENVELOPE = set("count total total_count total_results total_items total_size result_count "
                "results_count size has_more more is_truncated truncated marker next_marker "
                "kind odata_count odata_context odata_type".split())


def envelope_field(name: str) -> bool:
    """Whether a field beside a response's one list is the list's envelope (paging, counts,
    the response's kind), nothing of a record of its own."""
    key = snake(name, 200)
    return key in _ENVELOPE or key in _PAGING or is_noise(name, "response")


def is_noise(name: str, place: str = "body", description: str = "",
             parents: tuple[str, ...] = ()) -> bool:
    """Whether a field is transport rather than a value a user means: every header (auth,
    signing, tracing, ``x-*``), auth and paging parameters, response shaping (``fields``,
    ``prettyPrint``), the fields of a request's authorisation objects (a signed consent
    artifact, credentials), and the paging part of a response (``meta.limit``,
    ``_links.next``).

    Args:
        name: The field's name.
        place: ``path``, ``query``, ``header``, ``body`` or ``response``.
        description: The field's description.
        parents: For a response field, the names of the objects it sits in.
    """
    key = snake(name, 200)
    if place == "header":
        return True
    if place == "response":
        return key in ("next_link", "next_token", "next_page_token", "etag", "odata_next_link",
                       "cursor", "next_cursor") or bool(_PAGE_LINK.match(key)) or (
                           key in _PAGING_FIELDS and (not parents or bool(
                               {snake(p, 200) for p in parents[-2:]} & _PAGING)))
    if place == "path":
        return key in ("access_token", "api_key")
    if place == "body" and {snake(p, 200) for p in parents} & _AUTH_OBJECTS:
        return True
    return (key in _NOISE or key.startswith("x_") or (key == "key" and place == "query")
            or bool(_NOISE_TEXT.search(description[:200])))


def field_key(name: str) -> str | None:
    """The resource a field's name says it holds the id of: ``repo_id`` -> ``repo``,
    ``projectGuid`` -> ``project``, ``BundleSid`` -> ``bundle``; None for anything else."""
    words = snake(name, 200).split("_")
    if len(words) < 2 or words[-1] not in _ID_SUFFIXES:
        return None
    return singular("_".join(words[:-1]))


def infer_interface(name: str, kind: Any, fmt: Any = None, hint: str = "",
                    description: str = "") -> str | None:
    """The ``x-interface`` a field called ``name`` of JSON type ``kind`` most likely carries;
    ``hint`` tells whether the field's object is a "person" or an "org" (for a bare ``name``)."""
    not_dates = ("update", "candidate", "validate", "mandate", "liquidate")
    words = [("date" if w.endswith("date") and not w.endswith(not_dates) else
              "email" if "email" in w else w) for w in snake(name or "id", 200).split("_")]
    if words[-1] in _ID_SUFFIXES or (words[-1] in ("key", "token", "code", "number")
                                     and not set(words) & _CODES):
        return None  # an id, a secret, a code of something else
    if kind == "string" and (tuple(words) in _STREET or words[-2:] == ["street", "address"]):
        return "StreetAddress"
    if kind == "string" and fmt in (None, "") and (
            (words[-1] in ("at", "time", "on") and len(words) > 1 and words[-2] in _MOMENTS)
            or (words[-1] in ("time", "datetime") and words[0] in _MOMENTS)):
        return "DateTime"
    for interface, json_type, vocab, formats in _RULES:
        if kind == json_type and (fmt in formats or _has(words, vocab)):
            if (interface == "CountryCode" and set(words) & _NOT_COUNTRY) or (
                    interface == "Money" and set(words) & _NOT_MONEY):
                return None
            return interface
    if kind == "string" and words[-1] != "name":
        return next((interface for pattern, interface in _DESCRIBED
                     if pattern.search(description[:300])), None)
    if kind != "string" or (words[-1] != "name" and len(words) > 1):
        return None
    head, alone = words[:-1], words == ["name"]
    if (head and _has(head[-1:], _ORG)) or (alone and hint == "org"):
        return "OrganizationName"
    people = _PERSON | {"full", "display"} if head else _PERSON - {"user", "agent"}
    return "PersonName" if (head and _has(head[-1:], people)) or (
        alone and hint.startswith("person")) else None


def person_role(names: list[str]) -> str | None:
    """The role of the person an object is, by its schema or property names (a ``Customer``'s
    name is a customer's name)."""
    return next((role for n in names if n and (role := infer_role(
        "PersonName", snake(n, 80).split("_")[-1] + "_name", None))), None)


def tag_field(name: str, kind: Any, fmt: Any = None, hint: str = "", description: str = "",
              keys: Callable[[str], str | None] = field_key, place: str = "body",
              parents: tuple[str, ...] = (), who: str | None = None) -> dict[str, str]:
    """The tags of one converted field: ``x-key`` for a resource id, else ``x-interface`` and
    ``x-role`` (a guess from the name's words, ``who`` the role of the person the field's
    object is); nothing for transport noise (``is_noise``)."""
    if not name or is_noise(name, place, description, parents):
        return {}
    if _HEADER.fullmatch(snake(name, 80)):
        return {}  # a message's "to email address" names no one: whom it goes to is a setting
    if kind in ("string", "integer") and (resource := keys(name)):
        return {"x-key": resource}
    interface = infer_interface(name, kind, fmt, hint, description)
    who = who or hint.partition(":")[2] or None
    role = infer_role(interface, snake(name, 200), who) if interface else None
    label = _time_label(name) if interface in ("Date", "DateTime") else None
    return {**({"x-interface": interface} if interface else {}),
            **({"x-role": role} if role else {}), **({"x-label": label} if label else {})}


_MADE = re.compile(r"(?:(?:date|time)_?)?(?:created|creation|create)"
                   r"(?:_(?:at|on|time|date|timestamp|ts))?")
_CHANGED = re.compile(r"(?:(?:date|time)_?)?(?:last_)?(?:updated|update|modified|modify|changed)"
                      r"(?:_(?:at|on|time|date|timestamp|ts))?")


def _time_label(name: str) -> str | None:
    """How a person names a record's timestamp field ("the network's creation time", not
    "the network's created at")."""
    key = snake(name, 80)
    if _MADE.fullmatch(key):
        return "creation time"
    if _CHANGED.fullmatch(key):
        return "last update time"
    found = _WHEN.fullmatch(key)
    return None if found is None else _EVENTS.get(found.group(1))


# "<event>_at": the time of that event ("expires_at" -> "expiry time")
_WHEN = re.compile(r"(?:[a-z]+_)?([a-z]+)(?:_(?:at|on|time|date|timestamp))")  # job_expires_at
_EVENTS = {"expires": "expiry time", "expired": "expiry time", "expiry": "expiry time",
           "expiration": "expiry time", "started": "start time", "start": "start time",
           "ended": "end time", "finished": "end time", "completed": "completion time",
           "invited": "invitation time", "submitted": "submission time",
           "published": "publication time", "deleted": "deletion time",
           "closed": "closing time", "opened": "opening time", "sent": "sending time",
           "received": "receipt time", "scheduled": "scheduled time", "added": "date added", "paused": "pause time",
           "joined": "date joined", "registered": "registration time"}
