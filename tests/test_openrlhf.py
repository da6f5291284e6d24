"""OpenRLHF's own multi-turn agent loop drives compoenv episodes on a tiny local model (CPU).

The rollout actor is openrlhf_rollout.TinyRollout: OpenRLHF's generate_responses (compiled from
its installed source) over an engine backed by the tiny model of compoenv.tiny_lm.
"""

from __future__ import annotations

import asyncio
import copy
import importlib.util
import json
import logging
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("openrlhf")

import torch
from openrlhf.utils.agent import MultiTurnAgentExecutor
from openrlhf_rollout import (
    EOS,
    SamplingParams,
    TinyRollout,
    load_agent_executor,
    process_response,
)
from compoenv.tiny_lm import tiny_lm_path

from compoenv.agents import OracleAgent
from compoenv.integrations.openrlhf_data import prompt_record, with_tool_listing
from compoenv.compose import Composer, ComposerConfig
from compoenv.env import CompoWorldEnv
from compoenv.integrations.openrlhf import AgentExecutor, AgentInstance, Settings
from compoenv.reward import completion_focused
from compoenv.task import Task

ROOT = Path(__file__).resolve().parents[1]
MAX_LEN = 8000
GATEWAY = Settings(mode="gateway", max_steps=8)


@pytest.fixture(scope="module")
def lm() -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = tiny_lm_path()
    return AutoModelForCausalLM.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    return list(Composer(config=ComposerConfig(min_hops=2, max_hops=2)).generate(2, seed=5))


def oracle_actions(task: Task, mode: str) -> list[str]:
    """The oracle's actions: the solution's tool calls, then its final answer."""
    env = CompoWorldEnv(mode=mode)
    obs, info = env.reset(options={"task": task})
    agent, actions = OracleAgent(), []
    agent.reset(obs, info)
    while not actions or "<tool_call>" in actions[-1]:
        actions.append(agent.act(obs, info))
    return actions


def replay(task: Task, actions: list[str], mode: str = "gateway") -> tuple[CompoWorldEnv, dict]:
    """A fresh env fed the same actions; an episode left open ends with an empty reply."""
    env = CompoWorldEnv(mode=mode, max_steps=GATEWAY.max_steps)
    _, info = env.reset(options={"task": task})
    done = False
    for action in actions:
        _, _, terminated, truncated, info = env.step(action.removesuffix(EOS))
        done = terminated or truncated
    if not done:
        _, _, _, _, info = env.step("")
    return env, info


def actions_of(response: dict[str, Any], tokenizer: Any) -> list[str]:
    tokens = response["observation_tokens"]
    return [tokenizer.decode(tokens[a:b], skip_special_tokens=False)
            for a, b in response["action_ranges"]]


def run(rollout: TinyRollout, record: dict[str, Any], n: int) -> list[dict[str, Any]]:
    return asyncio.run(rollout.generate_responses(
        prompt=record["prompt"], label=record["label"], sampling_params=SamplingParams(),
        max_length=MAX_LEN, hf_tokenizer=rollout.tokenizer, num_samples=n))


