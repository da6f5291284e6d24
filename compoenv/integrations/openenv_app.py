"""The server app of a compoenv task set, in OpenEnv's protocol, and running it.

    app = make_app("tasks.jsonl", max_sessions=256, idle_timeout_s=300)
    serve(app, host="0.0.0.0", port=8000)                   # what ``compoenv serve`` runs
    with background_server(app) as url:                     # tests, notebooks, examples
        ...

The routes are OpenEnv's (``/ws``, ``/reset``, ``/step``, ``/state``, ``/schema``,
``/health``, ``/metadata``) with OpenEnv's messages, so OpenEnv's clients work unchanged; the
sessions are compoenv's own: every place (a WebSocket session or an HTTP episode) belongs to
the client that opened it (a bearer token's holder, else a peer address), episode ids are
minted by the server, places are capped and shared fairly, idle ones reclaimed; bodies,
chunked or not, are limited (413) and slow or half-open connections closed. Errors are HTTP
statuses: 400 bad options, 401 no token, 404 unknown episode, 413, 429 too many resets, 503
at capacity. docs/serving.md describes the model.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hmac
import json
import math
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

try:
    import h11
    import uvicorn
    from fastapi import FastAPI, Request, Response, WebSocket, WebSocketDisconnect
    from fastapi.responses import JSONResponse
    from openenv.core.env_server.types import EnvironmentMetadata, ResetRequest, StepRequest
    from pydantic import ValidationError
    from uvicorn.protocols.http.h11_impl import H11Protocol
except ImportError as exc:  # pragma: no cover - depends on the extra being installed
    raise ImportError(f"compoenv's OpenEnv server needs openenv, fastapi and uvicorn ({exc}): "
                      f"pip install 'compoenv[openenv]'") from exc

from compoenv import __version__
from compoenv.integrations.openenv import (MAX_EPISODE_ID, TOKEN_ENV, CompoenvAction,
                                           CompoenvObservation, CompoenvState, EpisodeError,
                                           EpisodeService, EpisodeStore, RateLimitError,
                                           ServedTasks, UnknownEpisodeError)
from compoenv.registry import Registry
from compoenv.task import Task
from compoenv.task_check import load_checked

__all__ = ["make_app", "bind", "serve", "background_server", "MAX_REQUEST_BYTES",
           "tokens_from_env"]

MAX_REQUEST_BYTES = 4 << 20  # an action is at most 1 MiB of text (MAX_ACTION_CHARS), with room
REQUEST_TIMEOUT_S = 10.0  # to send a whole HTTP request (head and body) once connected
INLINE_ACTION_CHARS = 1 << 16  # shorter actions of in-memory tools run on the event loop


def tokens_from_env() -> list[str]:
    """The bearer tokens in ``$COMPOENV_SERVE_TOKEN`` (comma-separated; one per client)."""
    return [t.strip() for t in os.environ.get(TOKEN_ENV, "").split(",") if t.strip()]


def make_app(tasks: str | Path | Sequence[Task | dict[str, Any]], *, mode: str = "direct",
             max_sessions: int = 256, idle_timeout_s: float | None = 300.0,
             max_steps: int | None = None, world_model: Any = None,
             registry: Registry | None = None,
             max_request_bytes: int = MAX_REQUEST_BYTES, tokens: Sequence[str] = (),
             max_per_client: int | None = None, reset_rate: float | None = 100.0,
             reclaim_idle_s: float = 10.0, expose_rubric: bool = False,
             compression: bool = False,
             request_timeout_s: float = REQUEST_TIMEOUT_S) -> FastAPI:
    """An app serving episodes of ``tasks`` in OpenEnv's protocol.

    Args:
        tasks: A task JSONL path or a list of tasks, checked against ``registry``.
        mode: ``"direct"`` (the task's tools listed) or ``"gateway"`` (four meta-tools).
        max_sessions: The most WebSocket sessions and HTTP episodes at once.
        idle_timeout_s: Seconds an episode may go unused before it is dropped (None: never).
        max_steps: Actions per episode (default: enough for the longest solution).
        world_model: Who answers spec-only tools (see CompoWorldEnv).
        registry: Services to use (default: the built-in library, plugins, COMPOENV_LIBRARY).
        max_request_bytes: Larger HTTP bodies (chunked or not) and WebSocket messages are
            refused (413; a WebSocket closes with 1009).
        tokens: Bearer tokens, one per client; when given, every route but ``/health`` needs
            one (401), and each token is a client for the caps.
        max_per_client: The most sessions and HTTP episodes one client may hold.
        reset_rate: New sessions and HTTP episodes a second per client (bursts of twice it;
            None: no limit); more are 429.
        reclaim_idle_s: When the server is full, a place idle this long of a client over its
            fair share is reclaimed for a client within its share.
        expose_rubric: Send each criterion's description and detail (the expected answers)
            at the end of an episode; by default the pass vector and scores only.
        compression: Offer permessage-deflate on WebSockets (off: cheaper on loopback/LAN).
        request_timeout_s: Seconds a connection has to send a whole HTTP request.
    """
    registry = registry or Registry.default()
    served = ServedTasks(load_checked(tasks, registry), mode=mode, max_steps=max_steps,
                         world_model=world_model, registry=registry)
    store = EpisodeStore(max_sessions, idle_timeout_s, reclaim_idle_s=reclaim_idle_s,
                         max_per_client=max_per_client, reset_rate=reset_rate)
    service = EpisodeService(served, store, expose_rubric=expose_rubric)
    app = FastAPI(title="compoenv", version=__version__,
                  description="compoenv tasks in OpenEnv's protocol: /ws /reset /step /state "
                              "/schema /metadata /health")
    app.state.compoenv_store = store
    app.state.compoenv_service = service
    app.state.compoenv_max_request_bytes = max_request_bytes
    app.state.compoenv_compression = compression
    app.state.compoenv_request_timeout_s = request_timeout_s
    app.state.compoenv_auth = bool(tokens)
    sessions = _routes(app, service)
    app.add_middleware(_Guard, limit=max_request_bytes, tokens=tuple(tokens), sessions=sessions)
    return app


def _json(body: str, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def _error(exc: EpisodeError) -> Response:
    headers = ({"Retry-After": str(max(1, math.ceil(exc.retry_after_s)))}
               if isinstance(exc, RateLimitError) else None)
    return _json(json.dumps({"detail": str(exc)}), exc.status, headers)


async def _parsed(request: Request, model: Any) -> Any:
    """The request's body as ``model``, or the 422 response that says why it is not one."""
    try:
        return model.model_validate(await _body(request))
    except _BadJSON as exc:
        return _invalid([{"type": "json_invalid", "msg": f"JSON decode error: {exc}"}])
    except ValidationError as exc:
        return _invalid(exc.errors(include_url=False))


def _invalid(errors: list[Any]) -> Response:
    return _json(json.dumps({"detail": errors}, default=str), 422)


async def _body(request: Request) -> Any:
    raw = await request.body()
    if not raw:
        return {}
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise _BadJSON(str(exc)) from None


class _BadJSON(Exception):
    pass


def _client(scope: Any) -> str:
    """Who sent a request: its token's name, else its peer address."""
    name = scope.get("compoenv.client")
    if name is not None:
        return name
    peer = scope.get("client")
    return f"addr:{peer[0]}" if peer else "addr:?"


def _routes(app: FastAPI, service: EpisodeService) -> Any:
    """The routes; returns the WebSocket sessions' handler (``_Guard`` calls it directly)."""
    store, served = service.store, service.served
    inline = served.world_model is None
    pool: list[ThreadPoolExecutor] = []  # made on first use

    async def run(call: Any, *args: Any, size: int = 0) -> Any:
        """``call(*args)``: on the event loop when it is quick (in-memory tools, a short
        action), else in a worker thread so that other sessions go on meanwhile."""
        if inline and size <= INLINE_ACTION_CHARS:
            return call(*args)
        if not pool:
            pool.append(ThreadPoolExecutor(max_workers=min(32, store.max_episodes),
                                           thread_name_prefix="compoenv-step"))
        return await asyncio.get_running_loop().run_in_executor(pool[0], call, *args)

    @app.post("/reset")
    async def reset(request: Request) -> Response:
        body = await _parsed(request, ResetRequest)
        if isinstance(body, Response):
            return body
        options = body.model_dump(exclude_unset=True)
        try:
            slot = store.admit(_client(request.scope), "http")
        except EpisodeError as exc:
            return _error(exc)
        try:
            return _json(await run(service.reset, slot, options))
        except EpisodeError as exc:
            store.release(slot)
            return _error(exc)
        except BaseException:
            store.release(slot)
            raise

    @app.post("/step")
    async def step(request: Request) -> Response:
        body = await _parsed(request, StepRequest)
        if isinstance(body, Response):
            return body
        try:
            action = CompoenvAction.model_validate(body.action)
        except ValidationError as exc:
            return _invalid(exc.errors(include_url=False))
        episode_id = (body.model_extra or {}).get("episode_id")
        try:
            if episode_id is None:
                raise UnknownEpisodeError(
                    "no episode to step: send the episode_id your /reset returned (in "
                    "observation.metadata.episode_id) with each /step")
            _check_id(episode_id)
            slot = store.find(_client(request.scope), episode_id)
            return _json(await run(service.step, slot, action.message,
                                   size=len(action.message)))
        except EpisodeError as exc:
            return _error(exc)

    @app.get("/state")
    async def state(request: Request, episode_id: str | None = None) -> Response:
        slot = None
        if episode_id is not None:
            try:
                slot = store.find(_client(request.scope), episode_id)
            except EpisodeError as exc:
                return _error(exc)
        return _json(service.state(slot))

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "healthy"}

    @app.get("/metadata")
    async def metadata() -> dict[str, Any]:
        return EnvironmentMetadata(
            name="compoenv", version=__version__,
            description=f"{len(served.tasks)} compositional multi-service tool-use tasks "
                        f"({served.mode} mode, at most {served.max_steps} actions an "
                        f"episode); an action is the assistant's message, tool calls or the "
                        f"final answer").model_dump()

    @app.get("/schema")
    async def schema() -> dict[str, Any]:
        return {"action": CompoenvAction.model_json_schema(),
                "observation": CompoenvObservation.model_json_schema(),
                "reset_observation": CompoenvObservation.model_json_schema(),
                "state": CompoenvState.model_json_schema()}

    @app.websocket("/ws")
    async def session(websocket: WebSocket) -> None:
        await _session(websocket, service, run)

    return session


