"""GEM (and ROLL through it): compoenv tasks as the GEM env ``compoenv/CompoWorld-v0``.

    import gem
    import compoenv.integrations.gem          # registers compoenv/CompoWorld-v0

    env = gem.make("compoenv/CompoWorld-v0", tasks="tasks.jsonl")
    obs, info = env.reset(seed=7)                   # seed 7 plays task 7 % len(tasks)
    obs, reward, terminated, truncated, info = env.step(action_text)
    envs = gem.make_vec(["compoenv/CompoWorld-v0"] * 8, tasks="tasks.jsonl")

The seed picks the task: ``reset(seed=s)`` plays task ``s % len(tasks)`` of a task file or
list, or, without tasks, the task composed from seed ``s``; so a ROLL group, whose envs are
all reset with the group's seed, plays one task, and ``make_vec``'s ``reset(seed=s)`` (seeds
s, s+1, ...) plays consecutive tasks. ``reset()`` without a seed draws one from the env's own
generator (seeded by the ``seed`` argument, which ``make_vec`` and ROLL set). Observations are
text: the system prompt, tool listing and request at reset, ``<tool_response>`` blocks after
each action. A reply without a tool call ends the episode with the rubric score as reward
(``reward="binary"``: 1 when every required criterion passes); ``max_turns`` truncates.
Malformed actions come back as error envelopes, never as exceptions.

``info`` stays small (GEM's vector envs deep-copy it each step, and ROLL merges it into its
history records): ``task_id``, ``seed`` and ``step``; at the end also ``rubric_score``, ``passed``,
``net_score`` and the criterion ``passes`` and ``required`` flags. A vector env's autoreset
returns the next episode's reset info in place of the final one, so the reset after an ended
episode carries its final info as ``prev_episode`` (as GEM's episode tracking keeps
``prev_ep_*`` counts).

ROLL imports env managers by dotted path, so ``env_manager_cls:
compoenv.integrations.gem.TrajEnvManager`` registers this env in every ROLL env worker and
gives ROLL's own ``TrajEnvManager`` (see rl/roll/compoenv_grpo.yaml).
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import numpy as np

try:
    import gem
    from gem.envs.registration import ENV_REGISTRY
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError("compoenv.integrations.gem needs GEM: pip install 'compoenv[gem]' "
                      "(or pip install gem-llm)") from exc

from compoenv.env import CompoWorldEnv, steps_for
from compoenv.registry import Registry
from compoenv.task import Task
from compoenv.task_check import load_checked

__all__ = ["ENV_ID", "CompoWorldGemEnv", "register_env"]

ENV_ID = "compoenv/CompoWorld-v0"
_SEEDS = 2**31 - 1


@lru_cache(maxsize=8)
def _task_file(path: str, stamp: float, library: tuple[str, ...]) -> tuple[Task, ...]:
    """A task file's checked tasks, read once per process (ROLL makes hundreds of envs)."""
    return tuple(load_checked(path, Registry.default(library)))


def _tasks(source: Any, library: tuple[str, ...]) -> tuple[Task, ...] | None:
    if source is None:
        return None
    if isinstance(source, (str, Path)):
        path = os.path.abspath(os.path.expanduser(str(source)))
        if not os.path.isfile(path):
            raise FileNotFoundError(f"tasks: no task file at {path} (give a JSONL task file "
                                    "from `compoenv generate`, or a list of tasks)")
        return _task_file(path, os.path.getmtime(path), library)
    return tuple(load_checked(list(source), Registry.default(library)))


