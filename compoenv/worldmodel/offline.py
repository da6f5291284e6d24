"""Offline world model: deterministic, schema-valid, interface-aware answers drawn from the World.

No model is needed. Values that carry an interface come from the World (a PersonName is a
real person's name, that person's email goes with it), arguments are echoed back where a field
matches them, writes store records that later reads return, and everything is a pure function
of (world seed, tool, arguments, simulated state). Records are coherent (``coherence``): each
identity group in a record is one World person, a business is one of the World's businesses
of its kind in the record's city, dates fall on the day or in the range asked for, starts come
before ends and totals add up. Free text comes from small curated tables (below) and reads
like text; ids look like ids.
"""

from __future__ import annotations

import functools
import math
import random
import re
from collections import Counter
from typing import Any, Callable

from compoenv._cache import ByIdentity, ViewCache
from compoenv.businesses import KINDS as BUSINESS_KINDS
from compoenv.crud import drawn_id
from compoenv.magnitudes import draw, percentage
from compoenv.schema import is_valid
from compoenv.schema_check import check_for
from compoenv.world import Business, Person, World
from compoenv.worldmodel.base import ToolAnswer, ToolRequest, WorldModelError
from compoenv.worldmodel.consistency import (FAILED, id_field, key_param, kind_of, makes_new,
                                             named)
from compoenv.worldmodel.coherence import (RecordPlan, Targets, first_branch, record_plan,
                                           request_plan, settle, targets)

__all__ = ["OfflineWorldModel", "collection_of", "example_arguments"]

_VERBS = re.compile(r"^(get|list|search|find|lookup|fetch|read|show|view|create|add|new|save|"
                    r"store|update|edit|set|change|delete|remove|cancel|send|post|submit|book|"
                    r"reserve|request|schedule|make|generate|check|log|record|register|open|"
                    r"close|archive|start|stop|end|extend|rate|transfer|pay|buy|order|share|"
                    r"upload|invite|approve|reject|assign|publish|renew|refund)_")
_PATHS = ("about", "pricing", "careers", "contact", "blog/spring-update", "docs/getting-started",
          "news", "support", "events", "products")


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
_BUSINESS_FIELDS = {"OrganizationName": "name", "EmailAddress": "email", "PhoneNumber": "phone",
                    "City": "city", "StreetAddress": "street"}


def _person_value(interface: str, person: Person) -> Any:
    field = _PERSON_FIELDS.get(interface)
    return getattr(person, field) if field is not None else None


_SEMANTIC: dict[str, Callable[[random.Random, World, Person], Any]] = {
    "Date": lambda rng, world, _: world.date(rng.randint(-20, 20)),
    "DateTime": lambda rng, world, _: world.at(rng.randint(-20, 20), rng.randint(8, 18)),
    "TimeOfDay": lambda rng, _, __: f"{rng.randint(8, 18):02d}:{rng.choice((0, 15, 30, 45)):02d}",
    "Money": lambda rng, _, __: round(rng.uniform(5, 900), 2),
    "Url": lambda rng, world, _: (f"https://www.{rng.choice(world.orgs).domain}/"
                                  f"{rng.choice(_PATHS)}"),
    "AirportCode": lambda rng, world, _: rng.choice(world.cities).airport,
    "Temperature": lambda rng, _, __: round(rng.uniform(-5, 32), 1),
    "Percentage": lambda rng, _, __: float(rng.randint(0, 100)),
    "Quantity": lambda rng, _, __: rng.randint(1, 20),
    "DurationMinutes": lambda rng, _, __: rng.choice((15, 30, 45, 60, 90, 120)),
    "Category": lambda rng, _, __: rng.choice(("general", "priority", "billing", "support")),
}
_CURRENCY = re.compile(r"^[A-Z]{3}$")
Entity = Person | Business  # whom a record, or a group in it, is about
_LOOKUPS: dict[str, Callable[[World, str], Person | None]] = {
    "PersonName": World.person, "EmailAddress": World.person_by_email,
    "PhoneNumber": World.person_by_phone}


