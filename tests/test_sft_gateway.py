"""Gateway-mode SFT trajectories discover before they act, with the gateway's real answers;
tool-call ids, argument forms and call counts as in the published trajectory format."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from compoenv.agents import OracleAgent
from compoenv.cli import main
from compoenv.compose.config import ComposerConfig
from compoenv.compose.generator import Composer
from compoenv.agents.oracle import oracle_plan
from compoenv.env import CompoWorldEnv, steps_for
from compoenv.registry import Registry
from compoenv.rollout import run_episode
from compoenv.scenarios import resolve
from compoenv.service import split_qualified
from compoenv.sft import oracle_sft
from compoenv.task import Task
from compoenv.trajectory import Trajectory, arguments_as, load_trajectories, save_trajectories

DISCOVERY = ("list_services", "list_tools", "describe_tool")


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    """Tasks with distractor services beside their own, one tool used twice in some."""
    config = ComposerConfig(min_hops=2, max_hops=4, distractors=3)
    return list(Composer(config=config).generate(6, seed=11))


@pytest.fixture(scope="module")
def gateway(tasks: list[Task]) -> list[dict[str, Any]]:
    records, counts = oracle_sft(tasks, mode="gateway")
    assert counts["passed"] == len(tasks)
    return records


def calls_of(record: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(c["function"]["name"], c["function"]["arguments"]) for m in record["messages"]
            if m["role"] == "assistant" for c in m.get("tool_calls") or ()]


def results_of(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(m["content"]) for m in record["messages"] if m["role"] == "tool"]


def test_gateway_trajectories_list_services_then_list_and_describe_before_first_use(
        gateway, tasks):
    for record, task in zip(gateway, tasks):
        assert task.distractors  # there is something not to list
        calls = calls_of(record)
        assert calls[0] == ("list_services", {})
        assert [n for n, _ in calls].count("list_services") == 1
        listed: list[str] = []
        described: list[str] = []
        played = []
        for name, args in calls[1:]:
            if name == "list_tools":
                listed.append(args["service"])
            elif name == "describe_tool":
                described.append(args["tool"])
            else:
                assert name == "call_tool"
                tool = args["tool_name"]
                assert split_qualified(tool)[0] in listed, f"{tool} called before its service " \
                                                           f"was listed"
                assert tool in described, f"{tool} called before describe_tool"
                played.append((tool, args["arguments"]))
        assert played == [(c.name, c.arguments) for c in task.solution]
        used = list(dict.fromkeys(split_qualified(c.name)[0] for c in task.solution))
        assert listed == used  # each used service once, in order of use; no distractor
        assert not set(listed) & set(task.distractors)
        assert described == list(dict.fromkeys(c.name for c in task.solution))


def test_discovery_results_are_the_gateways_answers(gateway, tasks):
    registry = Registry.default()
    for record, task in zip(gateway, tasks):
        results = results_of(record)
        assert all(r["success"] for r in results)
        services = results[0]["data"]["services"]
        assert set(services) == set(task.services) | set(task.distractors)
        for (name, args), result in zip(calls_of(record), results):
            if name == "list_tools":
                cls = registry.get(args["service"])
                assert [t["name"] for t in result["data"]["tools"]] == \
                    [s.qualified_name for s in cls.tool_specs().values()]
            elif name == "describe_tool":
                spec = next(s for s in registry.tools([split_qualified(args["tool"])[0]])
                            if s.qualified_name == args["tool"])
                assert result["data"] == json.loads(json.dumps(spec.to_openai()["function"]))


@pytest.mark.parametrize("form", ["object", "string"])
def test_an_exported_gateway_trajectory_replays_through_the_env_to_full_marks(gateway, tasks,
                                                                              form):
    for record, task in zip(gateway[:3], tasks):
        record = arguments_as(record, form)
        env = CompoWorldEnv(mode="gateway", max_steps=len(record["messages"]))
        _, info = env.reset(options={"task": task})
        terminated = False
        for msg in record["messages"]:
            if msg["role"] == "assistant":
                action = {k: v for k, v in msg.items() if k != "reasoning_content"}
                _, reward, terminated, _, info = env.step(action)
        assert terminated and reward == 1.0 and info["passed"]
        # the same conversation: ids, calls and every result, discovery included
        replayed = [m for m in info["messages"]]
        strip = [{k: v for k, v in m.items() if k != "reasoning_content"}
                 for m in arguments_as({"messages": replayed}, form)["messages"]]
        assert strip == [{k: v for k, v in m.items() if k != "reasoning_content"}
                         for m in record["messages"]]


def test_meta_counts_every_call_and_the_real_ones(gateway, tasks):
    for record, task in zip(gateway, tasks):
        services = {split_qualified(c.name)[0] for c in task.solution}
        tools = {c.name for c in task.solution}
        meta = record["meta"]
        assert meta["n_tool_calls"] == 1 + len(services) + len(tools) + len(task.solution)
        assert meta["n_real_tool_calls"] == len(task.solution)
        assert meta["discover_mode"] == "gateway"
        Trajectory.model_validate(record)


def test_direct_mode_and_no_discovery_make_no_discovery_calls(tasks):
    direct, _ = oracle_sft(tasks[:2], mode="direct")
    plain, _ = oracle_sft(tasks[:2], mode="gateway", discover=False)
    for d, p, task in zip(direct, plain, tasks):
        assert [n for n, _ in calls_of(d)] == [c.name for c in task.solution]
        assert [n for n, _ in calls_of(p)] == ["call_tool"] * len(task.solution)
        for record in (d, p):
            assert record["meta"]["n_tool_calls"] == record["meta"]["n_real_tool_calls"] == \
                len(task.solution)


def test_tool_call_ids_are_unique_within_each_conversation(gateway):
    for record in gateway:
        ids = [c["id"] for m in record["messages"] if m["role"] == "assistant"
               for c in m.get("tool_calls") or ()]
        assert len(ids) == len(set(ids)) == record["meta"]["n_tool_calls"]
        answered = [m["tool_call_id"] for m in record["messages"] if m["role"] == "tool"]
        assert answered == ids


def test_the_env_keeps_given_ids_and_renumbers_repeated_ones(tasks):
    """Text formats number calls within an action (each action's first is call_0); a model
    that repeats an id of its own gets a fresh one, in the call and in its result."""
    env = CompoWorldEnv([tasks[0]], mode="gateway")
    env.reset()
    traj = run_episode(env, OracleAgent(per_action=2, discover=True))
    ids = [c["id"] for m in traj["messages"] if m["role"] == "assistant"
           for c in m.get("tool_calls") or ()]
    assert ids == [f"call_{i}" for i in range(len(ids))]
    env.reset()
    call = {"type": "function", "function": {"name": "list_services", "arguments": "{}"}}
    for _ in range(2):
        _, _, _, _, info = env.step({"role": "assistant", "content": "",
                                     "tool_calls": [{**call, "id": "mine"}, {**call, "id": "x"}]})
    ids = [c["id"] for m in info["messages"] if m["role"] == "assistant"
           for c in m.get("tool_calls") or ()]
    assert ids == ["mine", "x", "call_2", "call_3"]
    assert [m["tool_call_id"] for m in info["messages"] if m["role"] == "tool"] == ids


def _with(record: dict[str, Any], **changes: Any) -> dict[str, Any]:
    data = json.loads(json.dumps(record))
    for where, value in changes.items():
        index, key = where.split("__")
        message = data["messages"][int(index.lstrip("m"))]
        if key == "id":
            message["tool_calls"][0]["id"] = value
        else:
            message[key] = value
    return data


def test_repeated_ids_and_false_counts_are_rejected(gateway):
    record = gateway[0]
    # messages: system, user, then (assistant, tool) pairs
    with pytest.raises(ValidationError, match=r"messages\[4\]: tool call id 'call_0' is used "
                                              r"again \(first in messages\[2\]\)"):
        Trajectory.model_validate(_with(record, m4__id="call_0", m5__tool_call_id="call_0"))
    two = json.loads(json.dumps(record))
    turn = two["messages"][2]
    turn["tool_calls"].append(dict(turn["tool_calls"][0]))
    with pytest.raises(ValidationError, match="first in this turn"):
        Trajectory.model_validate(two)
    wrong = json.loads(json.dumps(record))
    wrong["meta"]["n_real_tool_calls"] = wrong["meta"]["n_tool_calls"]
    with pytest.raises(ValidationError, match="list_services, list_tools and describe_tool "
                                              "do not count"):
        Trajectory.model_validate(wrong)


def test_arguments_are_objects_by_default_and_text_on_request(gateway, tasks, tmp_path):
    assert all(isinstance(a, dict) for r in gateway for _, a in calls_of(r))
    text, _ = oracle_sft(tasks[:2], mode="gateway", arguments="string")
    for as_text, as_object in zip(text, gateway):
        assert all(isinstance(a, str) for _, a in calls_of(as_text))
        assert [(n, json.loads(a)) for n, a in calls_of(as_text)] == calls_of(as_object)
        assert arguments_as(as_text, "object") == as_object
        assert arguments_as(as_object, "string") == as_text
    # loading accepts either form; saving writes the one asked for
    save_trajectories(text, tmp_path / "o.jsonl")
    save_trajectories(gateway[:2], tmp_path / "s.jsonl", arguments="string")
    assert [t.to_record() for t in load_trajectories(tmp_path / "o.jsonl")] == gateway[:2]
    assert [t.to_record() for t in load_trajectories(tmp_path / "s.jsonl")] == text
    with pytest.raises(ValueError, match="arguments must be one of"):
        oracle_sft(tasks[:1], arguments="yaml")


def test_a_call_the_env_could_not_parse_keeps_its_raw_text(tasks):
    env = CompoWorldEnv([tasks[0]])
    env.reset()
    env.step('<tool_call>{"name": "flights__search", "arguments": {oops</tool_call>')
    _, _, _, _, info = env.step("I give up.")
    from compoenv.rollout import episode_record

    record = episode_record(info, True, 0, "test")
    raw = calls_of(record)[0][1]
    assert isinstance(raw, str) and "oops" in raw
    assert calls_of(arguments_as(record, "object"))[0][1] == raw
    Trajectory.model_validate(arguments_as(record, "object"))


def test_cli_writes_discovering_trajectories_in_either_argument_form(tmp_path):
    for form in ("object", "string"):
        out = tmp_path / f"{form}.jsonl"
        result = CliRunner().invoke(main, ["sft", "--num", "2", "--seed", "3", "--mode",
                                           "gateway", "--arguments-as", form, "--json",
                                           "-o", str(out)])
        assert result.exit_code == 0, result.output
        summary = json.loads(result.output)
        records = [json.loads(line) for line in out.read_text().splitlines()]
        assert summary["arguments"] == form and len(records) == 2
        assert summary["tool_calls"] == sum(r["meta"]["n_tool_calls"] for r in records)
        assert summary["real_tool_calls"] == sum(r["meta"]["n_real_tool_calls"]
                                                 for r in records) < summary["tool_calls"]
        kind = dict if form == "object" else str
        assert all(isinstance(a, kind) for r in records for _, a in calls_of(r))
        assert all(calls_of(r)[0][0] == "list_services" for r in records)
    result = CliRunner().invoke(main, ["sft", "--num", "1", "--mode", "gateway",
                                       "--no-discovery", "--json", "-o",
                                       str(tmp_path / "plain.jsonl")])
    summary = json.loads(result.output)
    assert summary["tool_calls"] == summary["real_tool_calls"]


def test_the_default_gateway_step_limit_leaves_room_to_discover(tmp_path):
    """Long tasks (scenarios, as `compoenv generate` makes by default): a discovering agent
    is not cut off by the default step limit in gateway mode; direct mode keeps its limit."""
    config = ComposerConfig(scenarios=resolve("all", Registry.default().names()), distractors=3)
    # the two longest of a few: the limit matters for long tasks
    tasks = sorted(Composer(config=config).generate(8, seed=5), key=lambda t: len(t.solution))[-2:]
    gateway = CompoWorldEnv(tasks, mode="gateway")
    direct = CompoWorldEnv(tasks)
    assert direct.max_steps == max(20, max(len(t.solution) for t in tasks) + 4)
    assert gateway.max_steps > direct.max_steps
    # the direct limit would cut the discovering oracle off
    assert any(len(oracle_plan(t, True, True)) + 1 > steps_for([t]) for t in tasks)
    for i in range(len(tasks)):
        record = run_episode(gateway, OracleAgent(discover=True), options={"index": i})
        assert record["meta"]["finish_reason"] == "stop" and record["meta"]["score"] == 1.0
        assert record["meta"]["n_steps"] <= gateway.max_steps
