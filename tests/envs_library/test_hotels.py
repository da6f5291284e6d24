"""Hotels: seeding, every tool through the envelope path, errors, and the interface contract."""

from __future__ import annotations

import re

import pytest

from compoenv import World
from compoenv.crud import update
from compoenv.testing import call_error, call_ok, check_service
from envs_library.travel.flights import Flights
from envs_library.travel.hotels import Hotels

READS = {"search_hotels", "cheapest_hotel", "get_hotel", "list_reservations"}
WRITES = {"book_hotel", "cancel_reservation"}
FREE_TEXT = ["book_hotel.nights"]


@pytest.fixture
def hotels() -> Hotels:
    return Hotels(World(0))


def stay(hotels: Hotels, hotel_id: str, **changes: object) -> dict:
    return {"hotel_id": hotel_id, "guest": "Ada Lovelace", "guest_email": "ada@example.com",
            "check_in": hotels.world.date(5), "nights": 3, **changes}


def open_hotel(hotels: Hotels):
    return next(h for h in hotels.state.hotels.values() if h.rooms_left > 0)


# --- seed ---------------------------------------------------------------------------------
def test_seed_has_three_hotels_in_every_city(hotels: Hotels) -> None:
    for city in hotels.world.cities:
        here = [h for h in hotels.state.hotels.values() if h.city == city.name]
        assert len(here) == 3, city.name
        assert all(h.address.city == city.name and h.address.country == city.country
                   for h in here)
    assert any(h.rooms_left == 0 for h in hotels.state.hotels.values())


def test_seed_has_reservations_of_the_user(hotels: Hotels) -> None:
    assert hotels.state.reservations
    for reservation in hotels.state.reservations.values():
        hotel = hotels.state.hotels[reservation.hotel_id]
        assert reservation.guest_email == hotels.world.user.email
        assert reservation.total == hotel.nightly_rate * reservation.nights
        assert reservation.check_in >= hotels.world.date(0)


def test_seeded_state_stays_small(hotels: Hotels) -> None:
    assert len(hotels.state.model_dump_json()) < 60_000


def test_every_flight_destination_has_hotels() -> None:
    world = World(0)
    hotels = Hotels(world)
    for city in {f.destination_city for f in Flights(world).state.flights.values()}:
        assert call_ok(hotels, "search_hotels", city=city), city


# --- reads --------------------------------------------------------------------------------
def test_search_hotels_cheapest_first_and_max_rate(hotels: Hotels) -> None:
    found = call_ok(hotels, "search_hotels", city="paris")
    assert len(found) == 3 and {h["city"] for h in found} == {"Paris"}
    rates = [h["nightly_rate"] for h in found]
    assert rates == sorted(rates)
    capped = call_ok(hotels, "search_hotels", city="Paris", max_rate=rates[1])
    assert [h["id"] for h in capped] == [h["id"] for h in found if h["nightly_rate"] <= rates[1]]
    err = call_error(hotels, "search_hotels", city="Pari")
    assert err["code"] == 404 and "Did you mean 'Paris'" in err["message"]
    assert call_error(hotels, "search_hotels", city="Paris", max_rate="cheap")["code"] == 400


def test_cheapest_hotel_has_a_free_room(hotels: Hotels) -> None:
    for city in hotels.world.cities:
        here = [h for h in hotels.state.hotels.values()
                if h.city == city.name and h.rooms_left > 0]
        if not here:
            assert call_error(hotels, "cheapest_hotel", city=city.name)["code"] == 404
            continue
        cheapest = call_ok(hotels, "cheapest_hotel", city=city.name)
        assert cheapest["nightly_rate"] == min(h.nightly_rate for h in here)
        assert cheapest["rooms_left"] > 0


def test_cheapest_hotel_404_when_city_is_full_or_unknown(hotels: Hotels) -> None:
    for key, h in list(hotels.state.hotels.items()):
        if h.city == "Oslo":
            update(hotels.state.hotels, key, rooms_left=0)
    assert call_error(hotels, "cheapest_hotel", city="Oslo")["code"] == 404
    err = call_error(hotels, "cheapest_hotel", city="Olso")
    assert err["code"] == 404 and "Did you mean 'Oslo'" in err["message"]


