"""OpenRLHF agent: a compoenv episode as a multi-turn AgentInstance, and a group-reward executor.

``rl/openrlhf_agent.py`` is the file for ``--train.agent_func_path``; prompts come from
``compoenv export openrlhf`` (label = the task JSON). Each vLLM engine runs ``execute`` n times
per prompt under one ``asyncio.gather``, each an episode in OpenRLHF's MultiTurnAgentExecutor
loop; once all n have ended, each gets ``compoenv.reward.completion_focused`` over the group's
pass matrix as ``reward`` and ``scores``.

Group detection: without a configured size, the executions of one (prompt, label) that start
in the same event-loop tick form a group (``compoenv.integrations.groups``): ``asyncio.gather``
schedules every Task's first step before gather returns. (Identical prompts sent to one engine
in one tick merge into one group.)

Environment variables (read when the executor is created; constructor arguments win):
    COMPOENV_GROUP_SIZE: Episodes per group (--rollout.n_samples_per_prompt; default: detected).
    COMPOENV_GROUP_TIMEOUT: Seconds an ended episode waits for the rest of its group (default
        300); past it the whole group falls back to each episode's own rubric score.
    COMPOENV_MAX_STEPS: Actions per episode before truncation (default 20).
    COMPOENV_MODE: ``direct`` (default) or ``gateway``, as ``compoenv export openrlhf --mode``.
    COMPOENV_REWARD_ALPHA, _EPS, _LAM: completion_focused's alpha, eps and lam (defaults 1.0,
        0.05, 0.5; alpha=0 is the plain rubric, lam=0 drops the completion bonus).
    COMPOENV_WORLD_MODEL: Who answers spec-only tools, as for CompoWorldEnv.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import warnings
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

import torch
from openrlhf.utils.agent import AgentInstanceBase, MultiTurnAgentExecutor

from compoenv.env import MODES, CompoWorldEnv
from compoenv.integrations.groups import EpisodeOutcome, GroupBoard, GroupRewardSettings
from compoenv.reward import kind_counts

__all__ = ["AgentExecutor", "AgentInstance", "EpisodeOutcome", "Settings", "TemplateError"]

logger = logging.getLogger(__name__)

_SENTINEL = "COMPOENV-ASSISTANT-TURN-7f3a"  # stands in for the assistant's text in renders
_VARIABLES = {  # Settings field: (environment variable, type, least value)
    "max_steps": ("COMPOENV_MAX_STEPS", int, 1), "group_size": ("COMPOENV_GROUP_SIZE", int, 1),
    "group_timeout": ("COMPOENV_GROUP_TIMEOUT", float, 0), "lam": ("COMPOENV_REWARD_LAM", float, 0),
    "alpha": ("COMPOENV_REWARD_ALPHA", float, 0), "eps": ("COMPOENV_REWARD_EPS", float, 0)}


class TemplateError(ValueError):
    """The policy's chat template cannot be extended turn by turn (it rewrites earlier text)."""


@dataclass(frozen=True)
class Settings(GroupRewardSettings):
    """How episodes run and how their group reward is computed (see the module docstring)."""

    mode: str = "direct"
    max_steps: int = 20

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode (COMPOENV_MODE) must be one of {MODES}, got {self.mode!r}")
        super().__post_init__()

    @classmethod
    def from_env(cls) -> Settings:
        """Settings from the COMPOENV_* variables (defaults where unset)."""
        values: dict[str, Any] = {"mode": os.environ.get("COMPOENV_MODE", "").strip() or "direct"}
        for key, (name, kind, low) in _VARIABLES.items():
            raw = os.environ.get(name, "").strip()
            try:
                values[key] = kind(raw) if raw else getattr(cls, key)
            except ValueError:
                values[key] = low - 1
            if raw and values[key] < low:
                raise ValueError(f"{name} must be a {kind.__name__} >= {low}, got {raw!r}")
        return cls(**values)


