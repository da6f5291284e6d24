"""TRL integration: the environment_factory classes, the rubric reward functions, and a real
GRPOTrainer run on a tiny local model."""

from __future__ import annotations

import json
import math
import os
import warnings
from typing import Any

import pytest

from compoenv.compose.verify import oracle_message
from compoenv.integrations.trl import (CompoWorldDirectToolEnv, CompoWorldToolEnv,
                                       completion_focused_reward, environment_tools, final_reply,
                                       make_completion_focused_reward, make_dataset,
                                       opening_messages, rubric_reward)
from compoenv.reward import completion_focused
from compoenv.task import Task
from compoenv.trajectory import Trajectory

pytest.importorskip("datasets")


@pytest.fixture(scope="module")
def write_task(tasks50: list[Task]) -> Task:
    kinds = [{c.kind for c in t.rubric} for t in tasks50]
    return next(t for t, k in zip(tasks50, kinds) if "unchanged" in k and "answer" not in k)


@pytest.fixture(scope="module")
def answer_task(tasks50: list[Task]) -> Task:
    return next(t for t in tasks50 if any(c.kind == "answer" for c in t.rubric))


def _play(env: Any, task: Task, mode: str = "gateway") -> None:
    """The oracle's calls through the env's tool methods."""
    env.reset(**make_dataset([task], mode=mode)[0])
    for call in task.solution:
        result = json.loads(env.call_tool(call.name, call.arguments))
        assert result["success"], result


def _done(task: Task) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": oracle_message(task)}]


def test_tools_are_the_methods_trl_finds_and_their_schemas_render(write_task):
    from transformers.utils import get_json_schema

    gateway, direct = CompoWorldToolEnv(), CompoWorldDirectToolEnv()
    assert [m.__name__ for m in environment_tools(gateway)] == [
        "call_tool", "describe_tool", "list_services", "list_tools"]
    assert [m.__name__ for m in environment_tools(direct)] == ["call_tool"]
    schema = get_json_schema(gateway.call_tool)["function"]
    assert schema["parameters"]["required"] == ["tool_name"]
    assert set(schema["parameters"]["properties"]) == {"tool_name", "arguments"}
    assert get_json_schema(gateway.list_tools)["function"]["parameters"]["required"] == ["service"]


def test_dataset_rows_carry_the_task_and_the_episode_system_prompt(write_task, answer_task):
    rows = make_dataset([write_task, answer_task])
    assert rows.column_names == ["prompt", "task", "task_id"]
    assert Task.coerce(rows[1]["task"]) == answer_task and rows[0]["task_id"] == write_task.id
    system, user = rows[0]["prompt"]
    assert system["role"] == "system" and "gateway" in system["content"]
    assert user == {"role": "user", "content": ""}
    opening = opening_messages(rows[0], CompoWorldToolEnv())
    assert opening[-1]["content"] == write_task.instruction and opening[0] == system


def test_reset_without_a_task_column_says_how_to_build_rows():
    with pytest.raises(ValueError, match=r"no 'task' column \(columns: \['prompt'\]\).*"
                                         r"make_dataset"):
        CompoWorldToolEnv().reset(prompt=[])


def test_gateway_env_played_by_the_oracle_scores_full_marks(answer_task):
    env = CompoWorldToolEnv()
    _play(env, answer_task)
    services = json.loads(env.list_services())["data"]["services"]
    assert set(answer_task.services) <= set(services)
    assert rubric_reward([_done(answer_task)], environments=[env]) == [1.0]
    assert env.get_reward() is None  # already counted by the reward function
    record = env.trajectory
    Trajectory.model_validate(record)
    assert record["meta"]["score"] == 1.0 and record["meta"]["n_tool_calls"] == \
        len(answer_task.solution) + 1
    assert record["meta"]["n_real_tool_calls"] == len(answer_task.solution)
    assert record["meta"]["discover_mode"] == "gateway"
    assert record["messages"][-1] == _done(answer_task)[0]


def test_direct_env_lists_the_tasks_tools_and_calls_them(write_task):
    env = CompoWorldDirectToolEnv()
    observation = env.reset(**make_dataset([write_task], mode="direct")[0])
    assert observation.startswith(write_task.instruction)
    for call in write_task.solution:
        assert f'"name":"{call.name}"' in observation
    _play(env, write_task, mode="direct")
    assert rubric_reward([_done(write_task)], environments=[env]) == [1.0]


def test_tool_errors_are_envelopes_and_the_step_limit_ends_the_episode(write_task):
    env = CompoWorldToolEnv(max_steps=2)
    env.reset(**make_dataset([write_task])[0])
    wrong = json.loads(env.call_tool(write_task.solution[0].name + "x", {}))
    assert not wrong["success"] and "Did you mean" in wrong["error"]["message"]
    assert not json.loads(env.list_tools("nowhere"))["success"]
    limit = json.loads(env.describe_tool(write_task.solution[0].name))
    assert limit["error"]["code"] == 429 and "step limit (2)" in limit["error"]["message"]
    assert rubric_reward([[]], environments=[env], log_metric=None)[0] < 1.0
    assert env.trajectory["meta"]["finish_reason"] == "length"


def test_get_reward_alone_cannot_see_the_final_reply(write_task, answer_task):
    env = CompoWorldToolEnv()
    _play(env, write_task)
    assert env.get_reward() == 1.0  # no answer criterion: the calls are everything
    _play(env, answer_task)
    with pytest.warns(UserWarning, match="cannot see the model's final reply"):
        assert env.get_reward() < 1.0


