"""Flights: scheduled flights between the world's cities over the next three weeks, and bookings."""

from __future__ import annotations

from typing import Annotated

from compoenv import Service, State, ToolError, tool
from compoenv.crud import cancel, find_city, get_or_404, update
from compoenv.roles import Role
from compoenv.interfaces import (
    Booking, BookingReference, City, Date, EmailAddress, Flight, FlightNumber, PersonName,
)
from compoenv.world import World

CURRENCY = "USD"
N_FLIGHTS = 150
_AIRLINES = ("CW", "NA", "SK", "BL", "TR", "LX")
_REFERENCE_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def _reference(world: World, n: int) -> str:
    """The n-th booking reference: six characters, fixed by the world seed and the count."""
    return "".join(world.rng(f"flights/booking/{n}").choices(_REFERENCE_CHARS, k=6))


class Flights(Service):
    """Flight search and booking: flights between cities over the next 21 days, seats, fares."""

    name = "flights"
    display = "the flight booking site"
    domain = "travel"
    related = ("hotels", "car_rental", "weather", "maps", "ride_hailing", "parking", "expense_reports", "translation", "insurance", "events_tickets")

    class State(State):
        flights: dict[str, Flight] = {}
        bookings: dict[str, Booking] = {}

    def seed(self, world: World) -> Flights.State:
        rng = world.rng(self.name)
        home = world.city(world.user.city)
        assert home is not None
        numbers = iter(rng.sample(range(100, 1000), N_FLIGHTS))
        durations: dict[tuple[str, str], int] = {}
        seen: set[tuple[str, str, int]] = set()
        flights: list[Flight] = []
        # flights come in groups of 2-3 per (route, day), mostly to and from the user's city,
        # so that searches find choices and "the cheapest flight" is meaningful
        while len(flights) < N_FLIGHTS:
            other = rng.choice([c for c in world.cities if c != home])
            roll = rng.random()
            route = ((home, other) if roll < 0.6 else (other, home) if roll < 0.8
                     else tuple(rng.sample(world.cities, 2)))
            day = rng.randrange(1, 22)
            if (route[0].name, route[1].name, day) in seen:
                continue
            seen.add((route[0].name, route[1].name, day))
            minutes = durations.setdefault((route[0].name, route[1].name),
                                           rng.randrange(14, 157) * 5)
            count = min(rng.choice((2, 3, 3)), N_FLIGHTS - len(flights))
            for hour in sorted(rng.sample(range(6, 22, 2), count)):
                flights.append(Flight(
                    number=f"{rng.choice(_AIRLINES)}{next(numbers)}",
                    origin=route[0].airport, destination=route[1].airport,
                    origin_city=route[0].name, destination_city=route[1].name,
                    departure=world.at(day, hour, rng.choice((0, 15, 30, 45))),
                    duration_minutes=minutes, price=float(rng.randrange(59, 900)),
                    currency=CURRENCY,
                    seats_left=0 if rng.random() < 0.12 else rng.randrange(1, 80)))
        flights.sort(key=lambda f: (f.departure, f.number))
        bookings = {}
        u = world.user
        upcoming = [f for f in flights if f.origin_city == home.name and f.seats_left > 0]
        for n, flight in enumerate(sorted(rng.sample(upcoming, 3), key=lambda f: f.departure),
                                   start=1):
            ref = _reference(world, n)
            bookings[ref] = Booking(
                reference=ref, flight_number=flight.number, passenger=u.name,
                passenger_email=u.email, departure=flight.departure, price=flight.price,
                currency=flight.currency)
        return self.State(flights={f.number: f for f in flights}, bookings=bookings)

    @tool(read_only=True,
          phrase="search flights from {origin_city} to {destination_city} on {date}")
    def search_flights(self, origin_city: Annotated[City, Role("origin")],
                       destination_city: Annotated[City, Role("destination")],
                       date: Annotated[Date, Role("departure")]) -> list[Flight]:
        """Flights from one city to another departing on a date, earliest first."""
        origin = find_city(self.world, origin_city)
        destination = find_city(self.world, destination_city)
        if origin == destination:
            raise ToolError(400, f"origin_city and destination_city are both {origin.name!r}")
        return [f for f in self.state.flights.values()
                if f.origin_city == origin.name and f.destination_city == destination.name
                and f.departure.startswith(date)]

    @tool(read_only=True,
          phrase="find the cheapest flight from {origin_city} to {destination_city} on {date}")
    def cheapest_flight(self, origin_city: Annotated[City, Role("origin")],
                        destination_city: Annotated[City, Role("destination")],
                        date: Annotated[Date, Role("departure")]) -> Flight:
        """The cheapest flight with free seats on a route and date (ties: earliest)."""
        open_flights = [f for f in self.search_flights(origin_city, destination_city, date)
                        if f.seats_left > 0]
        if not open_flights:
            raise ToolError(404, f"No flight with free seats from {origin_city} to "
                                 f"{destination_city} on {date}")
        return min(open_flights, key=lambda f: (f.price, f.departure))

    @tool(read_only=True, phrase="look up flight {flight_number}")
    def get_flight(self, flight_number: FlightNumber) -> Flight:
        """Get a flight by its flight number."""
        return get_or_404(self.state.flights, flight_number, "flight number")

    @tool(phrase="book flight {flight_number} for {passenger} ({passenger_email})")
    def book_flight(self, flight_number: FlightNumber, passenger: Annotated[PersonName, Role("passenger")],
                    passenger_email: Annotated[EmailAddress, Role("passenger")]) -> Booking:
        """Book one seat on a flight."""
        flight = get_or_404(self.state.flights, flight_number, "flight number")
        if flight.seats_left < 1:
            raise ToolError(409, f"Flight {flight_number} is full")
        if any(b.flight_number == flight_number and b.status == "confirmed"
               and b.passenger_email.lower() == passenger_email.lower()
               for b in self.state.bookings.values()):
            raise ToolError(409, f"{passenger_email} already holds a seat on {flight_number}")
        n = len(self.state.bookings) + 1
        while (ref := _reference(self.world, n)) in self.state.bookings:
            n += 1
        booking = Booking(
            reference=ref, flight_number=flight.number, passenger=passenger,
            passenger_email=passenger_email, departure=flight.departure, price=flight.price,
            currency=flight.currency)
        update(self.state.flights, flight_number, seats_left=flight.seats_left - 1)
        self.state.bookings[ref] = booking
        return booking

    @tool(read_only=True, phrase="look up flight booking {reference}")
    def get_booking(self, reference: BookingReference) -> Booking:
        """Get a flight booking by its reference."""
        return get_or_404(self.state.bookings, reference, "booking reference")

    @tool(phrase="cancel flight booking {reference}")
    def cancel_booking(self, reference: BookingReference) -> Booking:
        """Cancel a confirmed booking; its seat is released."""
        booking = cancel(self.state.bookings, reference, "booking reference", "Booking")
        if (flight := self.state.flights.get(booking.flight_number)) is not None:
            update(self.state.flights, flight.number, seats_left=flight.seats_left + 1)
        return booking

    @tool(read_only=True, phrase="list my flight bookings")
    def list_bookings(self) -> list[Booking]:
        """List all flight bookings, oldest first."""
        return list(self.state.bookings.values())