class _Maker:
    """Generates one answer: a private rng, the request's arguments, a person per identity."""

    def __init__(self, request: ToolRequest) -> None:
        self.request, self.world = request, request.world
        self.rng = random.Random(request.seed)
        self.args = request.arguments
        self.params = request.spec.parameters.get("properties", {})
        self.status = _status_for(request.spec.name)
        self.ask = ask = request_plan(request.spec)
        # only required arguments echo by interface: an optional filter (max_price) says
        # nothing about what is found (it bounds it: coherence.settle)
        echoing = [(a, i, r) for a, i, r in ask.echoing if a in self.args]
        self.arg_by_interface = {i: self.args[a] for a, i, _ in echoing}
        # a field takes the argument of its own role first: a midpoint's destination city
        self.arg_by_role = {(i, r): self.args[a] for a, i, r in echoing}
        self.currency = next((v for a in ask.currency if isinstance(v := self.args.get(a), str)
                              and _CURRENCY.match(v)), "USD") if ask.currency else "USD"
        # the city asked about, then (while a record is made) the record's own
        self.where = next((v for a in ask.cities if isinstance(v := self.args.get(a), str)),
                          None) if ask.cities else None
        self.taken: set[Any] = set()  # people and businesses already in this answer
        self.noun = _noun(request.spec)
        self.topic = self.noun  # what the record being made is (a nested list's own noun)
        # what the request asks of each record schema, and its echoes: for this answer only
        # (they hold the agent's values)
        self.echoed: dict[int, tuple[RecordPlan, Targets, dict[str, Any], Counter[Any]]] = {}

    def value(self, schema: dict[str, Any], name: str, person: Person,
              echo: bool = True) -> Any:
        if "anyOf" in schema or "oneOf" in schema:
            return self.value(first_branch(schema), name, person, echo)
        if name in self.args and _fits(self.args[name], schema, memo=False):
            return self.args[name]  # echo: get_forecast(city="Oslo") is about Oslo
        if name in self.params:
            schema = self.with_param_enum(schema, name)
        interface = schema.get("x-interface")
        if echo and interface in self.arg_by_interface and schema.get("type") != "object" \
                and _fits(self.arg_by_interface[interface], schema, memo=False):
            return self.arg_by_interface[interface]
        kind = schema.get("type")
        if kind == "object":
            return self.record(schema, name, person)
        if kind == "array":
            low, high = schema.get("minItems", 1), schema.get("maxItems", 5)
            items = schema.get("items", {})
            # the people of a company the request names are all of them on record (up to six)
            staff = len(self._staff_asked(items)) if echo else 0
            count = max(low, min(high, min(staff, 6) if staff >= 2 else self.rng.randint(2, 4)))
            made = [self.value(items, name, self.rng.choice(self.world.people[1:]), echo)
                    for _ in range(count)]
            return _distinct(made, items, low)
        return self.make(schema, name, person)

    def with_param_enum(self, schema: dict[str, Any], name: str) -> dict[str, Any]:
        """A field named like a parameter takes the parameter's values: a run's department
        is one of the departments the tool accepts."""
        same = self.params.get(name)
        if same is not None and "enum" in same and "enum" not in schema:
            return _with_enum(schema, same)
        return schema

    def make(self, schema: dict[str, Any], name: str, person: Person) -> Any:
        """A fresh scalar for the field (no echo)."""
        if name == "status" and "enum" in schema and self.status is not None:
            wanted = [v for v in schema["enum"] if str(v).lower().startswith(self.status)]
            if wanted:
                return wanted[0]
        interface = schema.get("x-interface")
        if interface == "Percentage":  # a tax rate of 10-37, a click-through rate of 2.4
            rate = percentage(name, self.rng)
            if _fits(rate, schema):
                return rate
        if interface is not None:
            generated = self.by_role(interface, schema.get("x-role"), person)
            if generated is None:
                generated = self.semantic(interface, person)
            if generated is not None and _fits(generated, schema):
                return generated
        return self.plain(schema, name, person)

    def by_role(self, interface: str, role: str | None, person: Person) -> Any:
        """A value that fits the slot's role: a restaurant's name is one of the World's
        restaurants (in the record's city, else the one asked about), a salary one for the
        person's title and city,
        the user's own fields for the user (None: no role-specific value)."""
        if role is None:
            return None
        if interface == "OrganizationName" and role in BUSINESS_KINDS:
            found = self.business(role)
            return found.name if found else None
        if role == "self":
            return _person_value(interface, self.world.user)
        if interface == "Money":
            return draw(role, self.rng, title=person.title, city=person.city)
        if interface in ("Date", "DateTime") and role in _WHEN:
            low, high = _WHEN[role]  # a show is ahead, a posting behind
            days = self.rng.randint(low, high)
            return self.world.date(days) if interface == "Date" else \
                self.world.at(days, self.rng.randint(8, 18))
        return None

    def record(self, schema: dict[str, Any], noun: str = "",
               inherited: Entity | None = None) -> dict[str, Any]:
        """An object: one person (or business) per identity group, each required argument
        echoed into one field only, then settled to agree with the request and itself."""
        plan = record_plan(schema)
        hit = self.echoed.get(id(plan))  # the same for every item of a list
        top = schema is self.request.spec.returns
        if hit is None or hit[0] is not plan or top:
            aim = targets(self.ask, plan)
            hit = self.echoed[id(plan)] = (plan, aim, *self.echoes(plan, aim.filters, top))
        _, aim, echoed, carriers = hit
        who = self.identities(plan, echoed, inherited)
        owner = who[plan.owner]
        anyone = owner if isinstance(owner, Person) else next(
            (e for e in who.values() if isinstance(e, Person)), None) or self.person()
        outer, topic = self.where, self.topic
        self.topic = noun or topic
        if plan.owner_city:  # the record's businesses are where the record is
            city = echoed.get(plan.owner_city)
            self.where = city if isinstance(city, str) else owner.city
        out = {}
        for key, kind, group, branch, interface in plan.fields:
            if key in echoed:
                out[key] = echoed[key]
                continue
            own = None if group is None else self.identity_value(branch, key, plan, who[group])
            if own is not None:
                out[key] = own
            elif kind == "object":
                out[key] = self.record(branch, key, owner)
            elif kind == "array":  # its items may echo while no field of its kind did
                out[key] = self.value(branch, key, anyone,
                                      key in self.args or not carriers[interface])
            else:
                out[key] = self.make(branch if key not in self.params else
                                     self.with_param_enum(branch, key), key, anyone)
        self.where, self.topic = outer, topic
        self.site_owner(out, plan, echoed)
        for key, role in plan.links:
            if key not in echoed and key not in self.args:
                link = self.link(role, out, plan, who)
                if link is not None and _fits(link, plan.index[key][3], memo=False):
                    out[key] = link
        settle(out, plan, aim, self.args, set(echoed), self.rng, self.world)
        return out

    def site_owner(self, record: dict[str, Any], plan: RecordPlan,
                   echoed: dict[str, Any]) -> None:
        """A record found by a website names the website's owner: the analytics site of
        www.juniperfoods.com is Juniper Foods's."""
        site = next((record[k] for k, role in plan.links
                     if role == "website" and k in echoed and isinstance(record[k], str)), None)
        if site is None:
            return
        owner = self.world.owner_of(site.split("/")[2] if site.count("/") >= 2 else site)
        if owner is None:
            return
        for key, (kind, interface, role) in plan.slots.items():
            if (interface == "OrganizationName" and kind == "string" and key not in echoed
                    and role != "publisher" and (role not in BUSINESS_KINDS
                                                 or getattr(owner, "kind", None) == role)
                    and _fits(owner.name, plan.index[key][3], memo=False)):
                record[key] = owner.name

    def link(self, role: str | None, record: dict[str, Any], plan: RecordPlan,
             who: dict[str, Entity]) -> str | None:
        """A link of its role on the site of whom the record is about: a restaurant's website
        on the restaurant's domain, a company's page on the company's, an article on its
        publisher's, a pull request on its organisation's code host, a stored document on
        the user's own file host (None: a role with no shape of its own)."""
        rng, number = self.rng, self.rng.randint(1000, 9999)
        if role in ("document", "report", "receipt", "resume"):
            home = self.world.user.email.rpartition("@")[2]
            return f"https://files.{home}/{role}s/{_slug(_title(record) or self.noun)}-{number}"
        if role == "article":
            named = next((record[k] for k, (_, i, r) in plan.slots.items()
                          if (r == "publisher" or k in ("publication", "publisher", "source"))
                          and isinstance(record.get(k), str)), None)
            publisher = (self.world.business(named) if named else None) or \
                self.business("publisher")
            site = publisher.domain if publisher else _domain_of(self.world, record, plan, who, self.arg_by_interface.get("OrganizationName"))
            return f"https://www.{site}/news/{_slug(_title(record) or self.noun)}-{number}"
        site = _domain_of(self.world, record, plan, who, self.arg_by_interface.get("OrganizationName"))
        if role in ("website", "bookmark"):
            return f"https://www.{site}/"
        if role == "page":
            return f"https://www.{site}/{rng.choice(_PATHS)}"
        if role == "code":  # a repository, or a pull request in one
            repo = record.get("repository")
            if isinstance(repo, str) and record.get("title"):
                return f"https://git.{site}/{_slug(repo)}/pull/{number}"
            return f"https://git.{site}/{_slug(_title(record) or self.noun)}"
        if role == "payment_link":
            return f"https://pay.{site}/{number}"
        if role == "profile":
            owner = who[plan.owner]
            person = owner if isinstance(owner, Person) else self.person()
            return f"https://www.{site}/people/{person.first}-{person.last}".lower()
        return None

    def echoes(self, plan: RecordPlan, filters: tuple[tuple[str, str], ...], answer: bool
               ) -> tuple[dict[str, Any], Counter[Any]]:
        """The fields that echo an argument (the field of the same name; the id of the
        record asked for, get_policy(policy_id); else, for each required argument, the first
        field of its interface; else an optional filter's field of the same interface and
        role), and how many fields of each interface echo."""
        args = self.args
        asked = key_param(self.request.spec.name, self.request.spec.parameters,
                          kind_of(self.noun)) or f"{self.noun}_id"
        if answer and "id" in plan.props and "id" not in args and isinstance(args.get(asked),
                                                                              str):
            args = {**args, "id": args[asked]}
        if answer:  # an imported id (x-key): get_booking(booking_id=56) is booking 56
            keyed = {p["x-key"]: a for a, p in self.params.items()
                     if isinstance(p, dict) and "x-key" in p and a in args}
            args = {**{k: args[keyed[b["x-key"]]] for k, _, _, b, _ in plan.fields
                       if b.get("x-key") in keyed}, **args}
        carriers: Counter[Any] = Counter()
        if not args:
            return {}, carriers
        echoed: dict[str, Any] = {}
        for key, value in args.items():
            field = plan.index.get(key)
            if field is not None:
                carriers[field[4]] += 1  # another field of its interface takes no echo
                if _fits(value, field[3], memo=False):
                    echoed[key] = value
        for interface, value in self.arg_by_interface.items():
            for key, kind, _, branch, _ in plan.by_interface.get(interface, ()):
                if key in args or carriers[interface]:
                    continue
                carriers[interface] += 1
                value = self.arg_by_role.get((interface, branch.get("x-role")), value)
                if kind != "object" and _fits(value, self.with_param_enum(branch, key),
                                              memo=False):
                    echoed[key] = value
        for key, arg in filters:
            if key not in echoed and arg in args and _fits(args[arg], plan.props[key],
                                                           memo=False):
                echoed[key] = args[arg]
        return echoed, carriers

    def identities(self, plan: RecordPlan, echoed: dict[str, Any],
                   inherited: Entity | None) -> dict[str, Entity]:
        """Whom each group is: the World person an echoed field names, the user for "self",
        else someone not yet in the answer (living in the record's city when it says one);
        the record's business one of its kind in that city. A record naming nobody (an
        address) is about whom the record holding it is about."""
        found: dict[str, Entity] = {}
        if inherited is not None and not plan.identified and not plan.business:
            found[plan.owner] = inherited
        city = echoed.get(plan.owner_city) if plan.owner_city else None
        city = city if isinstance(city, str) else self.where
        for group in plan.groups:
            if group not in found:
                person = self.named_person(plan, group, echoed) if echoed else None
                if person is None and group in plan.selves:
                    person = self.world.user
                if person is None and _STAFF & {plan.slots[k][2] for k, _ in
                                                plan.members.get(group, ())}:
                    person = self.staff(plan, echoed)
                if person is None and group == plan.owner:
                    person = self.employee(plan, echoed)
                found[group] = person or self.person(
                    city if group == plan.owner and plan.owner_city else None)
        if plan.business:  # the business asked about, else one of its kind in the city
            named = echoed.get(plan.business)
            business = (self.world.business(named) if isinstance(named, str) else None) or \
                self.business(plan.slots[plan.business][2], city)
            found[plan.owner] = business or self.person()
        if plan.owner not in found:
            found[plan.owner] = inherited or self.person()
        return found

    def staff(self, plan: RecordPlan, echoed: dict[str, Any]) -> Person | None:
        """Someone who works at the organisation the record or the request names (a
        company's press contact, the maintainer of its repositories), if it employs anyone."""
        names = [echoed.get(k) for k, (_, i, _) in plan.slots.items() if i == "OrganizationName"]
        for name in [*names, self.arg_by_interface.get("OrganizationName")]:
            if isinstance(name, str) and (staff := _employees(self.world).get(name.lower())):
                return self._untaken(staff, lambda p: p.index)
        return None

    def _staff_asked(self, items: dict[str, Any]) -> tuple[Person, ...]:
        """The World people of the organisation the request names, when a list's items are
        people who work there (the leads "at Acme"); else none."""
        name = self.arg_by_interface.get("OrganizationName")
        if not isinstance(name, str) or items.get("type") != "object":
            return ()
        plan = record_plan(items)
        if not any(i == "OrganizationName" and r == "employer" for _, i, r in plan.slots.values()):
            return ()
        return _employees(self.world).get(name.lower(), ())

    def employee(self, plan: RecordPlan, echoed: dict[str, Any]) -> Person | None:
        """Someone who works where the record says its person works (a lead "at Acme" the
        request asked for is one of Acme's people), while any of them is not yet in the
        answer."""
        for key, (_, interface, role) in plan.slots.items():
            name = echoed.get(key)
            if interface == "OrganizationName" and role == "employer" and isinstance(name, str):
                free = [p for p in _employees(self.world).get(name.lower(), ())
                        if p.index not in self.taken]
                if free:
                    return self._untaken(free, lambda p: p.index)
        return None

    def named_person(self, plan: RecordPlan, group: str, echoed: dict[str, Any]
                     ) -> Person | None:
        """The World person an echoed name, email or phone of ``group`` names, if any."""
        for key, interface in plan.members.get(group, ()):
            value = echoed.get(key)
            if isinstance(value, str):
                person = _LOOKUPS[interface](self.world, value)
                if person is not None:
                    self.taken.add(person.index)
                    return person
        return None

    def person(self, city: str | None = None) -> Person:
        """Someone not yet in this answer (from ``city`` when some live there)."""
        pool = _residents(self.world).get(city, self.world.people[1:]) if city else \
            self.world.people[1:]
        return self._untaken(pool, lambda p: p.index)

    def business(self, kind: str, city: str | None = None) -> Business | None:
        """A business of ``kind`` not yet in this answer, in ``city`` (else where the request
        or record is) when there is one there."""
        place = city or self.where
        found = (self.world.businesses_in(kind, place) if place else ()) or \
            self.world.businesses_in(kind)
        return self._untaken(found, lambda b: b.name) if found else None

    def _untaken(self, pool: Any, key: Callable[[Any], Any]) -> Any:
        """One of ``pool`` not yet in this answer, when a few draws find one (else the last
        drawn); it is in the answer from now on."""
        for _ in range(4):
            chosen = self.rng.choice(pool)
            if key(chosen) not in self.taken:
                break
        self.taken.add(key(chosen))
        return chosen

    def identity_value(self, schema: dict[str, Any], key: str, plan: RecordPlan,
                       entity: Entity) -> Any:
        """The group's person's (or business's) own value for an identity or follower
        field; None when it has none, or one that does not fit."""
        interface = plan.slots[key][1]
        if isinstance(entity, Business):
            attribute = _BUSINESS_FIELDS.get(interface)
            value = getattr(entity, attribute) if attribute else None
            if interface == "CountryCode" and (city := self.world.city(entity.city)):
                value = city.country
        else:
            role = plan.slots[key][2]
            if interface == "OrganizationName" and role in BUSINESS_KINDS:
                return None
            value = _person_value(interface, entity)
        return value if value is not None and _fits(value, schema) else None

    def semantic(self, interface: str, person: Person) -> Any:
        if interface == "CurrencyCode":
            return self.currency
        personal = _person_value(interface, person)
        if personal is not None:
            return personal
        make = _SEMANTIC.get(interface)
        return make(self.rng, self.world, person) if make is not None else None

    def plain(self, schema: dict[str, Any], name: str, person: Person) -> Any:
        rng, kind = self.rng, schema.get("type")
        if "enum" in schema:
            return rng.choice(schema["enum"])
        if "const" in schema:
            return schema["const"]
        if kind == "integer":
            low, high = int(schema.get("minimum", 0)), int(schema.get("maximum", 100))
            return min(high, int(_spread(rng, low, max(low, high))))
        if kind == "number":
            low, high = float(schema.get("minimum", 0)), float(schema.get("maximum", 1000))
            return round(min(high, _spread(rng, low, max(low, high))), 2)
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
            return _SEMANTIC["Url"](rng, self.world, person)
        return self.words(schema, name, person)

    def words(self, schema: dict[str, Any], name: str, person: Person) -> str:
        """A string that reads like one, within the schema's length bounds: an id for ids,
        someone's name for an author, else a short phrase from the tables (``_phrases``)."""
        made = _code(name, self.noun, schema, self.rng, person)
        key = schema.get("x-key")
        if made is None and isinstance(key, str) and (name.split("_") or [""])[-1] in _NAMING:
            # an API's resource named by its user, as such names read: "attestor-billing-3"
            made = (f"{key.replace('_', '-')}-{self.rng.choice(_RESOURCE_WORDS)}-"
                    f"{self.rng.randint(1, 99)}")
        if made is None:
            words = name.split("_") if name else []
            if words and words[-1] in _PEOPLE_WORDS:  # a name without the interface
                return _fitted(self.person().name, schema)
            if name == "publication" and (publisher := self.business("publisher")):
                return _fitted(publisher.name, schema)
            if name == "address":  # a plain-text address: the record's person's
                return _fitted(f"{person.street}, {person.city}", schema)
            options = _phrases(name, self.topic, self.request.spec.service)
            made = self.rng.choice(options)
            if "{" in made:
                made = made.format(first=person.first, city=person.city, title=person.title,
                                   employer=person.employer, last_month=self.world.month(-1))
        high = schema.get("maxLength")
        if (high is None or len(made) <= high) and len(made) >= schema.get("minLength", 0):
            return made
        return _fitted(made, schema)


