"""Tests for compoenv.session: routing qualified names, the call log, initial state, digests."""

from __future__ import annotations

import json

import pytest

from compoenv import Service, State, ToolError, World, tool
from compoenv.registry import Registry
from compoenv.session import CallRecord, Session, render_result


class Counter(Service):
    """A counter."""

    name = "counter"

    class State(State):
        value: int = 0

    def seed(self, world: World) -> Counter.State:
        return self.State(value=world.seed)

    @tool(read_only=True)
    def read(self) -> int:
        """Read the counter."""
        return self.state.value

    @tool
    def add(self, amount: int = 1) -> int:
        """Add to the counter."""
        if amount > 100:
            raise ToolError(409, "too much at once")
        self.state.value += amount
        return self.state.value


class Echo(Service):
    """Echoes text."""

    name = "echo"

    @tool(read_only=True)
    def say(self, text: str) -> str:
        """Say something back."""
        return text


@pytest.fixture
def session() -> Session:
    return Session([Counter, Echo], World(5))


def test_session_lists_mounted_services_and_specs(session):
    assert session.names == ["counter", "echo"]
    assert session.classes == {"counter": Counter, "echo": Echo}
    assert {s.qualified_name for s in session.specs()} == {"counter__read", "counter__add",
                                                           "echo__say"}
    assert {s.qualified_name for s in session.specs(["echo"])} == {"echo__say"}
    assert session.spec("counter__add") is Counter.tool_specs()["add"]
    assert session.spec("counter__nope") is None


def test_routes_qualified_names_to_the_right_service(session):
    assert session.call("echo__say", {"text": "hi"}) == {"success": True, "data": "hi"}
    assert session.call("counter__read", {}) == {"success": True, "data": 5}
    assert session.call("counter__add", {"amount": 2}) == {"success": True, "data": 7}
    assert session.state("counter").value == 7


def test_services_are_seeded_lazily_and_once(session):
    assert session._live == {}
    first = session.service("counter")
    assert session.service("counter") is first and set(session._live) == {"counter"}


def test_unknown_tool_is_a_404_with_did_you_mean(session):
    result = session.call("counter__reed", {})
    assert result["success"] is False and result["error"]["code"] == 404
    assert result["error"]["message"].startswith("Unknown tool 'counter__reed'. Did you mean "
                                                 "'counter__read'")


def test_unqualified_name_suggests_the_qualified_one():
    session = Session.for_names(["contacts", "email"], World(0))
    result = session.call("find_contact", {"name": "x"})
    assert result["error"]["code"] == 404
    assert "Did you mean 'contacts__find_contact'" in result["error"]["message"]


@pytest.mark.parametrize("name", [None, 42, ["echo__say"], {"name": "echo__say"}, 1.5])
def test_non_string_names_give_an_error_envelope(session, name):
    result = session.call(name, {"text": "x"})
    assert result["success"] is False and result["error"]["code"] == 404
    assert f"must be a string, got {type(name).__name__}" in result["error"]["message"]


def test_errors_of_the_tool_come_back_as_envelopes(session):
    assert session.call("counter__add", {"amount": "many"})["error"]["code"] == 400
    assert session.call("counter__add", {"amount": 500})["error"] == {
        "code": 409, "message": "too much at once"}
    assert session.call("counter__add", "amount=3")["error"]["code"] == 400


def test_log_records_every_call_in_order(session):
    calls = [("echo__say", {"text": "a"}), ("counter__nope", {}), ("counter__add", {"amount": 500}),
             (7, {}), ("counter__add", {})]
    results = [session.call(name, args) for name, args in calls]
    assert [r.name for r in session.log] == ["echo__say", "counter__nope", "counter__add", "7",
                                             "counter__add"]
    assert [r.arguments for r in session.log] == [args for _, args in calls]
    assert [r.result for r in session.log] == results
    assert all(isinstance(r, CallRecord) for r in session.log)


def test_log_truncates_huge_names(session):
    session.call("x" * 10_000, {})
    assert len(session.log[-1].name) == 200


def test_initial_state_stays_the_seeded_object_after_writes(session):
    seeded = session.initial_state("counter")
    session.call("counter__add", {"amount": 3})
    session.call("counter__add", {"amount": 4})
    assert session.initial_state("counter") is seeded
    assert seeded.value == 5 and session.state("counter").value == 12
    assert session.state("counter") is not seeded


def test_initial_state_is_shared_copy_on_write_across_sessions():
    world = World(6)
    one, two = Session([Counter], world), Session([Counter], world)
    assert one.initial_state("counter") is two.initial_state("counter")
    one.call("counter__add", {"amount": 10})
    assert two.state("counter").value == 6
    assert Session([Counter], world).state("counter").value == 6


def test_digests_cover_every_mounted_service_and_track_writes(session):
    before = session.digests()
    assert set(before) == {"counter", "echo"}
    assert all(len(d) == 64 for d in before.values())
    session.call("echo__say", {"text": "x"})
    assert session.digests() == before
    session.call("counter__add", {})
    after = session.digests()
    assert after["counter"] != before["counter"] and after["echo"] == before["echo"]


def test_same_world_gives_the_same_digests():
    names = ["contacts", "email"]
    a = Session.for_names(names, World(2)).digests()
    b = Session.for_names(names, World(2), Registry.default()).digests()
    c = Session.for_names(names, World(3)).digests()
    assert a == b and a != c


def test_for_names_uses_the_registry_and_routes_real_tools():
    session = Session.for_names(["contacts"], World(0))
    contact = next(iter(session.state("contacts").contacts.values()))
    result = session.call("contacts__find_contact", {"name": contact.name})
    assert result["success"] and result["data"]["id"] == contact.id


def test_for_names_rejects_unknown_services():
    with pytest.raises(LookupError, match="Did you mean 'contacts'"):
        Session.for_names(["contcts"], World(0))


@pytest.mark.parametrize("result", [
    {"success": True, "data": [{"id": i, "text": "t" * 300} for i in range(50)],
     "simulated": "offline"},
    {"success": True, "data": {"text": "\U0001F600\"\\" * 4000}},
    {"success": False, "error": {"code": 400, "message": "é" * 9000}},
    {"success": True, "data": ["x" * 5000]},
], ids=["list", "emoji_object", "long_error", "one_huge_item"])
def test_render_result_over_its_limit_stays_a_json_envelope_within_it(result):
    for limit in (400, 1000, 4096):
        text = render_result(result, limit)
        cut = json.loads(text)
        assert len(text) <= limit and cut["success"] == result["success"]
        assert "truncated" in cut and "characters" in cut["truncated"]
        if isinstance(result.get("data"), list) and isinstance(cut["data"], list):
            assert cut["data"] == result["data"][:len(cut["data"])]  # leading items, whole
    assert render_result(result, 10**9) == render_result(result)  # under the limit: as is


def test_render_result_is_compact_ascii_json():
    text = render_result({"success": True, "data": {"city": "Zürich"}})
    assert text == '{"success": true, "data": {"city": "Z\\u00fcrich"}}'
    assert text.isascii() and json.loads(text)["data"]["city"] == "Zürich"