def test_final_reply_is_the_last_assistant_text_without_calls():
    call = {"role": "assistant", "content": "", "tool_calls": [{"type": "function"}]}
    assert final_reply([call, {"role": "tool", "content": "{}"},
                        {"role": "assistant", "content": "It is 42."}]) == "It is 42."
    assert final_reply([call]) is None and final_reply([]) is None
    assert final_reply("plain text") == "plain text"
    assert final_reply([{"role": "assistant", "content": [{"type": "text", "text": "a"}]}]) == "a"


def test_completion_focused_reward_groups_rollouts_by_task(write_task, answer_task):
    envs, completions = [], []
    for task, solve in ((write_task, True), (answer_task, True), (write_task, False),
                        (answer_task, False), (write_task, False)):
        env = CompoWorldToolEnv()
        if solve:
            _play(env, task)
        else:
            env.reset(**make_dataset([task])[0])
        envs.append(env)
        completions.append(_done(task) if solve else [])
    logged: dict[str, float] = {}
    rewards = completion_focused_reward(completions, environments=envs,
                                        log_metric=logged.__setitem__)
    for task, members in ((write_task, [0, 2, 4]), (answer_task, [1, 3])):
        passes = [[c["passed"] for c in envs[i].trajectory["meta"]["rubric"]] for i in members]
        expected = completion_focused(passes, [c.weight for c in task.rubric],
                                      [c.required for c in task.rubric],
                                  kinds=[c.kind for c in task.rubric])
        assert [rewards[i] for i in members] == pytest.approx(expected)
        assert rewards[members[0]] == max(rewards[i] for i in members)
    assert logged["compoenv/pass_rate"] == pytest.approx(2 / 5)
    for kind in {c.kind for c in write_task.rubric + answer_task.rubric}:
        assert 0.0 <= logged[f"compoenv/criteria/{kind}_pass_rate"] <= 1.0
    assert logged["compoenv/tool_calls"] == pytest.approx(
        (len(write_task.solution) + len(answer_task.solution)) / 5)
    # alpha=0, lam=0: the plain rubric, rollout by rollout
    plain = make_completion_focused_reward(alpha=0.0, lam=0.0)
    for task in (write_task, answer_task):
        half = CompoWorldToolEnv()
        _play(half, task)
        other = CompoWorldToolEnv()
        _play(other, task)
        assert plain([[], []], environments=[half, other]) == pytest.approx(
            rubric_reward([[], []], environments=[half, other]))


def test_reward_functions_need_compoenv_environments():
    with pytest.raises(ValueError, match="need TRL's environments"):
        rubric_reward([[]], environments=None)
    with pytest.raises(TypeError, match="not a compoenv TRL env"):
        rubric_reward([[]], environments=[object()])


def test_grpo_trainer_runs_two_steps_calling_our_tools(write_task, answer_task, tmp_path):
    pytest.importorskip("trl")
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from compoenv.tiny_lm import imitate, tiny_lm_path

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    first_call = '<tool_call>\n{"name": "list_services", "arguments": {}}\n</tool_call>'
    folder = tiny_lm_path(chat_template="qwen3", extra_tokens=("<think>\n\n</think>\n\n",
                                                                 first_call))
    model = AutoModelForCausalLM.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    rows = make_dataset([write_task, answer_task])
    probe = CompoWorldToolEnv()
    reply = {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "list_services", "arguments": {}}}]}
    losses = imitate(model, tokenizer, [opening_messages(r, probe) for r in rows], reply,
                     environment_tools(probe), steps=40)
    assert losses[-1] < 0.2 * losses[0]
    config = GRPOConfig(output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=4,
                        num_generations=2, max_completion_length=96,
                        max_tool_calling_iterations=2, learning_rate=1e-3, logging_steps=1,
                        report_to="none", save_strategy="no", use_cpu=True, disable_tqdm=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        trainer = GRPOTrainer(model=model, processing_class=tokenizer, args=config,
                              train_dataset=rows, environment_factory=CompoWorldToolEnv,
                              reward_funcs=[completion_focused_reward])
        trainer.train()
    assert trainer.state.global_step == 2
    logs = [log for log in trainer.state.log_history if "tools/call_frequency" in log]
    assert len(logs) == 2 and max(log["tools/call_frequency"] for log in logs) > 0
    assert all(log["compoenv/tool_calls"] == pytest.approx(log["tools/call_frequency"])
               for log in logs)
    # the calls reached our env, which answered with its own envelopes
    envs = trainer.environments
    listed = [json.loads(m["content"]) for e in envs for m in e.trajectory["messages"]
              if m["role"] == "tool" and m["name"] == "list_services"]
    assert listed and all(r["success"] for r in listed)
    # the logged reward is the completion-focused reward of our envs' rubric results
    groups: dict[str, list[Any]] = {}
    for env in envs:
        groups.setdefault(env._task.id, []).append(env)
    expected = []
    for members in groups.values():
        rubric = members[0]._task.rubric
        expected += completion_focused(
            [[c["passed"] for c in e.trajectory["meta"]["rubric"]] for e in members],
            [c.weight for c in rubric], [c.required for c in rubric],
            kinds=[c.kind for c in rubric])
    last = logs[-1]
    assert last["rewards/completion_focused_reward/mean"] == pytest.approx(
        sum(expected) / len(expected))
    # the write task's no-collateral guards pass on their own, but guards earn nothing without
    # the work: no work, no reward
    assert last["compoenv/criteria_passed"] > 0 and last["compoenv/rubric_score"] == 0
    env_reward = last["rewards/CompoWorldToolEnv/mean"]
    assert env_reward is None or math.isnan(env_reward)  # not counted twice
