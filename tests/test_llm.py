"""ChatClient against the loopback chat server, through the real openai package."""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from chat_server import ChatServer  # tests/ is on sys.path: see chat_server.py

from compoenv.llm import ChatClient, EndpointConfig, LLMError

pytest.importorskip("openai")

SCHEMA: dict[str, Any] = {"title": "Weather", "type": "object",
                          "properties": {"city": {"type": "string"}, "temp": {"type": "number"}},
                          "required": ["city", "temp"], "additionalProperties": False}
HELLO = [{"role": "user", "content": "hello"}]


def make_client(server: ChatServer, **overrides: Any) -> ChatClient:
    options: dict[str, Any] = {"timeout_s": 0.3, "max_retries": 2, "backoff_s": 0.01}
    options.update(overrides)
    return ChatClient(EndpointConfig(base_url=server.url, model=server.model, **options))


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as srv:
        yield srv


def failure(client: ChatClient, **kwargs: Any) -> LLMError:
    with pytest.raises(LLMError) as info:
        client.complete(HELLO, **kwargs)
    assert "Traceback" not in info.value.detail and "\n" not in info.value.detail
    return info.value


def test_complete_returns_the_reply_and_sends_the_configured_request(server: ChatServer) -> None:
    server.responder = lambda request: f"echo: {request['messages'][-1]['content']}"
    client = make_client(server, api_key="sk-test", temperature=0.2, max_tokens=77)
    assert client.complete(HELLO) == "echo: hello"
    (received,) = server.received
    assert received.path == "/v1/chat/completions"
    assert received.headers["authorization"] == "Bearer sk-test"
    assert received.body is not None
    assert received.body["model"] == "test-model" and received.body["messages"] == HELLO
    assert received.body["temperature"] == 0.2 and received.body["max_tokens"] == 77
    assert "response_format" not in received.body


def test_per_call_overrides_replace_the_config(server: ChatServer) -> None:
    make_client(server).complete(HELLO, temperature=0.9, max_tokens=5)
    assert server.bodies[0]["temperature"] == 0.9 and server.bodies[0]["max_tokens"] == 5


def test_json_schema_is_sent_as_strict_response_format(server: ChatServer) -> None:
    server.responder = lambda request: '{"city": "Oslo", "temp": 3.5}'
    client = make_client(server)
    assert client.complete_json(HELLO, SCHEMA) == {"city": "Oslo", "temp": 3.5}
    assert server.bodies[0]["response_format"] == {
        "type": "json_schema", "json_schema": {"name": "Weather", "schema": SCHEMA, "strict": True}}


def test_server_rejecting_response_format_is_asked_again_without_it_and_remembered(
        server: ChatServer) -> None:
    server.mode = "reject_response_format"
    server.responder = lambda request: '```json\n{"city": "Oslo", "temp": 3}\n```'
    client = make_client(server, max_retries=0)
    assert client.complete_json(HELLO, SCHEMA) == {"city": "Oslo", "temp": 3}
    assert not client.supports_response_format
    first, second = server.bodies
    assert "response_format" in first and "response_format" not in second
    assert second["messages"][0]["role"] == "system"
    assert json.dumps(SCHEMA, separators=(",", ":")) in second["messages"][0]["content"]
    client.complete(HELLO, json_schema=SCHEMA)
    assert len(server.bodies) == 3 and "response_format" not in server.bodies[2]


def test_reply_off_the_schema_is_bad_output(server: ChatServer) -> None:
    server.responder = lambda request: '{"city": "Oslo"}'
    with pytest.raises(LLMError, match="temp") as info:
        make_client(server).complete_json(HELLO, SCHEMA)
    assert info.value.reason == "bad_output"
    server.responder = lambda request: "sunny, 3 degrees"
    with pytest.raises(LLMError, match="not JSON"):
        make_client(server).complete_json(HELLO, SCHEMA)


@pytest.mark.parametrize("mode", ["http_500_then_ok", "http_429_then_ok"])
def test_transient_failures_are_retried_until_success(server: ChatServer, mode: str) -> None:
    server.mode, server.fail_times = mode, 2
    assert make_client(server, max_retries=2).complete(HELLO) == "hello"
    assert len(server.received) == 3


@pytest.mark.parametrize(("mode", "reason"), [("http_500", "http_5xx"),
                                              ("http_429_then_ok", "http_429")])
def test_failures_past_the_retry_budget_raise(server: ChatServer, mode: str,
                                              reason: str) -> None:
    server.mode, server.fail_times = mode, 10
    assert failure(make_client(server, max_retries=2)).reason == reason
    assert len(server.received) == 3


def test_client_errors_are_not_retried_and_hint_at_the_base_url(server: ChatServer) -> None:
    client = ChatClient(EndpointConfig(base_url=server.url.removesuffix("/v1"),
                                       model="m", timeout_s=0.3, backoff_s=0.01))
    error = failure(client)
    assert error.reason == "http_4xx" and "/v1" in error.detail
    assert len(server.received) == 1


def test_slow_server_times_out_within_the_wall_time_bound() -> None:
    with ChatServer("slow", slow_s=2.0) as server:
        client = make_client(server, max_retries=1)
        start = time.monotonic()
        error = failure(client)
        elapsed = time.monotonic() - start
    assert error.reason == "timeout"
    assert client.config.max_wall_s() == pytest.approx(0.3 * 2 + 0.01)
    assert 0.3 <= elapsed < client.config.max_wall_s() + 0.5