# -- strings that read naturally ---------------------------------------------------------------
# Short curated phrases keyed by the words of field names (and of the record's noun for a bare
# "name" or "title"). "{first}", "{city}", "{title}" and "{employer}" are the record's person's,
# "{last_month}" the month before the World's today.
_TABLES: dict[str, tuple[str, ...]] = {
    # names and titles of things
    "event": ("Spring Jazz Night", "Founders Meetup", "City Half Marathon", "Indie Film Screening",
              "Symphony in the Park", "Comedy Open Mic", "Tech Careers Fair",
              "Food Truck Festival"),
    "project": ("Website redesign", "Mobile app launch", "Data warehouse migration", "Office move",
                "Customer portal", "Onboarding revamp", "Annual report"),
    "campaign": ("Spring sale", "Back to school", "Holiday gift guide", "Summer launch",
                 "Loyalty drive", "Brand awareness push"),
    "product": ("Wireless earbuds", "Stainless water bottle", "Running shoes", "Desk lamp",
                "Travel backpack", "Espresso machine", "Yoga mat"),
    "plan": ("Weekday dinners", "Family favourites", "High-protein week", "Budget meals"),
    "room": ("Harbor Room", "Conference Room B", "The Library", "Garden Suite", "Studio 2"),
    "dish": ("Margherita pizza", "Pad thai", "Chicken tikka masala", "Caesar salad",
             "Mushroom risotto", "Beef tacos", "Miso ramen", "Falafel wrap"),
    "recipe": ("Lemon garlic chicken", "Vegetable curry", "Shakshuka", "Banana bread",
               "Lentil soup", "Pesto pasta", "Teriyaki salmon"),
    "class": ("Morning Yoga", "Spin Express", "HIIT Circuit", "Pilates Core", "Boxing Basics",
              "Evening Stretch"),
    "form": ("Customer satisfaction survey", "Event registration", "Job application",
             "Product feedback", "Volunteer sign-up", "Course evaluation"),
    "document": ("Q1 budget review", "Onboarding guide", "Team offsite agenda", "Product roadmap",
                 "Meeting notes", "Hiring plan"),
    "task": ("Draft the launch email", "Review the contract", "Fix the login bug",
             "Prepare the board slides", "Order new laptops", "Update the pricing page"),
    "ticket": ("Cannot log in", "Refund not received", "Order arrived damaged",
               "Invoice shows the wrong amount", "App crashes on start"),
    "post": ("Excited to share our new office!", "Five lessons from our first year",
             "We are hiring engineers", "Behind the scenes at the launch"),
    "review": ("Great value for money", "Exceeded my expectations", "Decent but overpriced",
               "Would order again", "Friendly staff and quick service"),
    "pull_request": ("Fix date parsing in reports", "Add retry to the payment client",
                     "Refactor the login flow", "Bump dependencies", "Speed up search queries"),
    "coverage": ("Trip cancellation", "Medical expenses", "Baggage loss", "Theft", "Water damage",
                 "Liability"),
    "job": ("Senior Backend Engineer", "Product Designer", "Sales Lead", "Data Analyst"),
    "audience": ("Young professionals", "Parents nearby", "Frequent travellers", "Fitness fans"),
    "site": ("Company blog", "Online store", "Help center", "Careers site"),
    "news": ("Markets rally as inflation cools", "City approves new bike lanes",
             "Local startup raises funding", "Rail strike ends after talks",
             "New museum opens downtown"),
    "headline": ("Markets rally as inflation cools", "City approves new bike lanes",
                 "Local startup raises funding", "Rail strike ends after talks"),
    "name": ("Main account", "Northwind", "Blue Ridge", "Evergreen", "Summit", "Lighthouse"),
    "title": ("Quarterly planning", "Budget review", "Client kickoff", "Design sync",
              "Release checklist", "Hiring update"),
    "label": ("Follow up", "Waiting on customer", "Home", "Work", "Priority"),
    "subject": ("Invoice for {last_month}", "Re: project timeline", "Lunch on Friday?",
                "Your order has shipped", "Meeting notes", "Contract renewal"),
    "helpdesk_subject": ("Cannot log in", "Refund not received", "Order arrived damaged",
                         "Invoice shows the wrong amount", "App crashes on start",
                         "Password reset link expired"),
    # things people name in a field of their own
    "folder": ("Finance", "Projects", "Shared", "Contracts", "Receipts", "Marketing"),
    "file_path": ("/Projects/roadmap.pdf", "/Finance/q1-budget.xlsx", "/Shared/agenda.docx",
                  "/Contracts/lease.pdf"),
    "repository": ("web-frontend", "payments-service", "data-pipeline", "mobile-app"),
    "branch": ("main", "develop", "feature/login-flow", "fix/date-parsing", "release/2.4"),
    "department": ("Engineering", "Finance", "Marketing", "Operations", "Sales", "Support"),
    "model": ("Toyota Corolla", "VW Golf", "Ford Focus", "Tesla Model 3", "Kia Sportage"),
    "vehicle": ("Blue Toyota Prius", "Silver Honda Civic", "Black Tesla Model Y",
                "White Hyundai Ioniq"),
    "medication": ("Amoxicillin", "Ibuprofen", "Lisinopril", "Metformin", "Atorvastatin",
                   "Cetirizine", "Omeprazole"),
    "generic": ("amoxicillin", "ibuprofen", "lisinopril", "metformin", "atorvastatin"),
    "pharmacy": ("Amoxicillin", "Ibuprofen", "Lisinopril", "Cetirizine", "Omeprazole"),
    "drug_class": ("Antibiotic", "NSAID", "ACE inhibitor", "Antihistamine", "Statin"),
    "dosage": ("500 mg twice daily", "10 mg once daily", "200 mg every 6 hours",
               "One tablet at bedtime"),
    "strength": ("500 mg", "10 mg", "20 mg", "250 mg", "5 mg/ml"),
    "uses": ("Bacterial infections", "Pain and fever", "High blood pressure", "Seasonal allergies",
             "Heartburn"),
    "common_side_effects": ("Nausea and headache", "Drowsiness", "Upset stomach", "Dry mouth"),
    "ingredient": ("Olive oil", "Garlic", "Basil", "Chickpeas", "Parmesan", "Lemon", "Brown rice",
                   "Spinach"),
    "opening_hours": ("Mon-Fri 9:00-18:00", "Daily 7:00-22:00", "Mon-Sat 8:00-20:00",
                      "Open 24 hours"),
    "timezone": ("Europe/Berlin", "America/New_York", "Asia/Tokyo", "Europe/London"),
    "features": ("Balcony, parking", "Garden, fireplace", "Elevator, gym", "Rooftop terrace"),
    "industry": ("Software", "Healthcare", "Retail", "Logistics", "Financial services"),
    "network": ("Ethereum", "Bitcoin", "Polygon", "Solana"),
    "performer": ("The Midnight Owls", "Lena Park Quartet", "DJ Solstice", "Harbor City Orchestra",
                  "Nora Vance"),
    "section": ("Business", "Technology", "Local", "Sports", "Culture"),
    "topic": ("Product launch", "Pricing", "Remote work", "Elections", "Climate"),
    "term": ("Good morning", "Thank you", "Where is the station?", "How much is this?",
             "The bill, please"),
    "complaint": ("Slow service", "Long wait times", "Noisy at night", "Small portions"),
    "praise": ("Friendly staff", "Great value", "Spotless rooms", "Fast delivery"),
    "rule": ("Escalate tickets open for more than two days",
             "Notify the owner when a task is overdue", "Require approval above 500"),
    "query": ("best coffee in {city}", "quarterly earnings", "weekend weather", "train times"),
    # free text
    "description": ("Details as discussed on the phone.", "Added at the customer's request.",
                    "See the attached notes for the full picture.", "Follow-up from last week."),
    "summary": ("Key points from the last week.", "A short overview of the main changes.",
                "Highlights, open questions and next steps.",
                "Mostly positive, with a few concerns about timing."),
    "profile": ("{title} at {employer}", "{title} based in {city}", "Helping teams ship faster",
                "{title}, coffee and long walks"),
    "note": ("Call back after 3 pm.", "Prefers email contact.", "Follow up next week.",
             "Discussed pricing; sending a quote.", "Asked about the annual plan."),
    "comment": ("Looks good to me.", "Please add a test for the empty case.",
                "Can we simplify this part?", "Nice catch, thanks!"),
    "reason": ("Schedule conflict", "Found a better price", "Travel plans changed",
               "Ordered by mistake", "No longer needed"),
    "memo": ("Lunch with a client", "Team offsite", "Taxi to the airport", "Office supplies"),
    "message": ("Hi {first}, confirming our meeting on Thursday. Thanks!",
                "Thanks {first}, the documents are attached.",
                "Running ten minutes late, see you soon."),
    "answer": ("Yes", "Twice a week", "Very satisfied", "The checkout was easy."),
    "instructions": ("Take one tablet with food.", "Leave the parcel at the front door.",
                     "Preheat the oven to 200 C and bake for 25 minutes."),
    "warnings": ("Do not combine with alcohol.", "May cause drowsiness.",
                 "Keep out of reach of children."),
    "requests": ("Window table, please.", "One vegetarian guest.", "A high chair for a toddler.",
                 "Quiet room if possible."),
    "steps": ("Chop the vegetables, simmer for 20 minutes and season to taste.",
              "Whisk the eggs, fold in the flour and bake until golden."),
    "snippet": ("The company reported higher revenue for the quarter.",
                "Opening hours, menus and reviews for restaurants in {city}."),
    "translation": ("Guten Morgen", "Merci beaucoup", "Dove si trova la stazione?",
                    "La cuenta, por favor"),
    # the same words in one service or for one kind of record
    "ads_headline": ("Summer sale: 30% off", "Try it free for 30 days",
                     "New collection just landed", "Book your table tonight",
                     "Fast delivery, every day"),
    "ads_body": ("Shop the new season and save on every order.",
                 "Join thousands of happy customers. Start today.",
                 "Limited time offer, while stocks last."),
    "reviews_body": ("Great food and friendly staff. We will be back.",
                     "Arrived on time and works as described.",
                     "A bit pricey, but the quality is excellent.",
                     "Service was slow, though the staff were kind."),
    "code_review": ("Fix date parsing in reports", "Add retry to the payment client",
                    "Refactor the login flow", "Bump dependencies", "Speed up search queries"),
    "code_review_description": ("Fixes the timezone bug in the weekly report.",
                                "Adds retries with backoff to payment calls.",
                                "Splits the login handler into smaller steps."),
    "docs_editor_body": ("Agenda: goals, budget and timeline.",
                         "Draft plan for the next quarter, with owners and dates.",
                         "Notes from the kickoff meeting."),
    "recipes_instructions": ("Chop the vegetables, simmer for 20 minutes and season to taste.",
                             "Whisk the eggs, fold in the flour and bake until golden.",
                             "Toss the pasta with the sauce and serve with parmesan."),
    "tax_advisor_form": ("1040", "Schedule C", "W-2", "1099-NEC", "Form 8829"),
    "tax_advisor_description": ("Home office equipment.", "Donation to a local charity.",
                                "Professional training course."),
    "web_search_title": ("Best coffee shops in {city}", "Quarterly results at a glance",
                         "Weekend weather forecast", "How to file your taxes online"),
    "helpdesk_body": ("Hi, I still cannot log in after resetting my password.",
                      "Thanks {first}, that fixed it.", "Could you send a copy of the invoice?"),
    "helpdesk_description": ("I was charged twice for my last order.",
                             "The app logs me out every few minutes.",
                             "My parcel shows delivered but never came."),
    "insurance_description": ("Rear-ended at a traffic light.",
                              "Water leak from the flat upstairs.", "Phone stolen on the train."),
    "expense_reports_description": ("Dinner with the client team.", "Taxi from the airport.",
                                    "Hotel, two nights."),
    "car_rental_description": ("Scratch on the rear bumper.", "Small dent on the driver door.",
                               "Chipped windscreen."),
    "real_estate_description": ("Bright two-bedroom flat close to the park.",
                                "Renovated family home with a garden.",
                                "Quiet studio near the station."),
    "events_tickets_description": ("An evening of live music under the stars.",
                                   "Talks and workshops for builders.",
                                   "Stand-up from touring comics."),
    "project_tracker_description": ("Collect the requirements and draft a first version.",
                                    "Agree the scope with the client.",
                                    "Ship it behind a flag and watch the metrics."),
    "maps_steps": ("Head north on Main Street, then turn left after 300 m.",
                   "Continue straight for 2 km and take the second exit."),
    "ride_hailing_comment": ("Friendly driver, smooth ride.", "Car was spotless.",
                             "Driver took a longer route."),
    "ride_hailing_label": ("Home", "Work", "Gym", "Favourite cafe"),
    "maps_label": ("Home", "Work", "Gym", "Favourite cafe"),
    "maps_name": ("Central Park", "City Museum", "Riverside Cafe", "Grand Station", "Old Town"),
    "cloud_storage_name": ("roadmap.pdf", "q1-budget.xlsx", "team-photo.jpg",
                           "signed-contract.pdf", "meeting-notes.docx"),
    "analytics_title": ("Home", "Pricing", "Blog: spring update", "Contact us", "Careers"),
    "translated_text": ("Guten Morgen", "Merci beaucoup", "Dove si trova la stazione?",
                        "La cuenta, por favor"),
    "expense_reports_title": ("{last_month} travel", "Client visit in {city}", "Team offsite",
                              "Conference trip"),
    "questions": ("How did you hear about us?", "How satisfied are you?", "Any other comments?"),
    "": ("General enquiry", "Standard option", "Main office", "Regular schedule",
         "Customer request", "Annual review"),
}
for _alias, _same in (("social_media_text", "post"), ("social_media_content", "post"),
                      ("docs_editor_content", "docs_editor_body"),
                      ("cloud_storage_content", "docs_editor_body"),
                      ("code_review_body", "comment"), ("project_tracker_body", "comment"),
                      ("notes", "note"), ("body", "message"), ("content", "message"),
                      ("text", "message"), ("phrase", "term"), ("typical_dosage", "dosage"),
                      ("medications", "medication"), ("substitute", "medication")):
    _TABLES[_alias] = _TABLES[_same]
