"""Calendar service: seeded events, lookups, scheduling with overlap checks, tool contracts."""

from __future__ import annotations

import datetime as dt

import pytest

from compoenv.testing import call_error, call_ok, check_service
from compoenv.world import World
from envs_library.productivity.calendar import Calendar
from envs_library.productivity.contacts import Contacts
from envs_library.productivity.email import Email

FREE_TEXT = ["find_event.query", "create_event.title"]


@pytest.fixture
def cal() -> Calendar:
    return Calendar(World(0))


def upcoming_attendee(cal: Calendar) -> str:
    return next(e.attendees[0] for e in cal.state.events.values()
                if e.attendees and e.start >= cal.world.date(0))


def test_seed_spans_last_week_to_three_weeks_ahead_without_overlaps(cal):
    events = list(cal.state.events.values())
    assert 25 <= len(events) <= 40
    assert any(e.start < cal.world.date(0) for e in events)
    assert any(e.start > cal.world.date(14) for e in events)
    assert all(cal.world.date(-7) <= e.start[:10] <= cal.world.date(21) for e in events)
    cities = {c.name for c in cal.world.cities}
    people = {p.email for p in cal.world.people}
    assert all(e.location in cities and set(e.attendees) <= people for e in events)
    spans = sorted((dt.datetime.fromisoformat(e.start), e.duration_minutes) for e in events)
    for (start, minutes), (next_start, _) in zip(spans, spans[1:]):
        assert start + dt.timedelta(minutes=minutes) <= next_start


@pytest.mark.parametrize("seed", range(5))
def test_attendees_join_contacts_and_email_senders(seed):
    world = World(seed)
    cal, contacts = Calendar(world), Contacts(world)
    attendees = {a for e in cal.state.events.values() for a in e.attendees}
    assert any(contacts.call("find_contact_by_email", {"email": a})["success"] for a in attendees)
    senders = {m.sender for m in Email(world).state.messages.values()}
    assert any(cal.call("next_event_with", {"attendee": s})["success"] for s in senders)


def test_list_events_on_a_date_in_time_order(cal):
    day = next(iter(cal.state.events.values())).start[:10]
    listed = call_ok(cal, "list_events", date=day)
    assert listed and all(e["start"].startswith(day) for e in listed)
    assert [e["start"] for e in listed] == sorted(e["start"] for e in listed)
    assert call_ok(cal, "list_events", date="2030-01-01") == []


def test_get_event_and_404_with_suggestion(cal):
    assert call_ok(cal, "get_event", event_id="EV-0002")["id"] == "EV-0002"
    err = call_error(cal, "get_event", event_id="EV-00020")
    assert err["code"] == 404 and "Did you mean" in err["message"]


def test_find_event_by_title_words(cal):
    title = next(iter(cal.state.events.values())).title
    hits = call_ok(cal, "find_event", query=title.lower())
    assert hits and all(e["title"] == title or title in e["title"] for e in hits)
    assert call_ok(cal, "find_event", query="zzzunlikely") == []


def test_next_event_with_returns_the_earliest_upcoming_one(cal):
    who = upcoming_attendee(cal)
    event = call_ok(cal, "next_event_with", attendee=who)
    theirs = sorted(e.start for e in cal.state.events.values()
                    if who in e.attendees and e.start >= cal.world.date(0))
    assert who in event["attendees"] and event["start"] == theirs[0]


def test_next_event_with_unknown_or_only_past_attendee_is_404(cal):
    who = upcoming_attendee(cal)
    err = call_error(cal, "next_event_with", attendee=who.replace("@", "z@", 1))
    assert err["code"] == 404 and f"Did you mean {who!r}" in err["message"]
    past = call_ok(cal, "create_event", title="Old", start=cal.world.at(-20, 8),
                   duration_minutes=30, location="Oslo", attendees=["past@example.com"])
    err = call_error(cal, "next_event_with", attendee="past@example.com")
    assert err["code"] == 404 and past["id"] in err["message"]