@dataclass
class _Episode:
    """One execution's hand-over to its instance, and the engine proxy that notes outputs."""

    tokenizer: Any
    settings: Settings
    engine: Any
    instance: AgentInstance | None = None
    last_output: Any = None

    async def generate(self, *args: Any, **kwargs: Any) -> Any:
        self.last_output = await self.engine.generate(*args, **kwargs)
        return self.last_output


_EPISODE: ContextVar[_Episode | None] = ContextVar("compoenv_openrlhf_episode", default=None)


def _overlap(text: str, after: str, tokenizer: Any) -> int:
    """The longest prefix of ``after`` that ``text`` ends with, ending on a token boundary (so a
    truncated reply's final ``<`` is not taken for ``<|im_end|>``)."""
    ids = tokenizer(after[:64], add_special_tokens=False)["input_ids"]
    whole = len(ids) + (len(after) <= 64)  # the last id may stand for a cut-off token
    cuts = (len(tokenizer.decode(ids[:i], skip_special_tokens=False)) for i in range(1, whole))
    return max((k for k in cuts if text.endswith(after[:k])), default=0)


def _renderable(message: dict[str, Any]) -> dict[str, Any]:
    """A message as chat templates expect it: tool-call arguments as objects, not JSON text."""
    if not message.get("tool_calls"):
        return {k: v for k, v in message.items() if k != "tool_calls"}
    calls = []
    for call in message["tool_calls"]:
        try:  # the env wrote these arguments with json.dumps
            arguments = json.loads(call["function"]["arguments"])
        except (TypeError, ValueError):
            arguments = None
        arguments = arguments if isinstance(arguments, dict) else {}  # a broken call's raw text
        calls.append({**call, "function": {**call["function"], "arguments": arguments}})
    return {**message, "tool_calls": calls}


