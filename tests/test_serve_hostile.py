"""compoenv serve against hostile clients on loopback: hijacking another client's episode,
episode id collisions, squatting on the server's places, a chunked body past the limit, slow
and half-open connections, requests without the bearer token. bench/serve.py --attack
measures the same attacks' cost to honest clients (RSS, p99)."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("openenv")
requests = pytest.importorskip("requests")

from websockets.exceptions import ConnectionClosed, InvalidStatus  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from compoenv.actions import render_calls  # noqa: E402
from compoenv.compose.verify import oracle_message  # noqa: E402
from compoenv.integrations.openenv import CompoenvClient  # noqa: E402
from compoenv.integrations.openenv_app import background_server, make_app  # noqa: E402
from compoenv.task import Task  # noqa: E402

HONEST, INTRUDER = "honest-token-0123456789", "intruder-token-9876543210"


@pytest.fixture(scope="module")
def tasks(tasks50: list[Task]) -> list[Task]:
    return tasks50[:3]


@pytest.fixture(scope="module")
def url(tasks: list[Task]) -> Iterator[str]:
    app = make_app(tasks, max_sessions=6, idle_timeout_s=60, reclaim_idle_s=0.3,
                   tokens=[HONEST, INTRUDER], reset_rate=50, max_request_bytes=64 << 10,
                   request_timeout_s=0.6)
    with background_server(app) as base:
        yield base


def _post(url: str, route: str, body: Any, token: str | None = HONEST) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return requests.post(f"{url}/{route}", json=body, headers=headers, timeout=10)


def _oracle(task: Task) -> list[str]:
    return [render_calls([call]) for call in task.solution] + [oracle_message(task)]


def _stats(url: str) -> dict[str, Any]:
    return requests.get(f"{url}/state", headers={"Authorization": f"Bearer {HONEST}"},
                        timeout=10).json()


def test_no_token_no_service_but_health(url):
    assert _post(url, "reset", {}, token=None).status_code == 401
    assert _post(url, "reset", {}, token="guess").status_code == 401
    assert requests.get(f"{url}/health", timeout=10).status_code == 200
    with pytest.raises(InvalidStatus):
        connect(url.replace("http", "ws") + "/ws").close()


def test_another_clients_episode_cannot_be_stepped_or_read(url, tasks):
    task = tasks[0]
    with CompoenvClient(base_url=url, token=HONEST).sync() as env:
        result = env.reset(task_index=0)
        ws_episode = result.observation.metadata["episode_id"]
        http = _post(url, "reset", {"task_index": 1}).json()["metadata"]["episode_id"]
        for episode in (ws_episode, http):  # ids leaked to the intruder
            stolen = _post(url, "step", {"action": {"message": "Done."}, "episode_id": episode},
                           token=INTRUDER)
            assert stolen.status_code == 404 and "rubric" not in stolen.text
            peek = requests.get(f"{url}/state", params={"episode_id": episode}, timeout=10,
                                headers={"Authorization": f"Bearer {INTRUDER}"})
            assert peek.status_code == 404
        # the WebSocket's own episode is not reachable over HTTP even by its own client
        assert _post(url, "step", {"action": {"message": "Done."},
                                   "episode_id": ws_episode}).status_code == 404
        time.sleep(0.8)  # past the request time: a WebSocket is not an unfinished request
        for action in _oracle(task):
            result = env.step(action)
        assert result.reward == 1.0
        rubric = result.metadata["rubric"]
        assert all("description" not in c and "detail" not in c for c in rubric)
    assert _post(url, "step", {"action": {"message": "Done."},
                               "episode_id": http}).json()["done"]


def test_clients_naming_the_same_episode_play_their_own(url, tasks):
    first = _post(url, "reset", {"episode_id": "run-0", "task_index": 0}).json()["metadata"]
    second = _post(url, "reset", {"episode_id": "run-0", "task_index": 0},
                   token=INTRUDER).json()["metadata"]
    assert first["episode_id"] != second["episode_id"]
    assert first["client_episode_id"] == second["client_episode_id"] == "run-0"
    quit_ = _post(url, "step", {"action": {"message": "Done."},
                                "episode_id": second["episode_id"]}, token=INTRUDER).json()
    assert quit_["done"] and quit_["reward"] < 1.0
    for action in _oracle(tasks[0]):
        reply = _post(url, "step", {"action": {"message": action},
                                    "episode_id": first["episode_id"]}).json()
    assert reply["reward"] == 1.0


def test_a_squatter_cannot_starve_another_client(url, tasks):
    held = []
    for _ in range(12):  # far more than the server's 6 places
        reply = _post(url, "reset", {}, token=INTRUDER)
        if reply.status_code == 200:
            held.append(reply.json()["metadata"]["episode_id"])
        else:
            assert reply.status_code in (429, 503), reply.text
    assert len(held) == 6
    refused = _post(url, "reset", {}, token=INTRUDER)
    assert refused.status_code == 503 and "capacity" in refused.json()["detail"]
    time.sleep(0.4)  # the squatter's places are idle now: one is reclaimed for the other
    with CompoenvClient(base_url=url, token=HONEST).sync() as env:
        env.reset(task_index=2)
        for action in _oracle(tasks[2]):
            result = env.step(action)
        assert result.reward == 1.0
    gone = [_post(url, "step", {"action": {"message": "Done."}, "episode_id": e},
                  token=INTRUDER) for e in held]
    assert sum(r.status_code == 404 and "reclaimed" in r.text for r in gone) >= 1
    assert _stats(url)["max_episodes"] == 6


def test_resets_past_the_rate_are_refused_with_retry_after(tasks):
    app = make_app(tasks, max_sessions=64, reset_rate=0.1)  # one now, the next in 10 s
    with background_server(app) as base:
        codes = [requests.post(f"{base}/reset", json={}, timeout=10) for _ in range(3)]
        with CompoenvClient(base_url=base).sync() as env:  # a new session is a new place
            with pytest.raises(RuntimeError, match="--reset-rate"):
                env.reset()
    assert [r.status_code for r in codes] == [200, 429, 429]
    assert int(codes[-1].headers["Retry-After"]) >= 1 and "--reset-rate" in codes[-1].text


def _raw(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=5)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    return data


def test_a_chunked_body_past_the_limit_is_refused_as_it_arrives(url):
    with _raw(url) as sock:
        sock.sendall(b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Authorization: Bearer " + HONEST.encode() +
                     b"\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"x" * 16384
        sent = 0
        try:
            for _ in range(64):  # 1 MiB offered against a 64 KiB limit
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        reply = _read_all(sock)
    assert reply.startswith(b"HTTP/1.1 413") and b"sent in chunks" in reply
    assert requests.get(f"{url}/health", timeout=10).status_code == 200


def test_silent_and_slow_connections_are_closed(url):
    start = time.monotonic()
    silent = [_raw(url) for _ in range(20)]  # connect, send nothing
    slow = _raw(url)
    for byte in b"POST /reset HTTP/1.1\r\nHost: x\r\n":  # a byte every 50 ms
        try:
            slow.sendall(bytes([byte]))
        except (BrokenPipeError, ConnectionResetError):
            break
        time.sleep(0.05)
    for sock in [*silent, slow]:
        sock.settimeout(5)
        assert _read_all(sock) == b""  # closed by the server, no answer
        sock.close()
    assert time.monotonic() - start < 5
    assert requests.get(f"{url}/health", timeout=10).status_code == 200


def test_expose_rubric_sends_the_criteria_in_full(tasks):
    with background_server(make_app(tasks, expose_rubric=True)) as base:
        episode = requests.post(f"{base}/reset", json={"task_index": 0},
                                timeout=10).json()["metadata"]["episode_id"]
        for action in _oracle(tasks[0]):
            reply = requests.post(f"{base}/step", timeout=10, json={
                "action": {"message": action}, "episode_id": episode}).json()
    assert reply["reward"] == 1.0
    assert all(c["description"] for c in reply["metadata"]["rubric"])
    assert json.dumps(reply["metadata"]["rubric"]) == json.dumps(
        reply["observation"]["metadata"]["rubric"])


def test_idle_websocket_squatters_are_reclaimed_for_another_client(tasks):
    app = make_app(tasks, max_sessions=2, reclaim_idle_s=0.2, tokens=[HONEST, INTRUDER])
    told = []
    with background_server(app) as base, contextlib.ExitStack() as stack:
        ws = base.replace("http", "ws") + "/ws"
        squatters = [stack.enter_context(connect(ws, additional_headers={
            "Authorization": f"Bearer {INTRUDER}"})) for _ in range(2)]
        for sock in squatters:
            sock.send(json.dumps({"type": "reset", "data": {}}))
            assert json.loads(sock.recv())["type"] == "observation"
        time.sleep(0.4)  # both idle: one is reclaimed for the honest client
        with CompoenvClient(base_url=base, token=HONEST).sync() as env:
            env.reset(task_index=1)
            for action in _oracle(tasks[1]):
                result = env.step(action)
            assert result.reward == 1.0
        for sock in squatters:
            with contextlib.suppress(TimeoutError, ConnectionClosed):
                told.append(json.loads(sock.recv(timeout=1))["data"]["message"])
    assert len(told) == 1 and "reclaimed" in told[0]
