"""Tests for compoenv.gateway: the four meta-tools over a session's services, in the format of
the published CompoWorld data (earlier argument names accepted too)."""

from __future__ import annotations

import json

import pytest

from compoenv import Service, State, World, tool
from compoenv.gateway import GATEWAY_TOOLS, Gateway
from compoenv.session import Session


class Counter(Service):
    """A counter you can read and bump.

    Not part of the description.
    """

    name = "counter"
    domain = "testing"

    class State(State):
        value: int = 0

    @tool(read_only=True)
    def read(self) -> int:
        """Read the counter."""
        return self.state.value

    @tool
    def add(self, amount: int = 1) -> int:
        """Add to the counter.

        Args:
            amount: How much to add.
        """
        self.state.value += amount
        return self.state.value


class Echo(Service):
    """Echoes text."""

    name = "echo"
    domain = "misc"

    @tool(read_only=True)
    def say(self, text: str) -> str:
        """Say something back."""
        return text


@pytest.fixture
def session() -> Session:
    return Session([Echo, Counter], World(0))


@pytest.fixture
def gateway(session: Session) -> Gateway:
    return Gateway(session)


def data(result: dict) -> object:
    assert result["success"] is True, result
    return result["data"]


def test_the_four_meta_tools_and_their_specs():
    assert list(GATEWAY_TOOLS) == ["list_services", "list_tools", "describe_tool", "call_tool"]
    for name, spec in GATEWAY_TOOLS.items():
        assert spec.qualified_name == name and spec.service == ""
        assert spec.to_openai()["function"]["name"] == name
        assert spec.description
    assert GATEWAY_TOOLS["list_services"].parameters["properties"] == {}
    assert GATEWAY_TOOLS["list_tools"].parameters["required"] == ["service"]
    assert GATEWAY_TOOLS["describe_tool"].parameters["required"] == ["tool"]
    call = GATEWAY_TOOLS["call_tool"].parameters
    assert call["required"] == ["tool_name"] and set(call["properties"]) == {"tool_name",
                                                                               "arguments"}
    assert call["additionalProperties"] is False
    assert all(s.read_only for n, s in GATEWAY_TOOLS.items() if n != "call_tool")
    assert not GATEWAY_TOOLS["call_tool"].read_only
    # what the model reads is plain text: no markup in descriptions
    text = json.dumps([s.to_openai() for s in GATEWAY_TOOLS.values()])
    assert not any(mark in text for mark in ("`", "<service>", "**", "::"))


def test_list_services_lists_the_session_services(gateway):
    assert data(gateway.call("list_services", {})) == {"services": ["counter", "echo"]}


def test_list_tools_gives_qualified_names_and_descriptions(gateway):
    assert data(gateway.call("list_tools", {"service": "counter"})) == {"service": "counter",
                                                                        "tools": [
        {"name": "counter__read", "description": "Read the counter."},
        {"name": "counter__add", "description": "Add to the counter."},
    ]}


def test_list_tools_of_an_unknown_service_is_a_404_with_did_you_mean(gateway):
    result = gateway.call("list_tools", {"service": "countr"})
    assert result["success"] is False and result["error"]["code"] == 404
    assert result["error"]["message"] == "Unknown service 'countr'. Did you mean 'counter'?"


def test_describe_tool_returns_the_function_schema(gateway):
    described = data(gateway.call("describe_tool", {"tool": "counter__add"}))
    assert described == Counter.tool_specs()["add"].to_openai()["function"]
    assert described["parameters"]["properties"]["amount"]["description"] == "How much to add."


def test_describe_tool_of_an_unknown_tool_is_a_404_with_did_you_mean(gateway):
    result = gateway.call("describe_tool", {"tool": "counter__ad"})
    assert result["error"]["code"] == 404
    assert "Did you mean 'counter__add'" in result["error"]["message"]


def test_call_tool_returns_the_inner_envelope_not_wrapped_twice(gateway):
    result = gateway.call("call_tool", {"tool_name": "counter__add", "arguments": {"amount": 4}})
    assert result == {"success": True, "data": 4}
    assert gateway.call("call_tool", {"name": "echo__say", "arguments": {"text": "hi"}}) == {
        "success": True, "data": "hi"}


