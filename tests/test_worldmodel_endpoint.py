"""EndpointWorldModel against the loopback chat server, through the Simulator and a spec service.

The fake LLM reads the prompt (tool, arguments, stored records), runs the offline model on the
same request and replies ``{"data": ..., "patch": ...}``: valid answers, so what is tested is
the plumbing, the recording and the failure paths (faults, repair round, fallback, 500s).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("openai")

from chat_server import ChatServer  # tests/ is on sys.path: see chat_server.py
from notes_spec import Notes

from compoenv.llm import ChatClient, EndpointConfig
from compoenv.service import Service
from compoenv.world import World
from compoenv.worldmodel import (
    OfflineWorldModel,
    Simulator,
    ToolRequest,
    WorldModelError,
)
from compoenv.worldmodel import config as wm_config
from compoenv.worldmodel.endpoint import (
    EndpointWorldModel,
    build_messages,
    response_schema,
)

MODEL = "sim-model"
_RECORDS = re.compile(r"^Stored records: (.*)$", re.MULTILINE)


def fake_llm(request: dict[str, Any]) -> str:
    """A reply built by the offline model from what the prompt says."""
    prompt = request["messages"][1]["content"]
    tool = re.search(r"^Tool: notes__(\w+)", prompt, re.MULTILINE).group(1)  # type: ignore
    args = json.loads(re.search(r"^Arguments: (.*)$", prompt, re.MULTILINE).group(1))  # type: ignore
    records, _ = json.JSONDecoder().raw_decode(_RECORDS.search(prompt).group(1))  # type: ignore
    spec = Notes.tool_specs()[tool]
    answer = OfflineWorldModel().answer(ToolRequest(spec, args, World(0), records, seed=7))
    reply: dict[str, Any] = {"data": answer.data}
    if not spec.read_only:
        reply["patch"] = answer.patch
    return json.dumps(reply)


@pytest.fixture()
def server() -> Iterator[ChatServer]:
    with ChatServer(responder=fake_llm, model=MODEL, slow_s=1.0, lifetime_s=30) as srv:
        yield srv


def make_model(server: ChatServer, **overrides: Any) -> EndpointWorldModel:
    # replies come at once: a generous timeout keeps a loaded machine from turning a fault
    # into "timeout"; the slow-mode test sets 0.3 s
    options: dict[str, Any] = {"timeout_s": 3.0, "max_retries": 0, "backoff_s": 0.01}
    options.update(overrides)
    return EndpointWorldModel(EndpointConfig(base_url=server.url, model=MODEL, **options))


def make_service(model: Any, on_error: str = "fallback") -> tuple[Service, Simulator]:
    service = Notes(World(0))
    simulator = Simulator(model, fallback=OfflineWorldModel(), on_error=on_error)
    service.simulator = simulator
    return service, simulator


def request_for(tool: str, args: dict[str, Any], records: Any = None) -> ToolRequest:
    return ToolRequest(Notes.tool_specs()[tool], args, World(0), records or {}, seed=1)


def test_answers_pass_through_the_simulator_and_are_recorded(server: ChatServer) -> None:
    model = make_model(server)
    assert model.name == f"endpoint:{MODEL}"
    service, simulator = make_service(model)
    made = service.call("create_note", {"title": "Groceries", "body": "milk"})
    assert made["success"] and made["simulated"], made
    note = made["data"]
    assert service.state.records["note"][note["id"]] == note  # the patch was applied
    listed = service.call("list_notes", {})
    assert listed["success"] and note in listed["data"]  # the stored record is read back
    assert {v["source"] for v in simulator.recording.values()} == {f"endpoint:{MODEL}"}
    assert len(simulator.recording) == 2 and not simulator.events
    sent = server.bodies[-1]
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"]["required"] == ["data"]
    prompt = sent["messages"][1]["content"]
    assert "Today: 2026-03-16" in prompt and World(0).user.name in prompt
    assert note["id"] in prompt  # the stored records are in the prompt
    assert service.call("list_notes", {}) == listed and len(server.bodies) == 2  # cached


def test_write_schema_asks_for_a_patch_of_the_tool_collection() -> None:
    write = response_schema(request_for("create_note", {"title": "a", "body": "b"}))
    assert write["required"] == ["data", "patch"]
    assert list(write["properties"]["patch"]["properties"]) == ["note"]
    assert "x-interface" not in json.dumps(write)
    read = response_schema(request_for("list_notes", {}))
    assert read["required"] == ["data"] and "patch" not in read["properties"]


def test_prompt_bounds_the_stored_records() -> None:
    records = {"note": {f"N-{i:04d}": {"id": f"N-{i:04d}", "title": "t", "body": "x" * 200}
                        for i in range(100)}}
    request = request_for("list_notes", {}, records)
    prompt = build_messages(request)[1]["content"]
    assert len(prompt) < 8000 and "more not shown" in prompt
    assert "N-0099" in prompt  # newest first


def assert_fell_back(server: ChatServer, mode: str, reason: str, **overrides: Any) -> None:
    service, simulator = make_service(make_model(server, **overrides))
    server.mode = mode
    result = service.call("create_note", {"title": "Plan", "body": "draft"})
    assert result["success"], result  # answered offline
    assert service.state.records["note"]  # the offline patch was applied
    assert [e["event"] for e in simulator.events] == ["model_failed", "fallback"]
    assert simulator.events[0]["reason"] == reason
    assert simulator.events[1]["model"] == "offline"
    assert not simulator.recording  # offline answers are not recorded


@pytest.mark.parametrize(("mode", "reason"), [
    ("down", "unreachable"), ("slow", "timeout"), ("non_json", "bad_response"),
    ("huge", "too_large"), ("schema_violation", "bad_response"), ("http_500", "http_5xx")])
def test_faults_fall_back_to_offline(server: ChatServer, mode: str, reason: str) -> None:
    assert_fell_back(server, mode, reason, **({"timeout_s": 0.3} if mode == "slow" else {}))


def test_retries_then_answers(server: ChatServer) -> None:
    service, simulator = make_service(make_model(server, max_retries=1))
    server.mode = "http_500_then_ok"
    assert service.call("list_notes", {})["success"]
    assert not simulator.events and len(server.bodies) == 2


def test_invalid_output_gets_one_repair_round_then_falls_back(server: ChatServer) -> None:
    server.responder = lambda req: json.dumps({"data": [{"id": 1, "title": "t"}]})
    service, simulator = make_service(make_model(server))
    assert service.call("list_notes", {})["success"]
    assert len(server.bodies) == 2  # the first reply and the repair round
    repair = server.bodies[1]["messages"][-1]
    assert repair["role"] == "user" and "not valid" in repair["content"]
    assert "data/0" in repair["content"]  # where the reply was off
    assert simulator.events[0]["reason"] == "invalid_output"
    assert simulator.events[1]["event"] == "fallback"


def test_repair_round_can_succeed(server: ChatServer) -> None:
    replies = iter(["not json at all", None])
    server.responder = lambda req: next(replies) or fake_llm(req)
    service, simulator = make_service(make_model(server))
    assert service.call("list_notes", {})["success"]
    assert not simulator.events and len(simulator.recording) == 1


def test_read_only_patch_is_refused_by_the_schema(server: ChatServer) -> None:
    server.responder = lambda req: json.dumps({"data": [], "patch": {"note": {}}})
    with pytest.raises(WorldModelError) as caught:
        make_model(server).answer(request_for("list_notes", {}))
    assert caught.value.reason == "invalid_output"


def test_on_error_error_gives_a_500_envelope(server: ChatServer) -> None:
    service, simulator = make_service(make_model(server), on_error="error")
    server.mode = "http_500"
    result = service.call("create_note", {"title": "Plan", "body": "draft"})
    assert result["success"] is False and result["error"]["code"] == 500
    assert "http_5xx" in result["error"]["message"]
    assert not service.state.records.get("note")
    assert [e["event"] for e in simulator.events] == ["model_failed"]


def test_a_shared_chat_client_is_accepted(server: ChatServer) -> None:
    client = ChatClient(EndpointConfig(base_url=server.url, model=MODEL, timeout_s=3.0,
                                       max_retries=0))
    answer = EndpointWorldModel(client).answer(request_for("list_notes", {}))
    assert answer.source == f"endpoint:{MODEL}" and isinstance(answer.data, list)


@pytest.fixture()
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for name in ("COMPOENV_WORLD_MODEL", "COMPOENV_WORLD_MODEL_ON_ERROR",
                 "COMPOENV_LLM_BASE_URL", "COMPOENV_LLM_MODEL", "COMPOENV_LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    wm_config.clear_cache()
    yield monkeypatch
    wm_config.clear_cache()


def test_config_offline_default_and_pass_through(clean_env: pytest.MonkeyPatch) -> None:
    assert isinstance(wm_config.world_model_from(None), OfflineWorldModel)
    assert isinstance(wm_config.world_model_from("offline"), OfflineWorldModel)
    custom = OfflineWorldModel()
    assert wm_config.world_model_from(custom) is custom
    sim = wm_config.simulator_from()
    assert sim.fallback is None and sim.on_error == "fallback"
    with pytest.raises(ValueError, match="unknown world model"):
        wm_config.world_model_from("gpt:4")
    with pytest.raises(ValueError, match="COMPOENV_LLM_BASE_URL"):
        wm_config.world_model_from("endpoint")
    clean_env.setenv("COMPOENV_WORLD_MODEL_ON_ERROR", "explode")
    with pytest.raises(ValueError, match="explode"):
        wm_config.simulator_from()


def test_config_endpoint_forms(clean_env: pytest.MonkeyPatch, server: ChatServer) -> None:
    clean_env.setenv("COMPOENV_LLM_MODEL", MODEL)
    model = wm_config.world_model_from(f"endpoint:{server.url}")
    assert isinstance(model, EndpointWorldModel) and model.name == f"endpoint:{MODEL}"
    assert model.client.config.base_url == server.url
    assert wm_config.world_model_from(f"endpoint:{server.url}") is model  # built once
    clean_env.setenv("COMPOENV_LLM_BASE_URL", server.url)
    clean_env.setenv("COMPOENV_WORLD_MODEL", "endpoint")
    clean_env.setenv("COMPOENV_WORLD_MODEL_ON_ERROR", "error")
    sim = wm_config.simulator_from()
    assert isinstance(sim.model, EndpointWorldModel) and sim.fallback is None
    assert sim.on_error == "error"
    sim = wm_config.simulator_from(EndpointConfig(base_url=server.url, model="m2"),
                                   on_error="fallback")
    assert sim.model.name == "endpoint:m2" and isinstance(sim.fallback, OfflineWorldModel)
    service = Notes(World(0))
    service.simulator = sim
    assert service.call("list_notes", {})["success"]
    assert server.bodies[-1]["model"] == "m2"


def test_fake_llm_matches_the_offline_answer() -> None:
    """The fake LLM is a faithful stand-in: its reply is valid against the reply schema."""
    import jsonschema

    request = request_for("create_note", {"title": "a", "body": "b"})
    body: dict[str, Any] = {"messages": build_messages(request)}
    reply: Callable[[dict[str, Any]], str] = fake_llm
    jsonschema.validate(json.loads(reply(body)), response_schema(request))


def test_local_backend_names_the_extra_when_packages_are_missing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs without torch too: a missing package is a clear ImportError, not a traceback."""
    from compoenv.worldmodel.local import TransformersWorldModel

    monkeypatch.setitem(sys.modules, "torch", None)  # fast: torch is not even imported
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(ImportError, match=r"pip install 'compoenv\[llm\]'"):
        TransformersWorldModel("/nonexistent/model")


def test_a_model_that_forgets_what_it_said_is_held_to_it() -> None:
    """An endpoint that shows the same note differently on each call: the simulator
    reconciles after the model answers, so the episode sees the note as first shown."""
    calls = iter(range(1000))

    def forgetful(request: dict[str, Any]) -> str:
        n = next(calls)
        return json.dumps({"data": [{"id": "NOTE-7781", "title": f"Draft {n}",
                                     "body": f"version {n}"},
                                    {"id": f"NOTE-{1000 + n}", "title": "Other",
                                     "body": "new"}]})

    with ChatServer(responder=forgetful, model=MODEL, slow_s=1.0, lifetime_s=30) as srv:
        service = Notes(World(0))
        service.simulator = Simulator(make_model(srv), fallback=OfflineWorldModel(),
                                      cache_bytes=0)
        first = service.call("list_notes", {})
        again = service.call("list_notes", {})
    assert first["success"] and again["success"], (first, again)
    assert len(srv.bodies) == 2  # the model was asked twice and answered differently
    assert again["data"][0] == first["data"][0] == {"id": "NOTE-7781", "title": "Draft 0",
                                                    "body": "version 0"}
    assert again["data"][1]["id"] == "NOTE-1001"  # a record not shown before is as drawn
