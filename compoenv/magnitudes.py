"""Realistic magnitudes per role: salaries by job title and city, fares by distance, fees,
premiums, prices and budgets in the ranges real ones take.

``draw(role, rng, ...)`` gives a value a user or a world model could plausibly state for a
slot of that role; ``plausible(role, value)`` says whether a value is within the range (the
task linter's magnitude rule uses it).
"""

from __future__ import annotations

import math
import random

__all__ = ["RANGES", "PERCENTAGES", "draw", "percentage", "plausible", "salary_for",
           "fare_between", "distance_km"]

# role -> (low, high, rounding step): the range a value of that role takes (money in the
# world's currency units)
RANGES: dict[str, tuple[float, float, float]] = {
    "salary": (18_000, 260_000, 500), "pay": (1_200, 16_000, 0.01),
    "income": (20_000, 400_000, 100), "bonus": (500, 25_000, 50),
    "price": (5, 1_500, 0.01), "fee": (2, 250, 0.01), "fare": (12, 1_400, 0.01),
    "premium": (15, 600, 0.01), "rent": (650, 4_800, 5), "deposit": (200, 9_000, 10),
    "budget": (200, 50_000, 50), "amount_due": (20, 12_000, 0.01),
    "payment": (5, 12_000, 0.01), "refund": (5, 1_500, 0.01), "expense": (5, 2_500, 0.01),
    "tax": (10, 60_000, 0.01), "deduction": (5, 4_000, 0.01), "balance": (-2_000, 60_000, 0.01),
    "total": (5, 20_000, 0.01), "cost": (5, 20_000, 0.01), "spend": (50, 40_000, 0.01),
    "revenue": (10_000, 50_000_000, 1_000), "estimate": (50, 20_000, 0.01),
    "value": (100, 2_000_000, 100), "limit": (100, 100_000, 50), "rate": (10, 450, 0.5),
    "claim": (50, 25_000, 0.01), "gain": (-20_000, 50_000, 0.01),
}

_TITLE_BASE = {  # a mid-market yearly salary per title, before the city factor
    "Engineer": 118_000, "Designer": 92_000, "Product Manager": 128_000,
    "Accountant": 78_000, "Analyst": 84_000, "Sales Lead": 96_000, "Recruiter": 70_000,
    "Data Scientist": 124_000, "Operations Manager": 92_000, "Lawyer": 135_000,
    "Nurse": 76_000, "Architect": 98_000, "Marketing Manager": 102_000,
    "Consultant": 104_000, "Teacher": 58_000, "Chef": 52_000,
}
_CITY_FACTOR = {
    "Zurich": 1.45, "Seattle": 1.3, "Boston": 1.25, "London": 1.2, "Sydney": 1.15,
    "Singapore": 1.15, "Toronto": 1.05, "Chicago": 1.1, "Austin": 1.05, "Miami": 1.0,
    "Tokyo": 1.0, "Seoul": 0.95, "Munich": 1.05, "Amsterdam": 1.05, "Stockholm": 1.0,
    "Oslo": 1.1, "Dublin": 1.05, "Paris": 1.0, "Berlin": 0.95, "Vienna": 0.95,
    "Montreal": 0.9, "Barcelona": 0.8, "Madrid": 0.8, "Rome": 0.8, "Prague": 0.65,
    "Lisbon": 0.7, "Athens": 0.6, "Nairobi": 0.45,
}
# (latitude, longitude) of the World's cities, for distances and fares
COORDS = {
    "Amsterdam": (52.37, 4.90), "Athens": (37.98, 23.73), "Austin": (30.27, -97.74),
    "Barcelona": (41.39, 2.17), "Berlin": (52.52, 13.40), "Boston": (42.36, -71.06),
    "Chicago": (41.88, -87.63), "Dublin": (53.35, -6.26), "Lisbon": (38.72, -9.14),
    "London": (51.51, -0.13), "Madrid": (40.42, -3.70), "Miami": (25.76, -80.19),
    "Montreal": (45.50, -73.57), "Munich": (48.14, 11.58), "Nairobi": (-1.29, 36.82),
    "Oslo": (59.91, 10.75), "Paris": (48.86, 2.35), "Prague": (50.08, 14.44),
    "Rome": (41.90, 12.50), "Seattle": (47.61, -122.33), "Seoul": (37.57, 126.98),
    "Singapore": (1.35, 103.82), "Stockholm": (59.33, 18.07), "Sydney": (-33.87, 151.21),
    "Tokyo": (35.68, 139.69), "Toronto": (43.65, -79.38), "Vienna": (48.21, 16.37),
    "Zurich": (47.38, 8.54),
}


