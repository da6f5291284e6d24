"""TRL: environment classes for ``GRPOTrainer(environment_factory=...)``, rubric reward functions, rows.

    from trl import GRPOConfig, GRPOTrainer
    from compoenv.integrations.trl import CompoWorldToolEnv, completion_focused_reward, make_dataset

    trainer = GRPOTrainer(model=..., args=GRPOConfig(...), train_dataset=make_dataset(tasks),
                          environment_factory=CompoWorldToolEnv,
                          reward_funcs=[completion_focused_reward])

TRL (1.16) makes one environment per rollout, calls ``reset(**row)`` and appends the string it
returns to the row's last user message, and exposes every public method of the class other
than ``reset`` and ``get_reward`` as a tool (schema from type hints and the Google docstring),
so the tool set is fixed per class: ``CompoWorldToolEnv`` has the gateway's four meta-tools
and ``CompoWorldDirectToolEnv`` a single ``call_tool`` with the task's tools listed in the
observation. Tool results are compoenv's JSON envelopes; a failed call is an error envelope
the model reads, not an exception.

TRL never shows an environment the model's final reply, and rubric answer criteria need it,
so the reward functions here read it from ``completions``, score each rollout's environment,
and log pass rate, criteria, calls and errors. ``get_reward`` (which TRL adds as a reward of
its own) then returns None for those rollouts so nothing counts twice; used alone, it scores
with an empty final reply (answer criteria fail). Other settings go through a partial, e.g.
``environment_factory=functools.partial(CompoWorldToolEnv, max_steps=12)``.
"""

from __future__ import annotations

import inspect
import json
import warnings
from collections import defaultdict
from typing import Any, Callable, Sequence

from compoenv.actions import ToolCall, render_calls
from compoenv.env import CompoWorldEnv
from compoenv.reward import (Outcome, RubricResult, completion_focused, kind_pass_rates,
                             score_rubric)
from compoenv.service import error
from compoenv.session import render_result
from compoenv.task import Task
from compoenv.trajectory import call_counts

__all__ = ["CompoWorldToolEnv", "CompoWorldDirectToolEnv", "rubric_reward",
           "completion_focused_reward", "make_completion_focused_reward", "final_reply",
           "make_dataset", "environment_tools", "opening_messages"]


class _ToolEnvBase:
    """Shared episode logic; subclasses choose the mode and add tool methods."""

    _mode = "gateway"

    def __init__(self, *, max_steps: int = 30, world_model: Any = None) -> None:
        self._env = CompoWorldEnv(mode=self._mode, max_steps=max_steps, world_model=world_model)
        self._task: Task | None = None
        self._tools: list[dict[str, Any]] = []
        self._ended = False
        self._calls = self._errors = 0
        self._final: str | None = None
        self._result: RubricResult | None = None
        self._by_reward_func = False

    def reset(self, **row: Any) -> str:
        """Start the episode of the row's task; returns the request (TRL appends it to the
        prompt's last user message)."""
        if "task" not in row:
            raise ValueError(f"the dataset row has no 'task' column (columns: {sorted(row)}); "
                             f"build rows with compoenv.integrations.trl.make_dataset(tasks)")
        self._task = Task.coerce(row["task"])
        _, info = self._env.reset(options={"task": self._task})
        self._tools, self._ended = info["tools"], False
        self._calls = self._errors = 0
        self._final, self._result, self._by_reward_func = None, None, False
        return self._observation()

    def _observation(self) -> str:
        assert self._task is not None
        return self._task.instruction

    def call_tool(self, tool_name: str, arguments: dict | None = None) -> str:
        """Call a tool with its arguments.

        Args:
            tool_name: A tool name, such as flights__search_flights.
            arguments: The tool's arguments as a JSON object.

        Returns:
            The result envelope: {"success": true, "data": ...} or {"success": false, "error": ...}.
        """
        if self._mode == "gateway":
            return self._step("call_tool", {"tool_name": tool_name, "arguments": arguments})
        return self._step(tool_name, {} if arguments is None else arguments)

    def _step(self, name: str, arguments: Any) -> str:
        if self._task is None:
            raise RuntimeError("call reset(**row) before calling tools")
        self._calls += 1
        if self._result is not None or self._ended:
            self._errors += 1
            why = (f"the episode's step limit ({self._env.max_steps}) is reached"
                   if self._result is None else "the episode has been scored")
            return render_result(error(429, f"{why}; reply with your final answer"))
        call = ToolCall(name, arguments, f"call_{self._calls - 1}")
        _, _, terminated, truncated, _ = self._env.step(render_calls([call], "openai"))
        self._ended = terminated or truncated
        content = str(self._env.messages[-1]["content"])
        self._errors += not content.startswith('{"success": true')
        return content

    def _score(self, final_message: str | None) -> RubricResult:
        """Score the episode with this final reply (None: the rollout stopped without one);
        once per episode, later calls return the same result."""
        if self._task is None or self._env.session is None:
            raise RuntimeError("call reset(**row) before scoring")
        if self._result is None:
            self._final = final_message
            self._result = score_rubric(self._task.rubric, Outcome(
                self._env.session, final_message or "", self._task.instruction))
        return self._result

    def get_reward(self) -> float | None:
        """The episode's rubric score, or None when a compoenv reward function already scored
        this rollout (TRL then leaves this reward out, so nothing counts twice)."""
        if self._by_reward_func:
            return None
        if self._result is None and self._task is not None and any(
                c.kind == "answer" for c in self._task.rubric):
            warnings.warn("get_reward cannot see the model's final reply, so answer criteria "
                          "fail; pass reward_funcs=[compoenv.integrations.trl.rubric_reward] "
                          "(or completion_focused_reward) to score it", stacklevel=2)
        return self._score(None).rubric_score

    @property
    def trajectory(self) -> dict[str, Any]:
        """The rollout so far in the trajectory format of docs/architecture.md (with the final
        reply once scored)."""
        if self._task is None:
            raise RuntimeError("call reset(**row) first")
        messages = list(self._env.messages)
        if self._final is not None:
            messages.append({"role": "assistant", "content": self._final})
        result = self._result
        n_calls, n_real = call_counts(messages)
        return {"tools": list(self._tools), "messages": messages, "source": "trl", "meta": {
            "task_id": self._task.id, "rollout_idx": 0,
            "rubric_score": result.rubric_score if result else 0.0,
            "score": float(result.passed) if result else 0.0,  # the published format's pass
            "net_score": result.net_score if result else 0.0, "n_tool_calls": n_calls,
            "n_real_tool_calls": n_real, "discover_mode": self._mode,
            "n_steps": sum(m["role"] == "assistant" for m in messages),
            "services": self._task.services, "domain": self._task.domain,
            "capabilities": self._task.capabilities,
            "finish_reason": "length" if self._final is None else "stop",
            "rubric": [{"id": c.id, "passed": c.passed} for c in result.criteria]
            if result else []}}


