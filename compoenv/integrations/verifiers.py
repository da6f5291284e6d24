"""verifiers v1 (prime-rl): compoenv tasks as a taskset, an env playing the user, a rubric reward.

    uv run vf-eval compoenv-env --env.taskset.tasks tasks.jsonl -m MODEL   # after
    pip install -e rl/verifiers/compoenv_env        # the environment package prime-rl loads

Each ``CompoenvTask`` carries one compoenv Task. ``CompoenvEnv.run`` opens the model's
interaction and steps a ``CompoWorldEnv`` host-side, the way v1's own TextArena and OpenEnv
tasksets play the user: the system prompt lists the task's tools in the Hermes convention, each
reply's tool calls run in the env and their ``<tool_response>`` envelopes come back as the next
user turn, and a reply without a tool call is the final answer. Tools are not served as v1
``Toolset`` MCP servers: those run in another process per rollout, so the episode's state (and
the rubric that reads it) would live outside the env that scores it.

The ``rubric`` reward is a pure function of the trace: it replays the trace's assistant
messages in a fresh ``CompoWorldEnv`` (composed tasks are deterministic, world-model answers
recorded) and returns compoenv's rubric score; the pass vector goes to ``trace.info``. With
``--env.group-size G`` one episode holds G attempts at its task, and ``finalize`` gives each
the completion-focused group reward (``--env.reward completion_focused`` makes it the trace's
reward, the rubric score then kept at weight 0).
"""

from __future__ import annotations

import asyncio
from typing import Any, Iterator, Literal

try:
    import verifiers.v1 as vf
except ImportError as exc:  # an optional extra: name it
    raise ImportError("compoenv.integrations.verifiers needs verifiers 0.4 (verifiers.v1): "
                      "pip install 'compoenv[verifiers]'") from exc
from pydantic import Field

from compoenv.env import CompoWorldEnv
from compoenv.integrations.episodes import GroupReward, criterion_passes
from compoenv.prompts import tools_block
from compoenv.reward import kind_pass_rates
from compoenv.task import Task, load_tasks

__all__ = ["CompoenvData", "CompoenvTask", "CompoenvTasksetConfig", "CompoenvTaskset",
           "CompoenvEnvConfig", "CompoenvEnv", "replay_score", "load_environment",
           "TASKSET_ID"]

TASKSET_ID = "compoenv-env"  # the installable package of rl/verifiers/compoenv_env
INFO_KEY = "compoenv"  # trace.info[INFO_KEY]: the episode's rubric results


class CompoenvData(vf.TaskData):
    """One compoenv task on the wire: the Task JSON and how the episode is played."""

    task: dict[str, Any]
    mode: Literal["direct", "gateway"] = "direct"
    max_steps: int = 30


def _env(data: CompoenvData) -> CompoWorldEnv:
    return CompoWorldEnv(mode=data.mode, max_steps=data.max_steps)


def _action(message: vf.AssistantMessage) -> str | dict[str, Any]:
    """A reply as env.step takes it: its text, or the OpenAI message when it holds tool calls."""
    if message.tool_calls:
        return message.model_dump(mode="json", exclude_none=True)
    return message.content or ""


def replay_score(data: CompoenvData, replies: list[vf.AssistantMessage]) -> dict[str, Any]:
    """Replay an episode's replies in a fresh env of its task and score it.

    Returns:
        ``rubric_score``, ``passed``, ``net_score``, ``passes`` (one bool per criterion, in
        rubric order), ``steps`` and ``finish`` (``stop``, ``max_steps`` or ``unfinished``: the
        replies ran out before a final answer, which the rubric scores with an empty reply).
    """
    task = Task.coerce(data.task)
    env = _env(data)
    _, info = env.reset(options={"task": task})
    done = finish = False
    for message in replies:
        _, _, done, finish, info = env.step(_action(message))
        if done or finish:
            break
    if not (done or finish):
        _, _, _, _, info = env.step("")  # no final answer was given: score what was done
    return {"rubric_score": info["rubric_score"], "passed": info["passed"],
            "net_score": info["net_score"],
            "passes": criterion_passes(task, info["rubric"]),
            "kinds": [c.kind for c in task.rubric], "steps": info["step"],
            "finish": "stop" if done else "max_steps" if finish else "unfinished"}


class CompoenvTask(vf.Task[CompoenvData]):
    """A compoenv task: its rubric scores the replayed trace."""

    @property
    def key(self) -> str:
        return f"{self.data.task['id']}:{self.data.mode}"

    @vf.reward
    async def rubric(self, trace: vf.Trace) -> float:
        """compoenv's rubric score of the episode (weighted share of criteria passed)."""
        replies = [m for m in trace.messages if isinstance(m, vf.AssistantMessage)]
        result = await asyncio.to_thread(replay_score, self.data, replies)
        trace.info[INFO_KEY] = result
        trace.record_metric("passed", float(result["passed"]))
        trace.record_metric("net_score", result["net_score"])
        for name, value in kind_pass_rates([(result["kinds"], result["passes"])]).items():
            trace.record_metric(name, value)
        return float(result["rubric_score"])


