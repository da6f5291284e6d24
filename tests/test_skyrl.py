"""SkyRL: the registered text env made with skyrl_gym.make, the dataset rows, and the
completion-focused group reward applied to a generated batch."""

from __future__ import annotations

import asyncio
import json
import warnings
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym")

from compoenv.actions import ToolCall, render_calls  # noqa: E402
from compoenv.compose import Composer, ComposerConfig  # noqa: E402
from compoenv.compose.verify import oracle_message  # noqa: E402
from compoenv.env import CompoWorldEnv  # noqa: E402
from compoenv.integrations.skyrl import (CompletionFocusedGenerator,  # noqa: E402
                                         apply_group_reward, dataset_rows, write_dataset)
from compoenv.reward import completion_focused  # noqa: E402
from compoenv.task import Task  # noqa: E402


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    return list(Composer(config=ComposerConfig(min_hops=2, max_hops=3)).generate(3, seed=5))


def _calls(task: Task, upto: int | None = None) -> list[str]:
    """The oracle's calls, one Hermes action each."""
    return [render_calls([ToolCall(c.name, c.arguments, f"call_{i}")], "hermes")
            for i, c in enumerate(task.solution[:upto])]


SCRIPTS = {  # how a rollout plays its task: what the group reward must tell apart
    "oracle": lambda t: [*_calls(t), oracle_message(t)],
    "no_answer": lambda t: [*_calls(t), "Done."],
    "first_call": lambda t: [*_calls(t, 1), oracle_message(t)],
    "nothing": lambda t: ["I cannot help with that."],
}


def _split(row: dict[str, Any], max_turns: int = 10) -> tuple[Any, str, dict[str, Any]]:
    """A row as SkyRL's PromptDataset and generator hand it over: the prompt, the env class,
    and every other column as extras, with the generator's max_turns."""
    extras = dict(row)
    prompt, env_class = extras.pop("prompt"), extras.pop("env_class")
    return prompt, env_class, {**extras, "max_turns": max_turns}


def _make(row: dict[str, Any], **config: Any) -> Any:
    prompt, env_class, extras = _split(row)
    env = skyrl_gym.make(env_class, env_config=config, extras=extras)
    return env, prompt


def _play(row: dict[str, Any], actions: list[str]) -> tuple[Any, list[dict[str, Any]]]:
    env, prompt = _make(row)
    env.init(prompt)
    outputs = []
    for action in actions:
        outputs.append(env.step(action))
        if outputs[-1]["done"]:
            break
    return env, outputs


def test_an_oracle_episode_through_skyrl_make_scores_one(tasks):
    task = tasks[0]
    env, prompt = _make(dataset_rows([task])[0])
    messages, meta = env.init(prompt)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "<tools>" in messages[0]["content"] and messages[1]["content"] == task.instruction
    assert meta["task_id"] == task.id
    for action in _calls(task):
        out = env.step(action)
        assert (out["done"], out["reward"]) == (False, 0.0)
        [obs] = out["observations"]
        assert obs["role"] == "user" and obs["content"].startswith("<tool_response>")
        assert '"success": true' in obs["content"]
    out = env.step(oracle_message(task))
    assert (out["done"], out["reward"], out["observations"]) == (True, 1.0, [])
    metrics = env.get_metrics()
    assert all(metrics["passes"]) and metrics["rubric_score"] == metrics["passed"] == 1.0
    assert metrics["tool_calls"] == len(task.solution) and metrics["tool_errors"] == 0


def test_the_prompt_comes_from_the_env_when_the_row_has_none(tasks):
    env, _ = _make(dataset_rows([tasks[1]], mode="gateway")[0])
    messages, _ = env.init([])
    assert "call_tool" in messages[0]["content"] and messages[1]["content"] == tasks[1].instruction


