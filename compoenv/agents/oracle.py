"""Oracle agent: plays a task's solution through the text action interface."""

from __future__ import annotations

from typing import Any

from compoenv.actions import ToolCall, render_calls
from compoenv.compose.verify import oracle_message
from compoenv.task import Task

__all__ = ["OracleAgent"]


class OracleAgent:
    """Emits the task's solution calls, ``per_action`` at a time, then the final answer.

    Args:
        fmt: Tool-call format of the actions (``hermes``, ``qwen3_coder``, ``json``).
        per_action: Calls per action; several calls in one action run in order.
        report: Whether the final answer reports the task's answer values (without: "Done.",
            the work without the report, which must fail every answer criterion).
    """

    def __init__(self, fmt: str = "hermes", per_action: int = 1, report: bool = True) -> None:
        self.fmt, self.per_action, self.report = fmt, per_action, report
        self._plan: list[ToolCall] = []
        self._final = ""

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        task = Task.coerce(info["task"])
        gateway = {t["function"]["name"] for t in info["tools"]} >= {"call_tool"}
        self._plan = [
            ToolCall("call_tool", {"tool_name": c.name, "arguments": c.arguments}, f"call_{i}")
            if gateway else ToolCall(c.name, c.arguments, f"call_{i}")
            for i, c in enumerate(task.solution)
        ]
        self._final = oracle_message(task) if self.report else "Done."

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if not self._plan:
            return self._final
        batch, self._plan = self._plan[: self.per_action], self._plan[self.per_action:]
        return render_calls(batch, self.fmt)