_NAMING = frozenset({"name", "title", "label", "headline"})  # names what the record is about
# what the user's resources in an API are for, in their names ("vault-payments-2")
_RESOURCE_WORDS = ("billing", "web", "data", "analytics", "payments", "platform", "ops",
                   "shared", "prod", "staging")
_GENERIC = _NAMING | frozenset({"text", "description", "summary", "note", "notes", "top",
                                "common", "typical", "special", "translated"})
_PEOPLE_WORDS = frozenset({"author", "agent"})  # plain strings that are someone's name
_CODE_WORDS = frozenset({"id", "code", "number", "hash", "ref", "reference", "plate", "symbol",
                         "handle"})
_ABBREVIATIONS = {"event": "EVT", "ticket": "TKT", "booking": "BKG", "reservation": "RES",
                  "prescription": "RX", "transaction": "TXN", "message": "MSG",
                  "document": "DOC", "invoice": "INV", "payment": "PAY", "policy": "POL",
                  "claim": "CLM", "campaign": "CMP", "project": "PRJ", "task": "TSK",
                  "recipe": "RCP", "rental": "RNT", "listing": "LST", "candidate": "CND",
                  "employee": "EMP", "expense": "EXP", "review": "REV", "quote": "QTE",
                  "offer": "OFR", "form": "FRM", "post": "PST", "pull_request": "PR",
                  "membership": "MBR", "report": "RPT", "interview": "INT", "order": "ORD"}
_LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"


def _singular(word: str) -> str:
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


@functools.lru_cache(maxsize=4096)
def _phrases(name: str, topic: str, service: str) -> tuple[str, ...]:
    """The table for a field (made once per field, record noun and service): the table of
    its name in this service or record ("recipes_instructions"), of its name, of its
    specific words, then for a bare name or title what the record is about, then its
    generic word, else a generic phrase."""
    words = name.split("_") if name else []
    context = [c for c in (service, topic, *reversed(topic.split("_")),
                           *reversed(service.split("_"))) if c and c not in _GENERIC]
    whole = "_".join(words)
    keys = [f"{c}_{w}" for c in context for w in dict.fromkeys((whole, words[-1]))] \
        if words else []
    keys += [whole] if whole not in _GENERIC else []
    keys += [w for w in reversed(words) if w not in _GENERIC]
    keys += context if words and words[-1] in _NAMING else []
    for key in (*keys, *reversed(words)):
        found = _TABLES.get(key) or _TABLES.get(_singular(key))
        if found:
            return found
    return _TABLES[""]


@functools.lru_cache(maxsize=4096)
def _id_prefix(noun: str) -> str:
    """"EVT" for events, "ORD" for orders: a known abbreviation, else the first letters of
    the noun's last word."""
    noun = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", noun).lower().strip("_")
    last = noun.rsplit("_", 1)[-1]
    found = _ABBREVIATIONS.get(noun) or _ABBREVIATIONS.get(last)
    return found or re.sub(r"[^a-z]", "", last)[:3].upper() or "REC"


