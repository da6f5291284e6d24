"""Serving benchmark: ``compoenv serve`` against OpenEnv's echo environment served the same way
(uvicorn on loopback, the same client, in the same run), and against hostile clients.

Run ``python -m bench.serve [--seconds S] [--sessions N] [--out FILE]``: each server runs in
its own process; N WebSocket sessions (one asyncio client process) play episodes for S
seconds a side, in two interleaved rounds. compoenv's sessions play their tasks with the
oracle's actions; echo's send the same number of steps. Figures: steps a second, the server's
CPU a step (user + system time of its process over the window), p50/p99 step latency, and the
ratios compoenv/echo.

``python -m bench.serve --attack``: 16 honest sessions play while intruders (each its own
token, in a process of their own) squat on HTTP episodes, try to step other clients' episode ids, send chunked bodies
past the limit and hold half-open connections; the honest p99 with and without the attack,
the attacks' outcomes and the server's RSS (peak and after) are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import json
import multiprocessing
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._cli import emit, progress_log

log = progress_log("bench.serve")
TARGETS = {"steps_per_s_ratio": (">=", 0.67), "cpu_per_step_ratio": ("<=", 1.5),
           "p99_ratio": ("<=", 2.0)}
HONEST, INTRUDER = "bench-honest-token", "bench-intruder-token"


# --- the servers (run as: python -m bench.serve --server KIND --port P [--tasks F]) ---------
def _echo_app() -> Any:
    """OpenEnv's echo template (openenv init), served by OpenEnv's create_app."""
    from openenv.core.env_server.http_server import create_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State
    from pydantic import Field

    class EchoAction(Action):
        message: str = Field(..., description="Message to echo back")

    class EchoObservation(Observation):
        echoed_message: str = Field(default="")
        message_length: int = Field(default=0)

    class EchoEnvironment(Environment):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            self._state = State(episode_id="-", step_count=0)

        def reset(self, seed: Any = None, episode_id: Any = None, **kwargs: Any) -> Any:
            self._state = State(episode_id=episode_id or "e", step_count=0)
            return EchoObservation(echoed_message="Echo environment ready!", done=False,
                                   reward=0.0)

        def step(self, action: EchoAction) -> Any:  # type: ignore[override]
            self._state.step_count += 1
            return EchoObservation(echoed_message=action.message,
                                   message_length=len(action.message), done=False,
                                   reward=len(action.message) * 0.1,
                                   metadata={"step": self._state.step_count})

        @property
        def state(self) -> State:
            return self._state

    return create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="echo",
                      max_concurrent_envs=512)


def _server(kind: str, port: int, tasks: str | None, attack: bool) -> None:
    import uvicorn

    from compoenv.integrations import openenv_app

    if kind == "echo":
        app = _echo_app()
    else:
        extra: dict[str, Any] = dict(tokens=[HONEST, INTRUDER, INTRUDER + "-2"],
                                     reclaim_idle_s=1.0, request_timeout_s=2.0,
                                     max_sessions=64) if attack else dict(max_sessions=512)
        app = openenv_app.make_app(tasks, idle_timeout_s=60, reset_rate=None if not attack
                                   else 200, **extra)
    sock = openenv_app.bind("127.0.0.1", port)
    if kind == "compoenv":  # as compoenv serve runs it
        openenv_app.serve(app, "127.0.0.1", port, "error", sock=sock)
        return
    app.state.compoenv_compression = False  # served the same way: compression off too
    config = openenv_app._config(app, "127.0.0.1", port, "error")
    uvicorn.Server(config).run(sockets=[sock])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    def __init__(self, kind: str, tasks: str | None, attack: bool = False) -> None:
        self.port = _free_port()
        argv = [sys.executable, "-m", "bench.serve", "--server", kind, "--port", str(self.port)]
        if tasks:
            argv += ["--tasks", tasks]
        if attack:
            argv.append("--attack")
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the {kind} server did not start")
                time.sleep(0.2)
        self.url = f"ws://127.0.0.1:{self.port}/ws"

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# --- the client --------------------------------------------------------------------------
async def _session(url: str, plays: list[list[str]], index: int, stop: float,
                   latencies: list[float], headers: dict[str, str] | None = None) -> int:
    from websockets.asyncio.client import connect

    steps = 0
    async with connect(url, max_size=None, additional_headers=headers,
                       compression=None) as ws:
        episode = 0
        while time.perf_counter() < stop:
            task_index = (index + episode) % len(plays)
            await ws.send(json.dumps({"type": "reset", "data": {"task_index": task_index}}))
            reply = json.loads(await ws.recv())
            assert reply["type"] == "observation", reply
            for action in plays[task_index]:
                began = time.perf_counter()
                await ws.send(json.dumps({"type": "step", "data": {"message": action}}))
                reply = json.loads(await ws.recv())
                latencies.append(time.perf_counter() - began)
                assert reply["type"] == "observation", reply
                steps += 1
                if time.perf_counter() >= stop:
                    break
            episode += 1
    return steps


async def _drive(url: str, plays: list[list[str]], sessions: int, seconds: float,
                 headers: dict[str, str] | None = None) -> tuple[int, list[float], float]:
    latencies: list[float] = []
    began = time.perf_counter()
    counts = await asyncio.gather(*(_session(url, plays, i, began + seconds, latencies, headers)
                                    for i in range(sessions)))
    return sum(counts), latencies, time.perf_counter() - began


def _measure(server: Server, plays: list[list[str]], sessions: int,
             seconds: float) -> dict[str, Any]:
    asyncio.run(_drive(server.url, plays, sessions, 1.0))  # warm up
    cpu, client = server.cpu_s(), time.process_time()
    steps, latencies, wall = asyncio.run(_drive(server.url, plays, sessions, seconds))
    cpu, client = server.cpu_s() - cpu, time.process_time() - client
    return {"steps": steps, "wall_s": wall, "cpu_s": cpu, "client_cpu_s": client,
            "latencies": latencies}


def _summary(parts: list[dict[str, Any]]) -> dict[str, float]:
    steps = sum(p["steps"] for p in parts)
    wall = sum(p["wall_s"] for p in parts)
    latencies = sorted(x for p in parts for x in p["latencies"])
    return {"steps_per_s": round(steps / wall, 1),
            "cpu_ms_per_step": round(1000 * sum(p["cpu_s"] for p in parts) / steps, 3),
            # the one client process's CPU a step: with 2 busy cores it bounds steps/s too
            "client_cpu_ms_per_step": round(1000 * sum(p["client_cpu_s"] for p in parts)
                                            / steps, 3),
            "p50_ms": round(1000 * statistics.median(latencies), 2),
            "p99_ms": round(1000 * latencies[int(0.99 * (len(latencies) - 1))], 2),
            "steps": steps}


def _plays(tasks: list[Any]) -> list[list[str]]:
    from compoenv.actions import render_calls
    from compoenv.compose.verify import oracle_message

    return [[render_calls([c]) for c in t.solution] + [oracle_message(t)] for t in tasks]


def _tasks(path: Path) -> list[Any]:
    from compoenv.compose import Composer, ComposerConfig
    from compoenv.task import save_tasks

    tasks = list(Composer(config=ComposerConfig(min_hops=2, max_hops=4)).generate(16, seed=11))
    save_tasks(tasks, path)
    return tasks


def _env_cpu_ms(tasks: list[Any], plays: list[list[str]], seconds: float) -> float:
    """The env's own CPU a step (its resets included), played in this process without a
    server: what any server of these tasks must spend, the rest being the serving layer."""
    from compoenv.integrations.openenv import EpisodeService, EpisodeStore, ServedTasks

    service = EpisodeService(ServedTasks(tasks), EpisodeStore(4, None, reset_rate=None))
    slot = service.store.admit("bench", "ws")
    steps, began, stop = 0, time.process_time(), time.perf_counter() + seconds
    while time.perf_counter() < stop:
        for i, actions in enumerate(plays):
            service.reset(slot, {"task_index": i})
            for action in actions:
                service.step(slot, action)
                steps += 1
    return 1000 * (time.process_time() - began) / steps


def compare(seconds: float, sessions: int, rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tasks.jsonl"
        tasks = _tasks(path)
        plays = _plays(tasks)
        env_ms = _env_cpu_ms(tasks, plays, max(1.0, seconds / 5))
        gc.collect()
        gc.freeze()  # the client's loaded heap (compoenv, the tasks) is not scanned meanwhile
        echo_plays = [["hello " * 4] * len(p) for p in plays]
        servers = {"echo": Server("echo", None), "compoenv": Server("compoenv", str(path))}
        parts: dict[str, list[dict[str, Any]]] = {"echo": [], "compoenv": []}
        try:
            for r in range(rounds):
                for kind in ("echo", "compoenv") if r % 2 == 0 else ("compoenv", "echo"):
                    log(f"round {r + 1}: {kind}, {sessions} sessions, {seconds / rounds:g} s")
                    parts[kind].append(_measure(servers[kind],
                                                plays if kind == "compoenv" else echo_plays,
                                                sessions, seconds / rounds))
        finally:
            for server in servers.values():
                server.stop()
    echo, ours = _summary(parts["echo"]), _summary(parts["compoenv"])
    result = {"sessions": sessions, "seconds_per_side": seconds, "echo": echo,
              "compoenv": ours,
              "steps_per_s_ratio": round(ours["steps_per_s"] / echo["steps_per_s"], 3),
              "cpu_per_step_ratio": round(ours["cpu_ms_per_step"] / echo["cpu_ms_per_step"], 3),
              "p99_ratio": round(ours["p99_ms"] / echo["p99_ms"], 3),
              # the env's own work a step, measured in-process, and the serving layer's rest
              "env_cpu_ms_per_step": round(env_ms, 3),
              "layer_cpu_ms_per_step": round(ours["cpu_ms_per_step"] - env_ms, 3),
              "layer_cpu_vs_echo_ratio": round((ours["cpu_ms_per_step"] - env_ms)
                                               / echo["cpu_ms_per_step"], 3)}
    result["targets"] = {k: f"{op} {b:g}" for k, (op, b) in TARGETS.items()}
    result["meets"] = {k: result[k] >= b if op == ">=" else result[k] <= b
                       for k, (op, b) in TARGETS.items()}
    return result


# --- attacks -----------------------------------------------------------------------------
async def _squat(port: int, stop: float, outcome: dict[str, int]) -> None:
    """HTTP resets as fast as they are answered (a new episode each), never stepped."""
    import requests

    loop = asyncio.get_running_loop()
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {INTRUDER}"
    while time.perf_counter() < stop:
        reply = await loop.run_in_executor(None, lambda: session.post(
            f"http://127.0.0.1:{port}/reset", json={}, timeout=10))
        outcome[f"squat_{reply.status_code}"] = outcome.get(f"squat_{reply.status_code}", 0) + 1
        if reply.status_code == 200:
            outcome.setdefault("ids", []).append(  # type: ignore[attr-defined]
                reply.json()["metadata"]["episode_id"])


async def _hijack(port: int, stop: float, outcome: dict[str, Any]) -> None:
    """The second intruder steps every episode id it learns (the first intruder's, and
    fresh guesses) asking for the final answer."""
    import requests

    loop = asyncio.get_running_loop()
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {INTRUDER}-2"
    while time.perf_counter() < stop:
        ids = outcome.get("ids", [])[-5:] + [secrets.token_urlsafe(24)]  # as the server mints
        for episode in ids:
            reply = await loop.run_in_executor(None, lambda e=episode: session.post(
                f"http://127.0.0.1:{port}/step", timeout=10,
                json={"action": {"message": "Done."}, "episode_id": e}))
            key = f"hijack_{reply.status_code}"
            outcome[key] = outcome.get(key, 0) + 1
        await asyncio.sleep(0.05)


async def _chunked(port: int, stop: float, outcome: dict[str, int]) -> None:
    """Chunked uploads of up to 64 MiB each against the 4 MiB limit."""
    while time.perf_counter() < stop:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /step HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                     + INTRUDER.encode() + b"\r\nTransfer-Encoding: chunked\r\n"
                     b"Content-Type: application/json\r\n\r\n")
        chunk = b"%x\r\n%s\r\n" % (1 << 20, b"x" * (1 << 20))
        sent = 0
        try:
            for _ in range(64):
                writer.write(chunk)
                await writer.drain()
                sent += 1
        except (ConnectionError, OSError):
            pass
        try:
            head = await asyncio.wait_for(reader.read(64), 5)
        except (asyncio.TimeoutError, ConnectionError, OSError):
            head = b""
        # refused: answered 413, or cut off before the 64 MiB were through
        key = ("chunked_refused" if head.startswith(b"HTTP/1.1 413") or sent < 64
               else "chunked_accepted")
        outcome[key] = outcome.get(key, 0) + 1
        outcome["chunked_most_mib_sent"] = max(outcome.get("chunked_most_mib_sent", 0), sent)
        writer.close()


async def _half_open(port: int, count: int, stop: float, outcome: dict[str, int]) -> None:
    """``count`` connections that send nothing, reopened as the server closes them."""
    async def one() -> None:
        while time.perf_counter() < stop:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.5)
                continue
            opened = time.perf_counter()
            try:
                await asyncio.wait_for(reader.read(1), max(0.1, stop - time.perf_counter()))
                outcome["half_open_closed"] = outcome.get("half_open_closed", 0) + 1
                outcome["half_open_held_s"] = max(outcome.get("half_open_held_s", 0),
                                                  round(time.perf_counter() - opened, 1))
            except (asyncio.TimeoutError, ConnectionError):
                pass
            writer.close()

    await asyncio.gather(*(one() for _ in range(count)))


def _intrude(port: int, seconds: float, results: Any) -> None:
    """Every attack at once for ``seconds``; puts what each got in ``results``."""
    outcome: dict[str, Any] = {}

    async def all_attacks() -> None:
        stop = time.perf_counter() + seconds
        await asyncio.gather(_squat(port, stop, outcome), _hijack(port, stop, outcome),
                             _chunked(port, stop, outcome), _half_open(port, 500, stop, outcome))

    asyncio.run(all_attacks())
    outcome.pop("ids", None)
    results.put(outcome)


def attack(seconds: float, sessions: int) -> dict[str, Any]:
    importlib.import_module("requests")  # now: the forked intruders need not import it

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tasks.jsonl"
        plays = _plays(_tasks(path))
        server = Server("compoenv", str(path), attack=True)
        headers = {"Authorization": f"Bearer {HONEST}"}
        try:
            rss_start = server.rss_mb()
            asyncio.run(_drive(server.url, plays, sessions, 1.0, headers))
            calm = asyncio.run(_drive(server.url, plays, sessions, seconds, headers))
            log(f"calm: {calm[0]} steps; now under attack for {seconds:g} s")
            peak = [server.rss_mb()]

            async def under_attack() -> Any:
                stop = time.perf_counter() + seconds

                async def watch() -> None:
                    while time.perf_counter() < stop:
                        peak.append(server.rss_mb())
                        await asyncio.sleep(0.2)

                honest = asyncio.ensure_future(_drive(server.url, plays, sessions, seconds,
                                                      headers))
                await watch()
                return await honest

            # the intruders run in a process of their own, as they would on another machine
            results: Any = multiprocessing.get_context("fork").Queue()
            intruders = multiprocessing.get_context("fork").Process(
                target=_intrude, args=(server.port, seconds, results))
            intruders.start()
            attacked = asyncio.run(under_attack())
            outcome = results.get(timeout=60)
            intruders.join(timeout=30)
            rss_end = server.rss_mb()
        finally:
            server.stop()

    def figures(run: tuple[int, list[float], float]) -> dict[str, float]:
        lat = sorted(run[1])
        return {"steps_per_s": round(run[0] / run[2], 1),
                "p99_ms": round(1000 * lat[int(0.99 * (len(lat) - 1))], 2)}

    calm_f, attacked_f = figures(calm), figures(attacked)
    return {"honest_sessions": sessions, "seconds": seconds, "calm": calm_f,
            "under_attack": attacked_f,
            "p99_ratio_under_attack": round(attacked_f["p99_ms"] / calm_f["p99_ms"], 2),
            "attacks": outcome, "hijacks_succeeded": outcome.get("hijack_200", 0),
            "rss_mb": {"start": round(rss_start, 1), "peak": round(max(peak), 1),
                       "end": round(rss_end, 1)}}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="per side (default 10)")
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--attack", action="store_true")
    parser.add_argument("--quick", action="store_true", help="2 s a side: a smoke run")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--server", choices=["echo", "compoenv"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--tasks", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.server:
        _server(args.server, args.port, args.tasks, args.attack)
        return
    seconds = 2.0 if args.quick else args.seconds
    began = time.perf_counter()
    if args.attack:
        result = attack(seconds, 16 if not args.quick else 4)
    else:
        result = compare(seconds, args.sessions, args.rounds)
    emit(result, args.out, args.quick, began)


if __name__ == "__main__":
    main()