def test_group_of_multi_turn_episodes_gets_the_completion_focused_reward(lm, tasks):
    model, tokenizer = lm
    task = tasks[0]
    record = prompt_record(task, "gateway", tokenizer)
    oracle = oracle_actions(task, "gateway")
    rollout = TinyRollout(AgentExecutor(settings=GATEWAY), model, tokenizer)
    rollout.expect(record["prompt"], [oracle, oracle[:1], [], oracle])
    responses = run(rollout, record, 4)

    actions = [actions_of(r, tokenizer) for r in responses]
    driven = [i for i, a in enumerate(actions) if a == [x + EOS for x in oracle]]
    assert len(driven) == 2 and len(oracle) >= 3  # whole episodes: calls, results, answer
    assert sorted(len(r["action_ranges"]) for r in responses) == [1, 2, len(oracle),
                                                                   len(oracle)]
    infos = [replay(task, a)[1] for a in actions]
    passes = [[c["passed"] for c in info["rubric"]] for info in infos]
    expected = completion_focused(passes, [c.weight for c in task.rubric],
                                  [c.required for c in task.rubric],
                                  kinds=[c.kind for c in task.rubric])
    assert len(set(expected)) >= 2, "the scripts should give the group different outcomes"
    for response, reward, info in zip(responses, expected, infos):
        assert response["reward"] == pytest.approx(reward)
        assert response["scores"] == pytest.approx(reward)
        logs = response["extra_logs"]
        assert logs["group_reward"] == pytest.approx(reward)
        assert (logs["group_size"], logs["group_fallback"], logs["label_error"]) == (4, 0, 0)
        assert logs["rubric_score"] == pytest.approx(info["rubric_score"])
        assert logs["criteria_passed"] == sum(c["passed"] for c in info["rubric"])
        for kind in {c["kind"] for c in info["rubric"]}:  # per kind: passed of checked
            of_kind = [c["passed"] for c in info["rubric"] if c["kind"] == kind]
            assert (logs[f"criteria/{kind}_passed"], logs[f"criteria/{kind}_checked"]) == (
                sum(of_kind), len(of_kind))
        assert set(logs) == set(responses[0]["extra_logs"])
        assert all(type(v) is float for v in logs.values())
    for i in driven:
        assert responses[i]["reward"] == pytest.approx(max(expected)) == pytest.approx(1.0)
        logs = responses[i]["extra_logs"]
        assert (logs["tool_calls"], logs["steps"], logs["criteria_pass_rate"]) == (len(oracle) - 1,
                                                                           len(oracle), 1.0)


def test_tool_results_are_the_chat_template_delta_and_tensors_are_what_openrlhf_builds(lm, tasks):
    model, tokenizer = lm
    task = tasks[0]
    record = prompt_record(task, "gateway", tokenizer)
    oracle = oracle_actions(task, "gateway")
    rollout = TinyRollout(AgentExecutor(settings=GATEWAY), model, tokenizer)
    rollout.expect(record["prompt"], [oracle])
    (response,) = run(rollout, record, 1)
    tokens, ranges = response["observation_tokens"], response["action_ranges"]
    env, _ = replay(task, oracle)
    tool_turns: list[list[str]] = []
    for message in env.messages[2:]:
        if message["role"] == "assistant":
            tool_turns.append([])
        elif message["role"] == "tool":
            tool_turns[-1].append(message["content"])
    for (_, end), (start, _), contents in zip(ranges, ranges[1:], tool_turns):
        feedback = tokenizer.decode(tokens[end:start], skip_special_tokens=False)
        assert feedback == ("\n" + "".join(f"<|im_start|>tool\n{c}{EOS}\n" for c in contents)
                            + "<|im_start|>assistant\n")
    conversation = record_messages(task)
    for action, contents in zip(oracle, tool_turns + [[]]):
        conversation.append({"role": "assistant", "content": action})
        conversation += [{"role": "tool", "content": c} for c in contents]
    rendered = tokenizer.apply_chat_template(conversation, tokenize=False)
    assert tokenizer.decode(tokens, skip_special_tokens=False) + "\n" == rendered

    experience = process_response(None, response, max_len=MAX_LEN)
    assert torch.equal(experience.rewards, torch.tensor([response["reward"]]))
    assert torch.equal(experience.scores, torch.tensor([1.0]))
    assert experience.info["group_reward"].item() == 1.0
    assert experience.info["tool_calls"].item() == len(oracle) - 1
    mask = experience.action_mask[0]
    assert mask.sum().item() == sum(b - a for a, b in ranges)
    logprobs = experience.rollout_log_probs[0]
    assert bool((logprobs[mask.bool()] < 0).all()) and bool((logprobs[~mask.bool()] == 0).all())


