"""Argument values for composed calls: drawn from a service's records, or fresh from the World."""

from __future__ import annotations

import math
import random
import uuid
from functools import lru_cache
from typing import Any, Callable

from pydantic import BaseModel, TypeAdapter

from compoenv._cache import ViewCache
from compoenv.schema import (SCOPE_KEYS, Slot, compact_schema, extract, interface_slots,
                             is_valid)
from compoenv.service import Service, ToolSpec
from compoenv.businesses import KINDS as BUSINESS_KINDS
from compoenv.magnitudes import draw
from compoenv.world import Person, World

__all__ = ["MISSING", "record_arguments", "record_value", "field_value", "fresh_value",
           "fresh_arguments", "can_state"]

MISSING: Any = object()

_SUBJECTS = ("Quick question", "Follow-up on our call", "Plans for next week", "Invoice question",
             "Lunch on Thursday", "Project update", "Travel plans", "Thanks for your help")
_BODIES = ("Could you send me the latest numbers when you get a chance?",
           "Thanks again for yesterday; let me know if anything else is needed.",
           "Are you free for a short call this week?",
           "Please confirm the details when you can.",
           "Just checking in on the status of this.")
# what a user writes to someone about the thing the request found: their ticket, their
# article, a business they might visit, a professional they might hire
_ABOUT_THEIRS = (("About the {noun}", "Following up on the {noun}",
                  "A question about the {noun}"),
                 ("I'm following up on the {noun}. Could you confirm the details when you get "
                  "a chance?",
                  "A quick question about the {noun}: is everything still on track?"))
_ABOUT_BUSINESS = (("Availability this week", "A question from a customer"),
                   ("Hello, could you tell me your opening hours this week and whether I need "
                    "to book ahead?",
                    "Hello, do you have availability this week? I'd like to come by."))
_ABOUT_PERSON = (("Are you available?", "A request for your services"),
                 ("Hello, I found your profile and would like to ask whether you are available "
                  "for a short call this week.",
                  "Hello, are you taking on new work this month? I'd be glad to tell you more."))
_BUSINESS_NOUNS = frozenset({"restaurant", "gym", "hotel", "pharmacy", "venue", "bank",
                             "insurer", "clinic", "facility", "parking facility", "business",
                             "location", "shop", "store"})
# people a request found by who they are to the user: what one writes to each
_ABOUT_WHO: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "lead": (("Following up", "Quick intro call?"),
             ("Hi, I wanted to follow up on our last conversation. Do you have time for a "
              "quick call this week?",)),
    "customer": (("Checking in", "How are things going?"),
                 ("Hi, I wanted to check that everything is working well for you. Let me "
                  "know if there is anything we can help with.",)),
    "candidate": (("Your application", "Next steps"),
                  ("Thanks for applying. Could we set up a short call this week to talk "
                   "about the role?",)),
    "contact": (("Catching up", "Coffee next week?"),
                ("Hi, it has been a while. Would you be free for a coffee next week?",)),
    "profile": (("Nice to connect", "Hello from a fellow professional"),
                ("Hi, I came across your profile and would love to connect and compare "
                 "notes some time.",)),
    "respondent": (("Thanks for your response", "Following up on your answers"),
                   ("Thanks for filling in the form. Could I ask you a couple of follow-up "
                    "questions?",)),
    "attendee": (("See you there", "Event details"),
                 ("Looking forward to seeing you at the event. Let me know if you have any "
                  "questions.",)),
}
# people found by what they do, whose services a user may ask for
_PROFESSIONALS = frozenset({"translator", "trainer", "agent", "advisor", "lawyer", "tutor",
                            "consultant", "freelancer", "contractor", "coach", "planner",
                            "photographer", "designer", "accountant"})
_TITLES = ("Project sync", "Budget review", "Coffee catch-up", "Planning session",
           "Design review", "Team lunch")
