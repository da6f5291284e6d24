"""SkyRL: compoenv tasks as a skyrl-gym text env, dataset rows, and the group-reward generator hook.

    import compoenv.integrations.skyrl   # registers the env class "compoenv" with skyrl_gym

    rows = dataset_rows(load_tasks("tasks.jsonl"))      # prompt, env_class, reward_spec, ...
    write_dataset(rows, "train.parquet")                 # data.train_data=['train.parquet']

SkyRL's generator makes one env per trajectory with ``skyrl_gym.make(env_class,
env_config=..., extras=row)``, where ``extras`` holds the row's other columns plus the
generator's ``max_turns``; it calls ``init(prompt)`` and then ``step(text)`` once per
assistant turn, both in a thread pool, until ``done``. Each env here owns its CompoWorldEnv
and shares nothing mutable, so trajectories run side by side. The task is the row's
``reward_spec.ground_truth`` (the task JSON: its rubric is the ground truth) and the mode the
row's ``extra_info.mode`` (the mode its tool listing was written in). Tool results come back
as one user message of ``<tool_response>`` blocks (the Hermes/Qwen rendering; pass
``observation_role="tool"`` for one tool message per call). The final reply ends the episode;
its reward is the rubric score (``reward="binary"``: 1 when every required criterion passes).

``CompletionFocusedGenerator`` is a mixin for SkyRL's ``SkyRLGymGenerator``: after a batch
is generated it replaces each compoenv trajectory's reward with
``compoenv.reward.completion_focused`` over the trajectories of its prompt
(``TrajectoryID.instance_id``), reading each one's criterion passes from its env metrics.
"""

from __future__ import annotations

import json
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any, Mapping, Sequence

try:
    import skyrl_gym
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError("compoenv.integrations.skyrl needs skyrl-gym: pip install "
                      "'compoenv[skyrl]' (or pip install skyrl-gym)") from exc

from compoenv.env import MODES, CompoWorldEnv, steps_for
from compoenv.integrations.openrlhf_data import with_tool_listing
from compoenv.integrations.episodes import criterion_passes
from compoenv.reward import completion_focused, kind_pass_rates
from compoenv.task import Task

__all__ = ["ENV_CLASS", "CompoWorldTextEnv", "register_env", "dataset_row", "dataset_rows",
           "write_dataset", "apply_group_reward", "CompletionFocusedGenerator"]

ENV_CLASS = "compoenv"
_OPTIONS = ("mode", "max_turns", "reward", "world_model", "library", "observation_role")
_ROLES = ("user", "tool")


def _option(key: str, options: Mapping[str, Any], env_config: Any) -> Any:
    """A setting: SkyRL's ``env_config`` (a dict or DictConfig) over registration kwargs."""
    if env_config is not None and key in env_config:
        return env_config[key]
    return options.get(key)


