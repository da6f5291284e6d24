"""World: the seeded population (people, organisations, cities, "today") every service shares."""

from __future__ import annotations

import datetime as dt
import hashlib
import random
from dataclasses import dataclass
from typing import NamedTuple
from functools import cached_property

from compoenv._cache import SharedCache
from compoenv.businesses import Business, build_businesses
from compoenv.interfaces import Address

__all__ = ["World", "Person", "Organization", "CityInfo", "Business", "DEFAULT_TODAY"]

DEFAULT_TODAY = dt.date(2026, 3, 16)
NOW_HOUR = 10  # the hour of the day it is in every World: today at 10:00

_FIRST = (
    "Ada Alan Alice Amara Ana Arjun Ayesha Bea Ben Carla Carlos Chen Chloe Dario Diego Dmitri "
    "Elena Emeka Emma Erik Fatima Felix Grace Hana Hiro Ines Isaac Ivan Jade Jamal Jonas Julia "
    "Kai Kenji Lara Leo Lina Luca Maya Mei Mila Nadia Nina Noah Omar Oscar Priya Rafael Ravi "
    "Rosa Sami Sara Sofia Tariq Tom Uma Vera Wei Yara Zoe"
).split()
_LAST = (
    "Abbott Adler Alvarez Baker Banerjee Becker Brooks Castro Chandra Costa Dalton Diaz Dubois "
    "Ekwueme Evans Fischer Fontaine Garcia Gupta Hansen Hayes Ibrahim Ito Jensen Kaur Keller "
    "Kim Kowalski Larsen Lopez Moreau Murphy Nakamura Novak Okafor Olsen Patel Petrov Quinn "
    "Reyes Rossi Sato Schmidt Silva Singh Sorensen Tanaka Torres Varga Vogel Walsh Weber Wong "
    "Yilmaz Young Zhang Ziegler"
).split()
_ORG_A = (
    "Acme Apex Bluebird Cobalt Crescent Evergreen Falcon Granite Harbor Helix Ironwood Juniper "
    "Keystone Lumen Maple Meridian Nimbus Northwind Orchid Pinnacle Quarry Redwood Summit Tidal "
    "Vertex Willow"
).split()
_ORG_B = (
    "Analytics Bakery Biotech Capital Consulting Design Energy Foods Health Labs Logistics Media "
    "Robotics Software Studios Systems Travel Ventures"
).split()
_TITLES = (
    "Engineer", "Designer", "Product Manager", "Accountant", "Analyst", "Sales Lead",
    "Recruiter", "Data Scientist", "Operations Manager", "Lawyer", "Nurse", "Architect",
    "Marketing Manager", "Consultant", "Teacher", "Chef",
)
_STREETS = (
    "Oak", "Maple", "Cedar", "Elm", "Pine", "Lake", "Hill", "River", "Park", "Mill", "Church",
    "Station", "Bridge", "Market", "Garden", "Harbor",
)
# name, country, airport, base temperature (C, mid-March)
_CITIES = (
    ("Amsterdam", "NL", "AMS", 9), ("Athens", "GR", "ATH", 17), ("Austin", "US", "AUS", 23),
    ("Barcelona", "ES", "BCN", 16), ("Berlin", "DE", "BER", 8), ("Boston", "US", "BOS", 7),
    ("Chicago", "US", "ORD", 6), ("Dublin", "IE", "DUB", 10), ("Lisbon", "PT", "LIS", 18),
    ("London", "GB", "LHR", 11), ("Madrid", "ES", "MAD", 16), ("Miami", "US", "MIA", 27),
    ("Montreal", "CA", "YUL", 1), ("Munich", "DE", "MUC", 9), ("Nairobi", "KE", "NBO", 26),
    ("Oslo", "NO", "OSL", 3), ("Paris", "FR", "CDG", 12), ("Prague", "CZ", "PRG", 8),
    ("Rome", "IT", "FCO", 17), ("Seattle", "US", "SEA", 11), ("Seoul", "KR", "ICN", 10),
    ("Singapore", "SG", "SIN", 31), ("Stockholm", "SE", "ARN", 4), ("Sydney", "AU", "SYD", 25),
    ("Tokyo", "JP", "HND", 14), ("Toronto", "CA", "YYZ", 3), ("Vienna", "AT", "VIE", 10),
    ("Zurich", "CH", "ZRH", 9),
)
_CURRENCY = {"US": "USD", "GB": "GBP", "CA": "CAD", "AU": "AUD", "JP": "JPY", "KR": "KRW",
             "SG": "SGD", "CH": "CHF", "SE": "SEK", "NO": "NOK", "CZ": "CZK", "KE": "KES"}

N_PEOPLE = 240


@dataclass(frozen=True, slots=True)
class CityInfo:
    name: str
    country: str
    airport: str
    base_temp: int

    @property
    def currency(self) -> str:
        return _CURRENCY.get(self.country, "EUR")


