"""OpenEnv server (compoenv serve): episodes over HTTP and WebSocket with OpenEnv's own
clients against a real uvicorn server on loopback; concurrency, disconnects, malformed
requests, the session cap and idle reaping."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import re
import runpy
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openenv")
requests = pytest.importorskip("requests")

from click.testing import CliRunner  # noqa: E402
from openenv.core import GenericEnvClient  # noqa: E402
from websockets.exceptions import ConnectionClosedError  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from compoenv.actions import ToolCall, render_calls  # noqa: E402
from compoenv.cli import main  # noqa: E402
from compoenv.compose.verify import oracle_message  # noqa: E402
from compoenv.integrations.openenv import CompoenvClient  # noqa: E402
from compoenv.integrations.openenv_app import background_server, bind, make_app  # noqa: E402
from compoenv.task import Task, save_tasks  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tasks(tasks50: list[Task]) -> list[Task]:
    return tasks50[:6]


@pytest.fixture(scope="module")
def url(tasks: list[Task]) -> Iterator[str]:
    with background_server(make_app(tasks, max_sessions=256, idle_timeout_s=120)) as base:
        yield base


@pytest.fixture(scope="module")
def small_url(tasks: list[Task]) -> Iterator[str]:
    """A server of two sessions whose episodes are dropped after 0.5 s idle."""
    with background_server(make_app(tasks[:2], max_sessions=2, idle_timeout_s=0.5)) as base:
        yield base


def _oracle(task: Task) -> list[str]:
    """The oracle's actions: one hermes tool call per turn, then the final answer."""
    return [render_calls([call]) for call in task.solution] + [oracle_message(task)]


def _live(url: str) -> int:
    return requests.get(f"{url}/state", timeout=10).json()["live_episodes"]


