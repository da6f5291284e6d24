"""Contacts service: seeded address book, lookups, search, phone updates, adding contacts."""

from __future__ import annotations

import re

import pytest

from compoenv.testing import call_error, call_ok, check_service
from compoenv.world import World
from envs_library.productivity.contacts import Contacts

FREE_TEXT = ["search_contacts.query"]
NEW = {"name": "Ada Lovelace", "email": "ada@example.com", "company": "Analytical Engines",
       "title": "Mathematician", "city": "London"}


@pytest.fixture
def contacts() -> Contacts:
    return Contacts(World(0))


def first(contacts: Contacts):
    return contacts.state.contacts["C-0001"]


def stranger(contacts: Contacts):
    """A World person who is not (yet) in the address book."""
    known = {c.email for c in contacts.state.contacts.values()}
    return next(p for p in contacts.world.people[1:] if p.email not in known)


def test_seed_has_sixty_world_people_but_not_the_user(contacts):
    world = contacts.world
    listed = list(contacts.state.contacts.values())
    assert len(listed) == 60
    assert list(contacts.state.contacts) == [f"C-{i:04d}" for i in range(1, 61)]
    assert all(re.fullmatch(r"C-\d{4}", c.id) and c.id == k
               for k, c in contacts.state.contacts.items())
    assert len({c.email for c in listed}) == 60
    assert world.user.email not in {c.email for c in listed}
    people = {p.email: p for p in world.people}
    for c in listed:
        p = people[c.email]
        assert (c.name, c.phone, c.company, c.title, c.city) == \
            (p.name, p.phone, p.employer, p.title, p.city)
        assert c.birthday == p.birthday.isoformat() and c.address == p.address


def test_find_contact_by_name_ignores_case_and_spacing(contacts):
    c = first(contacts)
    found = call_ok(contacts, "find_contact", name="  " + c.name.upper().replace(" ", "   "))
    assert found == c.model_dump(mode="json")


def test_find_contact_by_email_ignores_case(contacts):
    c = first(contacts)
    assert call_ok(contacts, "find_contact_by_email", email=c.email.upper())["id"] == c.id


def test_get_contact(contacts):
    assert call_ok(contacts, "get_contact", contact_id="C-0002") == \
        contacts.state.contacts["C-0002"].model_dump(mode="json")


def test_unknown_contact_is_404_with_suggestion(contacts):
    c = first(contacts)
    for tool, args, meant in [
        ("find_contact", {"name": c.name[:-1]}, c.name),
        ("find_contact_by_email", {"email": c.email.replace("@", "x@", 1)}, c.email),
        ("get_contact", {"contact_id": "C-00010"}, "C-0010"),
        ("update_phone", {"contact_id": "C-00010", "phone": "+1 555-111-2222"}, "C-0010"),
    ]:
        err = call_error(contacts, tool, **args)
        assert err["code"] == 404 and f"Did you mean {meant!r}" in err["message"], tool


def test_search_contacts_matches_every_word_across_fields(contacts):
    def expected(query: str) -> list[str]:
        return [x.id for x in contacts.state.contacts.values()
                if all(w in f"{x.name} {x.company} {x.title} {x.city}".lower()
                       for w in query.lower().split())]

    c = first(contacts)
    for query in (f"{c.title.upper()}  {c.city}", c.company, c.name.split()[-1].lower()):
        hits = [h["id"] for h in call_ok(contacts, "search_contacts", query=query)]
        assert c.id in hits and hits == expected(query), query
    assert call_ok(contacts, "search_contacts", query=c.email) == []  # email is not searched
    assert call_ok(contacts, "search_contacts", query="zzzunlikely") == []


def test_list_contacts_at_company_ignores_case(contacts):
    company = first(contacts).company
    listed = call_ok(contacts, "list_contacts_at_company", company=company.upper())
    assert [c["id"] for c in listed] == \
        [c.id for c in contacts.state.contacts.values() if c.company == company]
    assert call_ok(contacts, "list_contacts_at_company", company="Nobody Inc") == []