class CompoWorldGemEnv(gem.Env):
    """A compoenv task per episode, chosen by the reset seed (see the module docstring).

    Args:
        tasks: A JSONL task file or a list of tasks (Task, dict or JSON); default: compose a
            verified task from each seed (slow: seconds a task).
        seed: Seeds the generator that draws a seed when ``reset`` gets none.
        mode: ``direct`` (the task's tools) or ``gateway`` (four meta-tools).
        max_turns: Actions per episode before truncation (``max_steps`` is taken too);
            default: the longest solution of ``tasks`` plus four, at least 20 (in gateway
            mode the discovery calls count too: ``compoenv.env.steps_for``).
        reward: ``rubric`` (the weighted rubric score) or ``binary``.
        library: Library folders whose services join the built-in ones.
        **env_kwargs: Other ``CompoWorldEnv`` arguments (``world_model``, ``hops``, ...).
    """

    def __init__(self, tasks: str | Path | Sequence[Any] | None = None, *,
                 seed: int | None = None, mode: str = "direct", max_turns: int | None = None,
                 reward: str = "rubric", library: str | Sequence[str] | None = None,
                 **env_kwargs: Any) -> None:
        super().__init__()
        libraries = (library,) if isinstance(library, str) else tuple(library or ())
        self.tasks = _tasks(tasks, libraries)
        if self.tasks is not None and not self.tasks:
            raise ValueError(f"tasks is empty ({tasks}): give at least one task, or leave it "
                             "out to compose a task from each seed")
        alias = env_kwargs.pop("max_steps", None)  # CompoWorldEnv's word for it
        max_turns = max_turns or alias
        if max_turns is None and self.tasks:
            max_turns = steps_for(self.tasks, gateway=mode == "gateway")
        self.env = CompoWorldEnv(mode=mode, max_steps=max_turns, reward=reward,
                                 library=list(libraries) or None, **env_kwargs)
        self._draws = np.random.default_rng(seed)
        self.seed: int | None = None
        self.tools: list[dict[str, Any]] = []
        self._ended: dict[str, Any] | None = None  # the last episode's final info

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """Start the episode of ``seed``'s task (a drawn seed when None).

        Returns:
            The opening observation and ``{"task_id", "seed", "step"}``, with
            ``prev_episode`` (the final info of the episode just ended) when one ended.
        """
        # GEM's Env.reset seeds the global random modules; the task depends on the seed alone
        # and vector envs step in threads, so the process-wide generators are left alone.
        if seed is None:
            seed = int(self._draws.integers(_SEEDS))
        elif isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        self.seed = int(seed)
        options = None if self.tasks is None else {"task": self.tasks[self.seed % len(self.tasks)]}
        obs, info = self.env.reset(seed=self.seed, options=options)
        self.tools = list(info["tools"])
        out = self._info(info)
        if self._ended is not None:  # a vector env's autoreset replaces the final info
            out["prev_episode"], self._ended = self._ended, None
        return obs, out

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Run the tool calls in ``action``; a reply without one is final and is scored."""
        if self.env.session is None:
            raise RuntimeError("call reset() before step()")
        obs, reward, terminated, truncated, info = self.env.step(action)
        out = self._info(info)
        if "passes" in out:
            self._ended = dict(out)
        return obs, float(reward), bool(terminated), bool(truncated), out

    def _info(self, info: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"task_id": info["task"]["id"], "seed": self.seed,
                               "step": info["step"]}
        if "rubric" in info:
            out.update(rubric_score=info["rubric_score"], passed=info["passed"],
                       net_score=info["net_score"],
                       passes=[bool(c["passed"]) for c in info["rubric"]],
                       required=[bool(c["required"]) for c in info["rubric"]])
        return out


def register_env(env_id: str = ENV_ID, **defaults: Any) -> None:
    """Register ``CompoWorldGemEnv`` with GEM under ``env_id``; ``defaults`` are arguments
    ``gem.make`` passes unless it is given others (GEM refuses a taken id)."""
    gem.register(env_id, entry_point=f"{__name__}:CompoWorldGemEnv", **defaults)


def __getattr__(name: str) -> Any:
    """``TrajEnvManager``: ROLL's own, for ``env_manager_cls`` (importing this module for it
    registers the env in ROLL's env workers)."""
    if name != "TrajEnvManager":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        from roll.pipeline.agentic.env_manager.traj_env_manager import TrajEnvManager
    except ImportError as exc:
        raise ImportError("compoenv.integrations.gem.TrajEnvManager is ROLL's TrajEnvManager; "
                          "install ROLL (the alibaba/ROLL repository) in this environment") from exc
    return TrajEnvManager


if ENV_ID not in ENV_REGISTRY:  # as GEM's own envs: registered on import
    register_env()
