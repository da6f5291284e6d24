"""Calendar: the user's events."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from pydantic import Field

from compoenv import Service, State, ToolError, tool
from compoenv.crud import get_or_404, next_id, search, update
from compoenv.roles import Role
from compoenv.interfaces import City, Date, DateTime, DurationMinutes, EmailAddress, Event, EventId
from compoenv.service import did_you_mean
from compoenv.world import World

# Titles by number of attendees: {first} is the one attendee's first name.
_ONE_ON_ONE = ("1:1 with {first}", "Coffee with {first}", "Catch-up with {first}")
_GROUP = ("Project sync", "Budget review", "Design review", "Hiring debrief",
          "Quarterly planning", "Client call", "Team offsite prep")
_SOLO = ("Dentist appointment", "Gym", "Focus time", "Car service", "Yoga class")


def _start(value: str) -> dt.datetime:
    try:
        return dt.datetime.fromisoformat(value)
    except ValueError:
        raise ToolError(400, f"start {value!r} is not a real date and time "
                             f"(expected YYYY-MM-DDTHH:MM)") from None


class Calendar(Service):
    """The user's calendar: meetings and appointments with times, places and attendees."""

    name = "calendar"
    display = "my calendar"
    domain = "productivity"
    related = ("*",)

    class State(State):
        events: dict[str, Event] = {}

    def seed(self, world: World) -> Calendar.State:
        rng = world.rng(self.name)
        me = world.user
        circle = world.circle(rng, 25)
        trip_city = rng.choice([c.name for c in world.cities if c.name != me.city])
        drafts: list[Event] = []
        while len(drafts) < 30:
            day = rng.randrange(-7, 22)
            start = world.at(day, rng.randrange(8, 18), rng.choice((0, 30)))
            minutes = rng.choice((30, 45, 60, 90))
            kind = rng.random()
            if kind < 0.2:
                title, people = rng.choice(_SOLO), []
            elif kind < 0.5:
                title, people = rng.choice(_ONE_ON_ONE), [rng.choice(circle)]
            else:
                title, people = rng.choice(_GROUP), rng.sample(circle, rng.randint(2, 4))
            if dt.date.fromisoformat(start[:10]).weekday() >= 5:  # weekends stay free
                continue
            event = Event(id="EV-0000", title=title.format(first=people[0].first if people else ""),
                          start=start, duration_minutes=minutes,
                          location=trip_city if 10 <= day <= 12 else me.city,
                          attendees=[p.email for p in people])
            if not any(_clash(event, other) for other in drafts):
                drafts.append(event)
        drafts.sort(key=lambda e: e.start)  # ids follow time: EV-0001 is the earliest
        events = {}
        for i, event in enumerate(drafts, start=1):
            events[f"EV-{i:04d}"] = event.model_copy(update={"id": f"EV-{i:04d}"})
        return self.State(events=events)

    def _check_free(self, event: Event) -> None:
        for other in self.state.events.values():
            if other.id != event.id and _clash(event, other):
                raise ToolError(409, f"{event.start} ({event.duration_minutes} min) overlaps "
                                     f"{other.id} {other.title!r} at {other.start}")

    @tool(read_only=True, phrase="list my events on {date}")
    def list_events(self, date: Annotated[Date, Role("date")]) -> list[Event]:
        """List the events starting on a date, in time order."""
        return sorted((e for e in self.state.events.values() if e.start.startswith(date)),
                      key=lambda e: e.start)

    @tool(read_only=True, phrase="look up calendar event {event_id}")
    def get_event(self, event_id: EventId) -> Event:
        """Get an event by id."""
        return get_or_404(self.state.events, event_id, "event id")

    @tool(read_only=True, phrase="find the events called {query} in my calendar")
    def find_event(
        self,
        query: Annotated[str, Field(min_length=1, max_length=200)],
    ) -> list[Event]:
        """Find events by title, in time order.

        Args:
            query: Words that must all appear in the event title.
        """
        return sorted(search(self.state.events.values(), query, lambda e: e.title),
                      key=lambda e: e.start)

    @tool(read_only=True, phrase="find my next meeting with {attendee}")
    def next_event_with(self, attendee: Annotated[EmailAddress, Role("attendee")]) -> Event:
        """Get the first event from today on that a person attends."""
        theirs = sorted((e for e in self.state.events.values()
                         if attendee.lower() in (a.lower() for a in e.attendees)),
                        key=lambda e: e.start)
        if not theirs:
            everyone = {a for e in self.state.events.values() for a in e.attendees}
            raise ToolError(404, did_you_mean(attendee, everyone, "attendee"))
        upcoming = [e for e in theirs if e.start >= self.world.date(0)]
        if not upcoming:
            raise ToolError(404, f"No upcoming event with {attendee!r}; the last one was "
                                 f"{theirs[-1].id} on {theirs[-1].start}")
        return upcoming[0]

    @tool(phrase="schedule {title} at {start} for {duration_minutes} minutes in {location}")
    def create_event(self, title: Annotated[str, Field(min_length=1, max_length=200)],
                     start: Annotated[DateTime, Role("start_date")], duration_minutes: DurationMinutes,
                     location: Annotated[City, Role("venue_city")],
                     attendees: list[Annotated[EmailAddress, Role("attendee")]] = []) -> Event:
        """Create an event; fails if it overlaps another event.

        Args:
            title: What the event is called.
            attendees: Email addresses of the people invited.
        """
        _start(start)
        event = Event(id=next_id("EV-", self.state.events,
                                       salt=(self.world.seed, self.name, start)), title=title, start=start,
                      duration_minutes=duration_minutes, location=location,
                      attendees=list(dict.fromkeys(attendees)))
        self._check_free(event)
        self.state.events[event.id] = event
        return event

    @tool(phrase="move event {event_id} to {start}")
    def reschedule_event(self, event_id: EventId, start: Annotated[DateTime, Role("start_date")]) -> Event:
        """Move an event to a new start time, keeping its length."""
        event = get_or_404(self.state.events, event_id, "event id")
        _start(start)
        self._check_free(event.model_copy(update={"start": start}))
        return update(self.state.events, event_id, start=start)

    @tool(phrase="cancel event {event_id}")
    def cancel_event(self, event_id: EventId) -> Event:
        """Cancel an event; returns the event as it was."""
        get_or_404(self.state.events, event_id, "event id")
        return self.state.events.pop(event_id)

    @tool(phrase="invite {email} to event {event_id}")
    def add_attendee(self, event_id: EventId, email: Annotated[EmailAddress, Role("attendee")]) -> Event:
        """Add an attendee to an event."""
        event = get_or_404(self.state.events, event_id, "event id")
        if email.lower() in (a.lower() for a in event.attendees):
            raise ToolError(409, f"{email} already attends {event_id}")
        return update(self.state.events, event_id, attendees=(*event.attendees, email))


def _clash(a: Event, b: Event) -> bool:
    a0, b0 = _start(a.start), _start(b.start)
    return (a0 < b0 + dt.timedelta(minutes=b.duration_minutes)
            and b0 < a0 + dt.timedelta(minutes=a.duration_minutes))
