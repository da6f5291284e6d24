"""Roles: what a value *is* in a service (a customer, a salary, a destination), and which
output roles may feed which input roles.

An interface says what type a value has (``EmailAddress``, ``Money``, ``City``); a role says
what it means where it appears. The tool graph joins an output to an input only when both the
interface and the role fit: a customer's email may receive an invoice, a candidate may be
offered a salary, a price may be paid, but a lead's estimated value never becomes a salary and
an employer never becomes a gym. In a schema a role is ``"x-role": "<role>"`` beside
``"x-interface"``; in Python it is ``Annotated[EmailAddress, Role("customer")]``. An object's
role (``"x-role"`` on the object) is the role of its identity fields (name, email, phone).

Roles matter for the interfaces in ``ROLE_INTERFACES``; ids, URLs, product names and the like
join by interface alone. A slot without a role there (an imported tool nobody tagged) feeds only
role-agnostic inputs (``AGNOSTIC``: messaging a person, a weather lookup for a city), and an
input without a role takes nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Role", "ROLES", "KIND_OF", "ROLE_INTERFACES", "AGNOSTIC", "FEEDS", "IDENTITY",
           "kind_of_interface", "compatible", "infer_role", "label", "ROLE_LABELS"]


@dataclass(frozen=True, slots=True)
class Role:
    """Marks a type with a role; adds ``x-role`` to its JSON schema."""

    name: str

    def __post_init__(self) -> None:
        if self.name not in KIND_OF:
            import difflib

            close = difflib.get_close_matches(self.name, KIND_OF, n=3)
            hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
            raise ValueError(f"unknown role {self.name!r}.{hint} Roles: compoenv.roles.ROLES")

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> dict[str, Any]:
        schema = handler(core_schema)
        schema["x-role"] = self.name
        return schema


# --- the vocabulary, by kind --------------------------------------------------------------------
ROLES: dict[str, tuple[str, ...]] = {
    "person": (
        "self", "contact", "colleague", "employee", "manager", "candidate", "interviewer",
        "hiring_manager", "customer", "lead", "guest", "patient", "prescriber", "attendee",
        "organizer", "author", "reviewer", "assignee", "requester", "payee", "payer",
        "recipient", "sender", "passenger", "driver", "tenant", "landlord", "member", "agent",
        "policyholder", "trainer", "translator", "advisor", "account_manager", "owner",
        "respondent", "visitor", "maintainer", "editor", "press", "approver",
        "business_contact",
    ),
    "organization": (
        "employer", "company", "client", "vendor", "merchant", "restaurant", "gym", "hotel",
        "airline", "pharmacy", "insurer", "bank", "venue", "parking_operator", "clinic",
        "car_rental", "advertiser", "agency", "publisher", "listed_company",
    ),
    "money": (
        "price", "salary", "fee", "balance", "budget", "amount_due", "payment", "refund",
        "premium", "tax", "deduction", "bonus", "expense", "fare", "rent", "deposit", "revenue",
        "income", "estimate", "total", "limit", "cost", "spend", "value", "gain", "rate",
        "pay", "claim",
    ),
    "place": (
        "home_city", "work_city", "origin", "destination", "venue_city", "hotel_city",
        "location", "headquarters", "property_city",
    ),
    "link": (
        "website", "page", "article", "document", "code", "resume", "receipt", "profile",
        "report", "payment_link", "bookmark",
    ),
    "date": (
        "date", "due_date", "issue_date", "start_date", "end_date", "birthday", "check_in",
        "check_out", "departure", "arrival", "appointment", "deadline", "pay_date",
        "event_date", "application_date", "created", "updated", "posted", "expiry",
        "renewal_date", "since", "period",
    ),
    "job": ("position", "job_title", "job"),
}
KIND_OF: dict[str, str] = {role: kind for kind, roles in ROLES.items() for role in roles}

# the interfaces whose joins need a fitting role, and the kind of role each takes
ROLE_INTERFACES: dict[str, str] = {
    "PersonName": "person", "EmailAddress": "person", "PhoneNumber": "person",
    "OrganizationName": "organization", "Money": "money", "City": "place", "Date": "date",
    "DateTime": "date", "Url": "link", "JobTitle": "job",
}
IDENTITY = frozenset({"PersonName", "EmailAddress", "PhoneNumber"})  # fields of one person

# inputs any value of their kind may fill: anyone may be messaged, added as a contact or asked
# to a meeting; any city has weather and restaurants; any day can be looked up
AGNOSTIC = frozenset({"recipient", "contact", "attendee", "location", "date", "company",
                      "bookmark", "job"})

_PEOPLE = frozenset(ROLES["person"]) - {"self"}
_PAID = frozenset({"amount_due", "price", "fee", "total", "fare", "rent", "premium", "cost",
                   "deposit", "payment", "balance", "expense", "claim"})
_CITIES = frozenset(ROLES["place"])
_SOON = frozenset({"event_date", "start_date", "appointment", "departure", "arrival",
                   "check_in", "deadline", "due_date", "date"})

# input role -> the output roles that may feed it (AGNOSTIC inputs take any role of their kind)
FEEDS: dict[str, frozenset[str]] = {
    # people: who may be acted on as what
    "colleague": frozenset({"colleague", "employee", "manager", "hiring_manager",
                            "interviewer", "contact"}),
    "employee": frozenset({"employee", "colleague", "manager", "hiring_manager",
                           "interviewer"}),
    "manager": frozenset({"manager", "hiring_manager", "colleague"}),
    "candidate": frozenset({"candidate"}),
    "interviewer": frozenset({"interviewer", "hiring_manager", "colleague", "employee",
                              "manager"}),
    "hiring_manager": frozenset({"hiring_manager", "manager"}),
    "customer": frozenset({"customer", "guest", "patient", "passenger", "member", "tenant",
                           "policyholder", "respondent", "lead", "payer"}),
    "lead": frozenset({"lead", "contact", "customer", "respondent", "visitor"}),
    "guest": frozenset({"guest", "colleague", "attendee", "contact", "candidate",
                        "passenger"}),
    "passenger": frozenset({"passenger", "colleague", "attendee", "guest", "contact",
                            "candidate"}),
    "patient": frozenset({"patient", "contact"}),
    "prescriber": frozenset({"prescriber"}),
    "organizer": frozenset({"organizer", "colleague", "manager"}),
    "author": frozenset({"author", "maintainer", "editor"}),
    "reviewer": frozenset({"reviewer", "colleague", "maintainer", "editor", "manager"}),
    "assignee": frozenset({"assignee", "colleague", "employee", "manager", "maintainer"}),
    "requester": frozenset({"requester", "customer", "colleague", "employee"}),
    "payee": frozenset({"payee", "landlord", "agent", "translator", "trainer", "advisor",
                        "account_manager", "colleague", "employee"}),
    "payer": frozenset({"payer", "customer", "tenant", "policyholder"}),
    "sender": frozenset({"sender"}),
    "driver": frozenset({"driver"}),
    "tenant": frozenset({"tenant", "customer"}),
    "landlord": frozenset({"landlord", "owner", "agent"}),
    "member": frozenset({"member", "customer"}),
    "agent": frozenset({"agent"}),
    "policyholder": frozenset({"policyholder", "customer", "self"}),
    "trainer": frozenset({"trainer"}),
    "translator": frozenset({"translator"}),
    "advisor": frozenset({"advisor"}),
    "account_manager": frozenset({"account_manager"}),
    "owner": frozenset({"owner", "landlord"}),
    "respondent": frozenset({"respondent", "customer", "attendee", "guest", "member"}),
    "visitor": frozenset({"visitor", "lead"}),
    "maintainer": frozenset({"maintainer", "author"}),
    "editor": frozenset({"editor", "author", "colleague"}),
    "press": frozenset({"press"}),
    "approver": frozenset({"approver", "manager", "hiring_manager"}),
    # a business's own email or phone: it may be written to or saved, never be a person
    "business_contact": frozenset({"business_contact"}),
    "self": frozenset({"self"}),
    # organisations: a business is only ever the kind of business it is
    "employer": frozenset({"employer"}),
    "client": frozenset({"client", "employer", "advertiser"}),
    "vendor": frozenset({"vendor", "merchant"}),
    "merchant": frozenset({"merchant", "vendor", "restaurant", "hotel", "pharmacy", "gym",
                           "airline", "car_rental", "parking_operator"}),
    "restaurant": frozenset({"restaurant"}),
    "gym": frozenset({"gym"}),
    "hotel": frozenset({"hotel"}),
    "airline": frozenset({"airline"}),
    "pharmacy": frozenset({"pharmacy"}),
    "insurer": frozenset({"insurer"}),
    "bank": frozenset({"bank"}),
    "venue": frozenset({"venue", "restaurant", "hotel"}),
    "parking_operator": frozenset({"parking_operator"}),
    "clinic": frozenset({"clinic"}),
    "car_rental": frozenset({"car_rental"}),
    "advertiser": frozenset({"advertiser", "client", "employer", "vendor"}),
    "agency": frozenset({"agency"}),
    "publisher": frozenset({"publisher"}),
    "listed_company": frozenset({"listed_company", "employer", "client", "advertiser"}),
    # money: what may be paid, refunded, offered, budgeted
    "payment": _PAID,
    "refund": frozenset({"payment", "price", "fee", "total", "fare", "deposit", "expense"}),
    "expense": frozenset({"payment", "price", "fee", "total", "fare", "cost", "expense",
                          "rent"}),
    "salary": frozenset({"salary"}),
    "bonus": frozenset({"bonus"}),
    "budget": frozenset({"budget", "estimate", "cost", "spend"}),
    "price": frozenset({"price", "estimate", "value"}),
    "limit": frozenset({"limit", "budget", "price", "rate"}),
    "fee": frozenset({"fee"}),
    "deposit": frozenset({"deposit", "rent"}),
    "premium": frozenset({"premium"}),
    "claim": frozenset({"claim", "expense", "payment", "cost", "estimate"}),
    "deduction": frozenset({"deduction", "expense", "payment"}),
    "tax": frozenset({"tax"}),
    "rate": frozenset({"rate", "price"}),
    "rent": frozenset({"rent"}),
    "fare": frozenset({"fare", "price"}),
    "income": frozenset({"income", "salary"}),
    "amount_due": frozenset({"amount_due", "balance"}),
    "balance": frozenset({"balance"}),
    "total": frozenset({"total"}),
    "cost": frozenset({"cost", "estimate"}),
    "spend": frozenset({"spend", "budget"}),
    "revenue": frozenset({"revenue"}),
    "estimate": frozenset({"estimate", "price", "value"}),
    "value": frozenset({"value", "price", "estimate"}),
    "gain": frozenset({"gain"}),
    "pay": frozenset({"pay", "salary"}),
    # places: where one travels from and to, where things are
    "origin": frozenset({"home_city", "work_city", "origin", "headquarters"}),
    "destination": frozenset({"destination", "venue_city", "hotel_city", "property_city",
                              "headquarters", "work_city"}),
    "hotel_city": frozenset({"destination", "venue_city", "hotel_city", "work_city",
                             "headquarters", "property_city"}),
    "venue_city": frozenset({"venue_city", "destination", "work_city", "headquarters"}),
    "home_city": frozenset({"home_city"}),
    "work_city": frozenset({"work_city", "headquarters"}),
    "headquarters": frozenset({"headquarters"}),
    "property_city": frozenset({"property_city", "destination", "work_city"}),
    # dates: what day an action is for
    "due_date": frozenset({"due_date"}),
    "deadline": frozenset({"deadline", "due_date", "end_date", "event_date", "start_date"}),
    "start_date": frozenset({"start_date", "event_date", "check_in", "departure",
                             "appointment"}),
    "end_date": frozenset({"end_date", "check_out", "deadline"}),
    "check_in": frozenset({"check_in", "arrival", "event_date", "start_date", "departure"}),
    "check_out": frozenset({"check_out", "end_date"}),
    "departure": frozenset({"departure", "event_date", "start_date", "check_in",
                            "appointment"}),
    "arrival": frozenset({"arrival", "event_date", "start_date", "check_in"}),
    "appointment": frozenset({"appointment"}),
    "event_date": frozenset({"event_date", "start_date", "appointment", "birthday",
                             "deadline", "due_date"}),
    "pay_date": frozenset({"pay_date", "due_date"}),
    "birthday": frozenset({"birthday"}),
    "issue_date": frozenset({"issue_date"}),
    "application_date": frozenset({"application_date"}),
    "renewal_date": frozenset({"renewal_date", "expiry"}),
    "expiry": frozenset({"expiry", "renewal_date"}),
    "period": frozenset({"period", "start_date", "end_date", "pay_date", "due_date"}),
    "created": frozenset(), "updated": frozenset(), "posted": frozenset(),
    "since": frozenset(),
    # links: a site is analysed, an article read, a document translated; a payment link or
    # an invoice's PDF feeds nothing but a bookmark
    "website": frozenset({"website"}),
    "page": frozenset({"page", "website", "article"}),
    "article": frozenset({"article"}),
    "document": frozenset({"document", "resume", "receipt"}),
    "receipt": frozenset({"receipt", "document"}),
    "code": frozenset(), "resume": frozenset(), "profile": frozenset(), "report": frozenset(),
    "payment_link": frozenset(),
    # jobs: a role one is hired into (an opening, the position applied for, an offer) is not
    # the title someone holds now; a salary benchmark is for any job
    "position": frozenset({"position"}),
    "job_title": frozenset({"job_title"}),
}


# a lookup for any day or city (the weather, restaurants, my events that day) follows only a
# day or place the request is going to: a trip's destination, an event's venue, a booking's
# date; not a transaction's date, a birthday, or the city a lead works in
_WHEREVER: dict[str, frozenset[str]] = {
    "location": frozenset({"destination", "venue_city", "hotel_city", "property_city"}),
    "date": frozenset({"event_date", "start_date", "departure", "arrival", "appointment",
                       "check_in", "due_date", "deadline", "pay_date"}),
}


def kind_of_interface(interface: str) -> str | None:
    """The role kind an interface takes, or None when it joins by interface alone."""
    return ROLE_INTERFACES.get(interface)


def compatible(interface: str, out_role: str | None, in_role: str | None) -> bool:
    """Whether an output of ``interface`` and ``out_role`` may fill an input of ``in_role``."""
    kind = ROLE_INTERFACES.get(interface)
    if kind is None:
        return True  # ids, product names, addresses: the interface says it all
    if in_role is None:
        return False  # an untagged input says nothing about what it takes
    if in_role in _WHEREVER:  # any day or city, but one the user has a reason to go to
        return out_role is None or out_role in _WHEREVER[in_role]
    if in_role in AGNOSTIC and out_role != "business_contact":
        return out_role is None or KIND_OF.get(out_role) == kind
    if out_role is None:
        return False
    if out_role == "business_contact":
        return in_role in ("recipient", "contact")  # a business is written to, not met
    if kind == "person" and in_role in ("recipient", "contact", "attendee"):
        return True
    return out_role in FEEDS.get(in_role, frozenset())


# --- roles read from names (for importers and untagged specs) ----------------------------------
_PERSON_WORDS: dict[str, str] = {
    "customer": "customer", "client_contact": "customer", "buyer": "customer",
    "candidate": "candidate", "applicant": "candidate", "employee": "employee",
    "staff": "employee", "worker": "employee", "manager": "manager",
    "hiring_manager": "hiring_manager", "interviewer": "interviewer", "guest": "guest",
    "patient": "patient", "prescriber": "prescriber", "doctor": "prescriber",
    "attendee": "attendee", "participant": "attendee", "invitee": "attendee",
    "organizer": "organizer", "host": "organizer", "author": "author", "writer": "author",
    "reviewer": "reviewer", "assignee": "assignee", "owner": "owner", "requester": "requester",
    "reporter": "requester", "payee": "payee", "payer": "payer", "recipient": "recipient",
    "to": "recipient", "notify": "recipient", "receipt": "recipient", "sender": "sender",
    "passenger": "passenger", "rider": "passenger", "driver": "driver", "tenant": "tenant",
    "landlord": "landlord", "member": "member", "agent": "agent", "broker": "agent",
    "holder": "policyholder", "policyholder": "policyholder", "insured": "policyholder",
    "trainer": "trainer", "instructor": "trainer", "coach": "trainer",
    "translator": "translator", "advisor": "advisor", "adjuster": "advisor",
    "account_manager": "account_manager", "respondent": "respondent", "visitor": "visitor",
    "maintainer": "maintainer", "editor": "editor", "press": "press", "approver": "approver",
    "contact": "contact", "counterparty": "payee", "lead": "lead", "actor": "colleague",
    "ceo": "contact", "investor_relations": "press", "claims": "advisor",
}
_ORG_WORDS: dict[str, str] = {
    "employer": "employer", "current_employer": "employer", "company": "company",
    "organization": "company", "business": "company", "client": "client",
    "vendor": "vendor", "supplier": "vendor", "merchant": "merchant", "top_merchant": "merchant",
    "restaurant": "restaurant", "gym": "gym", "hotel": "hotel", "airline": "airline",
    "carrier": "airline", "pharmacy": "pharmacy", "insurer": "insurer", "bank": "bank",
    "venue": "venue", "facility": "parking_operator", "clinic": "clinic", "agency": "agency",
    "advertiser": "advertiser", "publisher": "publisher", "outlet": "publisher",
    "pay_to": "vendor", "payee": "vendor", "payer": "client", "rental": "car_rental",
}
_MONEY_WORDS: tuple[tuple[str, str], ...] = (
    ("salary", "salary"), ("wage", "salary"), ("gross_pay", "pay"), ("net_pay", "pay"),
    ("total_gross", "pay"), ("total_net", "pay"), ("ytd_gross", "pay"), ("income", "income"),
    ("bonus", "bonus"), ("refund", "refund"), ("premium", "premium"), ("deductible", "limit"),
    ("deduction", "deduction"), ("withheld", "tax"), ("tax", "tax"), ("rent", "rent"),
    ("deposit", "deposit"), ("fare", "fare"), ("fee", "fee"), ("copay", "fee"),
    ("fine", "fee"), ("tip", "payment"), ("toll", "fee"), ("budget", "budget"),
    ("limit", "limit"), ("max_", "limit"), ("min_", "limit"), ("amount_due", "amount_due"),
    ("balance", "balance"), ("due", "amount_due"), ("claimed", "claim"), ("approved", "claim"),
    ("reimbursable", "expense"), ("expense", "expense"), ("cost", "cost"), ("spend", "spend"),
    ("revenue", "revenue"), ("estimate", "estimate"), ("value", "value"),
    ("gain", "gain"), ("loss", "gain"), ("rate", "rate"), ("price", "price"),
    ("close", "price"), ("day_", "price"), ("subtotal", "total"), ("total", "total"),
    ("cash", "balance"), ("amount", "payment"),
)
_CITY_WORDS: tuple[tuple[str, str], ...] = (
    ("origin", "origin"), ("pickup", "origin"), ("from", "origin"),
    ("destination", "destination"), ("trip", "destination"), ("target", "destination"),
    ("to_", "destination"), ("headquarters", "headquarters"), ("customer", "home_city"),
    ("respondent", "home_city"), ("reviewer", "home_city"), ("home", "home_city"),
    ("office", "work_city"), ("venue", "venue_city"), ("hotel", "hotel_city"),
    ("property", "property_city"),
)
_DATE_WORDS: tuple[tuple[str, str], ...] = (
    ("due", "due_date"), ("deadline", "deadline"), ("birthday", "birthday"),
    ("dob", "birthday"), ("birth", "birthday"), ("to_date", "end_date"), ("todate", "end_date"),
    ("check_in", "check_in"), ("check_out", "check_out"), ("departure", "departure"),
    ("arrival", "arrival"), ("appointment", "appointment"), ("pay_date", "pay_date"),
    ("applied", "application_date"), ("submitted", "application_date"),
    ("start", "start_date"), ("from", "start_date"), ("since", "since"),
    ("member_since", "since"), ("end", "end_date"), ("until", "end_date"),
    ("expires", "expiry"), ("valid_until", "expiry"), ("renewal", "renewal_date"),
    ("period", "period"), ("issued", "issue_date"), ("created", "created"),
    ("updated", "updated"), ("modified", "updated"), ("edited", "updated"),
    ("posted", "posted"), ("published", "posted"), ("listed", "posted"),
    ("move_in", "start_date"), ("pickup", "start_date"), ("return", "end_date"),
    ("close_date", "deadline"), ("decision", "deadline"), ("effective", "start_date"),
    ("open_house", "appointment"), ("incident", "event_date"), ("delivery", "due_date"),
)


_LINK_WORDS: tuple[tuple[str, str], ...] = (
    ("landing", "page"), ("target", "page"), ("referrer", "website"), ("website", "website"),
    ("homepage", "website"), ("site", "website"), ("article", "article"), ("news", "article"),
    ("post", "article"), ("resume", "resume"), ("cv", "resume"), ("receipt", "receipt"),
    ("invoice", "report"), ("report", "report"), ("pay", "payment_link"),
    ("checkout", "payment_link"), ("qr", "payment_link"), ("profile", "profile"),
    ("repo", "code"), ("pull", "code"), ("commit", "code"), ("document", "document"),
    ("file", "document"), ("download", "document"), ("attachment", "document"),
    ("form", "document"), ("bookmark", "bookmark"), ("page", "page"),
)


_POSITION_WORDS = ("position", "opening", "vacancy", "requisition", "hire", "offer")


def infer_role(interface: str, name: str, context: str | None = None) -> str | None:
    """A role for a slot from its field name (and, for identity fields, the role of the
    object it sits in): the table importers use. None when nothing fits."""
    kind = ROLE_INTERFACES.get(interface)
    field = name.lower()
    if kind == "person":
        stem = re.sub(r"_?(name|email|phone|emails|address)$", "", field)
        if not stem or stem in ("person", "full", "contact"):
            return context if context in KIND_OF else ("contact" if stem == "contact"
                                                        else None)
        for word, role in sorted(_PERSON_WORDS.items(), key=lambda kv: -len(kv[0])):
            if stem == word or stem.startswith(word + "_") or stem.endswith("_" + word):
                return role
        return None
    if kind == "organization":
        stem = re.sub(r"_?name$", "", field)
        return _ORG_WORDS.get(stem) or _ORG_WORDS.get(stem.split("_")[0]) or (
            context if KIND_OF.get(context or "") == "organization" else None)
    if kind == "job":
        return "position" if any(w in field for w in _POSITION_WORDS) else "job_title"
    table = {"money": _MONEY_WORDS, "place": _CITY_WORDS, "date": _DATE_WORDS,
             "link": _LINK_WORDS}.get(kind or "")
    if table is None:
        return None
    for word, role in table:
        if word in field:
            return role
    return {"place": "location", "date": "date"}.get(kind or "")


# --- how a role reads in a request ---------------------------------------------------------------
ROLE_LABELS: dict[str, str] = {
    "self": "you", "hiring_manager": "hiring manager", "account_manager": "account manager",
    "parking_operator": "parking operator", "car_rental": "car rental company",
    "listed_company": "company", "amount_due": "amount due", "home_city": "home city",
    "work_city": "office city", "venue_city": "venue city", "hotel_city": "hotel city",
    "property_city": "property's city", "due_date": "due date", "issue_date": "issue date",
    "start_date": "start date", "end_date": "end date", "check_in": "check-in date",
    "check_out": "check-out date", "pay_date": "pay date", "event_date": "date",
    "application_date": "application date", "renewal_date": "renewal date",
    "expiry": "expiry date", "press": "press contact", "period": "period",
    "job_title": "job title",
}


def label(role: str) -> str:
    """A role in plain English ("hiring manager", "check-in date")."""
    return ROLE_LABELS.get(role, role.replace("_", " "))