def _wait_live(url: str, expected: int, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while _live(url) != expected:
        assert time.monotonic() < deadline, f"live episodes stay {_live(url)}, not {expected}"
        time.sleep(0.05)


def _http(url: str, route: str, body: Any) -> requests.Response:
    return requests.post(f"{url}/{route}", json=body, timeout=30)


def test_an_http_episode_stepped_with_the_id_its_reset_minted_reaches_reward_one(url, tasks):
    task = tasks[1]
    opening = _http(url, "reset", {"episode_id": "my-label", "task_index": 1}).json()
    meta = opening["observation"]["metadata"]
    assert meta["task_id"] == task.id and meta["client_episode_id"] == "my-label"
    episode = meta["episode_id"]
    assert episode != "my-label" and len(episode) >= 32  # minted by the server
    # the prompt is sent once, as messages and tools; as one text only when asked for
    assert opening["observation"]["text"] == ""
    assert opening["observation"]["messages"][-1]["content"] == task.instruction
    assert {t["function"]["name"] for t in opening["observation"]["tools"]} >= {
        c.name for c in task.solution}
    texted = _http(url, "reset", {"task_index": 1, "prompt_text": True}).json()
    assert task.instruction in texted["observation"]["text"]
    assert _http(url, "step", {"action": {"message": "Done."},  # ends it
                               "episode_id": texted["metadata"]["episode_id"]}).json()["done"]
    for action in _oracle(task):
        reply = _http(url, "step", {"action": {"message": action}, "episode_id": episode})
        assert reply.status_code == 200, reply.text
    result = reply.json()
    assert result["done"] and result["reward"] == 1.0
    assert result["metadata"]["passes"] == [True] * len(task.rubric)
    rubric = result["metadata"]["rubric"]
    assert [c["id"] for c in rubric] == [c.id for c in task.rubric]
    # the pass vector, never the expected answers the descriptions state
    assert all(set(c) <= {"id", "kind", "passed", "weight", "required"} for c in rubric)
    again = _http(url, "step", {"action": {"message": "hi"}, "episode_id": episode})
    assert again.status_code == 404 and "has finished" in again.json()["detail"]
    label = _http(url, "step", {"action": {"message": "hi"}, "episode_id": "my-label"})
    assert label.status_code == 404 and "reset first" in label.json()["detail"]


def test_a_websocket_episode_with_openenv_clients_reaches_reward_one(url, tasks):
    with GenericEnvClient(base_url=url).sync() as env:
        result = env.reset(seed=8)  # seed 8 of 6 tasks: task 2
        assert result.observation["metadata"]["task_id"] == tasks[2].id
        for action in _oracle(tasks[2]):
            result = env.step({"message": action})
        assert result.done and result.reward == 1.0
    with CompoenvClient(base_url=url).sync() as env:
        result = env.reset(task=tasks[3].id)
        assert result.observation.messages[-1]["content"] == tasks[3].instruction
        for action in _oracle(tasks[3]):
            result = env.step(action)
        assert result.reward == 1.0 and all(result.metadata["passes"])
        state = env.state()
        assert (state.task_id, state.done, state.rubric_score) == (tasks[3].id, True, 1.0)
        assert state.step_count == len(tasks[3].solution) + 1


def test_64_concurrent_sessions_keep_their_own_episodes(url, tasks):
    async def play(i: int) -> tuple[str, float, int, str]:
        task = tasks[i % len(tasks)]
        # even sessions solve their task; odd ones make one call and quit, which must
        # score below 1 whatever the others do
        actions = _oracle(task) if i % 2 == 0 else [_oracle(task)[0], "Done."]
        async with CompoenvClient(base_url=url) as env:
            result = await env.reset(task_index=i)
            episode = result.observation.metadata["episode_id"]
            for action in actions:
                await asyncio.sleep(0)
                result = await env.step(action)
            state = await env.state()
        assert state.episode_id == episode and state.task_id == task.id
        return episode, float(result.reward), state.step_count, state.task_id

    async def play_all() -> list[tuple[str, float, int, str]]:
        return await asyncio.gather(*(play(i) for i in range(64)))

    results = asyncio.run(play_all())
    assert len({episode for episode, *_ in results}) == 64
    for i, (_, reward, steps, task_id) in enumerate(results):
        task = tasks[i % len(tasks)]
        assert task_id == task.id
        if i % 2 == 0:
            assert (reward, steps) == (1.0, len(task.solution) + 1), i
        else:
            assert reward < 1.0 and steps == 2, i
    _wait_live(url, 0)  # each session's episode ended with its socket


def test_a_client_that_vanishes_mid_episode_is_dropped_and_the_server_serves_on(url, tasks):
    with connect(url.replace("http", "ws") + "/ws") as ws:
        ws.send(json.dumps({"type": "reset", "data": {"task_index": 0}}))
        assert json.loads(ws.recv())["type"] == "observation"
        ws.send(json.dumps({"type": "step", "data": {"message": _oracle(tasks[0])[0]}}))
        assert json.loads(ws.recv())["data"]["done"] is False
        assert _live(url) == 1
        ws.socket.close()  # no close frame: the connection just ends
        _wait_live(url, 0)
    with CompoenvClient(base_url=url).sync() as env:
        env.reset(task_index=0)
        for action in _oracle(tasks[0]):
            result = env.step(action)
        assert result.reward == 1.0


def test_malformed_http_requests_get_clear_errors_and_the_server_stays_up(url, tasks):
    opening = _http(url, "reset", {"task_index": 4})
    assert opening.status_code == 200
    step = {"episode_id": opening.json()["metadata"]["episode_id"]}
    cases = [
        ("step", {"action": {"text": "x"}, **step}, 422, "message"),
        ("step", {"action": {"message": 5}, **step}, 422, "string"),
        ("step", {"action": "call a tool", **step}, 422, "dictionary"),
        ("step", {"action": {"message": "x"}, "episode_id": "nope"}, 404, "no live episode"),
        ("step", {"action": {"message": "x"}}, 404, "send the episode_id your /reset returned"),
        ("step", {"action": {"message": "x"}, "episode_id": ["bad-1"]}, 400,
         "episode_id must be a string of 1 to 255 characters, got ['bad-1']"),
        ("step", {"action": {"message": "x" * (5 << 20)}, **step}, 413, "the limit is"),
        ("reset", {"task": "t-0000"}, 400, "Unknown task id"),
        ("reset", {"task": 7}, 400, "task must be the id"),
        ("reset", {"task_index": "first"}, 400, "task_index must be an integer"),
        ("reset", {"seed": -1}, 422, "greater than or equal to 0"),
        ("reset", {"colour": "red"}, 400, "unknown reset option(s) ['colour']"),
    ]
    for route, body, status, words in cases:
        reply = _http(url, route, body)
        assert reply.status_code == status, (body, reply.text)
        assert words in reply.text, (body, reply.text)
    not_json = requests.post(f"{url}/step", data="{not json", timeout=10,
                             headers={"content-type": "application/json"})
    assert not_json.status_code == 422 and "JSON decode error" in not_json.text
    # agent input is never a protocol error: an unknown tool and an over-long action are
    # answered in the observation, and the episode goes on
    unknown = render_calls([ToolCall("nope__nothing", {}, "c0")])
    for message, words in ((unknown, "nope__nothing"), ("y" * (2 << 20), "MAX_ACTION_CHARS")):
        reply = _http(url, "step", {"action": {"message": message}, **step}).json()
        assert words in reply["observation"]["text"] and not reply["done"]
        assert reply["metadata"]["tool_errors"] == 1
    for action in _oracle(tasks[4]):
        reply = _http(url, "step", {"action": {"message": action}, **step}).json()
    assert reply["reward"] == 1.0
    assert requests.get(f"{url}/health", timeout=10).json()["status"] == "healthy"


def test_malformed_websocket_messages_get_errors_and_the_session_goes_on(url, tasks):
    with connect(url.replace("http", "ws") + "/ws") as ws:
        def ask(message: str) -> dict[str, Any]:
            ws.send(message)
            return json.loads(ws.recv())

        assert ask("{not json")["data"]["code"] == "INVALID_JSON"
        assert ask(json.dumps({"type": "jump"}))["data"]["code"] == "UNKNOWN_TYPE"
        wrong = ask(json.dumps({"type": "step", "data": {"message": 5}}))
        assert wrong["data"]["code"] == "VALIDATION_ERROR"
        early = ask(json.dumps({"type": "step", "data": {"message": "hi"}}))["data"]
        assert early["code"] == "EXECUTION_ERROR" and "reset first" in early["message"]
        bad_task = ask(json.dumps({"type": "reset", "data": {"task": "t-0000"}}))["data"]
        assert "Unknown task id" in bad_task["message"]
        long_id = ask(json.dumps({"type": "reset", "data": {"episode_id": "e" * 300}}))["data"]
        assert "episode_id must be a string of 1 to 255 characters, got str" in long_id["message"]
        reply = ask(json.dumps({"type": "reset", "data": {"task_index": 5}}))
        for action in _oracle(tasks[5]):
            reply = ask(json.dumps({"type": "step", "data": {"message": action}}))
        assert reply["data"]["reward"] == 1.0
    # a message over 4 MiB closes the connection (code 1009), while sending or after
    with pytest.raises((ConnectionClosedError, ConnectionResetError, BrokenPipeError)):
        with connect(url.replace("http", "ws") + "/ws") as ws:
            ws.send(json.dumps({"type": "step", "data": {"message": "x" * (5 << 20)}}))
            ws.recv()
    assert ws.protocol.close_rcvd is None or ws.protocol.close_rcvd.code == 1009
    assert requests.get(f"{url}/health", timeout=10).json()["status"] == "healthy"


def test_sessions_past_the_cap_are_refused_and_idle_episodes_are_reaped(small_url):
    first = _http(small_url, "reset", {})
    assert first.status_code == 200
    assert _http(small_url, "reset", {}).status_code == 200
    full = _http(small_url, "reset", {})
    assert full.status_code == 503 and "--max-sessions 2" in full.json()["detail"]
    time.sleep(0.8)
    gone = _http(small_url, "step", {"action": {"message": "hi"},
                                     "episode_id": first.json()["metadata"]["episode_id"]})
    assert gone.status_code == 404 and "dropped after 0.5 s idle" in gone.json()["detail"]
    assert _live(small_url) == 0
    first, second = (CompoenvClient(base_url=small_url).sync() for _ in range(2))
    with first, second:
        first.reset()
        second.reset()
        with CompoenvClient(base_url=small_url).sync() as third:
            with pytest.raises(RuntimeError, match="capacity"):
                third.reset()
        time.sleep(0.8)  # an open session's idle episode is reaped too
        with pytest.raises(RuntimeError, match="dropped after 0.5 s idle"):
            first.step("hi")


def test_schema_and_metadata_publish_the_action_observation_and_state(url):
    metadata = requests.get(f"{url}/metadata", timeout=10).json()
    assert metadata["name"] == "compoenv" and "6 compositional" in metadata["description"]
    schema = requests.get(f"{url}/schema", timeout=10).json()
    assert schema["action"]["required"] == ["message"]
    assert {"text", "messages", "tools"} <= set(schema["observation"]["properties"])
    assert {"task_id", "live_episodes"} <= set(schema["state"]["properties"])


def test_serve_on_a_busy_port_is_a_one_line_error():
    sock = bind("127.0.0.1", 0)
    sock.listen()
    port = sock.getsockname()[1]
    with sock:
        result = CliRunner().invoke(main, ["serve", "--port", str(port), "--num", "1"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"cannot listen on 127.0.0.1:{port}" in result.output


def test_the_client_example_plays_a_served_task_to_reward_one(url, tasks, tmp_path, monkeypatch,
                                                              capsys):
    save_tasks(tasks, tmp_path / "tasks.jsonl")
    monkeypatch.setattr(sys, "argv", ["openenv_client.py", "--url", url, "--tasks",
                                      str(tmp_path / "tasks.jsonl"), "--task-index", "4"])
    runpy.run_path(str(ROOT / "examples" / "openenv_client.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert f"task {tasks[4].id}" in out and "reward 1.00" in out


def _doc_class(name: str) -> Any:
    """A class defined in a Python block of docs/frameworks/openenv.md, as a reader runs it."""
    text = (ROOT / "docs" / "frameworks" / "openenv.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S)
                 if f"class {name}" in b)
    namespace: dict[str, Any] = {}
    exec(compile(block, f"docs/frameworks/openenv.md:{name}", "exec"), namespace)
    return namespace


def test_the_documented_trl_environment_class_plays_a_served_task(url, tasks):
    namespace = _doc_class("RemoteCompoWorld")
    env_cls = namespace["RemoteCompoWorld"]
    env_cls.url = url
    env = env_cls()
    # the tools GRPOTrainer finds: the public functions of the class but reset and get_reward
    tools = [n for n, _ in inspect.getmembers(env_cls, predicate=inspect.isfunction)
             if n not in ("reset", "get_reward") and not n.startswith("_")]
    assert tools == ["call_tool"]
    task = tasks[5]
    assert task.instruction in env.reset(task_id=task.id, prompt=[])
    for call in task.solution:
        assert '"success": true' in env.call_tool(call.name, call.arguments)
    reply = [{"role": "assistant", "content": oracle_message(task)}]
    assert namespace["remote_rubric_reward"]([reply], [env]) == [1.0]


def test_the_documented_skyrl_text_env_plays_a_served_task(url, tasks):
    pytest.importorskip("skyrl_gym")
    env = _doc_class("RemoteCompoWorldText")["RemoteCompoWorldText"](
        extras={"url": url, "task_id": tasks[0].id})
    messages, _ = env.init([])
    assert messages[-1]["content"] == tasks[0].instruction
    for action in _oracle(tasks[0]):
        out = env.step(action)
    env.close()
    assert out["done"] and out["reward"] == 1.0 and out["observations"] == []


def test_serve_builds_the_app_its_flags_describe(tasks, tmp_path, monkeypatch):
    from compoenv.integrations import openenv_app

    save_tasks(tasks, tmp_path / "tasks.jsonl")
    started: dict[str, Any] = {}

    def run_instead(app: Any, host: str, port: int, log_level: str, sock: Any) -> None:
        sock.close()  # the command bound its port; uvicorn runs it below, in a thread
        started.update(app=app, host=host, port=port)

    monkeypatch.setattr(openenv_app, "serve", run_instead)
    result = CliRunner().invoke(main, [
        "serve", "--tasks", str(tmp_path / "tasks.jsonl"), "--port", "0", "--mode", "gateway",
        "--max-sessions", "3", "--idle-timeout", "0", "--token", "t-1", "--max-per-client", "2",
        "--reset-rate", "0", "--request-timeout", "4", "--expose-rubric"])
    assert result.exit_code == 0, result.output
    assert f"serving 6 tasks from {tmp_path / 'tasks.jsonl'} (gateway mode)" in result.output
    assert "at most 3 sessions, no idle limit" in result.output
    store = started["app"].state.compoenv_store
    assert started["port"] > 0 and store.idle_timeout_s is None
    assert (store.max_per_client, store.reset_rate) == (2, None)
    assert started["app"].state.compoenv_service.expose_rubric
    assert started["app"].state.compoenv_request_timeout_s == 4
    assert "1 bearer token(s)" in result.output
    with background_server(started["app"]) as base:
        assert _http(base, "reset", {}).status_code == 401
        opening = requests.post(f"{base}/reset", json={"task_index": 0}, timeout=30,
                                headers={"Authorization": "Bearer t-1"}).json()
        assert opening["observation"]["metadata"]["mode"] == "gateway"
        assert {t["function"]["name"] for t in opening["observation"]["tools"]} == {
            "list_services", "list_tools", "describe_tool", "call_tool"}
        assert requests.get(f"{base}/state", timeout=10, headers={
            "Authorization": "Bearer t-1"}).json()["max_episodes"] == 3


def test_serve_takes_its_tokens_from_the_environment(tasks, tmp_path, monkeypatch):
    from compoenv.integrations import openenv_app

    save_tasks(tasks, tmp_path / "tasks.jsonl")
    started: dict[str, Any] = {}

    def run_instead(app: Any, host: str, port: int, log_level: str, sock: Any) -> None:
        sock.close()
        started.update(app=app)

    monkeypatch.setattr(openenv_app, "serve", run_instead)
    monkeypatch.setenv("COMPOENV_SERVE_TOKEN", "alpha, beta,")
    result = CliRunner().invoke(main, ["serve", "--tasks", str(tmp_path / "tasks.jsonl"),
                                       "--port", "0"])
    assert result.exit_code == 0, result.output
    assert "2 bearer token(s)" in result.output
    with background_server(started["app"]) as base:
        with CompoenvClient(base_url=base).sync() as env:  # the first token, from the env
            assert env.reset(task_index=0).observation.metadata["task_id"] == tasks[0].id


def test_without_openenv_the_integration_and_the_command_name_the_extra(monkeypatch):
    for name in [m for m in sys.modules if m.split(".")[0] == "openenv"]:
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed
    for name in ("compoenv.integrations.openenv_app", "compoenv.integrations.openenv"):
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(ImportError, match=r"pip install 'compoenv\[openenv\]'"):
        importlib.import_module("compoenv.integrations.openenv")
    result = CliRunner().invoke(main, ["serve", "--num", "1"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "compoenv serve needs openenv: pip install 'compoenv[openenv]'" in result.output
