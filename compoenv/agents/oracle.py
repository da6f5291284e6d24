"""Oracle agent: plays a task's solution through the text action interface."""

from __future__ import annotations

from typing import Any

from compoenv.actions import ToolCall, render_calls
from compoenv.compose.verify import oracle_message
from compoenv.service import split_qualified
from compoenv.task import Task

__all__ = ["OracleAgent", "oracle_plan"]


def oracle_plan(task: Task, gateway: bool, discover: bool = False) -> list[ToolCall]:
    """The calls the oracle makes for ``task``, in order.

    Direct mode: the solution's calls. Gateway mode: each solution call through
    ``call_tool``; with ``discover``, discovery first as an agent that knows nothing of the
    tools does it: one ``list_services``, ``list_tools`` of each service the solution uses
    before its first tool is called, and ``describe_tool`` before each tool's first call
    (services the solution does not use, the distractors, are not listed).
    """
    if not gateway:
        return [ToolCall(c.name, dict(c.arguments), f"call_{i}")
                for i, c in enumerate(task.solution)]
    plan: list[ToolCall] = []
    if discover:
        plan.append(ToolCall("list_services", {}, ""))
    listed: set[str] = set()
    described: set[str] = set()
    for call in task.solution:
        if discover:
            service, _ = split_qualified(call.name)
            if service and service not in listed:
                listed.add(service)
                plan.append(ToolCall("list_tools", {"service": service}, ""))
            if call.name not in described:
                described.add(call.name)
                plan.append(ToolCall("describe_tool", {"tool": call.name}, ""))
        plan.append(ToolCall("call_tool", {"tool_name": call.name,
                                           "arguments": dict(call.arguments)}, ""))
    return [ToolCall(c.name, c.arguments, f"call_{i}") for i, c in enumerate(plan)]


class OracleAgent:
    """Emits the task's solution calls, ``per_action`` at a time, then the final answer.

    Args:
        fmt: Tool-call format of the actions (``hermes``, ``qwen3_coder``, ``json``).
        per_action: Calls per action; several calls in one action run in order.
        report: Whether the final answer reports the task's answer values (without: "Done.",
            the work without the report, which must fail every answer criterion).
        discover: In gateway mode, discover before acting (``list_services``, then
            ``list_tools`` and ``describe_tool`` before first use; see oracle_plan) instead
            of calling the solution's tools straight away. No effect in direct mode.
    """

    def __init__(self, fmt: str = "hermes", per_action: int = 1, report: bool = True,
                 discover: bool = False) -> None:
        self.fmt, self.per_action, self.report = fmt, per_action, report
        self.discover = discover
        self._plan: list[ToolCall] = []
        self._final = ""

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        task = Task.coerce(info["task"])
        gateway = {t["function"]["name"] for t in info["tools"]} >= {"call_tool"}
        self._plan = oracle_plan(task, gateway, self.discover)
        self._final = oracle_message(task) if self.report else "Done."

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if not self._plan:
            return self._final
        batch, self._plan = self._plan[: self.per_action], self._plan[self.per_action:]
        return render_calls(batch, self.fmt)
