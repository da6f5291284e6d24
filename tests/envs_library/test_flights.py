"""Flights: seeding, every tool through the envelope path, errors, and the interface contract."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from compoenv import World
from compoenv.crud import update
from compoenv.testing import call_error, call_ok, check_service
from envs_library.travel.flights import Flights

READS = {"search_flights", "cheapest_flight", "get_flight", "get_booking", "list_bookings"}
WRITES = {"book_flight", "cancel_booking"}
PASSENGER = {"passenger": "Ada Lovelace", "passenger_email": "ada@example.com"}


@pytest.fixture
def flights() -> Flights:
    return Flights(World(0))


def busiest_route(flights: Flights) -> dict[str, str]:
    """Origin, destination and date of a route-day with at least two flights."""
    counts = Counter((f.origin_city, f.destination_city, f.departure[:10])
                     for f in flights.state.flights.values())
    (origin, destination, date), n = counts.most_common(1)[0]
    assert n >= 2
    return {"origin_city": origin, "destination_city": destination, "date": date}


def open_flight(flights: Flights):
    return next(f for f in flights.state.flights.values() if f.seats_left > 0)


# --- seed ---------------------------------------------------------------------------------
def test_seed_has_flights_over_the_next_three_weeks(flights: Flights) -> None:
    world = flights.world
    cities = {c.name: c for c in world.cities}
    assert 120 <= len(flights.state.flights) <= 180
    for number, f in flights.state.flights.items():
        assert number == f.number
        assert world.date(1) <= f.departure[:10] <= world.date(21)
        assert f.origin_city != f.destination_city
        assert cities[f.origin_city].airport == f.origin
        assert cities[f.destination_city].airport == f.destination
    assert any(f.seats_left == 0 for f in flights.state.flights.values())
    assert any(f.origin_city == world.user.city for f in flights.state.flights.values())


def test_seed_has_bookings_of_the_user(flights: Flights) -> None:
    assert flights.state.bookings
    for ref, booking in flights.state.bookings.items():
        assert ref == booking.reference and re.fullmatch(r"[A-Z0-9]{6}", ref)
        assert booking.passenger_email == flights.world.user.email
        assert booking.departure == flights.state.flights[booking.flight_number].departure


def test_seeded_state_stays_small(flights: Flights) -> None:
    assert len(flights.state.model_dump_json()) < 80_000


# --- reads --------------------------------------------------------------------------------
def test_search_flights_finds_the_route_on_that_date(flights: Flights) -> None:
    route = busiest_route(flights)
    found = call_ok(flights, "search_flights",
                    **{**route, "origin_city": route["origin_city"].lower()})
    assert len(found) >= 2
    assert [f["departure"] for f in found] == sorted(f["departure"] for f in found)
    for f in found:
        assert (f["origin_city"], f["destination_city"]) == (route["origin_city"],
                                                             route["destination_city"])
        assert f["departure"].startswith(route["date"])


def test_search_flights_unknown_city_is_404_with_did_you_mean(flights: Flights) -> None:
    err = call_error(flights, "search_flights", origin_city="Parsi", destination_city="Rome",
                     date="2026-03-20")
    assert err["code"] == 404 and "Did you mean 'Paris'" in err["message"]
    assert call_error(flights, "search_flights", origin_city="Rome", destination_city="rome",
                      date="2026-03-20")["code"] == 400
    assert call_error(flights, "search_flights", origin_city="Rome", destination_city="Paris",
                      date="20 March")["code"] == 400


def test_cheapest_flight_has_seats_and_lowest_price(flights: Flights) -> None:
    route = busiest_route(flights)
    cheapest = call_ok(flights, "cheapest_flight", **route)
    candidates = [f for f in call_ok(flights, "search_flights", **route) if f["seats_left"] > 0]
    assert cheapest["seats_left"] > 0
    assert cheapest["price"] == min(f["price"] for f in candidates)


def test_cheapest_flight_is_404_when_nothing_flies(flights: Flights) -> None:
    route = busiest_route(flights)
    assert call_error(flights, "cheapest_flight",
                      **{**route, "date": flights.world.date(60)})["code"] == 404
    for key, f in list(flights.state.flights.items()):
        update(flights.state.flights, key, seats_left=0)
    assert call_error(flights, "cheapest_flight", **route)["code"] == 404


def test_get_flight(flights: Flights) -> None:
    flight = open_flight(flights)
    assert call_ok(flights, "get_flight", flight_number=flight.number)["departure"] == \
        flight.departure
    err = call_error(flights, "get_flight", flight_number=flight.number + "9")
    assert err["code"] == 404 and "Did you mean" in err["message"]
    assert call_error(flights, "get_flight", flight_number="flight one")["code"] == 400


def test_reads_do_not_change_state(flights: Flights) -> None:
    before = flights.state.digest()
    route = busiest_route(flights)
    ref = next(iter(flights.state.bookings))
    for name, args in [("search_flights", route), ("cheapest_flight", route),
                       ("get_flight", {"flight_number": open_flight(flights).number}),
                       ("get_booking", {"reference": ref}), ("list_bookings", {})]:
        call_ok(flights, name, **args)
    assert flights.state.digest() == before


# --- writes -------------------------------------------------------------------------------
def test_book_flight_takes_a_seat_and_is_deterministic(flights: Flights) -> None:
    flight = open_flight(flights)
    seats, before = flight.seats_left, flights.state.digest()
    booking = call_ok(flights, "book_flight", flight_number=flight.number, **PASSENGER)
    assert re.fullmatch(r"[A-Z0-9]{6}", booking["reference"])
    assert booking["reference"] not in Flights(World(0)).state.bookings
    assert booking["status"] == "confirmed" and booking["price"] == flight.price
    assert booking["departure"] == flight.departure
    assert flights.state.flights[flight.number].seats_left == seats - 1
    assert flights.state.digest() != before
    again = Flights(World(0))
    assert call_ok(again, "book_flight", flight_number=flight.number, **PASSENGER) == booking
    assert call_ok(flights, "get_booking", reference=booking["reference"]) == booking
    assert booking in call_ok(flights, "list_bookings")


def test_book_flight_conflicts(flights: Flights) -> None:
    full = next(f for f in flights.state.flights.values() if f.seats_left == 0)
    before = flights.state.digest()
    err = call_error(flights, "book_flight", flight_number=full.number, **PASSENGER)
    assert err["code"] == 409 and "full" in err["message"]
    assert flights.state.digest() == before
    flight = open_flight(flights)
    call_ok(flights, "book_flight", flight_number=flight.number, **PASSENGER)
    assert call_error(flights, "book_flight", flight_number=flight.number,
                      **PASSENGER)["code"] == 409
    assert call_error(flights, "book_flight", flight_number="ZZ9999", **PASSENGER)["code"] == 404
    assert call_error(flights, "book_flight", flight_number=flight.number, passenger="Ada",
                      passenger_email="not-an-email")["code"] == 400


def test_cancel_booking_releases_the_seat(flights: Flights) -> None:
    ref, booking = next(iter(flights.state.bookings.items()))
    seats = flights.state.flights[booking.flight_number].seats_left
    assert call_ok(flights, "cancel_booking", reference=ref)["status"] == "cancelled"
    assert flights.state.flights[booking.flight_number].seats_left == seats + 1
    before = flights.state.digest()
    assert call_error(flights, "cancel_booking", reference=ref)["code"] == 409
    assert flights.state.digest() == before
    err = call_error(flights, "cancel_booking", reference=ref[:5] + "Q")
    assert err["code"] == 404 and "Did you mean" in err["message"]
    assert call_error(flights, "cancel_booking", reference="abc")["code"] == 400


def test_writes_on_a_shared_seed_do_not_leak() -> None:
    world = World(0)
    first, second = Flights.create(world), Flights.create(world)
    call_ok(first, "book_flight", flight_number=open_flight(first).number, **PASSENGER)
    assert second.state.digest() == Flights(world).state.digest()


# --- contract -----------------------------------------------------------------------------
def test_tools_and_read_only_flags() -> None:
    specs = Flights.tool_specs()
    assert set(specs) == READS | WRITES
    assert {name for name, s in specs.items() if s.read_only} == READS
    assert all(s.description for s in specs.values())


def test_flights_passes_the_service_checker() -> None:
    check_service(Flights, free_text=[])