class CompoenvTasksetConfig(vf.TasksetConfig):
    """Where the tasks come from: a task file, else ``num_tasks`` composed from ``seed``."""

    tasks: str | None = None
    """A compoenv task file (JSONL, as ``compoenv generate`` writes)."""
    num_tasks: int = Field(16, ge=1)
    """Tasks to compose when no file is given."""
    seed: int = 0
    min_hops: int = Field(2, ge=1)
    max_hops: int = Field(4, ge=1)
    mode: Literal["direct", "gateway"] = "direct"
    """direct: the task's tools are listed; gateway: four meta-tools over its services."""
    max_steps: int = Field(30, ge=1)


class CompoenvTaskset(vf.Taskset[CompoenvTask, CompoenvTasksetConfig]):
    """compoenv tasks, each a prompt (system: who the agent acts for, its tools) and a rubric."""

    def load(self) -> Iterator[CompoenvTask]:
        config = self.config
        env = CompoWorldEnv(mode=config.mode, max_steps=config.max_steps)
        for idx, task in enumerate(_tasks(config)):
            _, info = env.reset(options={"task": task})
            system = f"{info['messages'][0]['content']}\n\n{tools_block(info['tools'])}"
            yield CompoenvTask(CompoenvData(
                idx=idx, id=task.id, name=f"compoenv/{task.id}", prompt=task.instruction,
                system_prompt=system, task=task.model_dump(mode="json"), mode=config.mode,
                max_steps=config.max_steps), config.task)


def _tasks(config: CompoenvTasksetConfig) -> list[Task]:
    if config.tasks:
        return load_tasks(config.tasks)
    from compoenv.compose import Composer, ComposerConfig

    composer = Composer(config=ComposerConfig(min_hops=config.min_hops,
                                              max_hops=config.max_hops))
    return list(composer.generate(config.num_tasks, seed=config.seed))


class CompoenvEnvConfig(vf.EnvConfig):
    """The one ``agent`` seat, and the group an episode holds."""

    agent: vf.AgentConfig = vf.AgentConfig()
    group_size: int = Field(1, ge=1)
    """Attempts at the task in one episode, rewarded against each other in ``finalize``."""
    reward: Literal["rubric", "completion_focused"] = "rubric"
    """The trace's reward: the rubric score, or the completion-focused group reward."""
    alpha: float = 1.0
    eps: float = 0.05
    lam: float = 0.5


class CompoenvEnv(vf.Env[CompoenvEnvConfig]):
    """Plays the user of each attempt: steps the CompoWorldEnv with the model's replies."""

    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        await asyncio.gather(*(self._attempt(task, agents) for _ in range(self.config.group_size)))

    async def _attempt(self, task: vf.Task, agents: vf.Agents) -> None:
        data = task.data
        env = _env(data)
        await asyncio.to_thread(env.reset, options={"task": Task.coerce(data.task)})
        async with agents.agent.interaction(task) as interaction:
            segment = await interaction.turn()
            while not segment.terminated:
                replies = [m for m in segment.messages if isinstance(m, vf.AssistantMessage)]
                if not replies:
                    interaction.trace.stop("empty_reply")
                    break
                obs, _, done, truncated, _ = await asyncio.to_thread(env.step,
                                                                     _action(replies[-1]))
                if done or truncated:
                    break  # the final answer (or the step limit): the rubric scores the trace
                segment = await interaction.turn(obs)

    async def finalize(self, task: vf.Task, episode: vf.Episode) -> None:
        """With a group, the completion-focused reward of each attempt against the others."""
        traces = [t for t in episode.traces if INFO_KEY in t.info]
        if len(traces) < 2:
            return
        config = self.config
        rewards = GroupReward(config.alpha, config.eps, config.lam).rewards(
            Task.coerce(task.data.task), [t.info[INFO_KEY]["passes"] for t in traces])
        for trace, value in zip(traces, rewards, strict=True):
            trace.record_metric("completion_focused", value)
            if config.reward == "completion_focused":
                trace.record_reward("rubric", trace.rewards["rubric"].score, 0.0)
                trace.record_reward("completion_focused", value, 1.0)


def load_environment(**kwargs: Any) -> vf.Env:
    """The v1 env of compoenv tasks, as ``vf.load_environment`` builds it.

    Args:
        **kwargs: ``CompoenvTasksetConfig`` fields (``tasks``, ``num_tasks``, ``seed``,
            ``mode``, ...), plus ``env`` for ``CompoenvEnvConfig`` fields (``group_size``,
            ``reward``, the ``agent`` seat).
    """
    env_fields = dict(kwargs.pop("env", None) or {})
    config = CompoenvEnvConfig(taskset=CompoenvTasksetConfig(id=TASKSET_ID, **kwargs),
                               **env_fields)
    return vf.load_environment(config)
