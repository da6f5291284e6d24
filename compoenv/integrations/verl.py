"""verl agent loop: a compoenv episode played token by token through verl's rollout servers.

``CompoWorldAgentLoop`` is registered in verl as ``compoenv`` (the ``agent_name`` column of
``compoenv.integrations.verl_data`` rows; ``rl/verl/agent_loop.yaml`` registers it by config
path too). Each dataset row carries its task as JSON in ``extra_info["task"]``; the loop plays
that task in a fresh ``CompoWorldEnv`` with compoenv's async episode runner
(``compoenv.rollout.play_episode``), the policy being verl's server manager behind
``_TokenPolicy``. Tokens are built with verl's own Continuous Token builder (the model family's
chat template, the task's tool listing): the prompt once, then each reply as the model's token
ids (mask 1, logprobs kept) and each turn of tool results as the template's delta (mask 0). The
rubric score is the ``reward_score`` (or, with ``group_reward``, the completion-focused reward
over the rollouts of the row's prompt); ``extra_fields`` holds the pass vector and the
episode's statistics (``reward_extra_info`` is what verl logs per sample).

Settings are the keys of the loop's agent-loop yaml entry, which verl passes as keyword
arguments (see CompoWorldAgentLoop).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import weakref
from typing import Any, Mapping
from uuid import uuid4

try:
    from verl.experimental.agent_loop.agent_loop import (
        AgentLoopBase,
        AgentLoopMetrics,
        AgentLoopOutput,
        register,
    )
    from verl.utils.rollout_trace import rollout_trace_op
except ImportError as exc:  # verl is an optional extra
    raise ImportError("compoenv.integrations.verl needs verl: pip install 'compoenv[verl]' "
                      f"(verl 0.9; {exc})") from exc

from compoenv.agents.endpoint import Turn, split_reasoning
from compoenv.env import MODES, CompoWorldEnv
from compoenv.integrations.groups import EpisodeOutcome, GroupBoard, GroupRewardSettings
from compoenv.integrations.openrlhf_data import template_inputs
from compoenv.integrations.verl_data import AGENT_NAME
from compoenv.registry import LIBRARY_ENV
from compoenv.reward import kind_counts
from compoenv.rollout import play_episode
from compoenv.task import Task, TaskFileError

__all__ = ["AGENT_NAME", "CompoWorldAgentLoop", "TaskRowError", "task_of"]

logger = logging.getLogger(__name__)
_REWARDS = ("rubric", "binary")


class TaskRowError(ValueError):
    """A dataset row that does not carry a playable task (see compoenv.integrations.verl_data)."""


def task_of(fields: Mapping[str, Any]) -> Task:
    """The task a verl row carries in ``extra_info["task"]`` (its JSON, or the task's dict).

    Raises:
        TaskRowError: The row has no task, or it is not a valid task.
    """
    extra = fields.get("extra_info")
    raw = extra.get("task") if isinstance(extra, Mapping) else None
    if not raw:
        keys = sorted(extra) if isinstance(extra, Mapping) else type(extra).__name__
        raise TaskRowError(f"the row's extra_info has no 'task' (it has {keys}); write the "
                           "dataset with compoenv.integrations.verl_data.write_verl_dataset")
    try:
        return Task.coerce(json.loads(raw) if isinstance(raw, str) else dict(raw))
    except (ValueError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
        raise TaskRowError(f"extra_info['task'] is not a valid task: "
                           f"{str(exc).splitlines()[0]}") from exc


class _TokenPolicy:
    """verl's server manager as compoenv's async agent (``respond(messages, tools) -> Turn``),
    keeping the episode's token stream: prompt, then replies (mask 1) and tool turns (mask 0).

    A reply that cannot be asked for (the response budget or the turn limit is spent, or the
    next tool turn does not fit) is an empty final answer: the episode ends and is scored as it
    stands. ``stop`` says why the stream ended.
    """

    name = "verl"

    def __init__(self, agent_loop: CompoWorldAgentLoop, sampling_params: dict[str, Any]) -> None:
        self.agent_loop, self.sampling_params = agent_loop, sampling_params
        self.request_id = uuid4().hex  # one id per episode: the server keeps its prefix cache
        self.ids: list[int] = []
        self.prompt_length = 0
        self.mask: list[int] = []
        self.logprobs: list[float] | None = None
        self.tools: list[dict[str, Any]] | None = None  # as the chat template is given them
        self.shown = 0  # messages already in the token stream
        self.replies = self.tool_turns = 0
        self.stop = "done"
        self.generating = self.stepping = 0.0
        self._answered: float | None = None

    async def respond(self, messages: list[dict[str, Any]],
                      tools: list[dict[str, Any]]) -> Turn:
        """The policy's next reply to the transcript (its tokens join the stream)."""
        now = time.perf_counter()
        if self._answered is not None:
            self.stepping += now - self._answered  # the env ran the last reply meanwhile
        turn = await self._reply(list(messages), tools)
        self._answered = time.perf_counter()
        return turn

    async def _reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        loop = self.agent_loop
        if loop.max_replies and self.replies >= loop.max_replies:
            return self._give_up("max_assistant_turns")  # the stream ends on the model's reply
        if not self.ids:
            # a chat template that ignores tools gets their listing in the system message
            opening, self.tools = await asyncio.to_thread(
                template_inputs, loop.tokenizer, messages, list(tools))
            self.ids = await loop.ct_build_initial_tokens(opening, tools=self.tools)
            self.prompt_length = len(self.ids)
        elif not await self._show_results(messages):
            return self._give_up("response_length")
        self.shown = len(messages)
        budget = loop.response_length - len(self.mask)
        if budget <= 0:
            return self._give_up("response_length")
        start = time.perf_counter()
        output = await loop.server_manager.generate(
            request_id=self.request_id, prompt_ids=list(self.ids),
            sampling_params={**self.sampling_params, "max_tokens": budget})
        self.generating += time.perf_counter() - start
        self.replies += 1
        if output.log_probs and self.logprobs is None:
            self.logprobs = [0.0] * len(self.mask)  # a server that starts giving logprobs
        merged, self.mask, logprobs = await loop.ct_merge_assistant_token(
            self.ids, list(output.token_ids), self.mask, self.logprobs,
            assistant_logprobs=None if self.logprobs is None else list(output.log_probs or ()))
        self.ids, self.logprobs = merged.token_ids, logprobs
        if len(self.mask) >= loop.response_length:  # cut off: the env plays what there is
            self.stop = "response_length"
        return Turn(split_reasoning(self._text(output.token_ids)), completion_tokens=len(
            output.token_ids), prompt_tokens=len(self.ids) - len(output.token_ids))

    async def _show_results(self, messages: list[dict[str, Any]]) -> bool:
        """Append the tool turn the env added after the last reply; False if it cannot fit."""
        # the env logged the reply as one assistant message, whose tokens are in the stream
        replied = messages[:self.shown + 1]
        agent_loop = self.agent_loop
        merged, mask, logprobs = await agent_loop.ct_merge_context_msg(
            replied, messages, self.ids, self.mask, self.logprobs, tools=self.tools)
        if len(mask) >= agent_loop.response_length:
            return False
        self.ids, self.mask, self.logprobs = merged.token_ids, mask, logprobs
        self.tool_turns += 1
        return True

    def _give_up(self, why: str) -> Turn:
        self.stop = why
        return Turn({"role": "assistant", "content": ""})

    def _text(self, token_ids: list[int]) -> str:
        """The reply as text: special tokens inside it kept (some models mark tool calls with
        them), the end-of-turn tokens that close it dropped."""
        tokenizer = self.agent_loop.tokenizer
        ids, special = list(token_ids), set(tokenizer.all_special_ids)
        while ids and ids[-1] in special:
            ids.pop()
        return str(tokenizer.decode(ids, skip_special_tokens=False))


@register(AGENT_NAME)
class CompoWorldAgentLoop(AgentLoopBase):
    """A compoenv episode per dataset row (see the module docstring).

    Args:
        *args: verl's AgentLoopBase arguments (trainer config, server manager, tokenizer, ...).
        mode: ``direct`` or ``gateway``; default: the row's ``extra_info["mode"]``, else direct.
        max_steps: Actions per episode before truncation (default: the env's for the task).
        reward: ``rubric`` or ``binary``: what ``reward_score`` holds without ``group_reward``.
        group_reward: Give each episode the completion-focused reward over the rollouts of its
            prompt (its ``uid``) instead (``compoenv.integrations.groups``).
        group_size: Rollouts per prompt (default: detected, those started together).
        group_timeout: Seconds an ended episode waits for its group before falling back to
            its own rubric score.
        alpha: ``completion_focused``'s alpha (0: the plain rubric plus the completion bonus).
        eps: ``completion_focused``'s eps.
        lam: ``completion_focused``'s lam (0: no completion bonus).
        tools: verl's tool list for ToolAgentLoop; unused (the tools are the task's).
        **kwargs: Passed on to AgentLoopBase.
    """

    def __init__(self, *args: Any, mode: str | None = None, max_steps: int | None = None,
                 reward: str = "rubric", group_reward: bool = False,
                 group_size: int | None = None, group_timeout: float = 300.0,
                 alpha: float = 1.0, eps: float = 0.05, lam: float = 0.5, tools: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if mode is not None and mode not in MODES:
            raise ValueError(f"compoenv agent loop: mode must be one of {MODES}, got {mode!r}")
        if reward not in _REWARDS:
            raise ValueError(f"compoenv agent loop: reward must be one of {_REWARDS}, "
                             f"got {reward!r}")
        if max_steps is not None and int(max_steps) < 1:
            raise ValueError(f"compoenv agent loop: max_steps must be >= 1, got {max_steps}")
        self.mode, self.reward = mode, reward
        self.max_steps = None if max_steps is None else int(max_steps)
        self.group = GroupRewardSettings(group_size, group_timeout, alpha, eps,
                                         lam) if group_reward else None
        self.response_length = int(self.rollout_config.response_length)
        self.max_replies = self.rollout_config.multi_turn.get("max_assistant_turns") or 0

    @rollout_trace_op  # traced like verl's own loops when rollout tracing is on
    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        """Play the row's task (``extra_info["task"]``) with the policy; see the module docstring.

        Raises:
            TaskRowError: The row carries no valid task, or one whose services are missing.
        """
        task = task_of(kwargs)
        extra = kwargs.get("extra_info")
        extra = extra if isinstance(extra, Mapping) else {}
        mode = self.mode or extra.get("mode") or "direct"
        if mode not in MODES:
            raise TaskRowError(f"extra_info['mode'] must be one of {MODES}, got {mode!r}")
        group, slot = None, 0
        if self.group is not None:  # joined before the first await (group detection)
            key = kwargs.get("uid", (task.id, extra.get("index")))  # verl's id of the prompt
            group, slot = _board(self.group).join(str(key))
        try:
            policy, meta = await self._play(task, mode, sampling_params)
        except BaseException:
            if group is not None:
                group.fail(slot)  # the others stop waiting for this episode
            raise
        extra_fields = _extra_fields(meta, policy.stop, [c.kind for c in task.rubric])
        reward = float(meta["rubric_score"] if self.reward == "rubric" else meta["score"])
        if group is not None:
            outcome = EpisodeOutcome(
                passes=tuple(bool(p) for p in extra_fields["passes"]),
                weights=tuple(c.weight for c in task.rubric),
                required=tuple(c.required for c in task.rubric),
                kinds=tuple(c.kind for c in task.rubric),
                rubric_score=float(meta["rubric_score"]), passed=meta["score"] == 1.0,
                net_score=float(meta["net_score"]))
            reward, fallback = await group.reward(slot, outcome)
            extra_fields["reward_extra_info"].update(
                group_reward=reward, group_size=float(group.size or 0), group_fallback=fallback)
        n = self.response_length
        return AgentLoopOutput(
            prompt_ids=policy.ids[:policy.prompt_length],
            response_ids=policy.ids[policy.prompt_length:][:n],
            response_mask=policy.mask[:n],
            response_logprobs=None if policy.logprobs is None else policy.logprobs[:n],
            reward_score=reward, num_turns=1 + policy.replies + policy.tool_turns,
            metrics=AgentLoopMetrics(generate_sequences=policy.generating,
                                     tool_calls=policy.stepping),
            extra_fields=extra_fields)

    async def _play(self, task: Task, mode: str,
                    sampling_params: dict[str, Any]) -> tuple[_TokenPolicy, dict[str, Any]]:
        """The episode: the policy with its token stream, and the trajectory record's meta."""
        try:  # checked against the registry here (a task of a library the worker lacks)
            env = await asyncio.to_thread(CompoWorldEnv, [task], mode=mode,
                                          max_steps=self.max_steps)
        except TaskFileError as exc:
            raise TaskRowError(f"task {task.id} cannot be played here: {exc} (are the "
                               f"libraries it was composed with in {LIBRARY_ENV} on every "
                               "rollout worker?)") from exc
        policy = _TokenPolicy(self, sampling_params)
        meta = (await play_episode(policy, task, env, source="verl"))["meta"]
        if policy.stop == "done" and meta["finish_reason"] == "max_steps":
            policy.stop = "max_steps"
        return policy, meta


# the open groups of each event loop (a verl worker's), by group settings
_BOARDS: weakref.WeakKeyDictionary[Any, dict[GroupRewardSettings, GroupBoard]] = (
    weakref.WeakKeyDictionary())


def _board(settings: GroupRewardSettings) -> GroupBoard:
    boards = _BOARDS.setdefault(asyncio.get_running_loop(), {})
    if settings not in boards:
        boards[settings] = GroupBoard(settings, logger, "group_timeout; is group_size the "
                                      "rollouts per prompt (actor_rollout_ref.rollout.n)?")
    return boards[settings]


def _extra_fields(meta: dict[str, Any], stop: str, kinds: list[str]) -> dict[str, Any]:
    """The episode's outcome for verl's batch: the pass vector with its criterion ids, and the
    scalar statistics verl logs per sample (``reward_extra_info``; the same keys every time),
    with the criteria passed and checked per kind (``kind_counts``)."""
    passes = [int(bool(c["passed"])) for c in meta["rubric"]]
    passed = float(meta["score"])  # as "acc" too: verl's core validation metric
    stats = {"acc": passed, "rubric_score": float(meta["rubric_score"]), "passed": passed,
             "net_score": float(meta["net_score"]),
             "criteria_pass_rate": sum(passes) / max(len(passes), 1),
             "tool_calls": float(meta["n_tool_calls"]), "steps": float(meta["n_steps"]),
             "cut_short": float(stop in ("response_length", "max_assistant_turns")),
             **kind_counts(kinds, passes)}
    return {"task_id": meta["task_id"], "passes": passes,
            "criteria": [str(c["id"]) for c in meta["rubric"]], "stop_reason": stop,
            "reward_extra_info": stats}