def test_trickling_body_is_abandoned_at_the_deadline() -> None:
    with ChatServer("trickle", trickle_s=0.05) as server:
        client = make_client(server, max_retries=0)
        start = time.monotonic()
        assert failure(client).reason == "timeout"
        assert time.monotonic() - start < 0.3 + 0.5


def test_down_server_is_unreachable_quickly_and_recovers() -> None:
    with ChatServer("down") as server:
        client = make_client(server)
        start = time.monotonic()
        assert failure(client).reason == "unreachable"
        assert time.monotonic() - start < 1.5
        server.mode = "ok"
        assert client.complete(HELLO) == "hello"


@pytest.mark.parametrize(("mode", "reason", "words"), [
    ("non_json", "bad_response", "text/html"),
    ("huge", "too_large", "exceeds"),
    ("schema_violation", "bad_response", "not a chat completion"),
])
def test_unusable_bodies_are_rejected_without_retry(server: ChatServer, mode: str, reason: str,
                                                    words: str) -> None:
    server.mode = mode
    error = failure(make_client(server))
    assert (error.reason, words in error.detail) == (reason, True)
    assert len(server.received) == 1


def test_size_cap_is_configurable(server: ChatServer) -> None:
    server.responder = lambda request: "y" * 5000
    client = ChatClient(make_client(server).config, max_response_bytes=4096)
    assert failure(client).reason == "too_large"


def test_empty_reply_is_bad_response(server: ChatServer) -> None:
    server.responder = lambda request: ""
    assert "empty reply" in failure(make_client(server)).detail


def test_endpoint_config_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COMPOENV_LLM_BASE_URL", raising=False)
    assert EndpointConfig.from_env() is None and ChatClient.from_env() is None
    monkeypatch.setenv("COMPOENV_LLM_BASE_URL", "http://host:8000/v1")
    monkeypatch.setenv("COMPOENV_LLM_MODEL", "qwen")
    monkeypatch.delenv("COMPOENV_LLM_API_KEY", raising=False)
    assert EndpointConfig.from_env() == EndpointConfig("http://host:8000/v1", "qwen", "EMPTY")
    monkeypatch.setenv("WM_BASE_URL", "http://wm/v1")
    monkeypatch.setenv("WM_API_KEY", "k")
    config = EndpointConfig.from_env("WM")
    assert config is not None and (config.base_url, config.api_key) == ("http://wm/v1", "k")


def test_missing_openai_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(ImportError, match=r"compoenv\[llm\]"):
        ChatClient(EndpointConfig(base_url="http://127.0.0.1:9/v1", model="m"))


def test_every_endpoint_setting_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = {"BASE_URL": "http://host:8000/v1", "MODEL": "qwen", "API_KEY": "k",
                "TIMEOUT_S": "4", "TOTAL_TIMEOUT_S": "9", "MAX_RETRIES": "1",
                "BACKOFF_S": "0.25", "TEMPERATURE": "0.7", "MAX_TOKENS": "256",
                "CONCURRENCY": "3"}
    for name, value in settings.items():
        monkeypatch.setenv(f"COMPOENV_LLM_{name}", value)
    assert EndpointConfig.from_env() == EndpointConfig(
        "http://host:8000/v1", "qwen", "k", timeout_s=4.0, max_retries=1, backoff_s=0.25,
        temperature=0.7, max_tokens=256, total_timeout_s=9.0, concurrency=3)
    from compoenv.worldmodel.config import world_model_from

    model = world_model_from("endpoint:http://other:1/v1")
    assert model.client.config.total_timeout_s == 9.0 and model.client.config.concurrency == 3


@pytest.mark.parametrize("name, value, message", [
    ("TIMEOUT_S", "soon", "COMPOENV_LLM_TIMEOUT_S='soon': expected seconds > 0"),
    ("MAX_RETRIES", "-1", "max_retries must be >= 0"),
    ("CONCURRENCY", "0", "concurrency must be >= 1"),
])
def test_a_bad_endpoint_setting_names_the_variable(monkeypatch: pytest.MonkeyPatch, name: str,
                                                   value: str, message: str) -> None:
    monkeypatch.setenv("COMPOENV_LLM_BASE_URL", "http://host:8000/v1")
    monkeypatch.setenv(f"COMPOENV_LLM_{name}", value)
    with pytest.raises(ValueError, match=re.escape(message)):
        EndpointConfig.from_env()


def test_defaults_bound_a_call_to_30_seconds_retries_included() -> None:
    assert EndpointConfig("http://h/v1", "m").max_wall_s() <= 30.0
    assert EndpointConfig("http://h/v1", "m", timeout_s=60, max_retries=5).max_wall_s() == 30.0


def test_a_hung_server_costs_at_most_the_total_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    with ChatServer("slow", slow_s=5.0) as server:
        monkeypatch.setenv("COMPOENV_LLM_BASE_URL", server.url)
        monkeypatch.setenv("COMPOENV_LLM_TIMEOUT_S", "0.4")
        monkeypatch.setenv("COMPOENV_LLM_TOTAL_TIMEOUT_S", "1.0")
        client = ChatClient.from_env()
        start = time.monotonic()
        with pytest.raises(LLMError) as err:
            client.complete([{"role": "user", "content": "hi"}])
        assert err.value.reason == "timeout" and time.monotonic() - start < 1.6