def _check_id(episode_id: Any) -> None:
    if not isinstance(episode_id, str) or not 0 < len(episode_id) <= MAX_EPISODE_ID:
        shown = repr(episode_id) if len(repr(episode_id)) < 80 else type(episode_id).__name__
        raise EpisodeError(f"episode_id must be a string of 1 to {MAX_EPISODE_ID} "
                           f"characters, got {shown}")


def _ws_error(message: str, code: str, **extra: Any) -> str:
    return json.dumps({"type": "error", "data": {"message": message, "code": code, **extra}},
                      default=str)


async def _session(websocket: WebSocket, service: EpisodeService, run: Any) -> None:
    """One WebSocket session: OpenEnv's messages (reset, step, state, close) on the session's
    own place; its episodes are reachable from no other connection."""
    store = service.store
    loop = asyncio.get_running_loop()

    def close(why: str) -> None:  # the store reclaims this session (from any thread)
        loop.call_soon_threadsafe(lambda: asyncio.ensure_future(_close(websocket, why)))

    try:
        slot = store.admit(_client(websocket.scope), "ws", close)
    except EpisodeError as exc:
        await websocket.accept()
        await websocket.send_text(_ws_error(str(exc), exc.code))
        await websocket.close(code=1013 if exc.status in (429, 503) else 1008)
        return
    await websocket.accept()
    try:
        while True:
            raw = await websocket.receive_text()
            store.touch(slot)
            try:
                message = json.loads(raw)
            except ValueError as exc:
                await websocket.send_text(_ws_error(f"Invalid JSON: {exc}", "INVALID_JSON"))
                continue
            kind = message.get("type") if isinstance(message, dict) else None
            data = message.get("data", {}) if isinstance(message, dict) else None
            try:
                if kind == "step":
                    text = data.get("message") if type(data) is dict else None
                    if type(text) is not str or not data.keys() <= {"message", "metadata"}:
                        CompoenvAction.model_validate(data)  # raises the precise error
                    reply = await run(service.step, slot, text, size=len(text))
                elif kind == "reset":
                    if not isinstance(data, dict):
                        raise EpisodeError(f"reset data must be an object of options, got "
                                           f"{type(data).__name__}")
                    reply = await run(service.reset, slot, data)
                elif kind == "state":
                    await websocket.send_text(f'{{"type":"state","data":{service.state(slot)}}}')
                    continue
                elif kind == "close":
                    break
                else:
                    await websocket.send_text(_ws_error(f"Unknown message type: {kind!r:.80}",
                                                        "UNKNOWN_TYPE"))
                    continue
            except ValidationError as exc:
                reply_error = _ws_error("Invalid message", "VALIDATION_ERROR",
                                        errors=exc.errors(include_url=False))
                await websocket.send_text(reply_error)
                continue
            except EpisodeError as exc:
                await websocket.send_text(_ws_error(str(exc), exc.code))
                continue
            await websocket.send_text(f'{{"type":"observation","data":{reply}}}')
    except (WebSocketDisconnect, RuntimeError):
        pass  # the client went away, or the store reclaimed the session
    finally:
        store.release(slot)
        with contextlib.suppress(RuntimeError, WebSocketDisconnect):
            await websocket.close()


