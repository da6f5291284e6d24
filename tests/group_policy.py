"""A scripted model for group-reward tests: the oracle's calls, right only in its first final
answer per task, so the attempts of one group score differently.

Not a test module: tests import it as ``from group_policy import FirstRightThenWrong``.
"""

from __future__ import annotations

import threading
from typing import Any

from chat_server import OraclePolicy
from compoenv.actions import ToolCall, render_calls
from compoenv.env import CompoWorldEnv
from compoenv.task import Task

__all__ = ["FirstRightThenWrong", "WRONG", "oracle_replies", "env_score"]

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


def oracle_replies(task: Task, final: str) -> list[str]:
    """The oracle's calls as hermes text, one reply each, then ``final``."""
    calls = [render_calls([ToolCall(c.name, c.arguments, f"call_{i}")], "hermes")
             for i, c in enumerate(task.solution)]
    return [*calls, final]


def env_score(task: Task, final: str) -> float:
    """What CompoWorldEnv itself scores for the oracle's calls and this final reply."""
    env = CompoWorldEnv(mode="direct")
    env.reset(options={"task": task})
    for reply in oracle_replies(task, final):
        _, reward, done, truncated, _ = env.step(reply)
    assert done and not truncated
    return float(reward)