def test_create_event_stores_it_and_refuses_overlaps(cal):
    free = cal.world.at(40, 10)
    made = call_ok(cal, "create_event", title="Board meeting", start=free, duration_minutes=60,
                   location="Paris", attendees=["a@b.com", "a@b.com"])
    assert made["attendees"] == ["a@b.com"] and cal.state.events[made["id"]].start == free
    err = call_error(cal, "create_event", title="Clash", start=cal.world.at(40, 10, 30),
                     duration_minutes=15, location="Paris")
    assert err["code"] == 409 and made["id"] in err["message"]
    back_to_back = call_ok(cal, "create_event", title="After", start=cal.world.at(40, 11),
                           duration_minutes=30, location="Paris")
    assert back_to_back["attendees"] == []


def test_reschedule_moves_the_event_and_refuses_overlaps(cal):
    a, b = list(cal.state.events)[:2]
    moved = call_ok(cal, "reschedule_event", event_id=a, start=cal.world.at(50, 9))
    assert moved["start"] == cal.state.events[a].start == cal.world.at(50, 9)
    call_ok(cal, "reschedule_event", event_id=a, start=cal.world.at(50, 9, 15))  # own slot is ok
    err = call_error(cal, "reschedule_event", event_id=b, start=cal.world.at(50, 9))
    assert err["code"] == 409 and cal.state.events[b].start != cal.world.at(50, 9)
    assert call_error(cal, "reschedule_event", event_id="EV-9999",
                      start=cal.world.at(50, 9))["code"] == 404


def test_cancel_event_removes_it(cal):
    cancelled = call_ok(cal, "cancel_event", event_id="EV-0001")
    assert cancelled["id"] == "EV-0001" and "EV-0001" not in cal.state.events
    assert call_error(cal, "cancel_event", event_id="EV-0001")["code"] == 404


def test_add_attendee_and_conflict_when_already_invited(cal):
    event = call_ok(cal, "add_attendee", event_id="EV-0001", email="new@example.com")
    assert "new@example.com" in event["attendees"]
    assert "new@example.com" in cal.state.events["EV-0001"].attendees
    assert call_error(cal, "add_attendee", event_id="EV-0001",
                      email="NEW@example.com")["code"] == 409


@pytest.mark.parametrize("tool, args", [
    ("list_events", {"date": "16/03/2026"}),
    ("get_event", {"event_id": "E-1"}),
    ("create_event", {"title": "x", "start": "2026-02-30T10:00", "duration_minutes": 30,
                      "location": "Oslo"}),
    ("create_event", {"title": "x", "start": "2026-03-30T10:00", "duration_minutes": 0,
                      "location": "Oslo"}),
    ("create_event", {"title": "x", "start": "2026-03-30T10:00", "duration_minutes": 30,
                      "location": "Oslo", "attendees": "a@b.com"}),
    ("reschedule_event", {"event_id": "EV-0001", "start": "tomorrow"}),
    ("add_attendee", {"event_id": "EV-0001", "email": "nobody"}),
])
def test_bad_arguments_are_400(cal, tool, args):
    before = cal.state.digest()
    assert call_error(cal, tool, **args)["code"] == 400
    assert cal.state.digest() == before


def test_reads_do_not_change_state_and_writes_do(cal):
    who, before = upcoming_attendee(cal), cal.state.digest()
    for tool, args in [("list_events", {"date": cal.world.date(1)}),
                       ("get_event", {"event_id": "EV-0001"}),
                       ("find_event", {"query": "review"}),
                       ("next_event_with", {"attendee": who})]:
        assert Calendar.tool_specs()[tool].read_only
        call_ok(cal, tool, **args)
    assert cal.state.digest() == before
    call_ok(cal, "add_attendee", event_id="EV-0001", email="new@example.com")
    assert cal.state.digest() != before


def test_calendar_passes_the_service_checker():
    check_service(Calendar, free_text=FREE_TEXT)
