"""ART (OpenPipe): compoenv episodes as ``art.Trajectory``, and a group scorer that gives each
trajectory group compoenv's completion-focused reward.

    import art
    from compoenv.integrations.art import completion_focused_group, rollout

    groups = await art.gather_trajectory_groups(
        (art.TrajectoryGroup(rollout(model, task) for _ in range(8)) for task in tasks),
        after_each=completion_focused_group)
    await model.train(groups)

``rollout`` plays the task with the model's inference endpoint (``inference_base_url``, tools
called natively, logprobs requested) through compoenv's async episode runner, and returns
a trajectory whose reward is the rubric score: the transcript with each assistant turn the
sampled ``Choice`` (what ART trains on), the tool results between them, and the tool listing.
``completion_focused_group`` is a scorer for ``gather_trajectory_groups(after_each=...)``, like
ART's RULER: each reward becomes the completion-focused reward of its group, the rubric score
kept in ``metrics["independent_reward"]``.
"""

from __future__ import annotations

import inspect
import json
from typing import Any, Awaitable, Callable, Literal, Mapping, Sequence

try:
    import art
except ImportError as exc:  # an optional extra: name it
    raise ImportError("compoenv.integrations.art needs ART: pip install 'compoenv[art]'"
                      ) from exc

def _keep_transformers_whole() -> None:
    """Undo ART's swap of transformers' mask helper where it does not fit.

    ``import art`` replaces ``transformers.masking_utils._preprocess_mask_arguments`` with a
    wrapper written for an older signature (one more required argument); under transformers
    5.x every model of the process then fails its first forward pass. Rollouts here go through an
    endpoint and need no patch, and a process that also runs a local model (a tiny policy, an
    SFT step) must keep working, so the original comes back when the wrapper cannot take the
    original's arguments.
    """
    try:
        from art.transformers import patches
        from transformers import masking_utils
    except ImportError:
        return
    swapped = getattr(patches, "_patched_preprocess_mask_arguments", None)
    original = getattr(patches, "_preprocess_mask_arguments", None)
    if (swapped is None or original is None
            or masking_utils._preprocess_mask_arguments is not swapped):
        return
    needed = [p for p in inspect.signature(original).parameters.values()
              if p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD]
    try:  # transformers calls it with the original's required arguments
        inspect.signature(swapped).bind(*needed)
    except TypeError:
        masking_utils._preprocess_mask_arguments = original


_keep_transformers_whole()

from compoenv.agents.endpoint import Turn  # noqa: E402
from compoenv.env import CompoWorldEnv  # noqa: E402
from compoenv.integrations.episodes import GroupReward, record_passes  # noqa: E402
from compoenv.reward import kind_pass_rates  # noqa: E402
from compoenv.rollout import play_episode  # noqa: E402
from compoenv.task import Task  # noqa: E402

__all__ = ["rollout", "trajectory", "ChoiceAgent", "completion_focused_group", "make_group_scorer"]

TASK_KEY, PASSES_KEY = "compoenv_task", "compoenv_passes"  # trajectory.metadata keys


class ChoiceAgent:
    """An async agent (``compoenv.rollout.AsyncAgent``) over the model's inference endpoint
    that keeps every sampled ``Choice``, logprobs included, for the trajectory ART trains on.

    The client is the openai SDK's own, not ``model.openai_client()``: ART 0.5 builds that one
    with an ``httpx`` timeout that openai 3 (on ``httpx2``) cannot use."""

    def __init__(self, model: art.Model, sampling: Mapping[str, Any] | None = None) -> None:
        from openai import AsyncOpenAI

        self.client = AsyncOpenAI(base_url=model.inference_base_url,
                                  api_key=model.inference_api_key or "EMPTY")
        self.model = model.get_inference_name()
        self.sampling = dict(sampling or {})
        self.choices: list[Any] = []

    @property
    def name(self) -> str:
        return self.model

    async def respond(self, messages: Sequence[dict[str, Any]],
                      tools: Sequence[dict[str, Any]]) -> Turn:
        completion = await self.client.chat.completions.create(
            model=self.model, messages=list(messages), tools=list(tools), logprobs=True,
            **self.sampling)
        choice = completion.choices[0]
        self.choices.append(choice)
        usage = completion.usage
        return Turn(choice.message.model_dump(mode="json", exclude_none=True),
                    usage.prompt_tokens if usage else 0, usage.completion_tokens if usage else 0,
                    finish_reason=choice.finish_reason)