@functools.lru_cache(maxsize=4096)
def _code_kind(name: str) -> tuple[str, str] | None:
    """For a field named like an id or a code: (its kind, the noun before it), else None."""
    words = name.split("_") if name else []
    if not words or words[-1] not in _CODE_WORDS:
        return None
    if words[-1] == "code" and words[0] in ("access", "confirmation", "promo", "discount"):
        return "secret", ""
    return words[-1], "_".join(words[:-1])


def _code(name: str, noun: str, schema: dict[str, Any], rng: random.Random,
          person: Person) -> str | None:
    """An id-shaped value for a field named like one (None for other fields): "EVT-0042",
    a six-letter code, a ticker, a plate, a handle; the first shape the schema accepts."""
    kind = _code_kind(name)
    if kind is None:
        return None
    last, number = kind[0], rng.randint(1, 9999)
    if last == "symbol":
        made = "".join(rng.choice(_LETTERS) for _ in range(rng.randint(3, 4)))
    elif last == "handle":
        made = f"@{person.first}{person.last}".lower()
    elif last == "hash":
        made = f"0x{rng.getrandbits(160):040x}"
    elif last == "plate":
        made = f"{''.join(rng.choice(_LETTERS) for _ in range(3))}-{number:04d}"
    elif last == "secret":
        made = "".join(rng.choice(_LETTERS + "23456789") for _ in range(6))
    else:
        made = f"{_id_prefix(kind[1] or noun)}-{number:04d}"
    for shape in (made, made.replace("-", ""), f"{number:04d}", made.lower()):
        if _fits(shape, schema):
            return shape
    return made


