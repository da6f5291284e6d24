"""Businesses of each kind in the World's cities, with names that fit the kind.

Employers (``World.orgs``) are the companies people work for; the businesses here are the
ones people deal with: a restaurant is called "Trattoria Verde", never "Helix Systems".
Every city has a few of each kind; names, addresses, phones and email domains are drawn from
the World's own random stream, so the same seed gives the same businesses byte for byte.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Mapping
from typing import NamedTuple

__all__ = ["Business", "Businesses", "KINDS", "build_businesses", "draw_businesses"]


class Business(NamedTuple):
    """One business: its kind (a ``compoenv.roles`` organisation role), name and whereabouts
    (a named tuple: about 1,200 are built per world)."""

    name: str
    kind: str
    city: str
    street: str
    phone: str
    domain: str

    @property
    def email(self) -> str:
        return f"hello@{self.domain}"


# kind -> (first words, second words, pattern); "{a} {b}" unless a pattern says otherwise
_NAMES: dict[str, tuple[tuple[str, ...], tuple[str, ...], str]] = {
    "restaurant": (("Trattoria", "Bistro", "Café", "Taverna", "Brasserie", "Osteria", "Cantina",
                    "Kitchen", "Grill", "Table"),
                   ("Verde", "Lumière", "del Porto", "Olivo", "Saffron", "Marea", "Rosso",
                    "Aurora", "Fig & Thyme", "Copper Pot"), "{a} {b}"),
    "gym": (("Iron", "Peak", "Core", "Pulse", "Summit", "Forge", "Atlas", "Motion", "Vital",
             "Titan"),
            ("Fitness", "Athletic Club", "Strength Studio", "Gym", "Training", "Health Club",
             "Fitness Lab", "Performance"), "{a} {b}"),
    "hotel": (("Grand", "Harbor", "Meridian", "Riverside", "Park", "Royal", "Linden", "Crown",
               "Bellevue", "Majestic"),
              ("Hotel", "Inn", "Suites", "Plaza Hotel", "Lodge", "House", "Residence",
               "Palace Hotel", "Boutique Hotel"), "The {a} {b}"),
    "pharmacy": (("CityCare", "Green Cross", "Wellway", "MedPoint", "Corner", "Apex Health",
                  "Lotus", "Bluebell", "Meadow", "Northside", "Harmony", "Evergreen"),
                 ("Pharmacy", "Chemists", "Drugstore", "Apothecary", "Pharmacy & Health",
                  "Dispensary", "Rx", "Health Pharmacy"), "{a} {b}"),
    "insurer": (("Northwind", "Keystone", "Harborline", "Sentinel", "Evergreen", "Beacon",
                 "Guardian Oak", "Liberty Bay", "Summit Shield", "Anchor"),
                ("Mutual", "Insurance", "Assurance", "Insurance Group", "General",
                 "Life & Home", "Cover", "Underwriters", "Insurance Co."), "{a} {b}"),
    "airline": (("SkyBridge", "Aurora", "Blue Horizon", "Polar", "Meridian", "Zephyr",
                 "Coastal", "Silverwing", "Nordic Star", "Sunline"),
                ("Airlines", "Air", "Airways", "Aviation", "Jet", "Wings", "Air Express",
                 "Flights", "Air Lines"), "{a} {b}"),
    "bank": (("First Harbor", "Granite", "Union", "Crescent", "Lakeshore", "Pioneer",
              "Heritage", "Capitol", "Riverbend", "Oakmont"),
             ("Bank", "Savings Bank", "Credit Union", "Trust", "Bank & Trust", "Financial",
              "Community Bank", "Savings", "National Bank"), "{a} {b}"),
    "vendor": (("Brightline", "Apex", "Allied", "Northstar", "Clearwater", "Prime", "Keystone",
                "Summit", "Harbor", "Metro"),
               ("Office Supply", "Catering", "Cloud Services", "Print Shop", "IT Services",
                "Facilities", "Cleaning Co.", "Logistics", "Furniture"), "{a} {b}"),
    "venue": (("Riverside", "Harborview", "Oakhall", "Lakeside", "Foundry", "Granary",
               "Skyline", "Old Mill", "Glasshouse", "Atrium"),
              ("Conference Center", "Event Space", "Hall", "Pavilion", "Studios", "Rooms",
               "Loft", "Gallery", "Forum"), "{a} {b}"),
    "parking_operator": (("CityPark", "EasyPark", "Central", "Metro", "Parkwise", "SafeSpot",
                          "QuickPark", "Urban", "Harbor", "Station"),
                         ("Garage", "Parking", "Park & Ride", "Car Park", "Parking Deck",
                          "Parking Co.", "Lots", "Valet", "Parking Centre"), "{a} {b}"),
    "clinic": (("Lakeside", "Northgate", "Willow", "Harbor", "Riverside", "Maple", "Cedar",
                "Parkview", "Hillcrest", "Brookside"),
               ("Medical Clinic", "Health Centre", "Family Practice", "Medical Group",
                "Clinic", "Health Clinic", "Care Centre", "Medical Centre", "Surgery"),
               "{a} {b}"),
    "car_rental": (("Roadway", "Compass", "Swift", "Open Road", "Budget Wheels", "Freeway",
                    "Mile Marker", "Cruise", "Drive Away", "Highline"),
                   ("Rentals", "Car Hire", "Auto Rental", "Car Rental", "Vehicle Hire",
                    "Rent-a-Car", "Motors", "Car Share", "Fleet"), "{a} {b}"),
    "agency": (("Blue Fern", "Northlight", "Paper Kite", "Redline", "Brightside", "Copperleaf",
                "Tall Tree", "Silver Fox", "Lighthouse", "Sparkwell"),
               ("Marketing", "Creative", "Media Agency", "Communications", "Digital",
                "Brand Studio", "Advertising", "PR", "Partners"), "{a} {b}"),
    "publisher": (("The Daily", "The Morning", "Metro", "The Evening", "The Weekly",
                   "City", "The National", "The Harbor", "The Valley", "Capital"),
                  ("Ledger", "Courier", "Gazette", "Post", "Herald", "Tribune", "Chronicle",
                   "Observer", "Times"), "{a} {b}"),
}
KINDS: tuple[str, ...] = tuple(_NAMES)
_STREETS = ("Market", "Harbor", "Station", "Church", "Mill", "Garden", "Bridge", "Park", "Lake",
            "King", "Queen", "River")
PER_CITY = 3  # businesses of each kind in each city


def _slug(name: str) -> str:
    return _NOT_ALNUM.sub("", name.lower()) or "business"


_NOT_ALNUM = re.compile(r"[\W_]+")


def build_businesses(cities: list[str], rng: random.Random) -> dict[str, tuple[Business, ...]]:
    """``PER_CITY`` businesses of every kind in every city, with distinct names per kind."""
    return dict(draw_businesses(cities, rng))


def draw_businesses(cities: list[str], rng: random.Random) -> Businesses:
    """``build_businesses``, its businesses made only when a kind is first asked for.

    Drawn for every World (one per composed task), so kept cheap: every draw is made now (a
    kind's draws follow the kinds before it in ``rng``'s stream), names and web domains are
    made once per kind, and draws go straight to ``rng.getrandbits``, as ``rng._randbelow``
    (the draw behind ``randint``, ``choice`` and ``shuffle``) makes them: the same stream, so
    the same businesses."""
    if type(rng) is not random.Random or rng._randbelow.__func__ is not _RANDBELOW:
        return _draw(cities, rng)  # a Random of another kind: its own draws
    # ``rng._randbelow(n)`` inlined (Random's own: ``getrandbits(n.bit_length())`` until one
    # falls below n), the same draws without a Python call each: ~5,000 draws per World
    bits = rng.getrandbits
    n_streets = len(_STREETS)
    k_streets = n_streets.bit_length()
    drawn: dict[str, tuple[list[tuple[str, str]], list[tuple[int, int, int, int]]]] = {}
    for kind, names in _KIND_NAMES.items():
        order = list(range(len(names)))
        for i in range(len(order) - 1, 0, -1):  # rng.shuffle(order)
            k = (i + 1).bit_length()
            j = bits(k)
            while j > i:
                j = bits(k)
            order[i], order[j] = order[j], order[i]
        named: list[tuple[str, str]] = []
        numbers: list[tuple[int, int, int, int]] = []
        used: set[str] = set()
        n_names = len(order)
        for city_index, city in enumerate(cities):
            for k in range(PER_CITY):
                name, domain = names[order[(city_index * PER_CITY + k) % n_names]]
                if name in used:  # more cities than names: the city tells them apart
                    name = f"{name} {city}"
                    domain = f"{_slug(name)}.com"
                used.add(name)
                named.append((name, domain))
                number = bits(8)  # below(240)
                while number >= 240:
                    number = bits(8)
                street = bits(k_streets)  # below(n_streets)
                while street >= n_streets:
                    street = bits(k_streets)
                area = bits(10)  # below(800)
                while area >= 800:
                    area = bits(10)
                line = bits(14)  # below(9000)
                while line >= 9000:
                    line = bits(14)
                numbers.append((number, street, area, line))
        drawn[kind] = (named, numbers)
    return Businesses(cities, drawn)


class Businesses(Mapping[str, tuple[Business, ...]]):
    """A World's businesses by kind (read-only): drawn at once, each kind's made on first use.

    ``names(kind)`` gives a kind's (name, web domain) pairs, in order, without making them."""

    __slots__ = ("_cities", "_drawn", "_made")

    def __init__(self, cities: list[str],
                 drawn: dict[str, tuple[list[tuple[str, str]], list[tuple[int, int, int, int]]]]
                 ) -> None:
        self._cities = cities
        self._drawn = drawn
        self._made: dict[str, tuple[Business, ...]] = {}

    def __getitem__(self, kind: str) -> tuple[Business, ...]:
        made = self._made.get(kind)
        if made is None:
            named, numbers = self._drawn[kind]
            cities = [city for city in self._cities for _ in range(PER_CITY)]
            made = self._made[kind] = tuple(
                Business(name, kind, city, f"{1 + number} {_STREETS[street]} Street",
                         f"+1 555-{200 + area}-{1000 + line}", domain)
                for (name, domain), (number, street, area, line), city
                in zip(named, numbers, cities))
        return made

    def __iter__(self) -> Iterator[str]:
        return iter(self._drawn)

    def __len__(self) -> int:
        return len(self._drawn)

    def __contains__(self, kind: object) -> bool:
        return kind in self._drawn

    def names(self, kind: str) -> list[tuple[str, str]]:
        """The (name, web domain) of each business of ``kind``, in order (a copy)."""
        return list(self._drawn[kind][0])

    def __repr__(self) -> str:
        return f"Businesses({dict(self)!r})"