@pytest.mark.parametrize("action, expected", [
    ("<tool_call>{not json", "400"),
    ('<tool_call>{"name": "nope__tool", "arguments": {}}</tool_call>', "404"),
    ('<tool_call>{"name": "%s", "arguments": {"bogus": 1}}</tool_call>', "400"),
])
def test_malformed_actions_come_back_as_error_envelopes(tasks, action, expected):
    task = tasks[0]
    env, prompt = _make(dataset_rows([task])[0])
    env.init(prompt)
    out = env.step(action.replace("%s", task.solution[0].name))
    assert out["done"] is False and out["reward"] == 0.0
    envelope = out["observations"][0]["content"]
    assert '"success": false' in envelope and f'"code": {expected}' in envelope
    assert env.get_metrics()["tool_errors"] == 1


def test_tool_results_as_tool_messages_and_the_turn_limit(tasks):
    task = tasks[0]
    prompt, env_class, extras = _split(dataset_rows([task])[0], max_turns=1)
    with pytest.warns(RuntimeWarning, match="generator.max_turns"):
        env = skyrl_gym.make(env_class, env_config={"observation_role": "tool"}, extras=extras)
    env.init(prompt)
    out = env.step("".join(_calls(task, 2)))  # two calls in one turn, then the limit
    assert out["done"] is True and out["metadata"]["truncated"] is True
    assert env.get_metrics()["tool_calls"] == 2
    env, prompt = _make(dataset_rows([task])[0], observation_role="tool")
    env.init(prompt)
    out = env.step("".join(_calls(task, 2)))
    assert [m["role"] for m in out["observations"]] == ["tool", "tool"]


def test_rows_without_a_task_or_with_a_contradicting_mode_are_clear_errors(tasks):
    row = dataset_rows([tasks[0]])[0]
    with pytest.raises(ValueError, match="reward_spec.ground_truth"):
        skyrl_gym.make("compoenv", env_config={}, extras={"reward_spec": {"method": "rule"}})
    with pytest.raises(ValueError, match="mode 'direct' but the env is set to 'gateway'"):
        _make(row, mode="gateway")


def test_sixteen_envs_stepped_from_a_thread_pool_keep_their_own_state(tasks):
    rows = dataset_rows(tasks)
    plays = [(rows[i % 3], ["oracle", "nothing"][i % 2]) for i in range(16)]
    envs = []
    for row, _ in plays:
        env, prompt = _make(row)
        env.init(prompt)
        envs.append(env)
    scripts = [SCRIPTS[kind](tasks[i % 3]) for i, (_, kind) in enumerate(plays)]
    outputs: list[list[dict[str, Any]]] = [[] for _ in envs]

    def act(i: int, turn: int) -> None:
        if turn < len(scripts[i]) and not (outputs[i] and outputs[i][-1]["done"]):
            outputs[i].append(envs[i].step(scripts[i][turn]))

    with ThreadPoolExecutor(max_workers=8) as pool:  # SkyRL's env executor: turns interleave
        for turn in range(max(map(len, scripts))):
            list(pool.map(lambda i: act(i, turn), range(16)))
    for i, (_, kind) in enumerate(plays):
        assert outputs[i][-1]["done"] is True
        assert outputs[i][-1]["reward"] == (1.0 if kind == "oracle" else 0.0), (i, kind)
        assert envs[i].get_metrics()["tool_calls"] == (
            len(tasks[i % 3].solution) if kind == "oracle" else 0)


