"""The tools of a live MCP server over stdio: JSON-RPC ``initialize``,
``notifications/initialized``, then ``tools/list`` page by page, within a time limit; the
server process is always ended."""

from __future__ import annotations

import json
import queue
import shlex
import subprocess
import threading
import time
from typing import IO, Any

from compoenv.worldmodel.spec import SpecError

__all__ = ["list_tools", "PROTOCOL_VERSION"]

PROTOCOL_VERSION = "2025-06-18"
_MAX_PAGES = 1000


def _pump(stream: IO[bytes], lines: queue.Queue[bytes | None]) -> None:
    """Every line the server writes, then None at its end (a thread: reads block)."""
    for line in iter(stream.readline, b""):
        lines.put(line)
    lines.put(None)


class _Session:
    """Requests to one server process and their replies, against one deadline."""

    def __init__(self, process: subprocess.Popen[bytes], label: str, deadline: float) -> None:
        self.process, self.label, self.deadline, self.next_id = process, label, deadline, 1
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=_pump, args=(process.stdout, self.lines), daemon=True).start()

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
            self.process.stdin.flush()
        except OSError as exc:
            raise SpecError(f"{self.label}: the server stopped reading ({exc})") from None

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The result of one request; notifications and other messages are passed over."""
        ident, self.next_id = self.next_id, self.next_id + 1
        self.send({"id": ident, "method": method, "params": params})
        while True:
            left = self.deadline - time.monotonic()
            try:
                line = self.lines.get(timeout=max(left, 0)) if left > 0 else None
            except queue.Empty:
                line = None
            if line is None and left > 0 and self.process.poll() is not None:
                raise SpecError(f"{self.label}: the server exited (status "
                                f"{self.process.returncode}) before answering {method}")
            if line is None:
                raise SpecError(f"{self.label}: no answer to {method} within the time limit")
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                continue  # servers may log to stdout; only JSON-RPC lines count
            if not isinstance(message, dict) or message.get("id") != ident:
                continue
            if "error" in message:
                error = message["error"] if isinstance(message["error"], dict) else {}
                raise SpecError(f"{self.label}: {method} failed: "
                                f"{error.get('message', message['error'])}")
            result = message.get("result")
            if not isinstance(result, dict):
                raise SpecError(f"{self.label}: {method} answered no result object")
            return result


def list_tools(command: str | list[str], timeout: float = 30.0,
               ) -> tuple[dict[str, Any], list[Any]]:
    """Start an MCP server, list its tools, end it.

    Args:
        command: The server's command line (``"python server.py"``) or its argument list.
        timeout: Seconds for the whole exchange.

    Returns:
        The server's ``serverInfo`` (``{"name": ..., "version": ...}``, maybe empty) and every
        tool of every ``tools/list`` page.

    Raises:
        SpecError: the server cannot start, exits, answers an error or nothing in time.
    """
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    label = f"MCP server {shlex.join(argv)!r}"
    try:
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL)
    except (OSError, ValueError) as exc:
        raise SpecError(f"{label}: cannot start: {exc}") from None
    try:
        session = _Session(process, label, time.monotonic() + timeout)
        hello = session.request("initialize", {
            "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "compoenv", "version": "1"}})
        session.send({"method": "notifications/initialized"})
        tools, cursor, seen = [], None, set()
        for _ in range(_MAX_PAGES):
            page = session.request("tools/list", {"cursor": cursor} if cursor else {})
            tools += page.get("tools") or []
            cursor = page.get("nextCursor")
            if not cursor or cursor in seen:
                break
            seen.add(cursor)
        info = hello.get("serverInfo")
        return (info if isinstance(info, dict) else {}), tools
    finally:
        _end(process)


def _end(process: subprocess.Popen[bytes]) -> None:
    """Close the server's input (the MCP way to stop), then terminate, then kill."""
    try:
        if process.stdin:
            process.stdin.close()
        process.wait(timeout=2)
    except (OSError, subprocess.TimeoutExpired):
        process.terminate()
        try:
            process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
