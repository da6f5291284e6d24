"""What the thin trainer shims share: one episode against a model endpoint, and group rewards."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping, Sequence

from compoenv.env import CompoWorldEnv
from compoenv.reward import completion_focused
from compoenv.rollout import play_episode
from compoenv.task import Task

__all__ = ["GroupReward", "criterion_passes", "record_passes", "play_task", "task_rows", "row_task"]


def criterion_passes(task: Task, results: Sequence[Mapping[str, Any]]) -> list[bool]:
    """One pass per criterion of ``task``'s rubric, in its order, from per-criterion results
    (``{"id", "passed"}`` dicts, as ``info["rubric"]`` and trajectory ``meta.rubric`` hold them);
    a criterion with no result did not pass."""
    passed = {r["id"]: bool(r["passed"]) for r in results}
    return [passed.get(c.id, False) for c in task.rubric]


def record_passes(task: Task, record: Mapping[str, Any]) -> list[bool]:
    """The pass vector of a trajectory record (a failed episode's record passes nothing)."""
    return criterion_passes(task, record.get("meta", {}).get("rubric") or [])


def task_rows(tasks: Sequence[Task | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Dataset items that carry a task each: ``{"task": <task JSON>}``."""
    return [{"task": Task.coerce(t).model_dump(mode="json")} for t in tasks]


def row_task(row: Mapping[str, Any], fix: str) -> Task:
    """The task of a dataset item built by ``task_rows``; ``fix`` names how to build items."""
    if "task" not in row:
        raise ValueError(f"the dataset item has no 'task' (keys: {sorted(row)}); build items "
                         f"with {fix}")
    return Task.coerce(row["task"])


@dataclass(frozen=True)
class GroupReward:
    """compoenv's completion-focused reward over a group of attempts at one task
    (``compoenv.reward.completion_focused``, weights and required criteria from the rubric)."""

    alpha: float = 1.0
    eps: float = 0.05
    lam: float = 0.5

    def rewards(self, task: Task, passes: Sequence[Sequence[bool]]) -> list[float]:
        """One reward per attempt, from each attempt's pass vector (in rubric order)."""
        return completion_focused(passes, [c.weight for c in task.rubric],
                                  [c.required for c in task.rubric],
                                  alpha=self.alpha, eps=self.eps, lam=self.lam,
                                  kinds=[c.kind for c in task.rubric])

    def of_records(self, task: Task, records: Sequence[Mapping[str, Any]]) -> list[float]:
        """One reward per trajectory record of ``task``."""
        return self.rewards(task, [record_passes(task, r) for r in records])


async def play_task(task: Task | Mapping[str, Any], base_url: str, model: str, *,
                    api_key: str = "EMPTY", mode: Literal["direct", "gateway"] = "direct",
                    max_steps: int = 30,
                    tool_format: Literal["native", "hermes", "qwen3_coder"] = "hermes",
                    rollout_idx: int = 0, source: str = "compoenv",
                    sampling: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One episode of ``task`` played by the model behind an OpenAI-compatible endpoint
    (``compoenv.rollout.play_episode`` with an ``EndpointAgent``).

    Args:
        task: The task (or its JSON).
        base_url: The API root, e.g. ``http://127.0.0.1:30000/v1`` (an SGLang router, vLLM).
        model: The model name the endpoint serves.
        api_key: Sent as a bearer token (a trainer's proxy may tell sessions apart by it).
        mode: ``direct`` (the task's tools) or ``gateway`` (four meta-tools).
        max_steps: Replies before the episode is cut off.
        tool_format: How the model calls tools: ``hermes`` text (the tools listed in the
            system prompt), ``qwen3_coder`` text, or the endpoint's ``native`` tool calling.
        rollout_idx: The record's rollout index within its group.
        source: The record's ``source``.
        sampling: ``temperature``, ``max_tokens``, ``top_p``... for every request (the
            first two are the agent's own settings, the rest go in the request body).

    Returns:
        The trajectory record (``tools``, ``messages``, ``meta`` with the rubric score, pass
        results and tokens; a failure record when the endpoint failed every retry).
    """
    from compoenv.agents.endpoint import EndpointAgent

    extra = dict(sampling or {})
    settings = {k: extra.pop(k) for k in ("temperature", "max_tokens") if k in extra}
    agent = EndpointAgent(base_url=base_url, model=model, api_key=api_key,
                          tool_format=tool_format,
                          extra_body=extra, **settings)
    try:
        return await play_episode(agent, Task.coerce(task),
                                  CompoWorldEnv(mode=mode, max_steps=max_steps),
                                  rollout_idx=rollout_idx, source=source)
    finally:
        await agent.aclose()