def trajectory(task: Task, record: Mapping[str, Any], choices: Sequence[Any] = ()
               ) -> art.Trajectory:
    """An ART trajectory of a compoenv trajectory record: the messages (the i-th assistant
    message replaced by the i-th sampled ``Choice`` when given), tools, the rubric score as
    reward, scores and counts as metrics, the task and its pass vector in metadata."""
    meta = record["meta"]
    sampled = iter(choices)
    turns = [next(sampled, m) if m["role"] == "assistant" else m for m in record["messages"]]
    return art.Trajectory(
        messages_and_choices=turns, tools=list(record["tools"]) or None,
        reward=float(meta["rubric_score"]),
        metrics={"rubric_score": float(meta["rubric_score"]), "passed": float(meta["score"]),
                 "net_score": float(meta["net_score"]), "n_tool_calls": meta["n_tool_calls"],
                 "n_steps": meta["n_steps"],
                 **kind_pass_rates([([c.kind for c in task.rubric],
                                     record_passes(task, record))])},
        metadata={"task_id": task.id, "finish_reason": meta["finish_reason"],
                  TASK_KEY: task.model_dump_json(), PASSES_KEY: json.dumps(
                      record_passes(task, record))})


async def rollout(model: art.Model, task: Task | Mapping[str, Any], *,
                  mode: Literal["direct", "gateway"] = "direct", max_steps: int = 30,
                  sampling: Mapping[str, Any] | None = None) -> art.Trajectory:
    """One episode of ``task`` played by ``model`` through its inference client, the model
    calling the task's tools natively (vLLM's tool parser).

    Args:
        model: An ``art.Model`` with an inference endpoint, or a registered
            ``art.TrainableModel``.
        task: The task (or its JSON).
        mode: ``direct`` (the task's tools) or ``gateway`` (four meta-tools).
        max_steps: Replies before the episode is cut off.
        sampling: ``temperature``, ``max_tokens`` and other request fields.
    """
    if not model.inference_base_url:
        raise ValueError(f"model {model.name!r} has no inference_base_url: register it with a "
                         f"backend (await model.register(backend)) or set the URL")
    task = Task.coerce(task)
    agent = ChoiceAgent(model, sampling)
    try:
        record = await play_episode(agent, task, CompoWorldEnv(mode=mode, max_steps=max_steps),
                                    source="art")
    finally:
        await agent.client.close()
    return trajectory(task, record, agent.choices)


GroupScorer = Callable[[art.TrajectoryGroup], Awaitable[art.TrajectoryGroup]]


def make_group_scorer(alpha: float = 1.0, eps: float = 0.05, lam: float = 0.5) -> GroupScorer:
    """A scorer for ``gather_trajectory_groups(after_each=...)`` that gives each trajectory the
    completion-focused reward of its group with these settings (``compoenv.reward``); a group
    mixing tasks is scored per task."""
    scorer = GroupReward(alpha, eps, lam)

    async def score(group: art.TrajectoryGroup) -> art.TrajectoryGroup:
        by_task: dict[str, list[art.Trajectory]] = {}
        for t in group.trajectories:
            by_task.setdefault(str(t.metadata[TASK_KEY]), []).append(t)
        for task_json, members in by_task.items():
            task = Task.model_validate_json(task_json)
            passes = [json.loads(str(t.metadata[PASSES_KEY])) for t in members]
            for t, value in zip(members, scorer.rewards(task, passes), strict=True):
                t.metrics["independent_reward"] = t.reward
                t.metrics["completion_focused"] = value
                t.reward = value
        return group
    return score


completion_focused_group: GroupScorer = make_group_scorer()
"""The group scorer with the default alpha, eps and lam."""
