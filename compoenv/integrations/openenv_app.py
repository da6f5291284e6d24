"""The OpenEnv server app of a compoenv task set (OpenEnv's ``create_app``), and running it.

    app = make_app("tasks.jsonl", max_sessions=256, idle_timeout_s=300)
    serve(app, host="0.0.0.0", port=8000)                   # what ``compoenv serve`` runs
    with background_server(app) as url:                     # tests, notebooks, examples
        ...

The app is OpenEnv's own: ``/ws`` (one session per WebSocket, at most ``max_sessions``),
``/reset``, ``/step``, ``/state``, ``/schema``, ``/health``, ``/metadata``. compoenv adds its
episode errors as HTTP statuses (400 bad reset options, 404 unknown or reaped episode, 503 at
the cap) and a request size limit (413), so no request can take the server down.
"""

from __future__ import annotations

import contextlib
import functools
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Sequence

try:
    import uvicorn
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse
    from openenv.core.env_server.http_server import create_app
    from openenv.core.env_server.types import ConcurrencyConfig
except ImportError as exc:  # pragma: no cover - depends on the extra being installed
    raise ImportError(f"compoenv's OpenEnv server needs openenv, fastapi and uvicorn ({exc}): "
                      f"pip install 'compoenv[openenv]'") from exc

from compoenv.integrations.openenv import (CompoenvAction, CompoenvEnvironment,
                                           CompoenvObservation, CompoenvState, EpisodeError,
                                           EpisodeStore, ServedTasks)
from compoenv.registry import Registry
from compoenv.task import Task
from compoenv.task_check import load_checked

__all__ = ["make_app", "bind", "serve", "background_server", "MAX_REQUEST_BYTES"]

MAX_REQUEST_BYTES = 4 << 20  # an action is at most 1 MiB of text (MAX_ACTION_CHARS), with room


def make_app(tasks: str | Path | Sequence[Task | dict[str, Any]], *, mode: str = "direct",
             max_sessions: int = 256, idle_timeout_s: float | None = 300.0,
             max_steps: int | None = None, world_model: Any = None,
             registry: Registry | None = None,
             max_request_bytes: int = MAX_REQUEST_BYTES) -> FastAPI:
    """An OpenEnv app serving episodes of ``tasks``.

    Args:
        tasks: A task JSONL path or a list of tasks, checked against ``registry``.
        mode: ``"direct"`` (the task's tools listed) or ``"gateway"`` (four meta-tools).
        max_sessions: The most WebSocket sessions, and the most live episodes, at once.
        idle_timeout_s: Seconds an episode may go unused before it is dropped (None: never).
        max_steps: Actions per episode (default: enough for the longest solution).
        world_model: Who answers spec-only tools (see CompoWorldEnv).
        registry: Services to use (default: the built-in library, plugins, COMPOENV_LIBRARY).
        max_request_bytes: Larger HTTP bodies and WebSocket messages are refused (413).
    """
    registry = registry or Registry.default()
    served = ServedTasks(load_checked(tasks, registry), mode=mode, max_steps=max_steps,
                         world_model=world_model, registry=registry)
    store = EpisodeStore(max_sessions, idle_timeout_s)
    app = create_app(functools.partial(CompoenvEnvironment, served, store), CompoenvAction,
                     CompoenvObservation, env_name="compoenv", state_cls=CompoenvState,
                     concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions,
                                                          session_timeout=idle_timeout_s))
    app.state.compoenv_store = store
    app.state.compoenv_max_request_bytes = max_request_bytes

    async def episode_error(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=getattr(exc, "status", 400))

    app.add_exception_handler(EpisodeError, episode_error)
    app.add_middleware(_BodyLimit, limit=max_request_bytes)
    return app


class _BodyLimit:
    """Refuse an HTTP request whose declared body is over the limit, before reading it."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            length = dict(scope["headers"]).get(b"content-length", b"0")
            if not length.isdigit() or int(length) > self.limit:
                response = JSONResponse({"detail": f"request body of {length.decode()} bytes; "
                                                   f"the limit is {self.limit}"},
                                        status_code=413)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _config(app: FastAPI, host: str, port: int, log_level: str) -> uvicorn.Config:
    limit = getattr(app.state, "compoenv_max_request_bytes", MAX_REQUEST_BYTES)
    # pings find clients that vanished without closing (their sessions then end)
    return uvicorn.Config(app, host=host, port=port, log_level=log_level, ws_max_size=limit,
                          ws_ping_interval=20.0, ws_ping_timeout=20.0)


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
