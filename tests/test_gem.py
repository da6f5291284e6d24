"""GEM: compoenv/CompoWorld-v0 made with gem.make and gem.make_vec; a task per seed, ROLL's
group seeds, scoring, and malformed actions."""

from __future__ import annotations

from typing import Any

import pytest

gem = pytest.importorskip("gem")

from compoenv.actions import MAX_ACTION_CHARS, ToolCall, render_calls  # noqa: E402
from compoenv.compose import Composer, ComposerConfig  # noqa: E402
from compoenv.compose.verify import oracle_message  # noqa: E402
from compoenv.integrations.gem import ENV_ID, CompoWorldGemEnv  # noqa: E402
from compoenv.task import Task, save_tasks  # noqa: E402


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    return list(Composer(config=ComposerConfig(min_hops=2, max_hops=3)).generate(3, seed=5))


@pytest.fixture(scope="module")
def task_file(tasks: list[Task], tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("gem") / "tasks.jsonl"
    save_tasks(tasks, path)
    return str(path)


def _oracle(task: Task) -> list[str]:
    calls = [render_calls([ToolCall(c.name, c.arguments, f"call_{i}")], "hermes")
             for i, c in enumerate(task.solution)]
    return [*calls, oracle_message(task)]


def _task_of(info: dict[str, Any], tasks: list[Task]) -> Task:
    return next(t for t in tasks if t.id == info["task_id"])


def test_the_seed_picks_the_task(tasks, task_file):
    first, second = gem.make(ENV_ID, tasks=task_file), gem.make(ENV_ID, tasks=task_file)
    assert isinstance(first, CompoWorldGemEnv) and first.env_id == ENV_ID
    for seed in (0, 4, 2**31 + 7):
        one, two = first.reset(seed=seed), second.reset(seed=seed)
        assert one == two
        assert one[1]["task_id"] == tasks[seed % 3].id and one[1]["seed"] == seed
        assert tasks[seed % 3].instruction in one[0] and "<tools>" in one[0]
    assert len({first.reset(seed=s)[1]["task_id"] for s in range(3)}) == 3


def test_a_roll_group_plays_one_task_per_episode(tasks):
    # ROLL: every env of a group is made with seed=group_seed and reset with
    # group_seed + episode_id, the same within the group
    group_seed = 1_234_567
    group = [gem.make(ENV_ID, tasks=tasks, seed=group_seed) for _ in range(4)]
    for episode in range(3):
        ids = {env.reset(seed=group_seed + episode)[1]["task_id"] for env in group}
        assert ids == {tasks[(group_seed + episode) % 3].id}
    # without a seed, envs made with one seed draw the same tasks
    assert len({tuple(env.reset()[1]["task_id"] for _ in range(5)) for env in group[:2]}) == 1


def test_an_oracle_episode_scores_one(tasks):
    env = gem.make(ENV_ID, tasks=tasks)
    obs, info = env.reset(seed=1)
    task = _task_of(info, tasks)
    *calls, final = _oracle(task)
    for action in calls:
        obs, reward, terminated, truncated, info = env.step(action)
        assert (reward, terminated, truncated) == (0.0, False, False)
        assert obs.startswith("<tool_response>") and '"success": true' in obs
        assert set(info) == {"task_id", "seed", "step"}
    obs, reward, terminated, truncated, info = env.step(final)
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["rubric_score"] == info["passed"] == 1.0 and all(info["passes"])
    assert len(info["passes"]) == len(info["required"]) == len(task.rubric)


def test_gems_observation_wrapper_concatenates_the_episode(tasks):
    from gem.wrappers.episode_tracking_wrapper import EpisodeTrackingWrapper
    from gem.wrappers.observation_wrapper import ObservationWrapper

    # GEM's "concat_with_action,episode_tracking" wrappers
    env = ObservationWrapper(gem.make(ENV_ID, tasks=tasks), include_chat_template=False)
    env = EpisodeTrackingWrapper(env)
    opening, _ = env.reset(seed=2)
    first, *_ = _oracle(tasks[2])
    obs, _, _, _, info = env.step(first)
    assert obs.startswith(opening) and first in obs and "<tool_response>" in obs
    assert info["step_counter"] == 1 and env.unwrapped.seed == 2

def test_a_vector_env_steps_several_episodes(tasks):
    for async_mode in (False, True):
        envs = gem.make_vec([ENV_ID] * 3, tasks=tasks, max_turns=6, async_mode=async_mode)
        _, infos = envs.reset(seed=[5, 5, 6])  # two envs of one group, one of another
        assert [i["task_id"] for i in infos] == [tasks[2].id, tasks[2].id, tasks[0].id]
        scripts = [_oracle(tasks[2]), ["I give up."], _oracle(tasks[0])]
        rewards, finals = [0.0, 0.0, 0.0], [{}, {}, {}]
        for turn in range(max(map(len, scripts))):
            active = {i: s[turn] for i, s in enumerate(scripts) if turn < len(s)}
            _, reward, terminated, truncated, step_infos = envs.step(active)
            for i, r, t, info in zip(active, reward, terminated, step_infos):
                if t:  # autoreset: the info is the next episode's, the final one within it
                    rewards[i], finals[i] = float(r), info["prev_episode"]
                    assert info["step"] == 0 and "prev_episode" not in envs.envs[i].reset()[1]
            assert not truncated.any()
        assert rewards == [1.0, 0.0, 1.0]
        assert [f["task_id"] for f in finals] == [i["task_id"] for i in infos]
        assert [all(f["passes"]) for f in finals] == [True, False, True]


@pytest.mark.parametrize("action", [
    None, 42, {"role": "assistant"}, "<tool_call>{broken", "<tool_call>" * 5000,
    "<tool_call>" + "x" * (MAX_ACTION_CHARS + 1),
    '<tool_call>{"name": "no__such_tool", "arguments": {}}</tool_call>',
    '<tool_call>{"name": "contacts__find_contact", "arguments": "not an object"}</tool_call>',
], ids=["none", "int", "dict", "broken", "unclosed", "oversized", "unknown", "bad_arguments"])
def test_malformed_actions_never_raise(tasks, action):
    env = gem.make(ENV_ID, tasks=tasks, max_turns=2)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert reward == 0.0 and isinstance(obs, str)
    assert terminated is isinstance(action, dict)  # a message without text is a final reply
    if not terminated:
        assert '"success": false' in obs
        _, _, terminated, truncated, info = env.step(action)  # the turn limit: scored
        assert (terminated, truncated) == (False, True) and info["rubric_score"] == 0.0


def test_bad_settings_are_clear_errors(tasks, tmp_path):
    with pytest.raises(FileNotFoundError, match="no task file"):
        gem.make(ENV_ID, tasks=str(tmp_path / "missing.jsonl"))
    with pytest.raises(ValueError, match="tasks is empty"):
        gem.make(ENV_ID, tasks=[])
    assert gem.make(ENV_ID, tasks=tasks, max_steps=7).env.max_steps == 7  # CompoWorldEnv's name
    env = gem.make(ENV_ID, tasks=tasks)
    with pytest.raises(RuntimeError, match="reset"):
        env.step("hello")
    with pytest.raises(ValueError, match="non-negative int"):
        env.reset(seed=-1)


def test_the_roll_example_config_makes_the_env_as_roll_does(tasks, task_file):
    omegaconf = pytest.importorskip("omegaconf")
    from pathlib import Path

    config = omegaconf.OmegaConf.load(Path(__file__).parent.parent / "rl/roll/compoenv_grpo.yaml")
    env_cfg = omegaconf.OmegaConf.to_container(config.custom_envs.CompoWorld, resolve=True)
    assert env_cfg["env_type"] == ENV_ID
    config_kwargs = {**env_cfg["env_config"], "tasks": task_file, "seed": 99}  # group seed
    env = gem.make(env_id=env_cfg["env_type"], **config_kwargs)  # TrajEnvManager's call
    assert env.env.max_steps == env_cfg["max_steps"]
    obs, info = env.reset(seed=99 + 2)
    assert info["task_id"] == tasks[(99 + 2) % 3].id
    assert env_cfg["agent_template"].format(observation=obs) == obs
    module, _, name = env_cfg["env_manager_cls"].rpartition(".")
    imported = __import__(module, fromlist=[name])  # ROLL's safe_import_class
    try:
        manager = getattr(imported, name)
    except ImportError as exc:  # ROLL itself is not installed here
        assert "ROLL" in str(exc)
    else:
        assert manager.__module__ == "roll.pipeline.agentic.env_manager.traj_env_manager"


def test_without_gem_the_import_error_names_the_extra(monkeypatch):
    import importlib
    import sys

    monkeypatch.setitem(sys.modules, "gem", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "compoenv.integrations.gem")
    with pytest.raises(ImportError, match=r"compoenv\[gem\]"):
        importlib.import_module("compoenv.integrations.gem")


def test_the_play_groups_script_plays_one_task_per_group(capsys):
    import importlib.util
    from pathlib import Path

    script = Path(__file__).parent.parent / "rl/roll/play_groups.py"
    spec = importlib.util.spec_from_file_location("roll_play_groups", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(["--groups", "2", "--group-size", "3", "--seed", "5"])
    out = capsys.readouterr().out
    groups = [line for line in out.splitlines() if line.startswith("group ")]
    rollouts = [line for line in out.splitlines() if "group reward" in line]
    assert len(groups) == 2 and len(rollouts) == 6
    assert all(line.endswith("1.000") for line in rollouts[2::3])  # the full oracle tops