class AgentInstance(AgentInstanceBase):
    """One compoenv episode, driven by OpenRLHF's MultiTurnAgentExecutor: ``reset`` builds the
    env from ``states["label"]`` (the task JSON) and passes the prompt on unchanged; ``step``
    runs an action and renders the tool results with the policy's own chat template. A label
    that is not a valid task is logged and ends the episode at its first action, reward 0.

    Args:
        tokenizer: The policy's tokenizer; default: the one the running AgentExecutor got.
        settings: Mode and step limit; default: the running executor's, else the environment's.
    """

    def __init__(self, *args: Any, tokenizer: Any = None, settings: Settings | None = None,
                 **kwargs: Any) -> None:
        episode = _EPISODE.get()
        if episode is not None:
            episode.instance = self
        self.tokenizer: Any = episode.tokenizer if tokenizer is None and episode else tokenizer
        if self.tokenizer is None:
            raise RuntimeError("AgentInstance renders tool results with the policy's chat "
                               "template, so it needs the tokenizer: run it under compoenv's "
                               "AgentExecutor (rl/openrlhf_agent.py) or pass tokenizer=")
        self.settings = settings or (episode.settings if episode else Settings.from_env())
        self._episode = episode
        self.env: CompoWorldEnv | None = None
        self.tools: list[dict[str, Any]] = []
        self.error, self.done = "", False  # error: why the label is not a task
        self.outcome: EpisodeOutcome | None = None
        self.tool_calls = self.tool_errors = self.steps = 0
        self._closing: str | None = None

    async def reset(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Build the episode from the label; the observation stays the rendered prompt."""
        try:
            await asyncio.to_thread(self._start, states.get("label"))
        except Exception as exc:  # the boundary: a bad label is data, never a crash
            self.error = f"{type(exc).__name__}: {exc}"
            logger.error("compoenv: the label is not a valid task (%s); the episode ends at its "
                         "first action, reward 0 (labels: `compoenv export openrlhf`)", self.error)
            return dict(states)
        names = [t["function"]["name"] for t in self.tools]
        if not any(n in str(states.get("observation")) for n in names):  # shown once
            warnings.warn(f"the prompt lists none of the {self.settings.mode}-mode tools "
                          f"{names[:2]}: set COMPOENV_MODE to the mode of `compoenv export "
                          "openrlhf --mode`", RuntimeWarning, stacklevel=2)
        return dict(states)

    def _start(self, label: Any) -> None:
        if not isinstance(label, (str, dict)) or not label:
            raise TypeError(f"expected the task JSON string, got {type(label).__name__}")
        env = CompoWorldEnv(mode=self.settings.mode, max_steps=self.settings.max_steps)
        self.tools = env.reset(options={"task": label})[1]["tools"]
        self.env = env

    async def step(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Run one action; the feedback closes the assistant turn and renders the tool turn."""
        feedback = ""
        if self.env is None or self.done:  # a bad label: the first action ends the episode
            self.done = True
            self.outcome = self.outcome or EpisodeOutcome(label_error=bool(self.error))
        else:
            self.steps += 1
            feedback = await asyncio.to_thread(self._advance, str(states.get("action_text", "")))
        score = self.outcome.rubric_score if self.done and self.outcome else 0.0
        return {"rewards": torch.tensor(score), "scores": torch.tensor(score),
                "environment_feedback": feedback, "done": self.done,
                "extra_logs": self.extra_logs()}

    def _advance(self, action: str) -> str:
        assert self.env is not None
        closing = self.closing()
        output = getattr(self._episode, "last_output", None)
        emitted = action if output is None else self.tokenizer.decode(  # engines differ on
            list(output.outputs[0].token_ids), skip_special_tokens=False)  # showing the stop
        kept = _overlap(action, closing, self.tokenizer)
        before = len(self.env.messages)
        _, _, terminated, truncated, info = self.env.step(action[: len(action) - kept])
        for message in self.env.messages[before + 1:]:
            self.tool_calls += 1
            self.tool_errors += message["content"].startswith('{"success": false')
        if terminated or truncated:
            self.done = True
            self.outcome = EpisodeOutcome(
                passes=tuple(bool(c["passed"]) for c in info["rubric"]),
                weights=tuple(float(c["weight"]) for c in info["rubric"]),
                required=tuple(bool(c["required"]) for c in info["rubric"]),
                kinds=tuple(str(c["kind"]) for c in info["rubric"]),
                rubric_score=float(info["rubric_score"]), passed=bool(info["passed"]),
                net_score=float(info["net_score"]))
            return ""
        after = closing + self.tool_turn(before)  # what the model wrote of it is not repeated
        return after[max(kept, _overlap(emitted, after, self.tokenizer)):]

    def render(self, messages: list[dict[str, Any]], generation_prompt: bool) -> str:
        """The chat template's text: tool-call arguments as objects, else as JSON (DeepSeek-V3)."""
        for variant in ([_renderable(m) for m in messages], messages):
            try:
                return self.tokenizer.apply_chat_template(
                    variant, tools=self.tools or None, add_generation_prompt=generation_prompt,
                    tokenize=False)
            except TypeError as exc:
                error = exc
        raise error

    def closing(self) -> str:
        """What the template writes after an assistant message's text (``<|im_end|>\\n``)."""
        if self._closing is None:
            assert self.env is not None
            turn = {"role": "assistant", "content": _SENTINEL}
            text = self.render([*self.env.messages[:2], turn], False)
            if _SENTINEL not in text:
                raise TemplateError("the chat template drops the assistant's message text; "
                                    "compoenv cannot place tool results after it")
            self._closing = text[text.rindex(_SENTINEL) + len(_SENTINEL):]
        return self._closing

    def tool_turn(self, start: int) -> str:
        """What a render adds after the assistant turn ``messages[start]`` once its tool results
        follow, up to the next generation prompt. (Text before the turn may change, like Qwen3's
        empty think block on a last turn only: the stream already holds the model's own.)"""
        assert self.env is not None
        messages = self.env.messages
        turn = {**messages[start], "content": _SENTINEL}
        head = self.render(messages[:start] + [turn], False)
        full = self.render(messages[:start] + [turn] + messages[start + 1:], True)
        tail = head[max(head.rfind(_SENTINEL), 0):]  # the turn's end; all if calls replace text
        at = full.find(tail)
        if at < 0:
            raise TemplateError("the chat template renders the end of an assistant turn "
                                "differently once tool results follow, so they cannot be "
                                f"appended token by token: {tail!r} is not in the longer render")
        return full[at + len(tail):]

    async def finish(self) -> EpisodeOutcome:
        """The outcome; an episode the token budget cut short is scored as it stands."""
        if self.outcome is None and self.env is not None and not self.done:
            await asyncio.to_thread(self._advance, "")  # an empty reply is the final answer
        return self.outcome or EpisodeOutcome(label_error=bool(self.error))

    def extra_logs(self) -> dict[str, float]:
        """Scalar statistics of the episode (the same keys for every episode), with the
        criteria passed and checked per kind (``kind_counts``)."""
        outcome = self.outcome or EpisodeOutcome(label_error=bool(self.error))
        passed = sum(outcome.passes)
        return {"rubric_score": outcome.rubric_score, "passed": float(outcome.passed),
                "net_score": outcome.net_score,
                "criteria_pass_rate": passed / max(len(outcome.passes), 1),
                "criteria_passed": float(passed), "tool_calls": float(self.tool_calls),
                "tool_errors": float(self.tool_errors), "steps": float(self.steps),
                "label_error": float(outcome.label_error),
                **kind_counts(outcome.kinds, outcome.passes)}


class AgentExecutor(MultiTurnAgentExecutor):
    """OpenRLHF's multi-turn loop over compoenv episodes, with the group's reward assigned.

    Args:
        group_size: Episodes per group (default: COMPOENV_GROUP_SIZE, else detected).
        group_timeout: Seconds to wait for a group (default: COMPOENV_GROUP_TIMEOUT or 300).
        settings: All settings at once (default: from the environment).
        agent_instance_cls: The episode class (an AgentInstance).
    """

    def __init__(self, group_size: int | None = None, group_timeout: float | None = None,
                 settings: Settings | None = None,
                 agent_instance_cls: type[AgentInstance] = AgentInstance) -> None:
        super().__init__(agent_instance_cls)
        base = settings or Settings.from_env()
        timeout = base.group_timeout if group_timeout is None else group_timeout
        self.settings = replace(base, group_size=group_size or base.group_size,
                                group_timeout=timeout)
        self._groups = GroupBoard(self.settings, logger, "COMPOENV_GROUP_TIMEOUT; is "
                                  "COMPOENV_GROUP_SIZE --rollout.n_samples_per_prompt?")

    async def execute(self, prompt: Any, label: Any, sampling_params: Any, max_length: int,
                      hf_tokenizer: Any, llm_engine: Any, images: Any = None) -> dict[str, Any]:
        """One episode through MultiTurnAgentExecutor, then the group reward (see the class)."""
        group, slot = self._groups.join((str(prompt), str(label)))  # before the first await
        episode = _Episode(hf_tokenizer, self.settings, llm_engine)
        token = _EPISODE.set(episode)
        try:
            response = await super().execute(prompt, label, sampling_params, max_length,
                                             hf_tokenizer, episode, images)
            assert episode.instance is not None, "agent_instance_cls must be an AgentInstance"
            outcome = await episode.instance.finish()
        except BaseException:
            group.fail(slot)
            raise
        finally:
            _EPISODE.reset(token)
        reward, fallback = await group.reward(slot, outcome)
        response["reward"] = response["scores"] = reward
        response["extra_logs"] = {**episode.instance.extra_logs(), "group_reward": reward,
                                  "group_size": float(group.size or 0), "group_fallback": fallback}
        return response
