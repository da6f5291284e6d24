"""Nouns in composed instructions read as English: one item is singular, a count is plural."""

from __future__ import annotations

import re

import pytest

from compoenv.compose.render import noun, plural, singular


@pytest.mark.parametrize("many,one", [
    ("real estate agents", "real estate agent"), ("companies", "company"),
    ("classes", "class"), ("boxes", "box"), ("status", "status"), ("analysis", "analysis"),
    ("company news", "company news"), ("invoice", "invoice"), ("days", "day"),
])
def test_singular_then_plural_round_trips(many, one):
    assert singular(many) == one
    expected = {"status": "statuses", "analysis": "analyses", "invoice": "invoices",
                "company news": "company news"}.get(many, many)
    assert plural(one) == expected


def test_values_from_the_record_that_named_someone_are_said_once():
    from compoenv.compose.records import Binding, Step, Walk
    from compoenv.compose.render import phrase
    from compoenv.registry import Registry

    registry = Registry.default()
    found = Step(registry.spec("social_media__get_profile"), [Binding("name", "Sara Kim")])
    walk = Walk(steps=[found])
    add = registry.spec("contacts__add_contact")
    carried = [Binding(p, f"v-{p}", 0, (p,), None) for p in ("email", "title", "company")]
    text = phrase(add, walk, [Binding("name", "Sara Kim", 0, ("name",), "PersonName"),
                              *carried, Binding("city", "Oslo", interface="City")])
    assert "with their" not in text  # the city is stated, not the profile's: all are said
    text = phrase(add, walk, [Binding("name", "Sara Kim", 0, ("name",), "PersonName"), *carried,
                              Binding("city", "v-city", 0, ("city",), "City")])
    assert text == ("add the profile's name (with their email, title, company and city from "
                    "that profile) to my contacts")


def test_a_carried_name_or_email_reads_as_whom_it_belongs_to():
    from compoenv.compose.records import Binding, Step, Walk
    from compoenv.compose.render import phrase
    from compoenv.registry import Registry

    registry = Registry.default()
    repos = Step(registry.spec("code_review__list_repositories"),
                 [Binding("organization", "Acme")])
    candidate = Step(registry.spec("recruiting__find_candidate"), [Binding("name", "Ana Kim")])
    walk = Walk(steps=[repos, candidate])
    task = phrase(registry.spec("project_tracker__create_task"), walk, [
        Binding("title", "Root cause", interface="Text"),
        Binding("assignee", "Jo Lee", 0, ("#1", "maintainer_name"), "PersonName"),
        Binding("due", "2026-03-18", interface="Date")])
    assert task == 'create a task called "Root cause" for the repository\'s maintainer due on 2026-03-18'
    email = phrase(registry.spec("email__send_email"), walk, [
        Binding("to", "ana.kim@acme.com", 1, ("email",), "EmailAddress"),
        Binding("subject", "Hi", interface="EmailSubject"),
        Binding("body", "Hello", interface="Text")])
    assert email.startswith("send an email to the candidate with subject")
    # the candidate's name and email in one call read once, as the candidate
    hotel = Step(registry.spec("hotels__search_hotels"), [Binding("city", "Oslo")])
    walk = Walk(steps=[repos, candidate, hotel])
    booked = phrase(registry.spec("hotels__book_hotel"), walk, [
        Binding("hotel_id", "H-1", 2, ("#0", "id"), "HotelId"),
        Binding("guest", "Ana Kim", 1, ("name",), "PersonName"),
        Binding("guest_email", "ana.kim@acme.com", 1, ("email",), "EmailAddress"),
        Binding("check_in", "2026-03-20", interface="Date"), Binding("nights", 2)])
    assert booked == "book that hotel for the candidate from 2026-03-20 for 2 nights"
    # a name and an email of two records are each named by their own
    booked = phrase(registry.spec("hotels__book_hotel"), walk, [
        Binding("hotel_id", "H-1", 2, ("#0", "id"), "HotelId"),
        Binding("guest", "Ana Kim", 1, ("name",), "PersonName"),
        Binding("guest_email", "jo.lee@acme.com", 0, ("#1", "maintainer_email"),
                "EmailAddress"),
        Binding("check_in", "2026-03-20", interface="Date"), Binding("nights", 2)])
    assert "for the candidate's name (the repository's maintainer's email)" in booked