def test_get_hotel(hotels: Hotels) -> None:
    assert call_ok(hotels, "get_hotel", hotel_id="H-0002")["id"] == "H-0002"
    err = call_error(hotels, "get_hotel", hotel_id="H-00002")
    assert err["code"] == 404 and "Did you mean" in err["message"]
    assert call_error(hotels, "get_hotel", hotel_id="2")["code"] == 400


def test_reads_do_not_change_state(hotels: Hotels) -> None:
    before = hotels.state.digest()
    for name, args in [("search_hotels", {"city": "Rome"}), ("cheapest_hotel", {"city": "Rome"}),
                       ("get_hotel", {"hotel_id": "H-0001"}), ("list_reservations", {})]:
        call_ok(hotels, name, **args)
    assert hotels.state.digest() == before


# --- writes -------------------------------------------------------------------------------
def test_book_hotel_reserves_a_room(hotels: Hotels) -> None:
    hotel = open_hotel(hotels)
    rooms, before = hotel.rooms_left, hotels.state.digest()
    reservation = call_ok(hotels, "book_hotel", **stay(hotels, hotel.id))
    # a new id in the service's format, drawn (not the next number: no other task tells it)
    assert re.fullmatch(r"R-\d{4}", reservation["id"]) and reservation["id"] in hotels.state.reservations
    assert reservation["id"] != f"R-{len(hotels.state.reservations):04d}"
    assert reservation["total"] == hotel.nightly_rate * 3
    assert reservation["city"] == hotel.city and reservation["status"] == "confirmed"
    assert hotels.state.hotels[hotel.id].rooms_left == rooms - 1
    assert hotels.state.digest() != before
    assert reservation in call_ok(hotels, "list_reservations")


def test_book_hotel_conflicts_and_bad_dates(hotels: Hotels) -> None:
    full = next(h for h in hotels.state.hotels.values() if h.rooms_left == 0)
    hotel = open_hotel(hotels)
    before = hotels.state.digest()
    assert call_error(hotels, "book_hotel", **stay(hotels, full.id))["code"] == 409
    err = call_error(hotels, "book_hotel", **stay(hotels, hotel.id, check_in=hotels.world.date(-1)))
    assert err["code"] == 400 and "past" in err["message"]
    assert call_error(hotels, "book_hotel",
                      **stay(hotels, hotel.id, check_in="2026-02-30"))["code"] == 400
    assert call_error(hotels, "book_hotel",
                      **stay(hotels, hotel.id, check_in="next week"))["code"] == 400
    assert call_error(hotels, "book_hotel", **stay(hotels, hotel.id, nights=0))["code"] == 400
    assert call_error(hotels, "book_hotel", **stay(hotels, hotel.id, nights=31))["code"] == 400
    assert call_error(hotels, "book_hotel", **stay(hotels, "H-9999"))["code"] == 404
    assert hotels.state.digest() == before
    call_ok(hotels, "book_hotel", **stay(hotels, hotel.id, check_in=hotels.world.date(0)))


def test_cancel_reservation_releases_the_room(hotels: Hotels) -> None:
    rid, reservation = next(iter(hotels.state.reservations.items()))
    rooms = hotels.state.hotels[reservation.hotel_id].rooms_left
    assert call_ok(hotels, "cancel_reservation", reservation_id=rid)["status"] == "cancelled"
    assert hotels.state.hotels[reservation.hotel_id].rooms_left == rooms + 1
    before = hotels.state.digest()
    assert call_error(hotels, "cancel_reservation", reservation_id=rid)["code"] == 409
    assert hotels.state.digest() == before
    err = call_error(hotels, "cancel_reservation", reservation_id="R-0009")
    assert err["code"] == 404 and "Did you mean" in err["message"]


def test_writes_on_a_shared_seed_do_not_leak() -> None:
    world = World(0)
    first, second = Hotels.create(world), Hotels.create(world)
    call_ok(first, "book_hotel", **stay(first, open_hotel(first).id))
    assert second.state.digest() == Hotels(world).state.digest()


# --- contract -----------------------------------------------------------------------------
def test_tools_and_read_only_flags() -> None:
    specs = Hotels.tool_specs()
    assert set(specs) == READS | WRITES
    assert {name for name, s in specs.items() if s.read_only} == READS
    assert all(s.description for s in specs.values())


def test_hotels_passes_the_service_checker() -> None:
    check_service(Hotels, free_text=FREE_TEXT)