async def _close(websocket: WebSocket, why: str) -> None:
    with contextlib.suppress(Exception):
        await websocket.send_text(_ws_error(f"this session {why}; connect again",
                                            "SESSION_ERROR"))
        await websocket.close(code=1013, reason="reclaimed" if "reclaimed" in why else "idle")


class _TooLarge(Exception):
    pass


class _Guard:
    """Checks before any route: the bearer token (when the server has tokens; 401, and
    which token names the client), and the body size of HTTP requests (413), counted as
    the body arrives so that a chunked upload cannot go past the limit either. A WebSocket
    on ``/ws`` goes straight to ``sessions`` (the route's handler), past the framework's
    routing and exception layers, which a session's messages would otherwise each cross."""

    def __init__(self, app: Any, limit: int, tokens: tuple[str, ...],
                 sessions: Any = None) -> None:
        self.app, self.limit, self.sessions = app, limit, sessions
        self.tokens = [t.encode() for t in tokens]

    def _who(self, scope: Any) -> str | None:
        """The client a request's token names ("" when it has none that is valid)."""
        for name, value in scope["headers"]:
            if name == b"authorization":
                scheme, _, given = value.partition(b" ")
                if scheme.lower() != b"bearer":
                    return ""
                for i, token in enumerate(self.tokens):
                    if hmac.compare_digest(given.strip(), token):
                        return f"token:{i}"
                return ""
        return ""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if self.tokens and scope.get("path") != "/health":
            who = self._who(scope)
            if not who:
                if kind == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                response = JSONResponse(
                    {"detail": "this server needs a bearer token: send 'Authorization: Bearer "
                               "<token>' (the token compoenv serve was given)"},
                    status_code=401, headers={"WWW-Authenticate": "Bearer"})
                await response(scope, receive, send)
                return
            scope["compoenv.client"] = who
        if kind == "websocket":
            if (self.sessions is not None and scope.get("path") == "/ws"
                    and not scope.get("root_path")):
                # the session's messages reach it without the framework's layers between:
                # the /ws route's own handler, on the connection's own receive and send
                await self.sessions(WebSocket(scope, receive, send))
                return
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            await self._refuse(scope, receive, send, f"request body of {length.decode()} "
                                                     f"bytes; the limit is {self.limit}")
            return
        seen = 0
        started = False

        async def counted() -> Any:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge
            return message

        async def tracked(message: Any) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, tracked)
        except _TooLarge:
            if not started:
                await self._refuse(scope, receive, send, f"request body of more than "
                                                         f"{self.limit} bytes (sent in chunks); "
                                                         f"the limit is {self.limit}")

    async def _refuse(self, scope: Any, receive: Any, send: Any, detail: str) -> None:
        response = JSONResponse({"detail": detail}, status_code=413,
                                headers={"Connection": "close"})
        await response(scope, receive, send)


