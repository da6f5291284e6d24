"""Loopback OpenAI-compatible chat server for tests, with switchable faults.

Not a test module: tests import it as ``from chat_server import ChatServer`` (tests/ has no
``__init__.py``, so pytest's default 'prepend' import mode puts it on ``sys.path``).

    with ChatServer(responder=lambda req: "hello") as server:
        client = ChatClient(EndpointConfig(base_url=server.url, model=server.model))
        server.mode = "http_500"            # faults can change between requests
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

__all__ = ["MODES", "ChatServer", "OraclePolicy", "Received", "ServerProcess", "echo"]

MODES = ("ok", "down", "slow", "trickle", "http_500", "http_500_then_ok", "http_429_then_ok",
         "non_json", "huge", "schema_violation", "reject_response_format")
# the reply's content, or a whole assistant message (content, tool_calls, reasoning_content)
Responder = Callable[[dict[str, Any]], "str | dict[str, Any]"]


def echo(request: dict[str, Any]) -> str:
    """The default responder: the content of the last user message."""
    users = [m for m in request.get("messages", []) if m.get("role") == "user"]
    content = users[-1].get("content") if users else ""
    return content if isinstance(content, str) and content else "ok"


@dataclass(frozen=True)
class Received:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: dict[str, Any] | None = field(default=None)


class ChatServer:
    """A ``/v1/chat/completions`` server on 127.0.0.1 and an ephemeral port, served by one
    asyncio event loop in a daemon thread (every connection on it, each reply one socket
    write, ``TCP_NODELAY`` set), so hundreds of connections cost no thread each.

    Args:
        mode: One of ``MODES``; settable while running. "ok": a chat completion whose content
            is ``responder(request_json)``; "down": nothing listens (connection refused);
            "slow": answer after ``slow_s``; "trickle": send the answer 16 bytes at a time,
            ``trickle_s`` apart; "http_500": always 500; "http_500_then_ok" /
            "http_429_then_ok": the first ``fail_times`` requests since the mode was set
            fail, then "ok";
            "non_json": a text/html page; "huge": a valid completion over 300 KB;
            "schema_violation": JSON that is not a chat completion;
            "reject_response_format": HTTP 400 when the request has ``response_format``.
        responder: Builds the reply from the request JSON: its content, or a whole assistant
            message with ``tool_calls`` and ``reasoning_content`` (default: ``echo``).
        model: The model name the server reports.
        slow_s: Delay of "slow" mode (keep it above the client's timeout).
        trickle_s: Pause between the chunks of "trickle" mode.
        fail_times: Failures before success in the "*_then_ok" modes.
        max_requests: The server stops serving after this many requests.
        keep_alive: Serve HTTP/1.1 with persistent connections, as model servers do (default:
            HTTP/1.0, one request per connection, so a stopped server is really "down").
        lifetime_s: The server stops itself after this long, even if never stopped.
    """

    def __init__(self, mode: str = "ok", responder: Responder | None = None, *,
                 model: str = "test-model", slow_s: float = 1.0, trickle_s: float = 0.05,
                 fail_times: int = 1, max_requests: int = 200,
                 lifetime_s: float = 60.0, keep_alive: bool = False) -> None:
        self.responder: Responder = responder or echo
        self.model = model
        self.slow_s = slow_s
        self.trickle_s = trickle_s
        self.fail_times = fail_times
        self.max_requests = max_requests
        self.lifetime_s = lifetime_s
        self.keep_alive = keep_alive
        self.received: list[Received] = []
        # chat requests being answered at once (they overlap while a reply waits: "slow",
        # "trickle", a client slow to read), and connections open at once
        self.in_flight = self.most_in_flight = 0
        self.connections_open = self.most_connections_open = 0
        self._mode = "ok"
        self._failed = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listener: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._thread: threading.Thread | None = None
        self.port = 0  # the first start binds an ephemeral port; restarts reuse it
        self.mode = mode

    @property
    def url(self) -> str:
        """The API root to give a client as ``base_url``."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def mode(self) -> str:
        """The current behaviour (one of ``MODES``)."""
        return self._mode

    @mode.setter
    def mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
        self._mode, self._failed = mode, 0
        if mode == "down":
            self.stop()
            self.port = self.port or _free_port()  # a port where nothing listens
        else:
            self.start()

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies of the chat requests received so far."""
        return [r.body for r in self.received if r.body is not None]

    def start(self) -> None:
        """Listen (again) on this server's port and serve in a daemon thread."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))  # bound here: the port listens once start returns
        sock.listen(256)  # hundreds of episodes connect at once: none may be refused
        self.port = int(sock.getsockname()[1])
        self._loop = asyncio.new_event_loop()
        started = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(sock, started),
                                        name="chat-server", daemon=True)
        self._thread.start()
        started.wait(timeout=10)

    def stop(self) -> None:
        """Stop serving and close the port (clients then get 'connection refused')."""
        self._stop.set()
        thread, self._thread = self._thread, None
        loop = self._loop
        if loop is not None and thread is not None and thread.is_alive():
            try:
                loop.call_soon_threadsafe(self._shut)
            except RuntimeError:
                pass  # the loop already stopped itself
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=2.0)

    def __enter__(self) -> ChatServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _serve(self, sock: socket.socket, started: threading.Event) -> None:
        loop = self._loop
        assert loop is not None
        asyncio.set_event_loop(loop)
        try:
            self._listener = loop.run_until_complete(
                asyncio.start_server(self._connection, sock=sock, backlog=256))
            loop.call_later(self.lifetime_s, self._shut)  # bounded, even if never stopped
            started.set()
            loop.run_forever()
        finally:
            started.set()
            sock.close()
            loop.close()

    def _shut(self) -> None:
        """In the loop: close the port and every connection, then stop the loop."""
        self._close_port()
        for task in list(self._tasks):
            task.cancel()
        assert self._loop is not None
        self._loop.call_soon(self._loop.stop)

    def _close_port(self) -> None:
        if self._listener is not None:
            self._listener.close()  # past its limits the port refuses connections
            self._listener = None

    async def _connection(self, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:
        """One client connection: its requests in turn (one, unless ``keep_alive``)."""
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            # TCP_NODELAY: a reply that leaves in more than one write (trickle) must not wait
            # for the client's delayed ACK (about 40 ms a request on loopback)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            self.connections_open += 1
            self.most_connections_open = max(self.most_connections_open,
                                             self.connections_open)
        try:
            while not self._stop.is_set():
                if not await self._request(reader, writer) or not self.keep_alive:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                asyncio.CancelledError, ValueError):
            pass  # the client hung up (a timeout), sent garbage, or the server stops
        finally:
            with self._lock:
                self.connections_open -= 1
            self._tasks.discard(task)
            writer.close()

    async def _request(self, reader: asyncio.StreamReader,
                       writer: asyncio.StreamWriter) -> bool:
        """Read one request and answer it; False when the connection is to close."""
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, version = (lines[0].split(" ") + ["", "", ""])[:3]
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length") or 0)
        raw = await reader.readexactly(length) if length else b""
        if len(self.received) >= self.max_requests:  # past its limit: hang up, refuse more
            self._close_port()
            return False
        body: dict[str, Any] | None = None
        if method == "POST":
            try:
                body = json.loads(raw)
            except (UnicodeDecodeError, json.JSONDecodeError):
                body = None
            body = body if isinstance(body, dict) else None
        self._record(Received(method, path, headers, body))
        if len(self.received) >= self.max_requests:
            self._close_port()
        keep = (self.keep_alive and version == "HTTP/1.1"
                and headers.get("connection", "").lower() != "close")
        route = path.rstrip("/")
        if method == "GET" and route == "/v1/models":
            reply = _json(200, {"object": "list", "data": [
                {"id": self.model, "object": "model", "owned_by": "test"}]})
        elif method != "POST" or route != "/v1/chat/completions":
            reply = _error(404, f"no route {path}", "NotFoundError")
        else:
            with self._lock:
                self.in_flight += 1
                self.most_in_flight = max(self.most_in_flight, self.in_flight)
            try:
                if self._mode == "slow":
                    await asyncio.sleep(self.slow_s)
                reply = self.reply(body)
                await self._send(writer, *reply, keep=keep)
            finally:
                with self._lock:
                    self.in_flight -= 1
            return keep
        await self._send(writer, *reply, keep=keep)
        return keep

    async def _send(self, writer: asyncio.StreamWriter, status: int, content_type: str,
                    payload: bytes, *, keep: bool) -> None:
        """The reply: headers and body in one write (16-byte pieces ``trickle_s`` apart in
        "trickle" mode)."""
        version = "HTTP/1.1" if self.keep_alive else "HTTP/1.0"
        head = (f"{version} {status} {HTTPStatus(status).phrase}\r\n"
                f"Content-Type: {content_type}\r\nContent-Length: {len(payload)}\r\n"
                f"Connection: {'keep-alive' if keep else 'close'}\r\n\r\n").encode()
        if not (self._mode == "trickle" and status == 200):
            writer.write(head + payload)
            await writer.drain()
            return
        writer.write(head)
        for start in range(0, len(payload), 16):
            if start:
                await asyncio.sleep(self.trickle_s)
            writer.write(payload[start:start + 16])
            await writer.drain()

    def _record(self, request: Received) -> None:
        with self._lock:
            self.received.append(request)

    def _fails(self) -> bool:
        """Whether a "*_then_ok" mode still owes a failure (and counts this one)."""
        with self._lock:
            self._failed += 1
            return self._failed <= self.fail_times

    def reply(self, body: dict[str, Any] | None) -> tuple[int, str, bytes]:
        """(status, content type, body) for a chat request, by the current mode."""
        mode = self._mode  # "slow" waited before this, in the loop
        if mode == "http_500" or (mode == "http_500_then_ok" and self._fails()):
            return _error(500, "internal server error", "InternalServerError")
        if mode == "http_429_then_ok" and self._fails():
            return _error(429, "rate limit exceeded, retry later", "RateLimitError")
        if mode == "non_json":
            return 200, "text/html", b"<html><body><h1>502 Bad Gateway</h1></body></html>"
        if mode == "schema_violation":
            return _json(200, {"id": "x", "object": "chat.completion", "result": "hello"})
        if body is None:
            return _error(400, "request body is not a JSON object", "BadRequestError")
        if mode == "reject_response_format" and "response_format" in body:
            return _error(400, "response_format is not supported by this server",
                          "BadRequestError")
        try:
            content = "x" * 310_000 if mode == "huge" else self.responder(body)
        except Exception as exc:  # a broken responder is a test bug: show it to the client
            return _error(500, f"responder raised {exc!r}", "InternalServerError")
        completion = _completion(content, body, self.model)
        if body.get("stream"):  # server-sent events, as OpenAI-compatible servers stream
            return 200, "text/event-stream", _events(completion, body)
        return _json(200, completion)