def test_call_tool_without_arguments_uses_an_empty_object(gateway):
    assert gateway.call("call_tool", {"name": "counter__add"}) == {"success": True, "data": 1}
    assert gateway.call("call_tool", {"name": "counter__read", "arguments": None}) == {
        "success": True, "data": 1}


def test_call_tool_passes_inner_errors_through(gateway):
    bad = gateway.call("call_tool", {"name": "counter__add", "arguments": {"amount": "x"}})
    assert bad["success"] is False and bad["error"]["code"] == 400
    assert "counter__add" in bad["error"]["message"] and "'amount'" in bad["error"]["message"]
    unknown = gateway.call("call_tool", {"name": "counter__ad", "arguments": {}})
    assert unknown["error"]["code"] == 404 and "counter__add" in unknown["error"]["message"]


def test_call_tool_is_logged_in_the_session_under_the_inner_name(gateway, session):
    gateway.call("list_services", {})
    gateway.call("call_tool", {"name": "counter__add", "arguments": {"amount": 2}})
    assert [(r.name, r.arguments) for r in session.log] == [("counter__add", {"amount": 2})]
    assert session.log[0].result == {"success": True, "data": 2}
    assert session.state("counter").value == 2


def test_calling_a_service_tool_directly_is_a_404_pointing_at_call_tool(gateway, session):
    result = gateway.call("counter__add", {"amount": 1})
    assert result["success"] is False and result["error"]["code"] == 404
    assert "Unknown tool 'counter__add'" in result["error"]["message"]
    assert "call service tools through call_tool" in result["error"]["message"]
    assert session.log == [] and session.state("counter").value == 0


def test_unknown_meta_tool_is_a_404_with_did_you_mean_and_no_call_tool_hint(gateway):
    result = gateway.call("list_service", {})
    assert result["error"]["code"] == 404
    assert "Did you mean 'list_services'" in result["error"]["message"]
    assert "call_tool" not in result["error"]["message"]


@pytest.mark.parametrize("name, arguments", [
    ("list_tools", {}), ("list_tools", {"service": ""}), ("describe_tool", {"nam": "x"}),
    ("call_tool", {"tool_name": "echo__say", "arguments": "text=hi"}), ("call_tool", []),
    ("call_tool", {"tool_name": "echo__say", "name": "echo__say", "arguments": {}}),
    ("list_services", {"verbose": True}),
])
def test_bad_meta_tool_arguments_are_400(gateway, name, arguments):
    result = gateway.call(name, arguments)
    assert result["success"] is False and result["error"]["code"] == 400


def test_non_string_meta_tool_name_gives_an_error_envelope(gateway):
    result = gateway.call(["call_tool"], {})  # type: ignore[arg-type]
    assert result["success"] is False and result["error"]["code"] == 404


def test_gateway_results_are_json_able(gateway):
    for name, arguments in [("list_services", {}), ("list_tools", {"service": "echo"}),
                            ("describe_tool", {"tool": "echo__say"})]:
        json.dumps(gateway.call(name, arguments))


def test_gateway_over_real_services():
    session = Session.for_names(["contacts", "weather"], World(0))
    gateway = Gateway(session)
    assert data(gateway.call("list_services", {})) == {"services": ["contacts", "weather"]}
    listed = data(gateway.call("list_tools", {"service": "contacts"}))
    tools = [t["name"] for t in listed["tools"]]
    assert "contacts__find_contact" in tools
    someone = next(iter(session.state("contacts").contacts.values()))
    found = gateway.call("call_tool", {"tool_name": "contacts__find_contact",
                                       "arguments": {"name": someone.name}})
    assert data(found)["email"] == someone.email


def test_the_earlier_argument_names_still_work(gateway):
    """Task files and models from before the published format used ``name``."""
    assert gateway.call("call_tool", {"name": "counter__add", "arguments": {"amount": 3}}) == {
        "success": True, "data": 3}
    described = data(gateway.call("describe_tool", {"name": "counter__add"}))
    assert described["name"] == "counter__add"