def _round(value: float, step: float) -> float:
    rounded = round(round(value / step) * step, 2)
    return float(int(rounded)) if step >= 1 else rounded


def salary_for(title: str | None, city: str | None, rng: random.Random) -> float:
    """A yearly salary for a job title in a city (±12% around the market figure)."""
    base = _TITLE_BASE.get(title or "", 90_000) * _CITY_FACTOR.get(city or "", 1.0)
    return _round(base * rng.uniform(0.88, 1.12), 500)


def distance_km(a: str, b: str) -> float:
    """Great-circle distance between two of the World's cities (0 when either is unknown)."""
    if a not in COORDS or b not in COORDS:
        return 0.0
    (lat1, lon1), (lat2, lon2) = COORDS[a], COORDS[b]
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * 6371 * math.asin(math.sqrt(h))


def fare_between(origin: str, destination: str, rng: random.Random) -> float:
    """A one-way economy fare: a base plus a per-km rate that falls with distance."""
    km = distance_km(origin, destination) or rng.uniform(400, 3000)
    fare = 45 + 0.11 * km ** 0.92 * rng.uniform(0.85, 1.25)
    return _round(min(fare, RANGES["fare"][1]), 0.01)


def draw(role: str | None, rng: random.Random, *, title: str | None = None,
         city: str | None = None) -> float | None:
    """A plausible money value for ``role`` (None for roles with no range)."""
    if role == "salary":
        return salary_for(title, city, rng)
    if role not in RANGES:
        return None
    low, high, step = RANGES[role]
    # log-uniform for positive ranges: small fees are common, huge ones rare
    if low > 0:
        value = math.exp(rng.uniform(math.log(low), math.log(high)))
    else:
        value = rng.uniform(low, high)
    return _round(value, step)


# a percentage's range by what its field measures (the first word that names it wins):
# (word, low, high, rounding step); anything else spans 0-100
PERCENTAGES: tuple[tuple[str, float, float, float], ...] = (
    ("federal", 10, 37, 1), ("state_rate", 0, 13, 0.5), ("sales_tax", 0, 10, 0.25),
    ("vat", 5, 27, 1), ("marginal", 10, 45, 1), ("top_income", 20, 55, 1),
    ("effective", 5, 35, 0.5), ("penalty", 1, 10, 0.5), ("click_through", 0.3, 12, 0.1),
    ("conversion", 0.5, 15, 0.1), ("bounce", 20, 80, 0.1), ("exit", 10, 70, 0.1),
    ("completion", 40, 100, 1), ("confidence", 60, 100, 1), ("satisfaction", 55, 99, 1),
    ("dividend", 0.5, 7, 0.01), ("five_star", 20, 85, 1), ("probability", 5, 95, 1),
    ("share", 1, 60, 0.1), ("allocation", 10, 100, 10),
)


def percentage(field: str, rng: random.Random) -> float:
    """A plausible percentage for a field named ``field``: a federal tax rate of 10-37, a
    click-through rate of a few percent, a satisfaction score of 55-99."""
    name = field.lower()
    low, high, step = next(((lo, hi, st) for word, lo, hi, st in PERCENTAGES if word in name),
                           (0, 100, 1))
    return _round(rng.uniform(low, high), step)


def plausible(role: str | None, value: float) -> bool:
    """Whether ``value`` is in the range a value of ``role`` takes (unknown roles: yes)."""
    if role not in RANGES or isinstance(value, bool):
        return True
    low, high, _ = RANGES[role]
    return low <= value <= high