def test_an_email_is_sent_to_whom_the_address_belongs_not_to_the_address():
    """ "send an email to the restaurant's email" reads "send an email to the restaurant"; a
    role's address, as the role ("the restaurant's adjuster"); a desk's, as its address."""
    from compoenv.compose.records import Binding, Step, Walk
    from compoenv.compose.render import phrase
    from compoenv.registry import Registry

    registry = Registry.default()
    spec = registry.spec("email__send_email")
    said = []
    for path in (("#0", "email"), ("#0", "adjuster_email"), ("#0", "billing_email")):
        walk = Walk(steps=[Step(registry.spec("restaurants__search_restaurants"),
                                [Binding("city", "Oslo")])])
        said.append(phrase(spec, walk, [
            Binding("to", "desk@acme.com", 0, path, "EmailAddress"),
            Binding("subject", "Hi", interface="EmailSubject"),
            Binding("body", "Hello", interface="Text")]))
    assert all("'s email" not in s and " email with" not in s for s in said), said
    assert said[0].startswith("send an email to the restaurant with"), said
    assert said[1].startswith("send an email to the restaurant's adjuster with"), said
    assert " billing address with" in said[2], said


@pytest.mark.parametrize("template, param, expected", [
    ("show the insurance policy {policy_id}", "policy_id", "show that insurance policy"),
    ("cancel hotel reservation {reservation_id}", "reservation_id",
     "cancel that hotel reservation"),
    ("comment on pull request {pull_request_id}: {body}", "pull_request_id",
     "comment on that pull request: {body}"),
    ("apply to rent listing {listing_id} for {name}", "listing_id",
     "apply to rent that listing for {name}"),
    ("move event {event_id} to {start}", "event_id", "move that event to {start}"),
])
def test_a_carried_id_reads_as_that_noun(template, param, expected):
    from compoenv.compose.render import _that

    assert _that(template, param) == expected


def test_the_employers_possessive_reads_as_english():
    from compoenv.compose.labels import with_employer

    line = "I research companies for {employer}'s investment committee."
    assert with_employer(line, "Quarry Labs") == (
        "I research companies for Quarry Labs' investment committee.")
    assert with_employer(line, "Acme Media") == (
        "I research companies for Acme Media's investment committee.")


def test_a_day_taken_from_a_found_time_reads_as_the_day_of_it():
    from compoenv.compose.records import Binding, Step, Walk
    from compoenv.compose.render import phrase
    from compoenv.registry import Registry

    registry = Registry.default()
    event = Step(registry.spec("calendar__create_event"), [Binding("title", "Health day")],
                 {"id": "EV-1", "start": "2026-03-21T16:00"})
    walk = Walk(steps=[event])
    forecast = phrase(registry.spec("weather__get_forecast"), walk, [
        Binding("city", "Amsterdam", interface="City"),
        Binding("date", "2026-03-21", 0, ("start",), "Date")])
    assert forecast.endswith("on the day of the event"), forecast


def test_a_field_of_a_records_address_is_the_records_own():
    from compoenv.compose.render import reference
    from compoenv.registry import Registry

    spec = Registry.default().spec("real_estate__search_listings")
    assert reference(spec, ("#0", "address", "city"), "City") == "the listing's city"