_RANDBELOW = random.Random._randbelow


def _draw(cities: list[str], rng: random.Random) -> Businesses:
    """``draw_businesses`` through ``rng``'s own ``_randbelow`` and ``shuffle``."""
    below = rng._randbelow
    n_streets = len(_STREETS)
    drawn: dict[str, tuple[list[tuple[str, str]], list[tuple[int, int, int, int]]]] = {}
    for kind, names in _KIND_NAMES.items():
        order = list(range(len(names)))
        rng.shuffle(order)
        named: list[tuple[str, str]] = []
        numbers: list[tuple[int, int, int, int]] = []
        used: set[str] = set()
        for city_index, city in enumerate(cities):
            for k in range(PER_CITY):
                name, domain = names[order[(city_index * PER_CITY + k) % len(order)]]
                if name in used:  # more cities than names: the city tells them apart
                    name = f"{name} {city}"
                    domain = f"{_slug(name)}.com"
                used.add(name)
                named.append((name, domain))
                numbers.append((below(240), below(n_streets), below(800), below(9000)))
        drawn[kind] = (named, numbers)
    return Businesses(cities, drawn)


# each kind's names, in the order of its (first word, second word) pairs, with their domains
_KIND_NAMES: dict[str, tuple[tuple[str, str], ...]] = {
    kind: tuple((name, f"{_slug(name)}.com") for name in
                (pattern.format(a=a, b=b) for a in firsts for b in seconds))
    for kind, (firsts, seconds, pattern) in _NAMES.items()
}