_PLAIN = ("as discussed", "monthly settlement", "see attached", "per our agreement")
# free text a user would type, by (service, parameter) or by parameter; anything else cannot
# be invented blind ("quarterly name" is no request), so such tools are not given stated text.
# "{last_month}" and "{year}" are the World's (a month before today, today's year)
_TEXTS: dict[tuple[str, str], tuple[str, ...]] = {
    ("docs_editor", "title"): ("Q2 planning notes", "Onboarding guide", "Vendor review summary",
                               "Offsite agenda", "Release checklist"),
    ("code_review", "title"): ("Fix date parsing in the invoice export",
                               "Add retries to the payment client", "Update onboarding docs",
                               "Speed up the search index build"),
    ("expense_reports", "title"): ("{last_month} client visit", "Conference travel",
                                   "Team offsite", "Customer workshop trip"),
    ("forms", "title"): ("Team offsite survey", "Event feedback form",
                         "Workshop registration", "Customer satisfaction survey"),
    ("project_tracker", "title"): ("Update the onboarding checklist", "Prepare the Q2 report",
                                   "Review vendor contracts", "Plan the team offsite"),
    ("reviews", "title"): ("Great service, slow delivery", "Friendly staff and fair prices",
                           "Would come again", "Not worth the wait"),
    ("cloud_storage", "name"): ("Contracts", "Invoices {year}", "Team photos", "Board decks"),
    ("cloud_storage", "folder"): ("Contracts", "Invoices {year}", "Shared", "Archive"),
    ("invoices", "reason"): ("duplicate invoice", "billed in error", "order was cancelled"),
    ("payroll", "reason"): ("quarterly performance bonus", "relocation allowance",
                            "overtime in {last_month}"),
    ("ride_hailing", "label"): ("Home", "Office", "Gym", "Parents"),
    ("crm", "note"): ("discussed pricing for next quarter", "sent over the proposal",
                      "they asked for a demo next week", "follow up after the trial"),
    ("tax_advisor", "note"): ("home office equipment", "charity donation",
                              "professional training course", "work travel"),
    ("web_search", "note"): ("read later", "for the team meeting", "background research",
                             "useful reference"),
    ("calendar", "title"): ("Project sync", "Budget review", "Planning session",
                            "Design review", "Team lunch", "Client call"),
    ("code_review", "repository"): ("payments-api", "web-frontend", "data-pipeline"),
    ("code_review", "source_branch"): ("feature/invoice-export", "fix/payment-retries",
                                       "docs/onboarding"),
}
_FRESH: dict[str, Callable[[World, random.Random], Any]] = {
    "PersonName": lambda w, r: r.choice(w.people[1:]).name,
    "EmailAddress": lambda w, r: r.choice(w.people[1:]).email,
    "PhoneNumber": lambda w, r: f"+1 555-{r.randrange(100, 1000)}-{r.randrange(1000, 10000)}",
    "City": lambda w, r: r.choice(w.cities).name,
    "Date": lambda w, r: w.date(r.randint(1, 10)),
    "DateTime": lambda w, r: w.at(r.randint(1, 10), r.choice((9, 10, 11, 14, 15, 16))),
    "TimeOfDay": lambda w, r: f"{r.choice((9, 10, 11, 14, 15, 16)):02d}:00",
    "DurationMinutes": lambda w, r: r.choice((30, 45, 60, 90)),
    "Money": lambda w, r: round(r.uniform(5, 300), 2),
    "CurrencyCode": lambda w, r: "USD",
    "Quantity": lambda w, r: r.randint(1, 3),
    "EmailSubject": lambda w, r: r.choice(_SUBJECTS),
    "Text": lambda w, r: r.choice(_BODIES),
    "OrganizationName": lambda w, r: r.choice(w.orgs).name,
    "JobTitle": lambda w, r: r.choice(("Engineer", "Analyst", "Designer", "Consultant")),
    "Percentage": lambda w, r: float(r.randint(5, 50)),
}
_PERSONAL: dict[str, Callable[[Person], Any]] = {
    "PersonName": lambda p: p.name, "EmailAddress": lambda p: p.email,
    "PhoneNumber": lambda p: p.phone, "OrganizationName": lambda p: p.employer,
    "JobTitle": lambda p: p.title, "City": lambda p: p.city,
}
# Plain-text parameters that a user can fill in for any request. A search query cannot be
# invented blind (it would rarely find one thing), so tools that need one are not composed.
_PLAIN_BY_NAME: dict[str, tuple[str, ...]] = {"title": _TITLES, "body": _BODIES,
                                              "subject": _SUBJECTS}


@lru_cache(maxsize=None)
def _entity_slots(model: type[BaseModel]) -> tuple[Slot, ...]:
    schema = compact_schema(TypeAdapter(model).json_schema(mode="serialization"))
    return tuple(s for s in interface_slots(schema) if s.path and "*" not in s.path)


def _records(service: Service) -> list[BaseModel]:
    """Every typed record in the service's state (listed once per seeded state: walks start
    on states still shared with the seed, which never change; an owned one may)."""
    return _seeded_records(service.state) if service._shared else _list_records(service.state)


def _list_records(state: Any) -> list[BaseModel]:
    return [v for value in state.__dict__.values() if isinstance(value, dict)
            for v in value.values() if isinstance(v, BaseModel)]