class CompoWorldTextEnv(BaseTextEnv):
    """One compoenv episode as a SkyRL text env (see the module docstring).

    Args:
        env_config: SkyRL's per-env-class config; may set any of ``mode``, ``max_turns``,
            ``reward``, ``world_model``, ``library``, ``observation_role``.
        extras: The dataset row's columns: ``reward_spec`` (``ground_truth``: the task JSON),
            ``extra_info`` (``mode``) and the generator's ``max_turns``.
        **options: Defaults for the same settings, given to ``register_env``.

    Raises:
        ValueError: The row holds no task, or settings contradict each other.
    """

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None,
                 **options: Any) -> None:
        super().__init__()
        unknown = sorted(set(options) - set(_OPTIONS))
        if unknown:
            raise TypeError(f"unknown option(s) {unknown}; expected some of {list(_OPTIONS)}")
        extras = extras or {}
        spec = extras.get("reward_spec") or {}
        truth = spec.get("ground_truth") if isinstance(spec, Mapping) else None
        if not truth:
            raise ValueError("the row has no task: expected reward_spec.ground_truth to hold the "
                             "task JSON (rows from compoenv.integrations.skyrl.dataset_rows)")
        self.task = Task.coerce(json.loads(truth) if isinstance(truth, str) else dict(truth))
        info = extras.get("extra_info") or {}
        row_mode = info.get("mode") if isinstance(info, Mapping) else None
        mode = _option("mode", options, env_config)
        if row_mode and mode and row_mode != mode:
            raise ValueError(f"the row's tool listing is for mode {row_mode!r} but the env is set "
                             f"to {mode!r}: export the rows with mode={mode!r} or drop the setting")
        self.mode = row_mode or mode or "direct"
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        self.observation_role = _option("observation_role", options, env_config) or "user"
        if self.observation_role not in _ROLES:
            raise ValueError(f"observation_role must be one of {_ROLES}, "
                             f"got {self.observation_role!r}")
        turns = extras.get("max_turns") or _option("max_turns", options, env_config)
        self.max_turns = (int(turns) if turns
                          else steps_for([self.task], gateway=self.mode == "gateway"))
        if self.max_turns <= len(self.task.solution):
            warnings.warn(f"max_turns={self.max_turns} leaves no turn for the final reply after "
                          f"the task's {len(self.task.solution)} calls (one a turn); raise "
                          "SkyRL's generator.max_turns", RuntimeWarning, stacklevel=2)
        self.env = CompoWorldEnv(mode=self.mode, max_steps=self.max_turns,
                                 reward=_option("reward", options, env_config) or "rubric",
                                 world_model=_option("world_model", options, env_config),
                                 library=_option("library", options, env_config))
        self.tools: list[dict[str, Any]] = []
        self.info: dict[str, Any] = {}
        self.finished = False  # the model ended the episode (a final reply or the turn limit)
        self.tool_calls = self.tool_errors = 0

    def init(self, prompt: Sequence[Mapping[str, Any]] | None = None
             ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Start the episode; returns the prompt with the tool listing in its system message
        (the env's own system prompt and request when ``prompt`` is empty) and metadata."""
        _, self.info = self.env.reset(options={"task": self.task})
        self.tools = list(self.info["tools"])
        opening = [dict(m) for m in prompt or ()] or [dict(m) for m in self.info["messages"][:2]]
        return with_tool_listing(opening, self.tools), {
            "task_id": self.task.id, "mode": self.mode, "tools": self.tools}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Run the tool calls in ``action``; a reply without one is final and is scored."""
        if self.env.session is None:
            raise RuntimeError("call init(prompt) before step()")
        self.turns += 1
        before = len(self.env.messages)
        obs, reward, terminated, truncated, self.info = self.env.step(action)
        results = self.env.messages[before + 1:]
        self.tool_calls += len(results)
        self.tool_errors += sum(not str(m["content"]).startswith('{"success": true')
                                for m in results)
        done = bool(terminated or truncated)
        self.finished = self.finished or done
        metadata: dict[str, Any] = {"task_id": self.task.id, "tool_calls": len(results)}
        if done:
            metadata.update(rubric_score=self.info["rubric_score"], passed=self.info["passed"],
                            net_score=self.info["net_score"], truncated=bool(truncated))
            observations: list[dict[str, Any]] = []
        elif self.observation_role == "tool":
            observations = [{"role": "tool", "content": m["content"]} for m in results]
        else:
            observations = [{"role": "user", "content": obs}]
        return BaseTextEnvStepOutput(observations=observations, reward=float(reward), done=done,
                                     metadata=metadata)

    def get_metrics(self) -> dict[str, Any]:
        """The episode's scores (an episode cut short by SkyRL's length limit is scored as it
        stands) and, for the group hook, its criterion ``passes``, ``weights``, ``required``."""
        if self.env.session is None:
            return {}
        if "rubric" not in self.info:  # the generator stopped early: an empty final reply
            self.info = self.env.step("")[4]
        passes = criterion_passes(self.task, self.info["rubric"])
        kinds = [c.kind for c in self.task.rubric]
        return {"rubric_score": float(self.info["rubric_score"]),
                "passed": float(self.info["passed"]),
                "net_score": float(self.info["net_score"]),
                "criteria_pass_rate": sum(passes) / max(len(passes), 1),
                "finished": float(self.finished), "turns": float(self.turns),
                "tool_calls": float(self.tool_calls), "tool_errors": float(self.tool_errors),
                **kind_pass_rates([(kinds, passes)]),
                "passes": passes, "weights": [c.weight for c in self.task.rubric],
                "required": [c.required for c in self.task.rubric], "kinds": kinds,
                "task_id": self.task.id}

    @staticmethod
    def aggregate_metrics(metrics: list[dict[str, Any]]) -> dict[str, Any]:
        """The batch's metrics as SkyRL logs them: the mean of each number, except the
        per-kind criterion pass rates, which pool every episode's criteria of the kind
        (``criteria/<kind>_pass_rate``; the pass lists themselves are not numbers)."""
        rows = [m for m in metrics if m]
        numbers: dict[str, list[float]] = defaultdict(list)
        for row in rows:
            for key, value in row.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool) \
                        and not key.startswith("criteria/"):
                    numbers[key].append(float(value))
        out: dict[str, Any] = {key: sum(v) / len(v) for key, v in numbers.items()}
        out.update(kind_pass_rates((row["kinds"], row["passes"]) for row in rows
                                   if "kinds" in row and "passes" in row))
        return out


def register_env(name: str = ENV_CLASS, **options: Any) -> None:
    """Register ``CompoWorldTextEnv`` with skyrl_gym under ``name`` (rows' ``env_class``);
    ``options`` are defaults for its settings. Registering a taken name is an error, except
    the import-time registration of ``"compoenv"`` itself."""
    skyrl_gym.register(id=name, entry_point=f"{__name__}:CompoWorldTextEnv", kwargs=options)


def dataset_row(task: Task | Mapping[str, Any] | str, mode: str = "direct",
                env_class: str = ENV_CLASS, env: CompoWorldEnv | None = None) -> dict[str, Any]:
    """One SkyRL dataset row for a task.

    Returns:
        ``data_source``, ``prompt`` (system prompt with the tool listing, then the request),
        ``env_class``, ``reward_spec`` (``method: rule``, ``ground_truth``: the task JSON) and
        ``extra_info`` (``task_id``, ``mode``, ``domain``, ``hops``, ``services``).
    """
    task = Task.coerce(task if isinstance(task, (Task, str)) else dict(task))
    env = env or CompoWorldEnv(mode=mode)
    _, info = env.reset(options={"task": task})
    prompt = with_tool_listing([dict(m) for m in info["messages"][:2]], info["tools"])
    return {"data_source": "compoenv", "prompt": prompt, "env_class": env_class,
            "reward_spec": {"method": "rule", "ground_truth": task.to_json()},
            "extra_info": {"task_id": task.id, "mode": mode, "domain": task.domain,
                           "hops": task.hops, "services": list(task.services)}}


def dataset_rows(tasks: Sequence[Task | Mapping[str, Any] | str], mode: str = "direct",
                 env_class: str = ENV_CLASS) -> list[dict[str, Any]]:
    """``dataset_row`` for each task, in order (one env reused)."""
    env = CompoWorldEnv(mode=mode)
    return [dataset_row(t, mode, env_class, env) for t in tasks]


def write_dataset(rows: Sequence[Mapping[str, Any]], path: str | Path) -> Path:
    """Write rows where SkyRL's ``data.train_data`` reads them: ``.parquet`` (needs the
    ``datasets`` package), ``.jsonl`` or ``.json`` (one row a line)."""
    path = Path(path)
    if path.suffix not in (".parquet", ".jsonl", ".json"):
        raise ValueError(f"SkyRL reads .parquet, .jsonl or .json files, got {path.name!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        import datasets

        datasets.Dataset.from_list([dict(r) for r in rows]).to_parquet(str(path))
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _instance(trajectory_id: Any) -> str:
    """The prompt a trajectory belongs to: a TrajectoryID's ``instance_id``, or the id."""
    return str(getattr(trajectory_id, "instance_id", trajectory_id))


def _placed(old: float | list[float], value: float, loss_mask: Sequence[int]) -> Any:
    """``value`` in the shape of the generator's reward: a float, or token-level rewards with
    it where the episode's reward was (the last generated token when that was 0)."""
    if not isinstance(old, list):
        return value
    at = max((i for i, r in enumerate(old) if r), default=None)
    if at is None:
        at = max((i for i, m in enumerate(loss_mask) if m), default=len(old) - 1)
    return [value if i == at else 0.0 for i in range(len(old))]


def apply_group_reward(output: Mapping[str, Any], trajectory_ids: Sequence[Any] | None = None,
                       *, alpha: float = 1.0, eps: float = 0.05, lam: float = 0.5,
                       zero_on_non_stop: bool = False) -> dict[str, Any]:
    """A SkyRL ``GeneratorOutput`` with each compoenv trajectory's reward replaced by
    ``completion_focused`` over its group (the trajectories of one prompt).

    Rows without compoenv metrics (other env classes) keep their rewards; with step-wise
    trajectories only each trajectory's last step is rewarded, as SkyRL does.

    Args:
        output: The generator's output; ``env_metrics`` must hold each row's env metrics.
        trajectory_ids: The batch's ``TrajectoryID``s (or group keys), used when the output
            carries none (SkyRL sets them in the output for step-wise trajectories only).
        alpha, eps, lam: ``completion_focused``'s parameters.
        zero_on_non_stop: Keep 0 for rows whose stop reason is not ``"stop"`` (SkyRL's
            ``generator.zero_reward_on_non_stop``).
    """
    ids = output.get("trajectory_ids") or trajectory_ids
    metrics = output.get("env_metrics")
    if ids is None or metrics is None:
        raise ValueError("the group reward needs the batch's trajectory_ids and the output's "
                         "env_metrics (SkyRL's SkyRLGymGenerator gives both)")
    rewards = list(output["rewards"])
    if not len(ids) == len(metrics) == len(rewards):
        raise ValueError(f"{len(rewards)} rewards, {len(metrics)} env_metrics and {len(ids)} "
                         "trajectory ids: they must match row for row")
    last = output.get("is_last_step") or [True] * len(rewards)
    groups: dict[str, list[int]] = defaultdict(list)
    for i, (key, row) in enumerate(zip(ids, metrics)):
        if last[i] and isinstance(row, Mapping) and "passes" in row:
            groups[_instance(key)].append(i)
    stops = output.get("stop_reasons") or ["stop"] * len(rewards)
    masks = output.get("loss_masks") or [[]] * len(rewards)
    for members in groups.values():
        first = metrics[members[0]]
        values = completion_focused([metrics[i]["passes"] for i in members],
                                    weights=first["weights"], required=first["required"],
                                    alpha=alpha, eps=eps, lam=lam, kinds=first.get("kinds"))
        for i, value in zip(members, values, strict=True):
            value = 0.0 if zero_on_non_stop and stops[i] != "stop" else value
            rewards[i] = _placed(rewards[i], value, masks[i])
    return {**output, "rewards": rewards}


class CompletionFocusedGenerator:
    """Mixin for SkyRL's generator: ``class Generator(CompletionFocusedGenerator,
    SkyRLGymGenerator)`` applies ``apply_group_reward`` to every generated batch (see
    rl/skyrl/main_compoenv.py). The class attributes set completion_focused's parameters;
    ``generator_cfg.zero_reward_on_non_stop`` is honoured."""

    reward_alpha: float = 1.0
    reward_eps: float = 0.05
    reward_lam: float = 0.5

    async def generate(self, input_batch: Mapping[str, Any], *args: Any,
                       **kwargs: Any) -> dict[str, Any]:
        output = await super().generate(input_batch, *args, **kwargs)  # type: ignore[misc]
        config = getattr(self, "generator_cfg", None)
        return apply_group_reward(
            output, input_batch.get("trajectory_ids"), alpha=self.reward_alpha,
            eps=self.reward_eps, lam=self.reward_lam,
            zero_on_non_stop=bool(getattr(config, "zero_reward_on_non_stop", False)))


if ENV_CLASS not in skyrl_gym.registry:  # as skyrl-gym's own envs: registered on import
    register_env()
