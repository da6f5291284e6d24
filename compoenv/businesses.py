"""Businesses of each kind in the World's cities, with names that fit the kind.

Employers (``World.orgs``) are the companies people work for; the businesses here are the
ones people deal with: a restaurant is called "Trattoria Verde", never "Helix Systems".
Every city has a few of each kind; names, addresses, phones and email domains are drawn from
the World's own random stream, so the same seed gives the same businesses byte for byte.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["Business", "KINDS", "build_businesses"]


@dataclass(frozen=True, slots=True)
class Business:
    """One business: its kind (a ``compoenv.roles`` organisation role), name and whereabouts."""

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
    "restaurant": (("Trattoria", "Bistro", "Café", "Taverna", "Brasserie", "Osteria"),
                   ("Verde", "Lumière", "del Porto", "Olivo", "Saffron", "Marea", "Rosso",
                    "Aurora"), "{a} {b}"),
    "gym": (("Iron", "Peak", "Core", "Pulse", "Summit", "Forge"),
            ("Fitness", "Athletic Club", "Strength Studio", "Gym"), "{a} {b}"),
    "hotel": (("Grand", "Harbor", "Meridian", "Riverside", "Park", "Royal"),
              ("Hotel", "Inn", "Suites", "Plaza Hotel"), "The {a} {b}"),
    "pharmacy": (("CityCare", "Green Cross", "Wellway", "MedPoint", "Corner"),
                 ("Pharmacy", "Chemists", "Drugstore"), "{a} {b}"),
    "insurer": (("Northwind", "Keystone", "Harborline", "Sentinel", "Evergreen"),
                ("Mutual", "Insurance", "Assurance"), "{a} {b}"),
    "airline": (("SkyBridge", "Aurora", "Blue Horizon", "Polar", "Meridian"),
                ("Airlines", "Air", "Airways"), "{a} {b}"),
    "bank": (("First Harbor", "Granite", "Union", "Crescent", "Lakeshore"),
             ("Bank", "Savings Bank", "Credit Union"), "{a} {b}"),
    "vendor": (("Brightline", "Apex", "Allied", "Northstar", "Clearwater", "Prime"),
               ("Office Supply", "Catering", "Cloud Services", "Print Shop", "IT Services",
                "Facilities"), "{a} {b}"),
    "venue": (("Riverside", "Harborview", "Oakhall", "Lakeside", "Foundry"),
              ("Conference Center", "Event Space", "Hall", "Pavilion"), "{a} {b}"),
    "parking_operator": (("CityPark", "EasyPark", "Central", "Metro"),
                         ("Garage", "Parking", "Park & Ride"), "{a} {b}"),
    "clinic": (("Lakeside", "Northgate", "Willow", "Harbor"),
               ("Medical Clinic", "Health Centre", "Family Practice"), "{a} {b}"),
    "car_rental": (("Roadway", "Compass", "Swift", "Open Road"),
                   ("Rentals", "Car Hire", "Auto Rental"), "{a} {b}"),
    "agency": (("Blue Fern", "Northlight", "Paper Kite", "Redline"),
               ("Marketing", "Creative", "Media Agency"), "{a} {b}"),
    "publisher": (("The Daily", "The Morning", "Metro", "The Evening"),
                  ("Ledger", "Courier", "Gazette", "Post"), "{a} {b}"),
}
KINDS: tuple[str, ...] = tuple(_NAMES)
_STREETS = ("Market", "Harbor", "Station", "Church", "Mill", "Garden", "Bridge", "Park", "Lake",
            "King", "Queen", "River")
PER_CITY = 3  # businesses of each kind in each city


def _slug(name: str) -> str:
    return "".join(c for c in name.lower() if c.isalnum()) or "business"


def build_businesses(cities: list[str], rng: random.Random) -> dict[str, tuple[Business, ...]]:
    """``PER_CITY`` businesses of every kind in every city, with distinct names per kind."""
    out: dict[str, tuple[Business, ...]] = {}
    for kind, (firsts, seconds, pattern) in _NAMES.items():
        combos = [(a, b) for a in firsts for b in seconds]
        rng.shuffle(combos)
        made: list[Business] = []
        used: set[str] = set()
        for city_index, city in enumerate(cities):
            for k in range(PER_CITY):
                a, b = combos[(city_index * PER_CITY + k) % len(combos)]
                name = pattern.format(a=a, b=b)
                if name in used:  # more cities than names: the city tells them apart
                    name = f"{name} {city}"
                used.add(name)
                made.append(Business(
                    name=name, kind=kind, city=city,
                    street=f"{rng.randint(1, 240)} {rng.choice(_STREETS)} Street",
                    phone=f"+1 555-{rng.randint(200, 999)}-{rng.randint(1000, 9999)}",
                    domain=f"{_slug(name)}.com"))
        out[kind] = tuple(made)
    return out
