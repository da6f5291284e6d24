"""Loopback OpenAI-compatible chat server for tests, with switchable faults.

Not a test module: tests import it as ``from chat_server import ChatServer`` (tests/ has no
``__init__.py``, so pytest's default 'prepend' import mode puts it on ``sys.path``).

    with ChatServer(responder=lambda req: "hello") as server:
        client = ChatClient(EndpointConfig(base_url=server.url, model=server.model))
        server.mode = "http_500"            # faults can change between requests
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["MODES", "ChatServer", "OraclePolicy", "Received", "echo"]

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
    """A ``/v1/chat/completions`` server on 127.0.0.1 and an ephemeral port.

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
        self.in_flight = self.most_in_flight = 0  # chat requests being answered at once
        self._mode = "ok"
        self._failed = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
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
        self._httpd = _Server(("127.0.0.1", self.port), _handler(self))
        self.port = int(self._httpd.server_address[1])
        self._httpd.timeout = 0.05
        self._thread = threading.Thread(target=self._serve, name="chat-server", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the port (clients then get 'connection refused')."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=2.0)
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.server_close()

    def __enter__(self) -> ChatServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _serve(self) -> None:
        end = time.monotonic() + self.lifetime_s
        httpd = self._httpd
        assert httpd is not None
        try:
            while not self._stop.is_set() and time.monotonic() < end:
                if len(self.received) >= self.max_requests:
                    break
                httpd.handle_request()  # returns after httpd.timeout when idle
        finally:
            httpd.server_close()  # bounded: past its limits the port refuses connections

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
        mode = self._mode
        if mode == "slow":
            self._stop.wait(self.slow_s)
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


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 256  # hundreds of episodes connect at once: none may be refused

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up (timeout) is expected here, not an error


def _handler(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # HTTP/1.0 unless keep_alive: one request per connection, so a stopped server is down
        protocol_version = "HTTP/1.1" if server.keep_alive else "HTTP/1.0"
        # TCP_NODELAY: the headers and the body are two writes, and with Nagle's algorithm the
        # second waits for the client's delayed ACK (about 40 ms a request on loopback)
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            server._record(Received("GET", self.path, self._headers()))
            if self.path.rstrip("/") == "/v1/models":
                self._send(*_json(200, {"object": "list", "data": [
                    {"id": server.model, "object": "model", "owned_by": "test"}]}))
            else:
                self._send(*_error(404, f"no route {self.path}", "NotFoundError"))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw)
            except (UnicodeDecodeError, json.JSONDecodeError):
                body = None
            body = body if isinstance(body, dict) else None
            server._record(Received("POST", self.path, self._headers(), body))
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(*_error(404, f"no route {self.path}", "NotFoundError"))
                return
            with server._lock:
                server.in_flight += 1
                server.most_in_flight = max(server.most_in_flight, server.in_flight)
            try:
                self._send(*server.reply(body))
            finally:
                with server._lock:
                    server.in_flight -= 1

        def _headers(self) -> dict[str, str]:
            return {k.lower(): v for k, v in self.headers.items()}

        def _send(self, status: int, content_type: str, payload: bytes) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                step = 16 if server.mode == "trickle" and status == 200 else len(payload) or 1
                for start in range(0, len(payload), step):
                    if start and server._stop.wait(server.trickle_s):
                        return
                    self.wfile.write(payload[start:start + step])
                    self.wfile.flush()
            except OSError:
                pass  # the client hung up
    return Handler


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