class OraclePolicy:
    """A responder that plays the oracle as a model would: the next solution call of the task
    the request is about (told by its user message), then the final report. ``fmt``:
    "native" tool calls or "hermes" text (with a ``<think>`` block); every ``fail_every``-th
    task gets a wrong final answer, so scores vary."""

    def __init__(self, tasks: list[Any], fmt: str = "native", mode: str = "gateway",
                 fail_every: int = 0) -> None:
        self.by_instruction = {t.instruction: t for t in tasks}
        self.order = {t.id: i for i, t in enumerate(tasks)}
        self.fmt, self.mode, self.fail_every = fmt, mode, fail_every

    def __call__(self, request: dict[str, Any]) -> str | dict[str, Any]:
        messages = request["messages"]
        task = self.by_instruction.get(next(m["content"] for m in messages
                                            if m["role"] == "user"))
        if task is None:  # not one of the tasks (a client checking the endpoint): a reply
            return "OK"
        step = sum(m["role"] == "assistant" for m in messages)
        if step >= len(task.solution):
            wrong = self.fail_every and self.order[task.id] % self.fail_every == 0
            from compoenv.compose.verify import oracle_message

            return {"content": "I could not finish." if wrong else oracle_message(task),
                    "reasoning_content": "All calls are made; time to report."}
        call = task.solution[step]
        name, args = (("call_tool", {"tool_name": call.name, "arguments": call.arguments})
                      if self.mode == "gateway" else (call.name, call.arguments))
        if self.fmt == "native":
            return {"content": "", "tool_calls": [{"id": f"call_{step}", "type": "function",
                                                   "function": {"name": name,
                                                                "arguments": json.dumps(args)}}]}
        body = json.dumps({"name": name, "arguments": args})
        return f"<think>Step {step}.</think><tool_call>\n{body}\n</tool_call>"


