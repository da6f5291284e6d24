"""Hotels: a few hotels in every city of the world, and the user's reservations."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from pydantic import Field

from compoenv import Service, State, ToolError, tool
from compoenv.crud import cancel, find_city, get_or_404, next_id, update
from compoenv.roles import Role
from compoenv.interfaces import (
    Address, City, Date, EmailAddress, Hotel, HotelId, HotelReservation, Money, PersonName,
    ReservationId,
)
from compoenv.world import World

CURRENCY = "USD"
_NAMES = ("Grand", "Royal", "Harbor", "Park", "Garden", "Riverside", "Central", "Old Town",
          "Skyline", "Meridian", "Linden", "Lantern")
_KINDS = ("Hotel", "Inn", "Suites", "Lodge")
_STREETS = ("Station", "Market", "Castle", "Canal", "Bridge", "Church", "Harbor", "Garden")


class Hotels(Service):
    """Hotel search and booking: three hotels per city with rates, stars and free rooms."""

    name = "hotels"
    display = "the hotel booking site"
    domain = "travel"
    related = ("flights", "car_rental", "maps", "weather", "restaurants", "events_tickets", "reviews", "parking", "ride_hailing", "expense_reports", "translation")

    class State(State):
        hotels: dict[str, Hotel] = {}
        reservations: dict[str, HotelReservation] = {}

    def seed(self, world: World) -> Hotels.State:
        rng = world.rng(self.name)
        hotels = {}
        for city in world.cities:
            for name in rng.sample(_NAMES, 3):
                hid = f"H-{len(hotels) + 1:04d}"
                stars = rng.randrange(2, 6)
                hotels[hid] = Hotel(
                    id=hid, name=f"{name} {rng.choice(_KINDS)} {city.name}", city=city.name,
                    address=Address(
                        street=f"{rng.randrange(1, 200)} {rng.choice(_STREETS)} Street",
                        city=city.name, postal_code=f"{rng.randrange(10000, 99999)}",
                        country=city.country),
                    stars=stars, nightly_rate=float(stars * rng.randrange(30, 60)),
                    currency=CURRENCY,
                    rooms_left=0 if rng.random() < 0.1 else rng.randrange(1, 25))
        u = world.user
        reservations = {}
        open_hotels = [h for h in hotels.values() if h.rooms_left > 0 and h.city != u.city]
        for i, hotel in enumerate(rng.sample(open_hotels, 2), start=1):
            rid = f"R-{i:04d}"
            nights = rng.randrange(1, 6)
            reservations[rid] = HotelReservation(
                id=rid, hotel_id=hotel.id, hotel_name=hotel.name, city=hotel.city,
                guest=u.name, guest_email=u.email, check_in=world.date(rng.randrange(3, 21)),
                nights=nights, total=hotel.nightly_rate * nights, currency=hotel.currency)
        return self.State(hotels=hotels, reservations=reservations)

    @tool(read_only=True, phrase="search hotels in {city}")
    def search_hotels(self, city: Annotated[City, Role("hotel_city")],
                      max_rate: Annotated[Money, Role("limit")] | None = None) -> list[Hotel]:
        """Hotels in a city, cheapest first.

        Args:
            max_rate: Only hotels whose nightly rate is at most this.
        """
        info = find_city(self.world, city)
        hotels = [h for h in self.state.hotels.values() if h.city == info.name
                  and (max_rate is None or h.nightly_rate <= max_rate)]
        return sorted(hotels, key=lambda h: (h.nightly_rate, h.id))

    @tool(read_only=True, phrase="find the cheapest hotel with free rooms in {city}")
    def cheapest_hotel(self, city: Annotated[City, Role("hotel_city")]) -> Hotel:
        """The cheapest hotel in a city that has a free room (ties: lowest id)."""
        open_hotels = [h for h in self.search_hotels(city) if h.rooms_left > 0]
        if not open_hotels:
            raise ToolError(404, f"No hotel in {city} has a free room")
        return open_hotels[0]

    @tool(read_only=True, phrase="look up hotel {hotel_id}")
    def get_hotel(self, hotel_id: HotelId) -> Hotel:
        """Get a hotel by id."""
        return get_or_404(self.state.hotels, hotel_id, "hotel id")

    @tool(phrase="book hotel {hotel_id} for {guest} ({guest_email}) from {check_in} "
                 "for {nights} nights")
    def book_hotel(self, hotel_id: HotelId, guest: Annotated[PersonName, Role("guest")],
                   guest_email: Annotated[EmailAddress, Role("guest")], check_in: Annotated[Date, Role("check_in")],
                   nights: Annotated[int, Field(ge=1, le=30)]) -> HotelReservation:
        """Reserve one room at a hotel.

        Args:
            check_in: Arrival date, today or later.
            nights: Number of nights to stay (1-30).
        """
        hotel = get_or_404(self.state.hotels, hotel_id, "hotel id")
        try:
            arrival = dt.date.fromisoformat(check_in)
        except ValueError:
            raise ToolError(400, f"check_in {check_in!r} is not a calendar date") from None
        if arrival < self.world.today:
            raise ToolError(400, f"check_in {check_in} is in the past; today is "
                                 f"{self.world.today.isoformat()}")
        if hotel.rooms_left < 1:
            raise ToolError(409, f"{hotel.name} has no free rooms")
        rid = next_id("R-", self.state.reservations, salt=(self.world.seed, self.name,
                                                            hotel_id, check_in))
        reservation = HotelReservation(
            id=rid, hotel_id=hotel.id, hotel_name=hotel.name, city=hotel.city, guest=guest,
            guest_email=guest_email, check_in=arrival.isoformat(), nights=nights,
            total=hotel.nightly_rate * nights, currency=hotel.currency)
        update(self.state.hotels, hotel.id, rooms_left=hotel.rooms_left - 1)
        self.state.reservations[rid] = reservation
        return reservation

    @tool(phrase="cancel hotel reservation {reservation_id}")
    def cancel_reservation(self, reservation_id: ReservationId) -> HotelReservation:
        """Cancel a confirmed hotel reservation; its room is released."""
        reservation = cancel(self.state.reservations, reservation_id, "reservation id",
                             "Reservation")
        if (hotel := self.state.hotels.get(reservation.hotel_id)) is not None:
            update(self.state.hotels, hotel.id, rooms_left=hotel.rooms_left + 1)
        return reservation

    @tool(read_only=True, phrase="list my hotel reservations")
    def list_reservations(self) -> list[HotelReservation]:
        """List all hotel reservations, oldest first."""
        return list(self.state.reservations.values())
