"""World: the seeded population (people, organisations, cities, "today") every service shares."""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import random
import re
from dataclasses import dataclass
from typing import Any, NamedTuple
from functools import cached_property

from compoenv._cache import SharedCache
from compoenv.businesses import PER_CITY, Business, Businesses, draw_businesses
from compoenv.interfaces import Address

__all__ = ["World", "Person", "Organization", "CityInfo", "Business", "DEFAULT_TODAY",
           "TODAY_RANGE"]

DEFAULT_TODAY = dt.date(2026, 3, 16)
# the days a composed task's "today" is drawn from (``World.today_for``): about 18 months,
# so tasks fall in every month, season and weekday
TODAY_RANGE = (dt.date(2025, 9, 1), dt.date(2027, 2, 28))
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
# name, country, airport, typical daily high (C) in mid-January and in mid-July
_CITIES = (
    ("Amsterdam", "NL", "AMS", 6, 22), ("Athens", "GR", "ATH", 13, 33),
    ("Austin", "US", "AUS", 17, 35), ("Barcelona", "ES", "BCN", 14, 29),
    ("Berlin", "DE", "BER", 3, 24), ("Boston", "US", "BOS", 2, 28),
    ("Chicago", "US", "ORD", 0, 29), ("Dublin", "IE", "DUB", 8, 20),
    ("Lisbon", "PT", "LIS", 15, 28), ("London", "GB", "LHR", 8, 24),
    ("Madrid", "ES", "MAD", 10, 33), ("Miami", "US", "MIA", 24, 33),
    ("Montreal", "CA", "YUL", -5, 26), ("Munich", "DE", "MUC", 3, 24),
    ("Nairobi", "KE", "NBO", 26, 22), ("Oslo", "NO", "OSL", -1, 22),
    ("Paris", "FR", "CDG", 7, 25), ("Prague", "CZ", "PRG", 1, 24),
    ("Rome", "IT", "FCO", 12, 31), ("Seattle", "US", "SEA", 8, 26),
    ("Seoul", "KR", "ICN", 2, 29), ("Singapore", "SG", "SIN", 30, 31),
    ("Stockholm", "SE", "ARN", 0, 22), ("Sydney", "AU", "SYD", 26, 17),
    ("Tokyo", "JP", "HND", 10, 31), ("Toronto", "CA", "YYZ", -1, 27),
    ("Vienna", "AT", "VIE", 3, 26), ("Zurich", "CH", "ZRH", 3, 25),
)
_CURRENCY = {"US": "USD", "GB": "GBP", "CA": "CAD", "AU": "AUD", "JP": "JPY", "KR": "KRW",
             "SG": "SGD", "CH": "CHF", "SE": "SEK", "NO": "NOK", "CZ": "CZK", "KE": "KES"}

N_PEOPLE = 240
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
_NOT_DIGIT = re.compile(r"\D+")