class ServerProcess:
    """A ``ChatServer`` in a spawned process of its own, as a model server would be: it shares
    no interpreter lock with the client it serves, and a client that forks does not inherit
    its sockets. ``responder`` must pickle (``OraclePolicy`` does); the other arguments are
    ``ChatServer``'s.

        with ServerProcess(OraclePolicy(tasks), keep_alive=True) as server:
            agent = EndpointAgent(base_url=server.url, model=server.model)
        server.requests, server.most_connections_open  # what it served, once stopped
    """

    def __init__(self, responder: Responder, **kwargs: Any) -> None:
        context = multiprocessing.get_context("spawn")
        self._queue: Any = context.Queue()
        self._done = context.Event()
        self._process = context.Process(target=_serve_process,
                                        args=(responder, kwargs, self._queue, self._done),
                                        daemon=True, name="chat-server")
        self.url = self.model = ""
        self.requests = self.most_connections_open = 0

    def __enter__(self) -> ServerProcess:
        self._process.start()
        self.url, self.model = self._queue.get(timeout=60)
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        try:
            self.requests, self.most_connections_open = self._queue.get(timeout=30)
        finally:
            self._process.join(timeout=10)
            if self._process.is_alive():
                self._process.kill()
                self._process.join()


def _serve_process(responder: Responder, kwargs: dict[str, Any], queue: Any, done: Any) -> None:
    with ChatServer(responder=responder, **kwargs) as server:
        queue.put((server.url, server.model))
        done.wait()
        queue.put((len(server.received), server.most_connections_open))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _json(status: int, payload: dict[str, Any]) -> tuple[int, str, bytes]:
    return status, "application/json", json.dumps(payload).encode()