def record_messages(task: Task) -> list[dict[str, Any]]:
    """The exported prompt's messages (system prompt with the tool listing, request)."""
    _, info = CompoWorldEnv(mode="gateway").reset(options={"task": task})
    return with_tool_listing(info["messages"][:2], info["tools"])


def test_concurrent_prompts_form_separate_groups_and_a_group_of_one_works(lm, tasks):
    model, tokenizer = lm
    rollout = TinyRollout(AgentExecutor(settings=GATEWAY), model, tokenizer)
    records = [prompt_record(task, "gateway", tokenizer) for task in tasks]
    for record in records:
        rollout.expect(record["prompt"], [[], []])

    async def both() -> list[list[dict[str, Any]]]:
        return await asyncio.gather(*(rollout.generate_responses(
            prompt=r["prompt"], label=r["label"], sampling_params=SamplingParams(),
            max_length=MAX_LEN, hf_tokenizer=tokenizer, num_samples=2) for r in records))

    for task, group in zip(tasks, asyncio.run(both())):
        assert all(r["label"] == task.to_json() for r in group)
        passes = [[c["passed"] for c in replay(task, actions_of(r, tokenizer))[1]["rubric"]]
                  for r in group]
        expected = completion_focused(passes, [c.weight for c in task.rubric],
                                      [c.required for c in task.rubric],
                                  kinds=[c.kind for c in task.rubric])
        assert [r["reward"] for r in group] == pytest.approx(expected)
        assert [r["extra_logs"]["group_size"] for r in group] == [2, 2]

    rollout.expect(records[0]["prompt"], [oracle_actions(tasks[0], "gateway")[:1]])
    (single,) = run(rollout, records[0], 1)
    info = replay(tasks[0], actions_of(single, tokenizer))[1]
    expected = completion_focused([[c["passed"] for c in info["rubric"]]],
                                  [c.weight for c in tasks[0].rubric],
                                  [c.required for c in tasks[0].rubric],
                                  kinds=[c.kind for c in tasks[0].rubric])
    assert single["extra_logs"]["group_size"] == 1
    assert single["reward"] == pytest.approx(expected[0])


def test_a_group_that_never_fills_falls_back_to_each_episodes_rubric_score(lm, tasks, caplog):
    model, tokenizer = lm
    task = tasks[0]
    record = prompt_record(task, "gateway", tokenizer)
    executor = AgentExecutor(group_size=3, group_timeout=0.2, settings=GATEWAY)
    rollout = TinyRollout(executor, model, tokenizer)
    rollout.expect(record["prompt"], [oracle_actions(task, "gateway"), []])
    with caplog.at_level(logging.WARNING, "compoenv.integrations.openrlhf"):
        responses = run(rollout, record, 2)
    assert "COMPOENV_GROUP_TIMEOUT" in caplog.text
    for response in responses:
        own = replay(task, actions_of(response, tokenizer))[1]["rubric_score"]
        assert response["reward"] == response["scores"] == pytest.approx(own)
        assert response["extra_logs"]["group_fallback"] == 1.0
    assert len({r["reward"] for r in responses}) == 2