@dataclass(frozen=True, slots=True)
class CityInfo:
    """A city: its airport, and its typical daily highs in mid-January and mid-July (°C; the
    south's July is its winter), from which ``typical_high`` gives any day's."""

    name: str
    country: str
    airport: str
    january_high: int
    july_high: int

    @property
    def currency(self) -> str:
        return _CURRENCY.get(self.country, "EUR")

    def typical_high(self, day: dt.date) -> float:
        """The usual daily high (°C) on ``day``'s date: a yearly cosine between the
        January and July highs, warmest about July 20th."""
        mean = (self.january_high + self.july_high) / 2
        half = (self.july_high - self.january_high) / 2
        return mean + half * math.cos(2 * math.pi * (day.timetuple().tm_yday - 201) / 365.25)

    @property
    def base_temp(self) -> int:
        """The typical high in mid-March (°C), kept for services written against it; a
        service whose "today" moves with the task uses ``typical_high(world.today)``."""
        return round(self.typical_high(DEFAULT_TODAY))


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
        # services' seeded states in this world, by class (``Service.create``): built once,
        # shared copy-on-write by every episode here, and gone when the world is
        self.seeded: dict[type, Any] = {}
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
    def businesses(self) -> Businesses:
        """Businesses people deal with, by kind (restaurant, gym, hotel, pharmacy, insurer,
        airline, bank, vendor, venue, parking_operator, clinic, car_rental, agency,
        publisher): a few of each kind in every city, with names that fit the kind (a
        read-only mapping; a kind's businesses are made when first asked for)."""
        return draw_businesses([c.name for c in self.cities], self.rng("businesses"))

    def businesses_in(self, kind: str, city: str | None = None) -> tuple[Business, ...]:
        """The businesses of ``kind`` (in ``city``, if given)."""
        if city is None:
            return self.businesses.get(kind, ())
        place = self._city_index.get(city)
        if place is None or kind not in self.businesses:
            return ()
        # each kind lists its businesses city by city, PER_CITY of each, in the cities' order
        return self.businesses[kind][place * PER_CITY:(place + 1) * PER_CITY]

    @cached_property
    def _city_index(self) -> dict[str, int]:
        return {city.name: k for k, city in enumerate(self.cities)}

    def business(self, name: str) -> Business | None:
        """The business called ``name`` (case-insensitive), if any."""
        found = self._businesses_by_name.get(name.strip().lower())
        return None if found is None else self.businesses[found[0]][found[1]]

    @cached_property
    def _businesses_by_name(self) -> dict[str, tuple[str, int]]:
        """Lower-cased name -> (kind, index) of the business called that (the last one)."""
        found: dict[str, tuple[str, int]] = {}
        for kind in self.businesses:
            named = self.businesses.names(kind)
            found.update(zip([name.lower() for name, _ in named],
                             [(kind, i) for i in range(len(named))]))
        return found

    def owner_of(self, domain: str) -> Organization | Business | None:
        """The organisation or business whose web domain is ``domain``, if any."""
        found = self._by_domain.get(domain.strip().lower().removeprefix("www."))
        return self.businesses[found[0]][found[1]] if isinstance(found, tuple) else found

    @cached_property
    def _by_domain(self) -> dict[str, Organization | tuple[str, int]]:
        """Web domain -> its organisation, else (kind, index) of the first business there."""
        found: dict[str, Organization | tuple[str, int]] = {o.domain: o for o in self.orgs}
        for kind in self.businesses:
            for i, (_, domain) in enumerate(self.businesses.names(kind)):
                found.setdefault(domain, (kind, i))
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
        return self._people_by_phone.get(_NOT_DIGIT.sub("", phone))

    @cached_property
    def _people_by_phone(self) -> dict[str, Person]:
        return {_NOT_DIGIT.sub("", p.phone): p for p in self.people}

    def city(self, name: str) -> CityInfo | None:
        return self._cities_by_name.get(name.strip().lower())

    def at(self, days: int = 0, hour: int = 9, minute: int = 0) -> str:
        """An ISO datetime ``days`` after today (negative for the past)."""
        day = self.today + dt.timedelta(days=days)
        return f"{day.isoformat()}T{hour:02d}:{minute:02d}"

    def date(self, days: int = 0) -> str:
        return (self.today + dt.timedelta(days=days)).isoformat()

    def month(self, months: int = 0) -> str:
        """The name of the month ``months`` after today's (negative for the past): a past
        month's invoice is "Invoice for {world.month(-1)}", never a fixed month."""
        return _MONTHS[(self.today.month - 1 + months) % 12]

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

    @staticmethod
    def today_for(seed: int) -> dt.date:
        """The "today" of the world with ``seed`` as the composer sets it: a day of
        ``TODAY_RANGE`` drawn from the seed (a hash, so neighbouring seeds fall far apart)."""
        first, last = TODAY_RANGE
        digest = hashlib.blake2b(f"{int(seed)}/today".encode(), digest_size=8).digest()
        return first + dt.timedelta(days=int.from_bytes(digest, "big")
                                    % ((last - first).days + 1))

    @classmethod
    def dated(cls, seed: int) -> World:
        """The shared World for ``seed`` on its own day (``today_for``): where the composer
        sets the tasks of that seed. A task records both, so ``World.get(task.seed,
        task.today())`` is this world again."""
        return cls.get(seed, cls.today_for(seed))

    def __repr__(self) -> str:
        return f"World(seed={self.seed}, today={self.today.isoformat()})"


_WORLDS: SharedCache[tuple[int, dt.date], World] = SharedCache(maxsize=64)