# one listing per live seeded state: it goes with its state (and the state with its world)
_seeded_records: Callable[[Any], list[BaseModel]] = ViewCache(_list_records)


def _name_score(param: str, path: tuple[str, ...]) -> int:
    key = path[-1]
    return 3 if key == param else 2 if (key in param or param in key) else 1


def record_arguments(spec: ToolSpec, service: Service, rng: random.Random,
                     tries: int = 4) -> dict[str, Any] | None:
    """Fill every required parameter of ``spec`` from one random record of ``service``'s state.

    Values taken together from one record (a flight's origin, destination and date) make a
    request that finds something; a Date parameter may take the day of a DateTime field.
    """
    required = [s for s in spec.inputs if s.required and len(s.path) == 1]
    # only records of a kind that holds every value asked for (a pet's name, not a visit's)
    need = frozenset(s.interface for s in required)
    records = [r for r in _records(service) if _holds(type(r), need)]
    if not records:
        return None
    # a day a user asks about lies ahead ("my events on ..." to clear, a flight to book),
    # unless the slot looks back (spending since, a pay date): a past record is a last resort
    ahead = [s.path[0] for s in required if s.interface in ("Date", "DateTime")
             and s.role not in _LOOKS_BACK]
    today = service.world.today.isoformat()
    fallback = None
    for _ in range(tries):
        record = rng.choice(records)
        data = record.model_dump(mode="json")
        args: dict[str, Any] = {}
        for slot in required:
            param = slot.path[0]
            fits = [s for s in _entity_slots(type(record))
                    if s.interface == slot.interface
                    or (slot.interface == "Date" and s.interface == "DateTime")]
            if not fits:
                break
            best = max(fits, key=lambda s: _name_score(param, s.path))
            values = extract(data, best.path)
            if not values or values[0] in (None, ""):
                break
            value = values[0]
            args[param] = value[:10] if slot.interface == "Date" and isinstance(value, str) \
                else value
        else:
            if all(str(args[p])[:10] >= today for p in ahead):
                return args
            fallback = fallback or args
    return fallback


@lru_cache(maxsize=4096)
def _holds(model: type[BaseModel], interfaces: frozenset[str]) -> bool:
    """Whether records of ``model`` have a field of each interface (a Date from a DateTime)."""
    have = {s.interface for s in _entity_slots(model)}
    return all(i in have or (i == "Date" and "DateTime" in have) for i in interfaces)


_LOOKS_BACK = frozenset({"since", "period", "created", "posted", "updated", "issue_date",
                         "application_date", "pay_date"})


def record_value(service: Service, interface: str, rng: random.Random) -> Any:
    """A random value of ``interface`` among ``service``'s records (an account the user owns)."""
    values = []
    for record in _records(service):
        data = None
        for slot in _entity_slots(type(record)):
            if slot.interface == interface:
                data = data if data is not None else record.model_dump(mode="json")
                values.extend(v for v in extract(data, slot.path) if v not in (None, ""))
    return rng.choice(values) if values else MISSING


def field_value(service: Service, field: str, rng: random.Random) -> Any:
    """A text the service's records hold in a field named ``field`` (a new visit's reason
    among its visits' reasons: "vaccination"), or MISSING when none has one."""
    values = sorted({v for record in _records(service)
                     if isinstance(v := getattr(record, field, None), str) and 0 < len(v) <= 120})
    return rng.choice(values) if values else MISSING