def _spread(rng: random.Random, low: float, high: float) -> float:
    """A number in [low, high]: uniform over a narrow range, log-uniform over one spanning
    orders of magnitude (a repository has dozens of open pull requests more often than
    thousands, as counts in the world do)."""
    if high - low <= 1000:
        return rng.uniform(low, high)
    return low + math.expm1(rng.uniform(0.0, math.log1p(high - low)))


# days from today a date of the role falls on: what is booked lies ahead, what was written
# lies behind (a due date may be either: a bill can be overdue)
_WHEN: dict[str, tuple[int, int]] = {
    **dict.fromkeys(("event_date", "departure", "arrival", "check_in", "check_out",
                     "appointment", "renewal_date", "expiry"), (1, 30)),
    **dict.fromkeys(("created", "posted", "issue_date", "application_date", "updated"),
                    (-30, -1)),
}
_STAFF = frozenset({"press", "maintainer"})  # roles of people who work where the record says


_TITLES = ("title", "headline", "name", "subject", "repository", "repo", "filename")


def _title(record: dict[str, Any]) -> str | None:
    """What the record is called (an article's headline, a repository's name), if it says."""
    return next((v for k in _TITLES if isinstance(v := record.get(k), str) and v), None)


def _slug(text: str) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", text.lower())[:6]) or "item"


def _domain_of(world: World, record: dict[str, Any], plan: RecordPlan,
               who: dict[str, Entity], asked: Any = None) -> str:
    """The domain of whom a record is about: its business, else an organisation it names
    (the listed company, the account) or the request asked about (the organisation whose
    repositories are listed), else the employer of the first person it names (a pull
    request's author), else the user's."""
    owner = who[plan.owner]
    if isinstance(owner, Business):
        return owner.domain
    named = [record.get(k) for k, (_, i, role) in plan.slots.items()
             if i == "OrganizationName" and role != "publisher"]
    for value in [*named, asked]:
        if isinstance(value, str):
            found = world.business(value) or world.organization(value)
            if found is not None:
                return found.domain
    named = [who[g] for g in plan.groups if g in plan.members and g not in plan.selves]
    person = next((p for p in [owner, *named] if isinstance(p, Person)
                   and (p is not owner or plan.owner in plan.members)), world.user)
    return person.email.rpartition("@")[2]


