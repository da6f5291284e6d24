"""Email service: seeded mailbox, reads, sends, replies, archiving, and its tool contracts."""

from __future__ import annotations

import re

import pytest

from compoenv.testing import call_error, call_ok, check_service
from compoenv.world import World
from envs_library.productivity.contacts import Contacts
from envs_library.productivity.email import Email

# Parameters that are free text or pagination controls, not shared interfaces.
FREE_TEXT = ["search_messages.query", "list_inbox.unread_only", "list_inbox.limit"]


@pytest.fixture
def email() -> Email:
    return Email(World(0))


def a_sender(email: Email) -> str:
    me = email.world.user.email
    return next(m.sender for m in email.state.messages.values() if m.sender != me)


def test_seed_has_an_inbox_of_world_people_with_some_sent_and_archived(email):
    folders = [m.folder for m in email.state.messages.values()]
    assert folders.count("inbox") >= 25 and "sent" in folders and "archive" in folders
    emails = {p.email for p in email.world.people}
    assert all(m.sender in emails for m in email.state.messages.values())
    assert all(m.sent_at < email.world.at(0, 0) for m in email.state.messages.values())


@pytest.mark.parametrize("seed", range(5))
def test_some_senders_are_contacts(seed):
    world = World(seed)
    contacts = Contacts(world)
    senders = {m.sender for m in Email(world).state.messages.values()}
    found = [s for s in senders if contacts.call("find_contact_by_email", {"email": s})["success"]]
    assert len(found) >= 2


def test_list_inbox_is_newest_first_and_honours_filters(email):
    inbox = call_ok(email, "list_inbox", limit=100)
    assert inbox and all(m["folder"] == "inbox" for m in inbox)
    assert [m["sent_at"] for m in inbox] == sorted((m["sent_at"] for m in inbox), reverse=True)
    assert len(call_ok(email, "list_inbox", limit=3)) == 3
    unread = call_ok(email, "list_inbox", unread_only=True, limit=100)
    assert unread and not any(m["read"] for m in unread)


def test_get_message_and_404_with_suggestion(email):
    assert call_ok(email, "get_message", message_id="M-0003")["id"] == "M-0003"
    err = call_error(email, "get_message", message_id="M-9999")
    assert err["code"] == 404 and "M-9999" in err["message"]
    err = call_error(email, "get_message", message_id="M-00010")
    assert err["code"] == 404 and "Did you mean" in err["message"]


def test_search_messages_matches_every_word(email):
    hits = call_ok(email, "search_messages", query="budget review")
    assert all("budget" in (m["subject"] + m["body"]).lower() for m in hits)
    assert call_ok(email, "search_messages", query="zzzunlikely") == []


def test_messages_from_a_sender(email):
    sender = a_sender(email)
    listed = call_ok(email, "list_messages_from", sender=sender.upper())
    assert listed and all(m["sender"] == sender for m in listed)
    assert call_ok(email, "latest_message_from", sender=sender) == listed[0]
    assert call_ok(email, "list_messages_from", sender="nobody@nowhere.com") == []


def test_latest_message_from_unknown_sender_is_404_with_suggestion(email):
    sender = a_sender(email)
    typo = sender.replace("@", "x@", 1)
    err = call_error(email, "latest_message_from", sender=typo)
    assert err["code"] == 404 and f"Did you mean {sender!r}" in err["message"]


def test_send_email_adds_a_sent_message(email):
    sent = call_ok(email, "send_email", to="ada@example.com", subject="Hello", body="Hi there")
    stored = email.state.messages[sent["id"]]
    assert stored.folder == "sent" and stored.to == ("ada@example.com",)
    assert stored.sender == email.world.user.email and stored.sent_at == email.world.at(0, 9)
    # a new id in the service's format, drawn (not the next number: no other task tells it)
    assert re.fullmatch(r"M-\d{4}", sent["id"]) and sent["id"] in email.state.messages
    assert sent["id"] != f"M-{len(email.state.messages):04d}"


def test_reply_goes_to_the_sender_with_re_subject(email):
    original = next(m for m in email.state.messages.values() if m.folder == "inbox")
    reply = call_ok(email, "reply", message_id=original.id, body="Thanks!")
    assert reply["to"] == [original.sender] and reply["subject"] == f"Re: {original.subject}"
    again = call_ok(email, "reply", message_id=reply["id"], body="Also...")
    assert again["subject"] == reply["subject"] and again["to"] == [original.sender]
    assert call_error(email, "reply", message_id="M-9999", body="x")["code"] == 404


def test_archive_moves_to_archive_and_conflicts_when_repeated(email):
    mid = next(m.id for m in email.state.messages.values() if m.folder == "inbox")
    assert call_ok(email, "archive_message", message_id=mid)["folder"] == "archive"
    assert email.state.messages[mid].folder == "archive"
    assert call_error(email, "archive_message", message_id=mid)["code"] == 409


def test_mark_read(email):
    mid = next(m.id for m in email.state.messages.values() if not m.read)
    assert call_ok(email, "mark_read", message_id=mid)["read"] is True
    assert email.state.messages[mid].read


@pytest.mark.parametrize("tool, args", [
    ("get_message", {"message_id": "3"}),
    ("get_message", {"message_id": 3}),
    ("list_inbox", {"limit": 0}),
    ("list_inbox", {"limit": "many"}),
    ("send_email", {"to": "not-an-email", "subject": "s", "body": "b"}),
    ("send_email", {"to": "a@b.com", "subject": "s"}),
    ("send_email", {"to": "a@b.com", "subject": "s", "body": "b", "cc": "c@d.com"}),
    ("list_messages_from", {"sender": ["a@b.com"]}),
    ("search_messages", {"query": ""}),
])
def test_bad_arguments_are_400(email, tool, args):
    before = email.state.digest()
    assert call_error(email, tool, **args)["code"] == 400
    assert email.state.digest() == before


def test_reads_do_not_change_state_and_writes_do(email):
    sender, before = a_sender(email), email.state.digest()
    for tool, args in [("list_inbox", {}), ("get_message", {"message_id": "M-0001"}),
                       ("search_messages", {"query": "report"}),
                       ("list_messages_from", {"sender": sender}),
                       ("latest_message_from", {"sender": sender})]:
        assert Email.tool_specs()[tool].read_only
        call_ok(email, tool, **args)
    assert email.state.digest() == before
    inbox_id = next(m.id for m in email.state.messages.values() if m.folder == "inbox")
    call_ok(email, "archive_message", message_id=inbox_id)
    assert email.state.digest() != before


def test_email_passes_the_service_checker():
    check_service(Email, free_text=FREE_TEXT)