def fresh_value(param: str, schema: dict[str, Any], world: World, rng: random.Random,
                person: Person | None = None, service: str = "",
                about: tuple[str, bool] | None = None) -> Any:
    """A value a user could state for ``param`` of ``service``, or MISSING when none can be
    invented.

    With ``person``, a name, email, phone, employer, title and city are that person's, so the
    values stated in one request agree with each other. The slot's role decides the rest: a
    salary is a salary for the person's title and city, a fee is a fee, a restaurant is one of
    the World's restaurants (``compoenv.magnitudes``, ``World.businesses``). With ``about``
    (the noun of what the call acts on, and whether the recipient *is* that thing rather
    than its person), a message's subject and body are about it.
    """
    if "anyOf" in schema:
        schema = next((b for b in schema["anyOf"] if b.get("type") != "null"), schema)
    interface = schema.get("x-interface")
    role = schema.get("x-role")
    if about is not None and (interface in ("EmailSubject", "Text")
                              or (interface is None and param in ("subject", "body"))):
        text = _message_about(about, body=interface == "Text" or param == "body", rng=rng)
        if is_valid(text, schema):
            return text
    if interface is None and schema.get("x-key") in SCOPE_KEYS:
        # the user works in one subscription, one resource group: the same one wherever a
        # request states it (drawn from the World's own stream, not the call's)
        scope = _scope(schema["x-key"], schema, world.rng(f"scope/{schema['x-key']}"))
        return scope if is_valid(scope, schema) else MISSING
    if interface == "OrganizationName" and role in BUSINESS_KINDS:
        return rng.choice(world.businesses_in(role)).name  # a gym is a gym
    if person is not None and interface in _PERSONAL:
        return _PERSONAL[interface](person)
    if interface == "Money" and role is not None:
        low, high = schema.get("minimum", -math.inf), schema.get("maximum", math.inf)
        for _ in range(4):  # within the tool's own bounds: a daily budget caps lower than a budget
            amount = draw(role, rng, title=person.title if person else None,
                          city=person.city if person else None)
            if amount is None or low <= amount <= high:
                break
        else:
            return MISSING
        if amount is not None:
            return amount
    if interface in _FRESH:
        return _FRESH[interface](world, rng)
    if interface is not None:
        return MISSING
    if "enum" in schema:
        return rng.choice(schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        choices = _TEXTS.get((service, param)) or _PLAIN_BY_NAME.get(param) or (
            _PLAIN if param in ("memo", "note", "notes", "comment") else None)
        if not choices:
            return MISSING
        text = rng.choice(choices)
        if "{" in text:
            text = text.format(last_month=world.month(-1), year=world.today.year)
        low, high = schema.get("minLength", 0), schema.get("maxLength", 200)
        return text if low <= len(text) <= high else MISSING
    if kind == "integer":
        low = int(schema.get("minimum", 1))
        return rng.randint(low, max(low, min(int(schema.get("maximum", 5)), low + 4)))
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array" and isinstance(schema.get("items"), dict):
        item = fresh_value(param, schema["items"], world, rng, person, service)
        return MISSING if item is MISSING else [item]
    return MISSING


_SCOPE_WORDS = ("billing", "web", "data", "analytics", "payments", "platform", "ops", "shared")
_STAGES = ("prod", "staging", "dev")


def _scope(key: str, schema: dict[str, Any], rng: random.Random) -> Any:
    """The id of one of the user's own scopes in an API (``SCOPE_KEYS``), as such ids look: a
    subscription's GUID, "rg-billing-prod", a project "web-prod-4821", an organization
    "data-prod"."""
    if schema.get("type") == "integer":
        return rng.randrange(100_000, 1_000_000)
    word, stage = rng.choice(_SCOPE_WORDS), rng.choice(_STAGES)
    if key in ("subscription", "tenant"):
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    if key == "resource_group":
        return f"rg-{word}-{stage}"
    if key == "project":
        return f"{word}-{stage}-{rng.randrange(1000, 10000)}"
    return f"{word}-{stage}"


def _message_about(about: tuple[str, bool], body: bool, rng: random.Random) -> str:
    """A subject or body about ``about``: the recipient's own thing, a business, or a person
    whose services the user wants."""
    noun, itself = about
    if not itself:
        texts = _ABOUT_THEIRS
    elif noun in _BUSINESS_NOUNS or noun.endswith(" facility"):
        texts = _ABOUT_BUSINESS
    elif noun.rsplit(" ", 1)[-1] in _ABOUT_WHO:
        texts = _ABOUT_WHO[noun.rsplit(" ", 1)[-1]]
    elif noun.rsplit(" ", 1)[-1] in _PROFESSIONALS:
        texts = _ABOUT_PERSON
    else:  # someone a record names (an interaction's lead): a plain note
        texts = (_SUBJECTS, _BODIES)
    return rng.choice(texts[body]).format(noun=noun)


def fresh_arguments(spec: ToolSpec, world: World, rng: random.Random) -> dict[str, Any] | None:
    """Every required parameter stated fresh, for services with no records to start from
    (spec-only services); None when one cannot be invented."""
    props = spec.parameters.get("properties", {})
    person = rng.choice(world.people[1:])
    args = {}
    for param in spec.parameters.get("required", ()):
        value = fresh_value(param, props.get(param, {}), world, rng, person, spec.service)
        if value is MISSING:
            return None
        args[param] = value
    return args


def can_state(param: str, schema: dict[str, Any], world: World, service: str = "") -> bool:
    """Whether ``fresh_value`` can invent a value for this parameter (checked once per tool)."""
    return fresh_value(param, schema, world, random.Random(0), world.people[1],
                       service) is not MISSING