class _TimedH11(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with a deadline for each request: a connection that does
    not send a whole request (head and body) within ``request_timeout_s`` of connecting, or
    of its last response, is closed, so slow senders and half-open connections hold
    nothing."""

    request_timeout_s = REQUEST_TIMEOUT_S

    def connection_made(self, transport: Any) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._deadline: asyncio.TimerHandle | None = None
        self._arm()

    def _arm(self) -> None:
        if getattr(self, "_deadline", None) is not None:
            self._deadline.cancel()
        self._deadline = self.loop.call_later(self.request_timeout_s, self._expired)

    def _expired(self) -> None:
        self._deadline = None
        transport = self.transport
        if transport.is_closing() or transport.get_protocol() is not self:
            return  # closed, or upgraded to a WebSocket (which pings its peer)
        if self.conn.their_state in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED):
            return  # the request is in; the app is answering it
        transport.close()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if getattr(self, "_deadline", None) is not None:
            self._deadline.cancel()
            self._deadline = None
        super().connection_lost(exc)


def _config(app: FastAPI, host: str, port: int, log_level: str) -> uvicorn.Config:
    limit = getattr(app.state, "compoenv_max_request_bytes", MAX_REQUEST_BYTES)
    timeout = getattr(app.state, "compoenv_request_timeout_s", REQUEST_TIMEOUT_S)
    protocol = type("TimedH11", (_TimedH11,), {"request_timeout_s": timeout})
    # pings find WebSocket clients that vanished without closing (their sessions then end)
    return uvicorn.Config(app, host=host, port=port, log_level=log_level, ws_max_size=limit,
                          ws_ping_interval=20.0, ws_ping_timeout=20.0, http=protocol,
                          ws_per_message_deflate=getattr(app.state, "compoenv_compression",
                                                         False),
                          timeout_keep_alive=5)


def bind(host: str, port: int) -> socket.socket:
    """The server's socket, bound now: a busy port is an OSError here, before any work starts
    (port 0 picks a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def serve(app: FastAPI, host: str = "127.0.0.1", port: int = 8000, log_level: str = "info",
          sock: socket.socket | None = None) -> None:
    """Run the app with uvicorn until interrupted, on ``sock`` (from ``bind``) or on a socket
    bound to ``host:port`` now.

    Raises:
        OSError: The address cannot be bound (in use, or not this machine's).
    """
    sock = sock or bind(host, port)
    gc.collect()
    gc.freeze()  # the tasks, registry and code loaded so far are never garbage: not scanned
    with contextlib.closing(sock):
        uvicorn.Server(_config(app, host, port, log_level)).run(sockets=[sock])


@contextlib.contextmanager
def background_server(app: FastAPI, host: str = "127.0.0.1", port: int = 0,
                      log_level: str = "warning", timeout_s: float = 30.0) -> Iterator[str]:
    """Run the app in a background thread (port 0: a free port); yields its base URL and
    stops it on exit."""
    sock = bind(host, port)
    server = uvicorn.Server(_config(app, host, sock.getsockname()[1], log_level))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True,
                              name="compoenv-openenv-server")
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            sock.close()
            raise RuntimeError(f"the OpenEnv server on {host}:{sock.getsockname()[1]} did "
                               f"not start within {timeout_s:g} s")
        time.sleep(0.02)
    try:
        yield f"http://{host}:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=timeout_s)
        sock.close()