def test_update_phone_changes_only_the_phone(contacts):
    before = first(contacts).model_dump()
    updated = call_ok(contacts, "update_phone", contact_id="C-0001", phone="+44 20 7946 0958")
    assert updated == {**before, "phone": "+44 20 7946 0958"}
    assert contacts.state.contacts["C-0001"].phone == "+44 20 7946 0958"
    assert call_ok(contacts, "find_contact_by_email", email=before["email"]) == updated


def test_add_contact_stores_a_new_contact(contacts):
    added = call_ok(contacts, "add_contact", **NEW)
    # a new id in the book's format, drawn (not the next number: no other task tells it)
    assert re.fullmatch(r"C-\d{4}", added["id"]) and added["id"] != "C-0061"
    assert contacts.state.contacts[added["id"]].model_dump() == added
    assert {k: added[k] for k in NEW} == NEW
    assert added["phone"] == "+1 555-000-0000" and added["birthday"] == "1990-01-01"
    assert added["address"]["city"] == "London"
    assert call_ok(contacts, "find_contact", name="ada lovelace") == added
    again = call_ok(contacts, "add_contact", **{**NEW, "email": "ada2@example.com",
                                                "name": "Ada Byron", "phone": "+1 555-123-4567"})
    assert again["id"] not in (added["id"], "C-0062") and again["phone"] == "+1 555-123-4567"


def test_add_contact_of_a_world_person_takes_their_birthday(contacts):
    p = stranger(contacts)
    added = call_ok(contacts, "add_contact", name=p.name, email=p.email, company=p.employer,
                    title=p.title, city=p.city)
    assert added["birthday"] == p.birthday.isoformat()
    assert call_ok(contacts, "find_contact_by_email", email=p.email)["id"] == added["id"]


def test_add_contact_with_a_known_email_is_409_and_changes_nothing(contacts):
    c, before = first(contacts), contacts.state.digest()
    err = call_error(contacts, "add_contact", **{**NEW, "email": c.email.upper()})
    assert err["code"] == 409 and c.email.upper() in err["message"]
    assert contacts.state.digest() == before


def test_two_contacts_with_one_name_make_find_contact_409(contacts):
    c = first(contacts)
    call_ok(contacts, "add_contact", **{**NEW, "name": c.name})
    err = call_error(contacts, "find_contact", name=c.name)
    assert err["code"] == 409 and "more specific" in err["message"]


@pytest.mark.parametrize("tool, args", [
    ("find_contact", {"name": ""}),
    ("find_contact", {"name": ["Ben Kaur"]}),
    ("find_contact_by_email", {"email": "not an email"}),
    ("get_contact", {"contact_id": "1"}),
    ("get_contact", {"contact_id": 1}),
    ("search_contacts", {"query": ""}),
    ("list_contacts_at_company", {"company": 42}),
    ("update_phone", {"contact_id": "C-0001", "phone": "call me"}),
    ("update_phone", {"contact_id": "C-0001"}),
    ("add_contact", {k: v for k, v in NEW.items() if k != "city"}),
    ("add_contact", {**NEW, "email": "ada at example"}),
    ("add_contact", {**NEW, "birthday": "1815-12-10"}),
])
def test_bad_arguments_are_400(contacts, tool, args):
    before = contacts.state.digest()
    assert call_error(contacts, tool, **args)["code"] == 400
    assert contacts.state.digest() == before


def test_reads_do_not_change_state_and_writes_do(contacts):
    c, before = first(contacts), contacts.state.digest()
    for tool, args in [("find_contact", {"name": c.name}),
                       ("find_contact_by_email", {"email": c.email}),
                       ("get_contact", {"contact_id": c.id}),
                       ("search_contacts", {"query": c.city}),
                       ("list_contacts_at_company", {"company": c.company})]:
        assert Contacts.tool_specs()[tool].read_only
        call_ok(contacts, tool, **args)
    assert contacts.state.digest() == before
    for tool, args in [("update_phone", {"contact_id": c.id, "phone": "+1 555-999-0000"}),
                       ("add_contact", NEW)]:
        assert not Contacts.tool_specs()[tool].read_only
        call_ok(contacts, tool, **args)
        assert contacts.state.digest() != before
        before = contacts.state.digest()


def test_contacts_passes_the_service_checker():
    check_service(Contacts, free_text=FREE_TEXT)