def _error(status: int, message: str, kind: str) -> tuple[int, str, bytes]:
    return _json(status, {"object": "error", "message": message, "type": kind, "code": status})


def _events(completion: dict[str, Any], request: dict[str, Any]) -> bytes:
    """The completion as a stream of chunks: the reasoning, the content in pieces, each tool
    call's name then its arguments in pieces, the finish reason, the usage when asked for."""
    message = completion["choices"][0]["message"]
    base = {k: completion[k] for k in ("id", "created", "model")}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        data = {**base, "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return b"data: " + json.dumps(data).encode() + b"\n\n"

    out = [chunk({"role": "assistant", "content": ""})]
    if message.get("reasoning_content"):
        out.append(chunk({"reasoning_content": message["reasoning_content"]}))
    content = message.get("content") or ""
    out += [chunk({"content": content[i:i + 7]}) for i in range(0, len(content), 7)]
    for index, call in enumerate(message.get("tool_calls") or []):
        out.append(chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                          "function": {"name": call["function"]["name"],
                                                       "arguments": ""}}]}))
        arguments = call["function"]["arguments"]
        out += [chunk({"tool_calls": [{"index": index, "function": {
            "arguments": arguments[i:i + 9]}}]}) for i in range(0, len(arguments), 9)]
    out.append(chunk({}, completion["choices"][0]["finish_reason"]))
    if (request.get("stream_options") or {}).get("include_usage"):
        out.append(b"data: " + json.dumps({**base, "object": "chat.completion.chunk",
                                           "choices": [], "usage": completion["usage"]}
                                          ).encode() + b"\n\n")
    return b"".join(out) + b"data: [DONE]\n\n"


def _completion(reply: str | dict[str, Any], request: dict[str, Any], model: str
                ) -> dict[str, Any]:
    message = {"role": "assistant", **reply} if isinstance(reply, dict) else {
        "role": "assistant", "content": reply}
    content = message.get("content") or ""
    prompt = sum(len(str(m.get("content", "")).split()) for m in request.get("messages", []))
    completion = len(content.split()) + len(json.dumps(message.get("tool_calls") or []).split())
    return {
        "id": f"chatcmpl-{time.monotonic_ns()}", "object": "chat.completion",
        "created": int(time.time()), "model": request.get("model") or model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion},
    }