def test_a_named_person_with_an_email_found_beside_their_name():
    """"book that hotel for Ana Kim (whose email is on the reservation)", not "(the
    reservation's guest's email)"."""
    from compoenv.compose.records import Binding, Step, Walk
    from compoenv.compose.render import phrase
    from compoenv.registry import Registry

    registry = Registry.default()
    table = Step(registry.spec("restaurants__book_reservation"),
                 [Binding("guest_name", "Ana Kim", interface="PersonName")],
                 {"id": "R-1", "guest_name": "Ana Kim", "guest_email": "ana.kim@acme.com"})
    hotel = Step(registry.spec("hotels__search_hotels"), [Binding("city", "Oslo")])
    walk = Walk(steps=[table, hotel])
    booked = phrase(registry.spec("hotels__book_hotel"), walk, [
        Binding("hotel_id", "H-1", 1, ("#0", "id"), "HotelId"),
        Binding("guest", "Ana Kim", interface="PersonName"),
        Binding("guest_email", "ana.kim@acme.com", 0, ("guest_email",), "EmailAddress"),
        Binding("check_in", "2026-03-20", interface="Date"), Binding("nights", 2)])
    assert "for Ana Kim (whose email is on the " in booked, booked
    assert "guest's email" not in booked


def test_a_goal_request_reads_without_possessive_chains_or_restated_naming_rules():
    from compoenv.compose.goal import plain

    assert plain("tell me the listing's agent's email and the account's manager's phone.") == (
        "tell me the email of the listing's agent and the phone of the account's manager.")
    assert plain("schedule an event titled per the naming rule at 10:00 and transfer 50 "
                 "(memo per the naming rule).") == "schedule an event at 10:00 and transfer 50."
    assert plain("the invoice's billing email") == "the invoice's billing email"
    assert plain("book a viewing for the lead's name (ana@example.com)") == (
        "book a viewing for the lead (ana@example.com)")
    assert plain("offer the candidate a salary of the candidate's expected salary as Designer") \
        == "offer the candidate the candidate's expected salary as Designer"


def test_the_same_owner_again_reads_its_or_their():
    from compoenv.compose.goal import _pronouns

    assert _pronouns("an event at the reservation's start time for the reservation's duration"
                     ) == "an event at the reservation's start time for its duration"
    assert _pronouns("the candidate's salary as the candidate's position") == (
        "the candidate's salary as their position")
    said = "the guest's email about the restaurant's name and the guest's table"
    assert _pronouns(said) == said  # another owner between: no pronoun could say which


def test_a_yes_no_filter_reads_with_or_without_and_a_found_records_name_as_the_record():
    from compoenv.compose.records import Binding, Step, Walk
    from compoenv.compose.render import phrase
    from compoenv.registry import Registry

    registry = Registry.default()
    search = registry.spec("parking__search_parking")
    text = phrase(search, Walk(), [Binding("city", "Oslo", interface="City"),
                                   Binding("ev_charging", True)])
    assert "True" not in text and "(with ev charging)" in text
    found = Step(search, [Binding("city", "Oslo", interface="City")])
    reserve = registry.spec("parking__book_parking_reservation")
    said = phrase(reserve, Walk(steps=[found]), [
        Binding("facility_name", "Harbour Garage", 0, ("#0", "name"), None),
        Binding("city", "Oslo", interface="City"), Binding("start", "2026-03-01T10:00"),
        Binding("duration_minutes", 60)])
    assert "the parking's name" not in said and "at the parking in Oslo" in said, said


def test_a_record_the_job_made_beside_one_it_found_is_asked_for_as_the_new_one():
    from compoenv.compose import Composer
    from compoenv.cli.common import composer_config
    from compoenv.compose.records import Rejected
    from compoenv.reward import scalars

    composer, seen = Composer(config=composer_config(scenarios="all", distractors=10)), 0
    for seed in range(240):
        try:
            _, walk = composer._build(seed)
        except Rejected:
            continue
        for ask, binding in zip(walk.asks, walk.reports):
            step = walk.steps[binding.source]
            shown = {str(v) for s in walk.steps[:binding.source] if s.spec.read_only
                     for v in scalars(s.result)}
            made = any(k == "created" and key not in shown
                       for _, key, k in walk.effects.get(binding.source, []))
            found_alike = any(s.spec.read_only and noun(s.spec) == noun(step.spec)
                              for s in walk.steps[:binding.source])
            if ask.endswith("'s id") and not step.spec.read_only and made and found_alike:
                assert ask.startswith("the new "), ask
                seen += 1
            elif ask.startswith("the new ") and ask.endswith("'s id"):
                assert made and found_alike, ask
    assert seen >= 3
