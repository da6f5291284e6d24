"""CompoWorldEnv: the Gymnasium contract, modes, termination, and robustness to agent input."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import compoenv
from compoenv.actions import ToolCall, render_calls
from compoenv.agents import OracleAgent, RandomAgent
from compoenv.env import CompoWorldEnv
from compoenv.task import Task, save_tasks


def play(env: CompoWorldEnv, agent, **reset_kwargs):
    obs, info = env.reset(**reset_kwargs)
    agent.reset(obs, info)
    reward, done = 0.0, False
    while not done:
        obs, reward, term, trunc, info = env.step(agent.act(obs, info))
        done = term or trunc
    return reward, info


def envelope(obs: str) -> dict:
    body = obs.split("<tool_response>\n", 1)[1].rsplit("\n</tool_response>", 1)[0]
    return json.loads(body)


def test_gym_make_registered_id_and_module_prefixed_id():
    env = gym.make("CompoWorld-v0")
    assert isinstance(env.unwrapped, CompoWorldEnv)
    env2 = gym.make("compoenv:CompoWorld-v0", mode="gateway", max_steps=5)
    assert env2.unwrapped.mode == "gateway" and env2.unwrapped.max_steps == 5


def test_gymnasium_env_checker_passes_on_unwrapped_env(tasks50):
    check_env(CompoWorldEnv(tasks50[:5]), skip_render_check=True)


def test_env_checker_passes_when_composing_tasks_at_reset():
    check_env(CompoWorldEnv(hops=(2, 3)), skip_render_check=True)


def test_reset_observation_has_system_prompt_tools_and_instruction(task):
    env = CompoWorldEnv([task])
    obs, info = env.reset(seed=0)
    assert task.instruction in obs and "<tools>" in obs and "Today is" in obs
    assert [m["role"] for m in info["messages"]] == ["system", "user"]
    assert info["task"]["id"] == task.id
    names = {t["function"]["name"] for t in info["tools"]}
    assert {c.name for c in task.solution} <= names
    assert all(n.split("__")[0] in task.services for n in names)


def test_gateway_mode_lists_four_meta_tools_and_mounts_distractors(task):
    t = task.model_copy(update={"distractors": ["weather" if "weather" not in task.services
                                                else "shop"]})
    env = CompoWorldEnv([t], mode="gateway")
    obs, info = env.reset(seed=0)
    assert [x["function"]["name"] for x in info["tools"]] == [
        "list_services", "list_tools", "describe_tool", "call_tool"]
    obs, *_ = env.step('<tool_call>{"name": "list_services", "arguments": {}}</tool_call>')
    assert set(envelope(obs)["data"]["services"]) == set(t.services) | set(t.distractors)


def test_same_seed_same_composed_task_and_observation():
    a, b = CompoWorldEnv(), CompoWorldEnv()
    assert a.reset(seed=5)[0] == b.reset(seed=5)[0]
    assert a.reset(seed=6)[0] != b.reset(seed=5)[0]


def test_tasks_from_jsonl_path_and_options_task(tmp_path, tasks50):
    path = tmp_path / "tasks.jsonl"
    save_tasks(tasks50[:3], path)
    env = CompoWorldEnv(str(path))
    _, info = env.reset(options={"index": 2})
    assert info["task"]["id"] == tasks50[2].id
    _, info = env.reset(options={"task": tasks50[7].model_dump()})
    assert info["task"]["id"] == tasks50[7].id


def test_oracle_scores_one_on_50_tasks_in_direct_and_gateway_modes(tasks50):
    for mode in ("direct", "gateway"):
        env = CompoWorldEnv(tasks50, mode=mode, max_steps=10)
        for i, t in enumerate(tasks50):
            reward, info = play(env, OracleAgent(), options={"index": i})
            assert reward == 1.0, (mode, t.id, [c for c in info["rubric"] if not c["passed"]])
            assert info["passed"] == 1.0


@pytest.mark.parametrize("fmt", ["hermes", "qwen3_coder", "json"])
def test_oracle_succeeds_in_every_action_format_with_several_calls_per_action(task, fmt):
    env = CompoWorldEnv([task])
    reward, info = play(env, OracleAgent(fmt=fmt, per_action=3))
    assert reward == 1.0


def test_openai_tool_calls_dict_is_an_action(task):
    env = CompoWorldEnv([task])
    env.reset()
    call = task.solution[0]
    obs, reward, term, trunc, info = env.step({"role": "assistant", "content": None, "tool_calls": [
        {"id": "abc", "type": "function",
         "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}]})
    assert envelope(obs)["success"] and not term
    assert info["messages"][-1]["tool_call_id"] == "abc"


def test_empty_final_answer_fails_every_required_criterion_of_the_work(task):
    env = CompoWorldEnv([task])
    env.reset()
    obs, reward, term, trunc, info = env.step("I cannot help with that.")
    assert term and not trunc and info["passed"] == 0.0 and reward == 0.0
    # the guards pass (nothing was damaged); nothing of the work does
    assert not any(c["passed"] for c in info["rubric"]
                   if c["required"] and c["kind"] != "unchanged")


def test_max_steps_truncates_and_scores(task):
    env = CompoWorldEnv([task], max_steps=2)
    env.reset()
    call = render_calls([ToolCall("nope__nothing", {}, "c")])
    _, r, term, trunc, _ = env.step(call)
    assert not (term or trunc)
    _, r, term, trunc, info = env.step(call)
    assert trunc and not term and "rubric" in info and r == info["rubric_score"]


def test_binary_reward_mode(task):
    env = CompoWorldEnv([task], reward="binary")
    reward, info = play(env, OracleAgent())
    assert reward == 1.0 == info["passed"]


def test_step_after_episode_end_does_not_raise(task):
    env = CompoWorldEnv([task])
    env.reset()
    env.step("done")
    obs, reward, term, trunc, _ = env.step("again")
    assert term and reward == 0.0 and "reset()" in obs


def test_step_before_reset_is_a_usage_error():
    with pytest.raises(gym.error.ResetNeeded):
        CompoWorldEnv().step("hi")


@pytest.mark.parametrize("kwargs, message", [
    ({"mode": "chat"}, "mode must be one of"),
    ({"reward": "dense"}, "reward must be"),
    ({"max_steps": 0}, "max_steps must be >= 1"),
    ({"tasks": []}, "tasks is empty"),
    ({"hops": (4, 2)}, "min_hops <= max_hops"),
])
def test_bad_constructor_arguments_are_explained(kwargs, message):
    with pytest.raises(ValueError, match=message):
        CompoWorldEnv(**kwargs)


BAD_ACTIONS = [
    ('<tool_call>{"name": "contacts__find_contact", "arguments": {"name": </tool_call>',
     400, "invalid JSON"),
    ('<tool_call>{"name": "nope__tool", "arguments": {}}</tool_call>', 404, "Unknown tool"),
    ('<tool_call>{"name": "{tool}", "arguments": {}}</tool_call>', 400, "missing required"),
    ('<tool_call>{"name": "{tool}", "arguments": {"zzz": 1}}</tool_call>', 400,
     "unexpected argument 'zzz'"),
    ('<tool_call>{"name": "{tool}", "arguments": [1, 2]}</tool_call>', 400, "object"),
    ('<tool_call>{"name": "{tool}", "arguments": {"{param}": {"a": [1]}}}</tool_call>', 400,
     "argument '{param}'"),
    ('<tool_call>{"name": "{tool}", "arguments": {"{param}": "' + "A" * 60_000 + '"}}'
     '</tool_call>', 400, "argument '{param}'"),
    ('<tool_call>{"name": "{tool}", "arguments": {"{param}": "' + "A" * 500_000 + '"}}'
     '</tool_call>', 422, "MAX_ARGUMENT_CHARS"),
    ("A" * (1 << 20) + "<tool_call>", 400, "over the limit"),
    ("<tool_call>" + "[" * 5000 + "</tool_call>", 400, "deep"),
    ('<tool_call>{"name": "{tool}\u0000\u202e", "arguments": {}}</tool_call>', 400,
     "control character"),
    ('<tool_call>{"name": "{tool}\\u0000\\u202e", "arguments": {}}</tool_call>', 404,
     "Unknown tool"),
    ("<tool_call>", 400, "unterminated"),
]


@pytest.mark.parametrize("template, code, needle", BAD_ACTIONS,
                         ids=[f"{i}-{needle}" for i, (_, _, needle) in enumerate(BAD_ACTIONS)])
def test_bad_actions_come_back_as_error_envelopes_and_env_stays_usable(task, template, code,
                                                                         needle):
    env = CompoWorldEnv([task])
    env.reset()
    first = task.solution[0]
    param = next(iter(first.arguments))
    action = template.replace("{tool}", first.name).replace("{param}", param)
    obs, reward, term, trunc, info = env.step(action)
    assert not term and not trunc and reward == 0.0
    result = envelope(obs)
    assert result["success"] is False and result["error"]["code"] == code, result
    assert needle.replace("{param}", param).lower() in result["error"]["message"].lower(), result
    # the env keeps working: the oracle can still finish the task
    agent = OracleAgent()
    agent.reset(obs, info)
    done = False
    while not done:
        obs, reward, term, trunc, info = env.step(agent.act(obs, info))
        done = term or trunc
    assert reward == 1.0


def test_random_agent_over_1000_steps_never_crashes_the_env(tasks50):
    for mode in ("direct", "gateway"):
        env = CompoWorldEnv(tasks50, mode=mode, max_steps=25)
        agent, steps, episodes = RandomAgent(seed=3), 0, 0
        while steps < 1000:
            obs, info = env.reset(seed=episodes)
            agent.reset(obs, info)
            done = False
            while not done:
                obs, reward, term, trunc, info = env.step(agent.act(obs, info))
                assert isinstance(obs, str) and 0.0 <= reward <= 1.0
                steps += 1
                done = term or trunc
            episodes += 1
        assert episodes > 5


def test_observations_are_ascii_text_inside_the_observation_space(task):
    env = CompoWorldEnv([task])
    obs, info = env.reset()
    assert env.observation_space.contains(obs)
    obs, *_ = env.step('<tool_call>{"name": "x\u00e9\u4e2d", "arguments": {}}</tool_call>')
    assert obs.isascii()


def test_render_ansi_returns_last_observation(task):
    env = CompoWorldEnv([task], render_mode="ansi")
    obs, _ = env.reset()
    assert env.render() == obs
    assert CompoWorldEnv([task]).render() is None


def test_env_is_importable_lazily_from_package():
    assert compoenv.CompoWorldEnv is CompoWorldEnv
    assert isinstance(compoenv.Task, type) and issubclass(compoenv.Task, Task)


def test_playing_a_given_task_imports_and_builds_only_what_it_needs(tmp_path, tasks50):
    """A fresh process that plays a task file imports no composer and no inflect, and builds
    no spec service the task does not list (what keeps its cold start short)."""
    import subprocess
    import sys

    path = tmp_path / "one.jsonl"
    save_tasks(tasks50[:1], path)
    script = (
        "import sys, gymnasium as gym, compoenv\n"
        "from compoenv.registry import Registry\n"
        f"env = gym.make('CompoWorld-v0', tasks={str(path)!r})\n"
        "env.reset(seed=0)\n"
        "registry = Registry.default()\n"
        "import json\n"
        "print(json.dumps([m for m in ('inflect', 'compoenv.compose.generator', 'networkx')"
        " if m in sys.modules]))\n"
        "print(json.dumps([n for n in registry.names() if registry.loaded(n)"
        " and registry.info(n).kind == 'spec']))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert json.loads(out[0]) == []
    assert set(json.loads(out[1])) <= set(tasks50[0].services)