class CompoWorldToolEnv(_ToolEnvBase):
    """Gateway mode: the model discovers services and tools, then calls them through
    ``call_tool``; the task's services and its distractors are mounted.

    Args:
        max_steps: Tool calls per episode; later calls get an error envelope.
        world_model: Who answers spec-only tools (see CompoWorldEnv).
    """

    def list_services(self) -> str:
        """List the names of the services available."""
        return self._step("list_services", {})

    def list_tools(self, service: str) -> str:
        """List the tools of one service, with their descriptions.

        Args:
            service: A service name from list_services.
        """
        return self._step("list_tools", {"service": service})

    def describe_tool(self, tool: str) -> str:
        """Show a tool's description and the JSON schema of its parameters.

        Args:
            tool: A tool name from list_tools, such as flights__search_flights.
        """
        return self._step("describe_tool", {"tool": tool})


class CompoWorldDirectToolEnv(_ToolEnvBase):
    """Direct mode: the observation lists the task's tools (with their JSON schemas) and the
    model calls them through ``call_tool(tool_name, arguments)``.

    Args:
        max_steps: Tool calls per episode; later calls get an error envelope.
        world_model: Who answers spec-only tools (see CompoWorldEnv).
    """

    _mode = "direct"

    def _observation(self) -> str:
        assert self._task is not None
        listing = "\n".join(json.dumps(t["function"], separators=(",", ":"))
                            for t in self._tools)
        return (f"{self._task.instruction}\n\nCall these tools with call_tool(tool_name, "
                f"arguments):\n{listing}")


def final_reply(completion: Any) -> str | None:
    """The model's final reply in a TRL completion: the last assistant message's text when it
    calls no tool (a plain-text completion is its own reply); None when the rollout stopped
    on a tool call or a tool result (out of tokens or tool iterations)."""
    if isinstance(completion, str):
        return completion
    if not completion:
        return None
    last = completion[-1]
    if last.get("role") != "assistant" or last.get("tool_calls"):
        return None
    content = last.get("content")
    if isinstance(content, list):  # content blocks
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def _scored(completions: Sequence[Any], environments: Sequence[Any] | None,
            log_metric: Callable[[str, float], None] | None) -> list[RubricResult]:
    if environments is None or len(environments) != len(completions):
        raise ValueError("compoenv reward functions need TRL's environments: pass "
                         "environment_factory=CompoWorldToolEnv (or CompoWorldDirectToolEnv)")
    results = []
    for completion, env in zip(completions, environments, strict=True):
        if not isinstance(env, _ToolEnvBase):
            raise TypeError(f"environment {type(env).__name__} is not a compoenv TRL env")
        results.append(env._score(final_reply(completion)))
        env._by_reward_func = True
    if log_metric is not None and results:
        n = len(results)
        log_metric("compoenv/pass_rate", sum(r.passed for r in results) / n)
        log_metric("compoenv/rubric_score", sum(r.rubric_score for r in results) / n)
        log_metric("compoenv/criteria_passed",
                   sum(sum(r.passes) / max(len(r.passes), 1) for r in results) / n)
        by_kind = kind_pass_rates(([c.kind for c in r.criteria], [c.passed for c in r.criteria])
                                  for r in results)
        for name, value in by_kind.items():
            log_metric(f"compoenv/{name}", value)
        log_metric("compoenv/tool_calls", sum(e._calls for e in environments) / n)
        log_metric("compoenv/tool_errors", sum(e._errors for e in environments) / n)
    return results