@dataclass(frozen=True, slots=True)
class Organization:
    name: str
    domain: str
    industry: str
    city: str


class Person(NamedTuple):
    """One member of the population (a named tuple: 240 are built per world)."""

    index: int
    first: str
    last: str
    email: str
    phone: str
    street: str
    postal_code: str
    city: str
    country: str
    employer: str
    title: str
    birthday: dt.date

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}"

    @property
    def address(self) -> Address:
        return Address(street=self.street, city=self.city, postal_code=self.postal_code,
                       country=self.country)


class World:
    """A deterministic population shared by all services of an episode.

    Same seed, same world, byte for byte: every value comes from ``random.Random`` streams whose
    seeds are hashes of (world seed, stream name), never from Python's salted ``hash``.

    Args:
        seed: World seed.
        today: The world's fixed current date.
    """

    def __init__(self, seed: int = 0, today: dt.date = DEFAULT_TODAY) -> None:
        self.seed = int(seed)
        self.today = today
        rng = self.rng("population")
        self.cities: tuple[CityInfo, ...] = tuple(CityInfo(*row) for row in _CITIES)
        org_names = [f"{_ORG_A[k // len(_ORG_B)]} {_ORG_B[k % len(_ORG_B)]}"
                     for k in rng.sample(range(len(_ORG_A) * len(_ORG_B)), 48)]
        self.orgs: tuple[Organization, ...] = tuple(
            Organization(name, name.lower().replace(" ", "") + ".com", name.split()[1],
                         rng.choice(self.cities).name)
            for name in org_names
        )
        people = []
        n_first, n_last = len(_FIRST), len(_LAST)
        for i, k in enumerate(rng.sample(range(n_first * n_last), N_PEOPLE)):
            first, last = _FIRST[k // n_last], _LAST[k % n_last]
            # one 128-bit draw per person, cut into fields: ~10x faster than a call per field
            bits = rng.getrandbits(128)
            bits, org = divmod(bits, len(self.orgs))
            bits, city = divmod(bits, len(self.cities))
            bits, area = divmod(bits, 900)
            bits, line = divmod(bits, 9000)
            bits, house = divmod(bits, 299)
            bits, street = divmod(bits, len(_STREETS))
            bits, postal = divmod(bits, 89990)
            bits, title = divmod(bits, len(_TITLES))
            bits, year = divmod(bits, 44)
            bits, month = divmod(bits, 12)
            day = bits % 28
            employer, home = self.orgs[org], self.cities[city]
            people.append(Person(
                index=i, first=first, last=last,
                email=f"{first}.{last}@{employer.domain}".lower(),
                phone=f"+1 555-{area + 100}-{line + 1000}",
                street=f"{house + 1} {_STREETS[street]} Street", postal_code=str(10000 + postal),
                city=home.name, country=home.country, employer=employer.name,
                title=_TITLES[title], birthday=dt.date(1960 + year, month + 1, day + 1),
            ))
        self.people: tuple[Person, ...] = tuple(people)

    def rng(self, stream: str) -> random.Random:
        """A random stream private to ``stream`` (a service name, say), fixed by the seed."""
        digest = hashlib.blake2b(f"{self.seed}/{stream}".encode(), digest_size=8).digest()
        return random.Random(int.from_bytes(digest, "big"))

    def draw(self, stream: str, n: int = 4) -> tuple[float, ...]:
        """``n`` (at most 8) uniforms in [0, 1) keyed by ``stream``: one hash, no Random object.

        For values computed on demand (a forecast for a city and day), where seeding a
        ``random.Random`` per call would cost more than the tool itself.
        """
        if not 1 <= n <= 8:
            raise ValueError(f"draw gives 1 to 8 numbers, asked for {n}")
        digest = hashlib.blake2b(f"{self.seed}/{stream}".encode(), digest_size=8 * n).digest()
        return tuple(int.from_bytes(digest[8 * i: 8 * i + 8], "big") / 2**64 for i in range(n))

    @property
    def user(self) -> Person:
        """The person the agent works for: owner of the inbox, the accounts, the calendar."""
        return self.people[0]

    def circle(self, rng: random.Random, others: int) -> list[Person]:
        """The people the user deals with: their colleagues, then ``others`` people drawn with
        ``rng`` from everyone else (senders of mail, attendees of meetings)."""
        colleagues = [p for p in self.people[1:] if p.employer == self.user.employer]
        rest = [p for p in self.people[1:] if p not in colleagues]
        return colleagues + rng.sample(rest, others)

    # -- businesses and relations ----------------------------------------------------------
    @cached_property
    def businesses(self) -> dict[str, tuple[Business, ...]]:
        """Businesses people deal with, by kind (restaurant, gym, hotel, pharmacy, insurer,
        airline, bank, vendor, venue, parking_operator, clinic, car_rental, agency,
        publisher): a few of each kind in every city, with names that fit the kind."""
        return build_businesses([c.name for c in self.cities], self.rng("businesses"))

    def businesses_in(self, kind: str, city: str | None = None) -> tuple[Business, ...]:
        """The businesses of ``kind`` (in ``city``, if given)."""
        if city is None:
            return self.businesses.get(kind, ())
        return self._businesses_by_place.get((kind, city), ())

    @cached_property
    def _businesses_by_place(self) -> dict[tuple[str, str], tuple[Business, ...]]:
        index: dict[tuple[str, str], list[Business]] = {}
        for kind, found in self.businesses.items():
            for b in found:
                index.setdefault((kind, b.city), []).append(b)
        return {key: tuple(v) for key, v in index.items()}

    def business(self, name: str) -> Business | None:
        """The business called ``name`` (case-insensitive), if any."""
        return self._businesses_by_name.get(name.strip().lower())

    @cached_property
    def _businesses_by_name(self) -> dict[str, Business]:
        return {b.name.lower(): b for kind in self.businesses.values() for b in kind}

    def owner_of(self, domain: str) -> Organization | Business | None:
        """The organisation or business whose web domain is ``domain``, if any."""
        return self._by_domain.get(domain.strip().lower().removeprefix("www."))

    @cached_property
    def _by_domain(self) -> dict[str, Organization | Business]:
        found: dict[str, Organization | Business] = {o.domain: o for o in self.orgs}
        for kind in self.businesses.values():
            for b in kind:
                found.setdefault(b.domain, b)
        return found

    def organization(self, name: str) -> Organization | None:
        """The organisation (an employer) called ``name`` (case-insensitive), if any."""
        return self._orgs_by_name.get(name.strip().lower())

    @cached_property
    def _orgs_by_name(self) -> dict[str, Organization]:
        return {o.name.lower(): o for o in self.orgs}

    def colleagues(self, person: Person) -> list[Person]:
        """The people who work for the same employer as ``person`` (not themself)."""
        return [p for p in self.people if p.employer == person.employer and p != person]

    def manager_of(self, person: Person) -> Person | None:
        """A colleague with a manager's title, else the first colleague (None: works alone)."""
        team = self.colleagues(person)
        managers = [p for p in team if "Manager" in p.title or p.title == "Sales Lead"]
        return (managers or team or [None])[0]

    def family(self, person: Person) -> list[Person]:
        """People who share ``person``'s last name (their relatives)."""
        return [p for p in self.people if p.last == person.last and p != person]

    @cached_property
    def _people_by_name(self) -> dict[str, Person]:
        return {p.name.lower(): p for p in self.people}

    @cached_property
    def _cities_by_name(self) -> dict[str, CityInfo]:
        return {c.name.lower(): c for c in self.cities}

    @cached_property
    def _people_by_email(self) -> dict[str, Person]:
        return {p.email.lower(): p for p in self.people}

    def person(self, name: str) -> Person | None:
        """The person with this full name (case-insensitive), if any."""
        return self._people_by_name.get(name.strip().lower())

    def person_by_email(self, email: str) -> Person | None:
        return self._people_by_email.get(email.strip().lower())

    def person_by_phone(self, phone: str) -> Person | None:
        """The person with this phone number (compared digit by digit), if any."""
        return self._people_by_phone.get("".join(c for c in phone if c.isdigit()))

    @cached_property
    def _people_by_phone(self) -> dict[str, Person]:
        return {"".join(c for c in p.phone if c.isdigit()): p for p in self.people}

    def city(self, name: str) -> CityInfo | None:
        return self._cities_by_name.get(name.strip().lower())

    def at(self, days: int = 0, hour: int = 9, minute: int = 0) -> str:
        """An ISO datetime ``days`` after today (negative for the past)."""
        day = self.today + dt.timedelta(days=days)
        return f"{day.isoformat()}T{hour:02d}:{minute:02d}"

    def date(self, days: int = 0) -> str:
        return (self.today + dt.timedelta(days=days)).isoformat()

    @property
    def now(self) -> str:
        """The episode's current moment (ISO, to the second): today at the fixed hour
        ``NOW_HOUR``. What a write makes, it makes now."""
        return f"{self.today.isoformat()}T{NOW_HOUR:02d}:00:00"

    def digest(self) -> str:
        """A content hash of the population: equal seeds give equal digests."""
        h = hashlib.sha256(f"{self.seed}|{self.today}".encode())
        for p in self.people:
            h.update(repr(p).encode())
        for o in self.orgs:
            h.update(repr(o).encode())
        return h.hexdigest()

    @classmethod
    def get(cls, seed: int, today: dt.date = DEFAULT_TODAY) -> World:
        """The shared World for ``seed``: one instance while anything holds it."""
        return _WORLDS.get((int(seed), today), lambda: cls(int(seed), today))

    def __repr__(self) -> str:
        return f"World(seed={self.seed}, today={self.today.isoformat()})"


_WORLDS: SharedCache[tuple[int, dt.date], World] = SharedCache(maxsize=64)
