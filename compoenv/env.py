"""CompoWorldEnv: a composed task as a Gymnasium environment with text in and text out."""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import gymnasium as gym

from compoenv._cache import ByIdentity, ViewCache, fresh_view, frozen, view_plan
from compoenv.actions import MAX_ACTION_CHARS, CallError, parse_action, to_openai_tool_calls
from compoenv.compose.config import ComposerConfig
from compoenv.prompts import reset_observation, system_prompt
from compoenv.registry import Registry
from compoenv.reward import Outcome, RubricResult, score_rubric
from compoenv.service import ToolResult, did_you_mean, error
from compoenv.session import Session, render_result
from compoenv.spaces import MAX_OBSERVATION_CHARS, SAFE_OUTPUT_CHARS, TextSpace, bounded, \
    tool_output_limit
from compoenv.task import Task
from compoenv.task_check import load_checked, shared_tasks
from compoenv.world import World
from compoenv.worldmodel.offline import OfflineWorldModel
from compoenv.worldmodel.simulator import Simulator

__all__ = ["CompoWorldEnv", "TextSpace", "MODES", "DEFAULT_MAX_STEPS", "steps_for"]

MODES = ("direct", "gateway")
DEFAULT_MAX_STEPS = 20  # the fewest actions an episode gets when max_steps is not given
STEP_SLACK = 4  # beyond one action per solution call: the final answer and a few retries
SCENARIO_MIN_STEPS = 48  # composed scenario tasks are long


def steps_for(tasks: Sequence[Task], floor: int = DEFAULT_MAX_STEPS,
              gateway: bool = False) -> int:
    """Enough actions for the longest solution of ``tasks`` (one call an action, the final
    answer and a little slack), and never fewer than ``floor``: the default ``max_steps``.
    With ``gateway``, a solution's calls include the discovery before them (list_services,
    list_tools of each service it uses, describe_tool of each tool: ``oracle_plan``)."""
    return max(floor, _longest(tasks, gateway) + STEP_SLACK)


_GATEWAY_LONGEST: dict[int, tuple[Sequence[Task], int]] = {}  # a shared task tuple's, by id
_GATEWAY_LOCK = threading.Lock()


def _longest(tasks: Sequence[Task], gateway: bool) -> int:
    """The most calls a task of ``tasks`` takes, discovery included with ``gateway``."""
    if not gateway:
        return max((len(t.solution) for t in tasks), default=0)
    known = _GATEWAY_LONGEST.get(id(tasks))
    if known is not None and known[0] is tasks:  # a task file's tuple, shared by every env
        return known[1]
    from compoenv.agents.oracle import oracle_plan

    longest = max((len(oracle_plan(t, True, True)) for t in tasks), default=0)
    if isinstance(tasks, tuple) and len(tasks) > 1:
        with _GATEWAY_LOCK:
            if len(_GATEWAY_LONGEST) >= 8:
                _GATEWAY_LONGEST.pop(next(iter(_GATEWAY_LONGEST)))
            _GATEWAY_LONGEST[id(tasks)] = (tasks, longest)
    return longest


# shared instances: a Text space builds a character index
_OBSERVATIONS = TextSpace(MAX_OBSERVATION_CHARS)
_ACTIONS = TextSpace(MAX_ACTION_CHARS)


Listing = tuple[tuple[dict[str, Any], ...], list[dict[str, Any]]]


def _listing_of(specs: Any) -> Listing:
    """The tools in OpenAI format: as they are (to render) and a read-only copy (for info)."""
    plain = tuple(spec.to_openai() for spec in specs)
    return plain, frozen(plain)


def _reasoning(action: Any) -> str | None:
    """The ``reasoning_content`` of a message-shaped action, if it has text there (a hostile
    mapping that raises has none)."""
    if type(action) is str or not isinstance(action, Mapping):  # text: the common case
        return None
    try:
        reasoning = action.get("reasoning_content")
    except Exception:  # noqa: BLE001  any object may come in as an action
        return None
    return reasoning[:MAX_ACTION_CHARS] if isinstance(reasoning, str) else None


@lru_cache(maxsize=512)
def _listing(services: tuple[str, ...], registry: Registry) -> Listing:
    return _listing_of(registry.tools(services))  # every env on these services shares it


@lru_cache(maxsize=1)
def _gateway() -> tuple[Any, Listing, dict[str, Any]]:
    """The Gateway class, its listing and its schemas: imported (its meta-tools parsed) by the
    first gateway-mode reset."""
    from compoenv.gateway import GATEWAY_TOOLS, Gateway

    return (Gateway, _listing_of(GATEWAY_TOOLS.values()),
            {name: spec.parameters for name, spec in GATEWAY_TOOLS.items()})