def _fitted(text: str, schema: dict[str, Any]) -> str:
    """``text`` within the schema's length bounds, cut at a word where it can be."""
    low, high = schema.get("minLength", 0), schema.get("maxLength")
    if high is not None and len(text) > high:
        cut = text[:max(high, 1)]
        words = cut.rsplit(" ", 1)[0].rstrip(",;:")
        text = words if " " in cut and len(words) >= max(low, 1) else cut
    while len(text) < low:
        text = f"{text} {text}"[:high] if high else f"{text} {text}"
    return text


def _distinct(made: list[Any], items: dict[str, Any], least: int) -> list[Any]:
    """List items about the same business or person once (while ``least`` remain): a city
    has a few restaurants, and a search lists each of them once."""
    if items.get("type") != "object" or len(made) <= least:
        return made
    plan = record_plan(items)
    key = plan.business or next((k for k, g in plan.people.items()
                                 if g == plan.owner and plan.slots[k][1] == "PersonName"), None)
    if key is None:
        return made
    seen: set[Any] = set()
    out = []
    for position, item in enumerate(made):
        name = item.get(key) if isinstance(item, dict) else None
        if name in seen and len(out) + len(made) - position > least:
            continue
        seen.add(name)
        out.append(item)
    return out


def _residents_of(world: World) -> dict[str, tuple[Person, ...]]:
    out: dict[str, list[Person]] = {}
    for person in world.people[1:]:
        out.setdefault(person.city, []).append(person)
    return {city: tuple(people) for city, people in out.items()}


def _employees_of(world: World) -> dict[str, tuple[Person, ...]]:
    out: dict[str, list[Person]] = {}
    for person in world.people[1:]:
        out.setdefault(person.employer.lower(), []).append(person)
    return {employer: tuple(people) for employer, people in out.items()}


# one per live world: an entry goes with its world (a cache here would keep worlds alive)
_residents: Callable[[World], dict[str, tuple[Person, ...]]] = ViewCache(_residents_of)
_employees: Callable[[World], dict[str, tuple[Person, ...]]] = ViewCache(_employees_of)


# where a tool's records live, once per tool
_noun: Callable[[Any], str] = ByIdentity(lambda spec: collection_of(spec.name, spec.returns))
# derived schemas are made once per library schema: checks are compiled per schema object
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
        collection = maker.noun
        stored = request.records.get(collection, {})
        returns = spec.returns
        if spec.read_only:
            return ToolAnswer(self._read(maker, returns, stored))
        data = maker.value(returns, "", maker.person())
        if not isinstance(data, dict):
            return ToolAnswer(data)  # nothing to store: a write that reports a status
        if makes_new(spec.name):  # a reject_ that succeeds may well say "rejected"
            data = _succeeded(data, returns)
        required = spec.parameters.get("required") or ()
        salt = (request.world.seed, spec.qualified_name,
                {k: v for k, v in request.arguments.items() if k in required})
        param = key_param(spec.name, spec.parameters, kind_of(collection))
        asked = request.arguments.get(param) if param is not None else None
        if param in data and param != id_field(data, kind_of(collection)):
            asked = None  # a record of its own that refers to that one (a cookbook entry)
        # a write naming a record by its key changes that record, stored or shown by a read
        key = str(asked) if isinstance(asked, (str, int)) and not isinstance(asked, bool) \
            else _key_of(data, request.arguments, stored, collection, salt)
        existing = stored.get(key)
        if existing is not None:  # an update keeps what it does not change
            data = {**existing, **{k: v for k, v in request.arguments.items() if k in existing}}
            status = (returns.get("properties") or {}).get("status", {})
            if maker.status and "status" in data and "enum" in status:  # cancel_, close_
                ended = [v for v in status["enum"] if str(v).lower().startswith(maker.status)]
                data["status"] = ended[0] if ended else data["status"]
        elif asked is not None and "id" in data:
            if not named(data, kind_of(collection), asked, param) and _fits(asked, (
                    returns.get("properties") or {}).get("id") or {}, memo=False):
                data["id"] = asked
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
            generated = maker.value(returns, "", maker.person())
            room = max(0, most - len(kept))
            return generated[:room] + kept  # what was there stays; stored records follow
        spec = maker.request.spec
        kind = kind_of(maker.noun)
        param = key_param(spec.name, spec.parameters, kind)
        if param is not None and param in args:
            # a read of one record by its key: that record, never another that happens to
            # match (a stored record holds no ``ticket_id`` to disagree with); one not
            # stored is made under the key asked for (``echoes``)
            asked = str(args[param])
            matching = [r for k, r in stored.items() if k == asked
                        or named(r, kind, asked, param)]
        said = {str(v) for v in args.values()}  # once, not once per stored record
        by_key = [r for k, r in stored.items() if k in said]
        for record in by_key + matching:
            if _fits(record, returns):
                return record
        return maker.value(returns, "", maker.person())


def _succeeded(data: dict[str, Any], returns: dict[str, Any]) -> dict[str, Any]:
    """A write that succeeds does not say it failed: a failed status drawn for its record
    is the first of the schema's statuses that does not."""
    status = data.get("status")
    if not isinstance(status, str) or status.lower() not in FAILED:
        return data
    options = ((returns.get("properties") or {}).get("status") or {}).get("enum") or ()
    fine = [v for v in options if isinstance(v, str) and v.lower() not in FAILED]
    return {**data, "status": fine[0]} if fine else data


def _key_of(data: dict[str, Any], args: dict[str, Any], stored: dict[str, Any],
            collection: str, salt: Any = 0) -> str:
    """The record's key: an argument naming a stored record (an update), else a new id."""
    for value in args.values():
        if isinstance(value, str) and value in stored:
            return value
    # digits drawn from the request (world, tool, required arguments) and the records there:
    # the same call in the same episode makes the same id, and no other task tells it
    return drawn_id(f"{_id_prefix(collection)}-", stored, 4, (salt, len(stored)))


def _fits_key(data: dict[str, Any], returns: dict[str, Any]) -> bool:
    """Whether the generated id already follows a pattern the schema insists on."""
    return "pattern" in (returns.get("properties", {}).get("id") or {})


def example_arguments(spec: Any, world: World, seed: int = 0) -> dict[str, Any]:
    """Schema-valid arguments for a tool (all its parameters), drawn like offline answers."""
    request = ToolRequest(spec, {}, world, {}, seed)
    maker = _Maker(request)
    return maker.value(spec.parameters, "", maker.person())