def test_rows_round_trip_through_parquet_as_skyrl_loads_them(tasks, tmp_path):
    datasets = pytest.importorskip("datasets")
    rows = dataset_rows(tasks)
    for row, task in zip(rows, tasks):
        assert row["env_class"] == "compoenv" and row["data_source"] == "compoenv"
        assert row["reward_spec"]["method"] == "rule"
        assert Task.coerce(row["reward_spec"]["ground_truth"]) == task
        assert row["extra_info"] == {"task_id": task.id, "mode": "direct",
                                     "domain": task.domain, "hops": task.hops,
                                     "services": task.services}
    path = write_dataset(rows, tmp_path / "train.parquet")
    loaded = datasets.load_dataset("parquet", data_files=str(path))["train"]
    assert len(loaded) == 3 and loaded[1]["prompt"] == rows[1]["prompt"]
    _, outputs = _play(dict(loaded[2]), SCRIPTS["oracle"](tasks[2]))
    assert outputs[-1]["reward"] == 1.0
    lines = write_dataset(rows, tmp_path / "train.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == rows
    with pytest.raises(ValueError, match=r"\.parquet, \.jsonl or \.json"):
        write_dataset(rows, tmp_path / "train.csv")


def _expected_passes(task: Task, actions: list[str]) -> list[bool]:
    """The criterion passes of the same play on a plain CompoWorldEnv."""
    env = CompoWorldEnv()
    env.reset(options={"task": task})
    for action in actions:
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return [c["passed"] for c in info["rubric"]]
    raise AssertionError("the script did not end the episode")


class _ScriptedGenerator:
    """Stands in for SkyRLGymGenerator (not importable on Python 3.11): one env per
    trajectory from skyrl_gym.make, the rollout's script for the policy, and the output
    fields the group hook reads."""

    def __init__(self, kinds: list[str], tasks: list[Task]) -> None:
        self.kinds, self.tasks = kinds, tasks
        self.generator_cfg = SimpleNamespace(zero_reward_on_non_stop=False)

    async def generate(self, input_batch: dict[str, Any]) -> dict[str, Any]:
        rewards, metrics, masks = [], [], []
        for i, (prompt, env_class, extras) in enumerate(zip(
                input_batch["prompts"], input_batch["env_classes"], input_batch["env_extras"])):
            task = Task.coerce(extras["reward_spec"]["ground_truth"])
            env = skyrl_gym.make(env_class, env_config={}, extras={**extras, "max_turns": 10})
            env.init(prompt)
            for action in SCRIPTS[self.kinds[i]](task):
                out = await asyncio.to_thread(env.step, action)
                if out["done"]:
                    break
            rewards.append([0.0, 0.0, out["reward"]])  # token-level: reward at the last token
            masks.append([1, 1, 1])
            metrics.append(env.get_metrics())
        n = len(rewards)
        return {"prompt_token_ids": [[1]] * n, "response_ids": [[2, 3, 4]] * n,
                "rewards": rewards, "loss_masks": masks, "stop_reasons": ["stop"] * n,
                "rollout_metrics": {}, "rollout_logprobs": None, "trajectory_ids": None,
                "env_metrics": metrics}


class _Generator(CompletionFocusedGenerator, _ScriptedGenerator):
    pass


def test_the_generator_hook_gives_each_group_the_completion_focused_reward(tasks):
    kinds = ["oracle", "no_answer", "first_call", "nothing"]
    order = [(g, k) for k in kinds for g in (0, 1)]  # two prompts' groups, interleaved
    rows = dataset_rows(tasks[:2])
    batch = {"prompts": [rows[g]["prompt"] for g, _ in order],
             "env_classes": [rows[g]["env_class"] for g, _ in order],
             "env_extras": [_split(rows[g])[2] for g, _ in order],
             "trajectory_ids": [SimpleNamespace(instance_id=str(g), repetition_id=r)
                                for r, (g, _) in enumerate(order)]}
    generator = _Generator([k for _, k in order], tasks)
    output = asyncio.run(generator.generate(batch))
    for g in (0, 1):
        task = tasks[g]
        members = [i for i, (h, _) in enumerate(order) if h == g]
        expected = completion_focused(
            [_expected_passes(task, SCRIPTS[order[i][1]](task)) for i in members],
            weights=[c.weight for c in task.rubric], required=[c.required for c in task.rubric],
                                  kinds=[c.kind for c in task.rubric])
        got = [output["rewards"][i] for i in members]
        assert [r[:2] for r in got] == [[0.0, 0.0]] * 4  # still at the last token
        assert [r[2] for r in got] == pytest.approx(expected)
        assert got[0][2] == max(r[2] for r in got) and got[-1][2] == 0.0
    # SkyRL's own aggregation of the env metrics logs per-kind criterion pass rates, pooled
    from skyrl_gym.metrics import aggregate_for_environment

    logged = aggregate_for_environment("compoenv", output["env_metrics"])
    kinds = {c.kind for t in tasks[:2] for c in t.rubric}
    assert {k for k in logged if k.startswith("criteria/")} == {
        f"criteria/{kind}_pass_rate" for kind in kinds}
    pairs = [(c.kind, ok) for m, (g, _) in zip(output["env_metrics"], order)
             for c, ok in zip(tasks[g].rubric, m["passes"])]
    for kind in kinds:
        oks = [ok for k, ok in pairs if k == kind]
        assert logged[f"criteria/{kind}_pass_rate"] == pytest.approx(sum(oks) / len(oks))
    assert 0.0 < logged["rubric_score"] < 1.0 and "passes" not in logged


def test_the_group_hook_keeps_other_rows_and_honours_zero_reward_on_non_stop():
    passes = [[True, True], [True, False], [False, False]]
    metrics = [{"passes": p, "weights": [1.0, 1.0], "required": [True, False]} for p in passes]
    output = {"rewards": [0.9, 0.4, 0.0, 0.7], "env_metrics": [*metrics, {"steps": 2}],
              "stop_reasons": ["stop", "length", "stop", "stop"], "loss_masks": [[1]] * 4}
    ids = ["a", "a", "a", "b"]
    expected = completion_focused(passes, [1.0, 1.0], [True, False])
    assert apply_group_reward(output, ids)["rewards"] == pytest.approx([*expected, 0.7])
    zeroed = apply_group_reward(output, ids, zero_on_non_stop=True)["rewards"]
    assert zeroed == pytest.approx([expected[0], 0.0, expected[2], 0.7])
    with pytest.raises(ValueError, match="trajectory_ids"):
        apply_group_reward(output)


def test_an_episode_cut_short_is_scored_as_it_stands(tasks):
    task = tasks[0]
    env, outputs = _play(dataset_rows([task])[0], _calls(task))
    assert not outputs[-1]["done"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        metrics = env.get_metrics()
    assert metrics["finished"] == 0.0 and len(metrics["passes"]) == len(task.rubric)
    assert metrics == env.get_metrics()  # scored once


def test_the_prepare_data_script_writes_the_train_and_validation_splits(tasks, tmp_path, capsys):
    import importlib.util
    from pathlib import Path

    from compoenv.task import save_tasks

    script = Path(__file__).parent.parent / "rl/skyrl/prepare_data.py"
    spec = importlib.util.spec_from_file_location("skyrl_prepare_data", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    save_tasks(tasks, tmp_path / "tasks.jsonl")
    assert module.main(["--tasks", str(tmp_path / "tasks.jsonl"), "--val-size", "1",
                        "--format", "jsonl", "--output-dir", str(tmp_path / "out")]) == 0
    train = (tmp_path / "out/train.jsonl").read_text().splitlines()
    validation = (tmp_path / "out/validation.jsonl").read_text().splitlines()
    assert [json.loads(line)["extra_info"]["task_id"] for line in train + validation] == [
        t.id for t in tasks]
    assert "train: 2 rows" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        module.main(["--tasks", str(tmp_path / "none.jsonl"), "--output-dir", str(tmp_path)])
    assert "--tasks:" in capsys.readouterr().err


def test_without_skyrl_gym_the_import_error_names_the_extra(monkeypatch):
    import importlib
    import sys

    monkeypatch.setitem(sys.modules, "skyrl_gym", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "compoenv.integrations.skyrl")
    with pytest.raises(ImportError, match=r"compoenv\[skyrl\]"):
        importlib.import_module("compoenv.integrations.skyrl")
