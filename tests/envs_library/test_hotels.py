"""Hotels: seeding, every tool through the envelope path, errors, and the interface contract."""

from __future__ import annotations

import re

import pytest

from compoenv import World
from envs_library.travel.flights import Flights
from envs_library.travel.hotels import Hotels

READS = {"search_hotels", "cheapest_hotel", "get_hotel", "list_reservations"}
WRITES = {"book_hotel", "cancel_reservation"}
PLAIN_PARAMS = {("book_hotel", "nights")}


@pytest.fixture
def hotels() -> Hotels:
    return Hotels(World(0))


def data(result: dict) -> object:
    assert result["success"], result
    return result["data"]


def failure(result: dict, code: int) -> str:
    assert not result["success"], result
    assert result["error"]["code"] == code, result
    return result["error"]["message"]


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


def test_same_seed_same_state_different_seed_different_state() -> None:
    assert Hotels(World(0)).state.digest() == Hotels(World(0)).state.digest()
    assert Hotels(World(0)).state.digest() != Hotels(World(1)).state.digest()


def test_seeded_state_stays_small(hotels: Hotels) -> None:
    assert len(hotels.state.model_dump_json()) < 60_000


def test_every_flight_destination_has_hotels() -> None:
    world = World(0)
    hotels = Hotels(world)
    for city in {f.destination_city for f in Flights(world).state.flights.values()}:
        assert data(hotels.call("search_hotels", {"city": city})), city


# --- reads --------------------------------------------------------------------------------
def test_search_hotels_cheapest_first_and_max_rate(hotels: Hotels) -> None:
    found = data(hotels.call("search_hotels", {"city": "paris"}))
    assert len(found) == 3 and {h["city"] for h in found} == {"Paris"}
    rates = [h["nightly_rate"] for h in found]
    assert rates == sorted(rates)
    capped = data(hotels.call("search_hotels", {"city": "Paris", "max_rate": rates[1]}))
    assert [h["id"] for h in capped] == [h["id"] for h in found if h["nightly_rate"] <= rates[1]]
    assert "Did you mean 'Paris'" in failure(hotels.call("search_hotels", {"city": "Pari"}), 404)
    failure(hotels.call("search_hotels", {"city": "Paris", "max_rate": "cheap"}), 400)


def test_cheapest_hotel_has_a_free_room(hotels: Hotels) -> None:
    for city in hotels.world.cities:
        here = [h for h in hotels.state.hotels.values()
                if h.city == city.name and h.rooms_left > 0]
        if not here:
            failure(hotels.call("cheapest_hotel", {"city": city.name}), 404)
            continue
        cheapest = data(hotels.call("cheapest_hotel", {"city": city.name}))
        assert cheapest["nightly_rate"] == min(h.nightly_rate for h in here)
        assert cheapest["rooms_left"] > 0


def test_cheapest_hotel_404_when_city_is_full_or_unknown(hotels: Hotels) -> None:
    for h in hotels.state.hotels.values():
        if h.city == "Oslo":
            h.rooms_left = 0
    failure(hotels.call("cheapest_hotel", {"city": "Oslo"}), 404)
    assert "Did you mean 'Oslo'" in failure(hotels.call("cheapest_hotel", {"city": "Olso"}), 404)


def test_get_hotel(hotels: Hotels) -> None:
    assert data(hotels.call("get_hotel", {"hotel_id": "H-0002"}))["id"] == "H-0002"
    assert "Did you mean" in failure(hotels.call("get_hotel", {"hotel_id": "H-00002"}), 404)
    failure(hotels.call("get_hotel", {"hotel_id": "2"}), 400)


def test_reads_do_not_change_state(hotels: Hotels) -> None:
    before = hotels.state.digest()
    for name, args in [("search_hotels", {"city": "Rome"}), ("cheapest_hotel", {"city": "Rome"}),
                       ("get_hotel", {"hotel_id": "H-0001"}), ("list_reservations", {})]:
        data(hotels.call(name, args))
    assert hotels.state.digest() == before