def test_a_failed_execution_releases_its_group_at_once(lm, tasks):
    model, tokenizer = lm
    record = prompt_record(tasks[0], "gateway", tokenizer)
    executor = AgentExecutor(group_timeout=60, settings=GATEWAY)
    rollout = TinyRollout(executor, model, tokenizer)
    rollout.expect(record["prompt"], [[]])
    calls = []

    async def flaky_generate(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("engine died")
        return await rollout.generate(*args, **kwargs)

    engine = SimpleNamespace(generate=flaky_generate)

    async def pair() -> list[Any]:
        return await asyncio.gather(*(executor.execute(
            record["prompt"], record["label"], SamplingParams(), MAX_LEN, tokenizer, engine)
            for _ in range(2)), return_exceptions=True)

    started = time.perf_counter()
    survivor, failure = sorted(asyncio.run(pair()), key=lambda r: isinstance(r, Exception))
    assert time.perf_counter() - started < 30 and isinstance(failure, RuntimeError)
    own = replay(tasks[0], actions_of(survivor, tokenizer))[1]["rubric_score"]
    assert survivor["extra_logs"]["group_fallback"] == 1.0
    assert survivor["reward"] == pytest.approx(own)


@pytest.mark.parametrize("label", ["not json", "{}", '{"id": "x", "rubric": 3}', ""])
def test_a_broken_label_ends_the_episode_with_reward_zero(lm, tasks, caplog, label):
    model, tokenizer = lm
    record = {**prompt_record(tasks[0], "gateway", tokenizer), "label": label}
    rollout = TinyRollout(AgentExecutor(settings=GATEWAY), model, tokenizer)
    rollout.expect(record["prompt"], [[], []])
    with caplog.at_level(logging.ERROR, "compoenv.integrations.openrlhf"):
        responses = run(rollout, record, 2)
    assert "not a valid task" in caplog.text
    for response in responses:
        assert response["reward"] == response["scores"] == 0.0
        assert len(response["action_ranges"]) == 1
        logs = response["extra_logs"]
        assert (logs["label_error"], logs["steps"], logs["group_fallback"]) == (1.0, 0.0, 0.0)


def family_template(name: str) -> str:
    """A model family's own chat template, as TRL ships it (chat_templates/<name>.jinja)."""
    spec = importlib.util.find_spec("trl")
    if spec is None or spec.origin is None:
        pytest.skip("the model families' chat templates come from TRL")
    return (Path(spec.origin).parent / "chat_templates" / f"{name}.jinja").read_text("utf-8")


def instance_with(tokenizer: Any, template: str, task: Task, mode: str = "direct") -> AgentInstance:
    tokenizer = copy.deepcopy(tokenizer)
    tokenizer.chat_template = template
    instance = AgentInstance(tokenizer=tokenizer, settings=Settings(mode=mode))
    prompt = prompt_record(task, mode, tokenizer)["prompt"]
    asyncio.run(instance.reset({"observation": prompt, "label": task.to_json()}))
    return instance


def test_qwen_feedback_groups_the_results_of_several_calls_into_one_user_turn(lm, tasks):
    from compoenv.actions import ToolCall, render_calls

    task, qwen = tasks[1], family_template("qwen2_5")
    calls = [ToolCall(c.name, c.arguments, f"call_{i}") for i, c in enumerate(task.solution)]
    instance = instance_with(lm[1], qwen, task)
    step = asyncio.run(instance.step({"action_text": render_calls(calls, "hermes") + EOS}))
    contents = [m["content"] for m in instance.env.messages if m["role"] == "tool"]
    assert len(contents) == len(calls) >= 2 and not step["done"]
    assert step["environment_feedback"] == (
        "\n<|im_start|>user" + "".join(f"\n<tool_response>\n{c}\n</tool_response>"
                                       for c in contents) + "<|im_end|>\n<|im_start|>assistant\n")
    assert step["rewards"].item() == 0.0 and step["extra_logs"]["tool_calls"] == len(calls)
    # an action cut short before its end-of-turn token gets the whole closing prepended
    cut = instance_with(lm[1], qwen, task)
    step = asyncio.run(cut.step({"action_text": render_calls(calls[:1], "hermes")}))
    assert step["environment_feedback"].startswith("<|im_end|>\n<|im_start|>user\n<tool_resp")
    final = asyncio.run(cut.step({"action_text": "No idea." + EOS}))
    assert final["done"] and final["environment_feedback"] == ""
    assert final["rewards"].item() == pytest.approx(cut.outcome.rubric_score)
    assert cut.outcome.rubric_score < 1.0


def test_a_template_that_rewrites_the_end_of_a_turn_is_refused_with_a_clear_error(lm, tasks):
    from compoenv.integrations.openrlhf import TemplateError

    rewriting = (  # marks an assistant turn once anything follows it
        "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] }}"
        "{% if m['role'] == 'assistant' and not loop.last %}{{ ' [answered]' }}{% endif %}"
        "{{ '<|im_end|>\\n' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
    instance = instance_with(lm[1], rewriting, tasks[1])
    action = oracle_actions(tasks[1], "direct")[0]
    with pytest.raises(TemplateError, match="end of an assistant turn differently"):
        asyncio.run(instance.step({"action_text": action + EOS}))


@pytest.mark.parametrize("family, renders_raw_turns", [
    ("qwen2_5", True), ("qwen3_instruct_2507", True), ("llama3_1", True), ("lfm2", True),
    ("qwen3", False), ("deepseekv3", False), ("glm4moe", False), ("nemotron_3_nano", False)])
def test_real_model_families_get_their_own_tool_turns(lm, tasks, family, renders_raw_turns):
    """With templates that render an assistant turn's raw text as its content, the whole token
    stream is the template's render of the conversation; for all, each tool turn carries the
    results and ends with the template's generation prompt."""
    template = family_template(family)
    instance = instance_with(lm[1], template, tasks[0], mode="gateway")
    render = instance.tokenizer.apply_chat_template
    info = CompoWorldEnv(mode="gateway").reset(options={"task": tasks[0]})[1]
    prompt = render(info["messages"][:2], tools=info["tools"], add_generation_prompt=True,
                    tokenize=False)
    closing, text, conversation = instance.closing(), prompt, list(info["messages"][:2])
    for action in oracle_actions(tasks[0], "gateway"):
        start = len(instance.env.messages)
        step = asyncio.run(instance.step({"action_text": action + closing}))
        text += action + closing + step["environment_feedback"]
        conversation.append({"role": "assistant", "content": action})
        conversation += instance.env.messages[start + 1:]
        for message in instance.env.messages[start + 1:]:
            assert json.dumps(message["content"])[1:-1] in step["environment_feedback"] or \
                message["content"] in step["environment_feedback"]
        if not step["done"]:
            grown = render(conversation, tools=info["tools"], tokenize=False,
                           add_generation_prompt=True)
            prompt_part = grown[len(render(conversation, tools=info["tools"], tokenize=False)):]
            assert step["environment_feedback"].endswith(prompt_part)
    assert step["done"] and instance.outcome.rubric_score == 1.0
    if renders_raw_turns:
        assert text == render(conversation, tools=info["tools"], tokenize=False)
    if family == "glm4moe":  # GLM ends a calling turn with the tool turn's own opening token
        again = instance_with(lm[1], template, tasks[0], mode="gateway")
        action = oracle_actions(tasks[0], "gateway")[0] + "<|observation|>"
        feedback = asyncio.run(again.step({"action_text": action}))["environment_feedback"]
        assert feedback.startswith("\n<tool_response>")


def test_the_instance_needs_a_tokenizer_outside_the_executor():
    with pytest.raises(RuntimeError, match="AgentExecutor"):
        AgentInstance()


def test_the_agent_file_loads_the_way_openrlhf_loads_it(monkeypatch):
    monkeypatch.setenv("COMPOENV_GROUP_SIZE", "8")
    monkeypatch.setenv("COMPOENV_MODE", "gateway")
    executor = load_agent_executor(str(ROOT / "rl" / "openrlhf_agent.py"))
    assert isinstance(executor, MultiTurnAgentExecutor) and isinstance(executor, AgentExecutor)
    assert executor.agent_instance_cls is AgentInstance
    assert (executor.settings.group_size, executor.settings.mode) == (8, "gateway")


@pytest.mark.parametrize("name, value", [("COMPOENV_GROUP_SIZE", "eight"),
                                         ("COMPOENV_GROUP_SIZE", "0"),
                                         ("COMPOENV_GROUP_TIMEOUT", "-1"),
                                         ("COMPOENV_MAX_STEPS", "1.5"),
                                         ("COMPOENV_MODE", "mcp")])
def test_bad_settings_in_the_environment_name_the_variable(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=name):
        AgentExecutor()