@lru_cache(maxsize=256)
def _cached_config(**settings: Any) -> ComposerConfig:
    return ComposerConfig(**settings)


def _composer_config(**settings: Any) -> ComposerConfig:
    """The (frozen) composer settings of an env: one object per distinct settings, checked
    once, as every env of a server or a vector env has the same."""
    try:
        return _cached_config(**settings)
    except TypeError:  # an unhashable setting: checked (and refused) as it is
        return ComposerConfig(**settings)


# each shared listing's tool name -> parameters, made once per listing (as _listing's)
_SCHEMAS: ByIdentity[Any, dict[str, Any]] = ByIdentity(
    lambda listing: {t["function"]["name"]: t["function"]["parameters"] for t in listing}, 1024)

# a read-only view of each live task, made once (a Task is data: change a copy, not it)
_TASK_VIEWS = ViewCache(lambda task: _view_of(frozen(task.model_dump(mode="json"))))


def _view_of(view: Any) -> tuple[Any, tuple[Any, ...]]:
    return view, view_plan(view)  # where an info's fresh copy makes new dicts


class CompoWorldEnv(gym.Env[str, str]):
    """One composed multi-service task per episode; actions are tool-call text.

    Observations and actions are strings (``TextSpace``): an observation holds at most
    ``MAX_OBSERVATION_CHARS`` characters (each call's output is cut to fit, with a note), an
    action at most ``MAX_ACTION_CHARS`` (a longer one is answered with an error envelope), and
    an action runs at most ``MAX_CALLS_PER_ACTION`` calls with ``MAX_ARGUMENT_CHARS`` characters
    of arguments between them (calls over the budget are answered 422, not run). ``info``'s
    ``tools`` and ``task`` are read-only views (``copy.deepcopy`` gives a writable copy).

    Args:
        tasks: A JSONL path or a list of Tasks (or dicts), checked against ``registry`` when
            the env is built (a missing service or tool is a ``TaskFileError`` naming the line;
            a changed service version a ``StaleTaskWarning``); a file is parsed and checked
            once per process, every env on it sharing its tasks (a read-only tuple); default:
            compose a fresh verified task at each reset. ``reset()`` draws a task with the
            env's RNG;
            ``reset(options={"index": i})`` plays task ``i`` (modulo the count), and
            ``reset(options={"task": t})`` plays ``t``: a Task, a dict, a task JSON string, or
            the id of a loaded task.
        mode: ``"direct"`` lists the task's tools; ``"gateway"`` lists four meta-tools over the
            task's services plus its distractors.
        max_steps: Actions per episode before truncation. Default: each episode gets enough
            for its own task's solution, one call an action, plus the final answer and some
            slack (``steps_for``), and never fewer than 20 (48 for composed scenario tasks);
            in gateway mode the solution's calls count the discovery before them
            (list_services, then list_tools and describe_tool before first use); before the
            first reset ``max_steps`` covers the longest solution of ``tasks`` (composing:
            48, or 20 for free walks).
        reward: ``"rubric"`` (the reward is the rubric score) or ``"binary"`` (1.0 when every
            required criterion passes, else 0.0). When the episode ends, ``info`` holds
            ``rubric_score``, ``passed``, ``net_score`` and ``reward`` (docs/rubric.md).
        hops: Free walks only: solution length, an int or (min, max) (default (2, 4)). Given
            without ``scenarios``, tasks are free walks of ``hops`` calls.
        min_services: Fewest services a composed task touches.
        services: Restrict composed tasks to these services.
        motifs: Motifs composed tasks may use (default: all of compoenv.compose.MOTIFS).
        scenarios: Which tasks are composed at reset. The default composes what ``compoenv
            generate`` and ``demo`` compose by default: a job of any scenario (the declared ones
            and jobs derived for the services they leave out, ``compoenv scenarios``), told as
            a goal, up to 40 calls; with ``hops`` given, free walks instead. ``"all"`` or
            scenario names: jobs of those scenarios (``hops`` does not apply to them: giving
            both is an error). ``"none"``: free walks of ``hops`` calls, as ``compoenv
            generate --scenarios none`` composes, told as steps.
        distractors: Unrelated services composed tasks mount beside their own (default: 3 in
            gateway mode, 0 in direct mode, where only the task's services are listed).
        world_model: Who answers spec-only tools: "offline" (default), "endpoint",
            "transformers:<path>" or a WorldModel (also from COMPOENV_WORLD_MODEL). A task's
            recorded answers are replayed first, so every agent sees what the oracle saw.
        registry: Services to use (default: the built-in library and plugins).
        library: Library folders (or spec / module files) whose services join the default
            registry's, as with ``--library`` (a path or a list of them; not with
            ``registry``). Their Python modules are imported only when trusted:
            ``COMPOENV_TRUST_CODE=1``, or within ``compoenv.library.trusting_code()``.
        render_mode: ``"ansi"`` to render the transcript as text.
    """

    metadata = {"render_modes": ["ansi"]}
    _spec: gym.envs.registration.EnvSpec | None = None
    # whether info carries the task's view (a server that reads none of it turns it off)
    _info_task = True

    def __init__(self, tasks: str | Path | Sequence[Task | dict[str, Any]] | None = None, *,
                 mode: str = "direct", max_steps: int | None = None, reward: str = "rubric",
                 hops: int | tuple[int, int] | None = None, min_services: int = 2,
                 services: Sequence[str] | None = None, motifs: Sequence[str] | None = None,
                 distractors: int | None = None, world_model: Any = None,
                 scenarios: str | Sequence[str] | None = None,
                 registry: Registry | None = None,
                 library: str | Path | Sequence[str | Path] | None = None,
                 render_mode: str | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if reward not in ("rubric", "binary"):
            raise ValueError(f"reward must be 'rubric' or 'binary', got {reward!r}")
        if max_steps is not None and max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.mode, self.reward_kind = mode, reward
        # given: every episode gets it; not given: each episode gets enough for its own task
        self._fixed_steps = max_steps
        self.render_mode = render_mode
        self.world_model = world_model
        if registry is not None and library is not None:
            raise ValueError("give registry or library, not both (Registry.from_paths builds a "
                             "registry of libraries alone)")
        libraries = [library] if isinstance(library, (str, Path)) else list(library or ())
        self.registry = registry or Registry.default(libraries)
        # a task file is parsed and checked once per process, its tasks shared by every env
        self.tasks: Sequence[Task] | None = None
        self._by_id: dict[str, Task] | None = None
        longest = 0
        if isinstance(tasks, (str, Path)):
            shared = shared_tasks(tasks, self.registry)
            self.tasks, self._by_id, longest = shared.tasks, shared.by_id, shared.longest
        elif tasks is not None:
            self.tasks = load_checked(tasks, self.registry)
            longest = max((len(t.solution) for t in self.tasks), default=0)
        if self.tasks is not None and not self.tasks:
            where = f" ({tasks} has no tasks)" if isinstance(tasks, (str, Path)) else ""
            raise ValueError(f"tasks is empty{where}: give at least one task, or None to compose")
        if scenarios is None:  # the CLI's default, unless free-walk lengths are given
            scenarios = "none" if hops is not None else "all"
        elif hops is not None and not (isinstance(scenarios, str) and scenarios.strip() == "none"):
            raise ValueError(f"hops bounds free walks (scenarios='none'); scenario jobs "
                             f"(scenarios={scenarios!r}) are not bounded by it: give one or "
                             f"the other")
        every = isinstance(scenarios, str) and scenarios.strip() == "all"
        walks = isinstance(scenarios, str) and scenarios.strip() in ("", "none")
        # composed scenario tasks are long: their episodes get at least SCENARIO_MIN_STEPS
        self._min_steps = DEFAULT_MAX_STEPS if walks else SCENARIO_MIN_STEPS
        if mode == "gateway" and self.tasks is not None:  # room to discover the tools first
            longest = _longest(self.tasks, True)
        floor = DEFAULT_MAX_STEPS if self.tasks is not None else self._min_steps
        self.max_steps: int = (max_steps if max_steps is not None
                               else max(floor, longest + STEP_SLACK))
        low, high = (hops, hops) if isinstance(hops, int) else hops or (2, 4)
        if distractors is None:  # the gateway lists a few unrelated services by default
            distractors = 3 if mode == "gateway" else 0
        extra: dict[str, Any] = {"motifs": tuple(motifs)} if motifs is not None else {}
        # "all" is every scenario the services allow and, as on the CLI, the jobs derived for
        # the services they leave out; resolved when the first task is composed (an env that
        # plays given tasks never imports the scenarios), named scenarios now (a bad name
        # fails here)
        self._scenarios: Any = None
        if not walks and not every:
            from compoenv.scenarios import resolve

            self._scenarios = resolve(scenarios, services or self.registry.names())
        self._every = every
        self._config = _composer_config(min_hops=low, max_hops=high, min_services=min_services,
                                        services=tuple(services) if services else None,
                                        distractors=distractors, derive=every, **extra)
        self._composer: Any = None  # a Composer, built (and imported) at the first draw
        self.observation_space, self.action_space = _OBSERVATIONS, _ACTIONS
        self.task: Task | None = None
        self.session: Session | None = None
        self._gateway: Any = None  # the episode's Gateway, in gateway mode
        self.messages: list[dict[str, Any]] = []
        self._steps = 0
        self._call_ids: set[str] = set()  # the episode's tool-call ids, unique in its transcript
        self._done = False
        self._last_obs = ""
        self._result: RubricResult | None = None

    # -- episode ---------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        options = options or {}
        task = self._pick_task(options)
        world = World.get(task.seed, task.today())
        names = task.services + task.distractors if self.mode == "gateway" else task.services
        self.task = task
        if self._fixed_steps is None:  # the limit follows the task of this episode
            composed = self.tasks is None and options.get("task") is None
            floor = self._min_steps if composed else DEFAULT_MAX_STEPS
            self.max_steps = steps_for((task,), floor, self.mode == "gateway")
        # the episode's own world model access: its cache holds the agent's arguments
        self.session = Session([self.registry.get(n) for n in names], world,
                               self._simulator(task) or Simulator(OfflineWorldModel()))
        if self.mode == "gateway":
            gateway, (listing, self._tools), schemas = _gateway()
            self._gateway = gateway(self.session)
            self._schemas = dict(schemas)
        else:
            self._gateway = None
            listing, self._tools = _listing(tuple(task.services), self.registry)
            self._schemas = _SCHEMAS(listing)  # read only, as parse_action reads them
        system = system_prompt(world, self.mode)
        self.messages = [{"role": "system", "content": system},
                         {"role": "user", "content": task.instruction}]
        self._task_view, self._task_nested = _TASK_VIEWS(task)
        self._steps, self._done, self._result = 0, False, None
        self._call_ids = set()
        self._last_obs = bounded(reset_observation(system, listing, task.instruction))
        return self._last_obs, self._info()

    def _simulator(self, task: Task) -> Any:
        """The episode's world model: the task's recorded answers first, the solution's calls
        by the model the task was verified with, then the configured model (offline unless
        ``world_model`` or COMPOENV_WORLD_MODEL says otherwise)."""
        configured = self.world_model or os.environ.get("COMPOENV_WORLD_MODEL")
        if not task.recorded.get("answers") and configured in (None, "", "offline"):
            return None  # the common case, without importing the world-model configuration
        from compoenv.worldmodel.config import simulator_for_task

        return simulator_for_task(task, configured)

    @property
    def spec(self) -> gym.envs.registration.EnvSpec | None:
        """The env's spec (set by ``gym.make``), its ``max_episode_steps`` being ``max_steps``
        (the current episode's, when it follows the task)."""
        if self._spec is not None and self._spec.max_episode_steps != self.max_steps:
            self._spec = dataclasses.replace(self._spec, max_episode_steps=self.max_steps)
        return self._spec

    @spec.setter
    def spec(self, value: gym.envs.registration.EnvSpec | None) -> None:
        self._spec = value

    def _pick_task(self, options: dict[str, Any]) -> Task:
        chosen = options.get("task")
        if isinstance(chosen, str) and not chosen.lstrip().startswith("{"):
            return self._task_by_id(chosen)
        if chosen is not None:
            return Task.coerce(chosen)
        if self.tasks is not None:
            index = options.get("index")
            if index is None:
                index = int(self.np_random.integers(len(self.tasks)))
            return self.tasks[int(index) % len(self.tasks)]
        if self._composer is None:
            from compoenv.compose.generator import Composer

            config = self._config
            if self._every or self._scenarios:
                from compoenv.scenarios import resolve

                names = self._scenarios or resolve("all", config.services
                                                   or self.registry.names())
                config = dataclasses.replace(config, scenarios=names)
            self._composer = Composer(self.registry, config)
        return self._composer.sample(int(self.np_random.integers(2**31 - 1)))

    def _task_by_id(self, task_id: str) -> Task:
        if self.tasks is None:
            raise ValueError(f"options['task'] = {task_id!r} looks like a task id, but this env "
                             f"has no task set to look it up in: pass tasks=... when making the "
                             f"env, or give the task itself (a Task, a dict or its JSON)")
        if self._by_id is None:
            self._by_id = {t.id: t for t in self.tasks}
        found = self._by_id.get(task_id)
        if found is None:
            raise ValueError(did_you_mean(task_id, self._by_id, "task id")
                             + f" ({len(self.tasks)} tasks loaded)")
        return found

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.session is None:
            raise gym.error.ResetNeeded("Call reset() before step().")
        if self._done:
            self._last_obs = "The episode has ended; call reset() to start a new one."
            return self._last_obs, 0.0, True, False, self._info()
        self._steps += 1
        parsed = parse_action(action, self._schemas)
        message: dict[str, Any] = {"role": "assistant", "content": parsed.content}
        reasoning = _reasoning(action)
        if reasoning:  # a model's thinking, kept for SFT data
            message["reasoning_content"] = reasoning
        self.messages.append(message)
        if parsed.is_final:
            self._last_obs = ""
            return self._finish(parsed.content, terminated=True)
        tool_calls: list[dict[str, Any]] = []
        message["tool_calls"] = tool_calls
        outputs: list[str] = []
        for call in parsed.calls:
            if isinstance(call, CallError):
                name = call.name or "invalid_tool_call"
                entry = {"id": call.id, "type": "function",
                         "function": {"name": name, "arguments": call.raw}}
                result: ToolResult = error(call.code, call.message)
            else:
                name = call.name
                entry = to_openai_tool_calls((call,))[0]
                result = self._dispatch(name, call.arguments)
            entry["id"] = call_id = self._call_id(call.id)
            tool_calls.append(entry)
            content = render_result(result)
            if len(content) > SAFE_OUTPUT_CHARS:  # long: cut to its share of the observation
                content = render_result(result, tool_output_limit(outputs, len(parsed.calls)))
            self.messages.append({"role": "tool", "tool_call_id": call_id, "name": name[:200],
                                  "content": content})
            outputs.append(f"<tool_response>\n{content}\n</tool_response>")  # TOOL_RESPONSE
        self._last_obs = bounded("\n".join(outputs))  # already fits: a last guard
        if self._steps >= self.max_steps:
            return self._finish("", terminated=False)
        return self._last_obs, 0.0, False, False, self._info()

    def _call_id(self, given: str) -> str:
        """The call's id in the transcript: the one it came with, unless an earlier call of
        the episode has it (text formats number calls within an action, so every action's
        first call is ``call_0``); then ``call_<n>``, n counting the episode's calls."""
        call_id, n = given, len(self._call_ids)
        while call_id in self._call_ids:
            call_id, n = f"call_{n}", n + 1
        self._call_ids.add(call_id)
        return call_id

    def _dispatch(self, name: str, arguments: Any) -> ToolResult:
        if self._gateway is not None:
            return self._gateway.call(name, arguments)
        assert self.session is not None
        return self.session.call(name, arguments)

    def _finish(self, final_message: str, terminated: bool) -> tuple[str, float, bool, bool,
                                                                     dict[str, Any]]:
        assert self.session is not None and self.task is not None
        self._done = True
        self._result = score_rubric(self.task.rubric, Outcome(self.session, final_message,
                                                              self.task.instruction))
        return self._last_obs, self._reward(), terminated, not terminated, self._info()

    def _reward(self) -> float:
        """The env reward of the ended episode: its rubric score (``reward="rubric"``) or its
        all-required pass as 0/1 (``reward="binary"``)."""
        assert self._result is not None
        return (self._result.rubric_score if self.reward_kind == "rubric"
                else float(self._result.passed))

    def _info(self) -> dict[str, Any]:
        # A fresh dict each call (Gymnasium's contract) holding read-only views of the tools and
        # the task; the transcript list is shared on purpose: it is the episode's growing
        # message log, and copying it would make steps O(n).
        info: dict[str, Any] = {"messages": self.messages, "tools": self._tools,
                                "step": self._steps}
        if self._info_task:
            info["task"] = fresh_view(self._task_view, self._task_nested)
        if self._result is not None:
            info["rubric"] = [c.model_dump() for c in self._result.criteria]
            # the vocabulary of scores (docs/rubric.md "Scores")
            info["rubric_score"] = self._result.rubric_score
            info["passed"] = self._result.passed
            info["net_score"] = self._result.net_score
            info["reward"] = self._reward()
        return info

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        return self._last_obs