def rubric_reward(completions: Sequence[Any], environments: Sequence[Any] | None = None,
                  log_metric: Callable[[str, float], None] | None = None,
                  **kwargs: Any) -> list[float]:
    """TRL reward function: each rollout's plain rubric score, final reply included.

    Args:
        completions: TRL's completions (message lists, or text).
        environments: TRL's per-rollout environment instances (compoenv TRL envs).
        log_metric: TRL's metric logger; pass rate, criteria, calls and errors go there.
        **kwargs: The rest of TRL's reward arguments (ignored).
    """
    return [r.rubric_score for r in _scored(completions, environments, log_metric)]


def make_completion_focused_reward(alpha: float = 1.0, eps: float = 0.05, lam: float = 0.5
                                   ) -> Callable[..., list[float]]:
    """A TRL reward function giving the completion-focused group reward
    (compoenv.reward.completion_focused) over the rollouts of each task in the batch.

    TRL's batch holds the ``num_generations`` rollouts of a prompt together, so rollouts are
    grouped by task id; a group split across processes is scored per process.
    """
    def completion_focused_reward(completions: Sequence[Any],
                                  environments: Sequence[Any] | None = None,
                                  log_metric: Callable[[str, float], None] | None = None,
                                  **kwargs: Any) -> list[float]:
        results = _scored(completions, environments, log_metric)
        groups: dict[str, list[int]] = defaultdict(list)
        for i, env in enumerate(environments or ()):
            groups[env._task.id].append(i)
        rewards = [0.0] * len(results)
        for members in groups.values():
            first = results[members[0]].criteria
            values = completion_focused([results[i].passes for i in members],
                                        weights=[c.weight for c in first],
                                        required=[c.required for c in first],
                                        alpha=alpha, eps=eps, lam=lam,
                                        kinds=[c.kind for c in first])
            for i, value in zip(members, values, strict=True):
                rewards[i] = value
        return rewards

    return completion_focused_reward


completion_focused_reward = make_completion_focused_reward()


def make_dataset(tasks: Sequence[Task | dict[str, Any]], mode: str = "gateway") -> Any:
    """A ``datasets.Dataset`` of GRPO rows: ``prompt`` (the episode's system prompt and an
    empty user turn that ``reset`` fills with the request), ``task`` (the task JSON) and
    ``task_id``.

    Args:
        tasks: The tasks to train on.
        mode: ``"gateway"`` for CompoWorldToolEnv, ``"direct"`` for CompoWorldDirectToolEnv.
    """
    from datasets import Dataset

    env = CompoWorldEnv(mode=mode)
    rows: dict[str, list[Any]] = {"prompt": [], "task": [], "task_id": []}
    for task in tasks:
        task = Task.coerce(task)
        env.reset(options={"task": task})
        rows["prompt"].append([{"role": "system", "content": env.messages[0]["content"]},
                               {"role": "user", "content": ""}])
        rows["task"].append(task.to_json())
        rows["task_id"].append(task.id)
    return Dataset.from_dict(rows)


def environment_tools(env: Any) -> list[Callable[..., Any]]:
    """The bound methods GRPOTrainer exposes as tools for ``env``: its public functions other
    than ``reset`` and ``get_reward`` (as TRL 1.16 finds them, on the class)."""
    return [getattr(env, name) for name, _ in inspect.getmembers(type(env), inspect.isfunction)
            if name not in ("reset", "get_reward") and not name.startswith("_")]


def opening_messages(row: dict[str, Any], env: _ToolEnvBase) -> list[dict[str, Any]]:
    """The conversation GRPOTrainer generates from for ``row``: its prompt with what
    ``env.reset(**row)`` returns appended to the last user message (resets ``env``)."""
    observation = env.reset(**row)
    *head, last = row["prompt"]
    return [*head, {**last, "content": last["content"] + observation}]