# --- writes -------------------------------------------------------------------------------
def test_book_hotel_reserves_a_room(hotels: Hotels) -> None:
    hotel = open_hotel(hotels)
    rooms, before = hotel.rooms_left, hotels.state.digest()
    reservation = data(hotels.call("book_hotel", stay(hotels, hotel.id)))
    assert reservation["id"] == f"R-{len(hotels.state.reservations):04d}"
    assert reservation["total"] == hotel.nightly_rate * 3
    assert reservation["city"] == hotel.city and reservation["status"] == "confirmed"
    assert hotels.state.hotels[hotel.id].rooms_left == rooms - 1
    assert hotels.state.digest() != before
    assert reservation in data(hotels.call("list_reservations", {}))


def test_book_hotel_conflicts_and_bad_dates(hotels: Hotels) -> None:
    full = next(h for h in hotels.state.hotels.values() if h.rooms_left == 0)
    hotel = open_hotel(hotels)
    before = hotels.state.digest()
    failure(hotels.call("book_hotel", stay(hotels, full.id)), 409)
    assert "past" in failure(hotels.call("book_hotel", stay(hotels, hotel.id,
                                                            check_in=hotels.world.date(-1))), 400)
    failure(hotels.call("book_hotel", stay(hotels, hotel.id, check_in="2026-02-30")), 400)
    failure(hotels.call("book_hotel", stay(hotels, hotel.id, check_in="next week")), 400)
    failure(hotels.call("book_hotel", stay(hotels, hotel.id, nights=0)), 400)
    failure(hotels.call("book_hotel", stay(hotels, hotel.id, nights=31)), 400)
    failure(hotels.call("book_hotel", stay(hotels, "H-9999")), 404)
    assert hotels.state.digest() == before
    data(hotels.call("book_hotel", stay(hotels, hotel.id, check_in=hotels.world.date(0))))


def test_cancel_reservation_releases_the_room(hotels: Hotels) -> None:
    rid, reservation = next(iter(hotels.state.reservations.items()))
    rooms = hotels.state.hotels[reservation.hotel_id].rooms_left
    assert data(hotels.call("cancel_reservation", {"reservation_id": rid}))["status"] == \
        "cancelled"
    assert hotels.state.hotels[reservation.hotel_id].rooms_left == rooms + 1
    before = hotels.state.digest()
    failure(hotels.call("cancel_reservation", {"reservation_id": rid}), 409)
    assert hotels.state.digest() == before
    assert "Did you mean" in failure(hotels.call("cancel_reservation",
                                                 {"reservation_id": "R-0009"}), 404)


def test_writes_on_a_shared_seed_do_not_leak() -> None:
    world = World(0)
    first, second = Hotels.create(world), Hotels.create(world)
    data(first.call("book_hotel", stay(first, open_hotel(first).id)))
    assert second.state.digest() == Hotels(world).state.digest()


# --- contract -----------------------------------------------------------------------------
def test_tools_and_read_only_flags() -> None:
    specs = Hotels.tool_specs()
    assert set(specs) == READS | WRITES
    assert {name for name, s in specs.items() if s.read_only} == READS
    assert all(s.description for s in specs.values())


def test_every_phrase_names_each_required_parameter() -> None:
    for spec in Hotels.tool_specs().values():
        assert spec.phrase, spec.name
        placeholders = set(re.findall(r"\{(\w+)\}", spec.phrase))
        assert set(spec.parameters.get("required", [])) <= placeholders, spec.name
        assert placeholders <= set(spec.parameters["properties"]), spec.name


def test_every_non_free_text_parameter_has_an_interface() -> None:
    for spec in Hotels.tool_specs().values():
        tagged = {slot.path[0] for slot in spec.inputs}
        for param in spec.parameters["properties"]:
            assert param in tagged or (spec.name, param) in PLAIN_PARAMS, (spec.name, param)
