"""A scripted model for group-reward tests: the oracle's calls, right only in its first final
answer per task, so the attempts of one group score differently.

Not a test module: tests import it as ``from group_policy import FirstRightThenWrong``.
"""

from __future__ import annotations

import threading
from typing import Any

from chat_server import OraclePolicy

__all__ = ["FirstRightThenWrong", "WRONG"]

WRONG = "I could not finish."


class FirstRightThenWrong:
    """A ChatServer responder: ``OraclePolicy`` (hermes text calls, direct mode), whose later
    final answers to the same task say ``WRONG``."""

    def __init__(self, tasks: list[Any], fmt: str = "hermes", mode: str = "direct") -> None:
        self.oracle = OraclePolicy(tasks, fmt=fmt, mode=mode)
        self.finals: dict[str, int] = {}
        self._lock = threading.Lock()  # the server answers requests in threads

    def __call__(self, request: dict[str, Any]) -> str | dict[str, Any]:
        reply = self.oracle(request)
        if isinstance(reply, dict) and not reply.get("tool_calls"):  # the final report
            user = next(m["content"] for m in request["messages"] if m["role"] == "user")
            with self._lock:
                self.finals[user] = self.finals.get(user, 0) + 1
                later = self.finals[user] > 1
            if later:
                return {"content": WRONG}
        return reply
