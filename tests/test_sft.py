"""SFT data: verified trajectories in the trajectory format of docs/architecture.md, with thoughts, loadable and renderable."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from compoenv.agents import OracleAgent, RandomAgent
from compoenv.cli import main
from compoenv.compose.verify import oracle_message
from compoenv.rollout import AgentFactory, run_rollouts
from compoenv.sft import add_thoughts, filter_trajectories, keep_passing, oracle_sft
from compoenv.task import Call, Task, save_tasks
from compoenv.trajectory import (Trajectory, TrajectoryFileError, chat_inputs, load_trajectories,
                                 save_trajectories)

META_KEYS = {"task_id", "rollout_idx", "rubric_score", "score", "n_tool_calls", "n_steps",
             "services", "domain", "capabilities", "finish_reason"}


@pytest.fixture(scope="module")
def tasks(tasks50: list[Task]) -> list[Task]:
    return tasks50[:8]


@pytest.fixture(scope="module")
def direct(tasks: list[Task]) -> list[dict[str, Any]]:
    records, counts = oracle_sft(tasks, mode="direct")
    assert counts == {"episodes": 8, "passed": 8, "failed": 0, "failed_tasks": [],
                      "unverified": {}}
    return records


def test_records_have_exactly_the_design_format(direct, tasks):
    for record, task in zip(direct, tasks):
        assert set(record) == {"tools", "messages", "meta", "source"}
        assert META_KEYS <= set(record["meta"]) and record["meta"]["task_id"] == task.id
        assert record["meta"]["score"] == 1.0 and record["source"] == "compoenv-oracle"
        for message in record["messages"]:
            keys = {"system": {"role", "content"}, "user": {"role", "content"},
                    "tool": {"role", "tool_call_id", "name", "content"},
                    "assistant": {"role", "content", "reasoning_content", "tool_calls"}}
            assert set(message) <= keys[message["role"]]
            assert isinstance(message["content"], str)
            for call in message.get("tool_calls", []):
                assert set(call) == {"id", "type", "function"} and call["type"] == "function"
                assert isinstance(call["function"]["arguments"], dict)  # as published
        Trajectory.model_validate(record)


def test_only_passing_oracle_trajectories_are_kept(tasks):
    broken = tasks[1].model_copy(update={"solution": [
        Call(name=c.name, arguments={k: v + "x" if isinstance(v, str) else v
                                     for k, v in c.arguments.items()})
        for c in tasks[1].solution]})
    records, counts = oracle_sft([tasks[0], broken, tasks[2]])
    assert [r["meta"]["task_id"] for r in records] == [tasks[0].id, tasks[2].id]
    # verification catches the broken task before it is played
    assert list(counts["unverified"]) == [broken.id] and "oracle_fails" in \
        counts["unverified"][broken.id]
    records, counts = oracle_sft([tasks[0], broken, tasks[2]], verify=False)
    assert [r["meta"]["task_id"] for r in records] == [tasks[0].id, tasks[2].id]
    assert counts["failed"] == 1 and counts["failed_tasks"] == [broken.id]


def test_every_assistant_turn_has_a_thought_derived_from_its_call(direct, tasks):
    for record, task in zip(direct, tasks):
        turns = [m for m in record["messages"] if m["role"] == "assistant"]
        thoughts = [m["reasoning_content"] for m in turns]
        assert all(t and len(t) < 400 for t in thoughts)
        assert len(set(thoughts)) == len(thoughts)  # no two turns say the same thing
        for turn, call in zip(turns, task.solution):
            stated = [v for v in call.arguments.values() if isinstance(v, str) and v]
            assert all(v in turn["reasoning_content"] for v in stated), turn
        assert turns[-1]["content"] == oracle_message(task)


def test_thought_wording_varies_between_tasks_and_is_reproducible(direct, tasks):
    openers = {m["reasoning_content"].split(" ")[0] for r in direct for m in r["messages"]
               if m["role"] == "assistant"}
    assert len(openers) >= 4
    again, _ = oracle_sft(tasks[:3], mode="direct")
    assert again == direct[:3]


def test_a_value_found_by_an_earlier_call_is_attributed_to_it(direct):
    sentences = [m["reasoning_content"] for r in direct for m in r["messages"][3:]
                 if m["role"] == "assistant" and m.get("tool_calls")]
    assert any("__" in s and ("result" in s or "returned" in s or "gave me" in s)
               for s in sentences)


def test_content_style_puts_thoughts_before_the_calls_and_keeps_the_answer(direct):
    record = add_thoughts({**direct[0], "messages": [
        {k: v for k, v in m.items() if k != "reasoning_content"} for m in direct[0]["messages"]]},
        style="content")
    turns = [m for m in record["messages"] if m["role"] == "assistant"]
    assert all("reasoning_content" not in m for m in turns)
    assert all(m["content"] for m in turns[:-1])
    assert turns[-1]["content"] == direct[0]["messages"][-1]["content"]
    with pytest.raises(ValueError, match="style must be one of"):
        add_thoughts(direct[0], style="loud")


@pytest.fixture(scope="module")
def mixed_file(tmp_path_factory, tasks, direct) -> Any:
    """Direct and gateway modes, reasoning/content/no thoughts, one or two calls per turn."""
    gateway, _ = oracle_sft(tasks[:4], mode="gateway", style="content")
    plain, _ = oracle_sft(tasks[4:], mode="direct", style="none")
    batched = keep_passing(run_rollouts(tasks[:3], AgentFactory(OracleAgent, {"per_action": 2}),
                                        source="agent"))
    path = tmp_path_factory.mktemp("sft") / "sft.jsonl"
    assert save_trajectories(direct + gateway + plain + batched, path) == 8 + 4 + 4 + 3
    return path


def test_the_file_loads_with_datasets(mixed_file):
    datasets = pytest.importorskip("datasets")
    rows = datasets.load_dataset("json", data_files=str(mixed_file), split="train")
    assert rows.num_rows == 19
    assert rows[0]["meta"]["score"] == 1.0
    for row, model in zip(rows, load_trajectories(mixed_file)):
        messages, tools = chat_inputs(row)
        assert messages == chat_inputs(model)[0] and tools == chat_inputs(model)[1]


def test_rows_render_through_a_chat_template_with_tools(mixed_file, tasks):
    datasets = pytest.importorskip("datasets")
    transformers = pytest.importorskip("transformers")
    from compoenv.tiny_lm import tiny_lm_path

    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_lm_path(chat_template="qwen3"))
    rows = datasets.load_dataset("json", data_files=str(mixed_file), split="train")
    for row in rows:
        for parse in (False, True):
            messages, tools = chat_inputs(row, parse_arguments=parse)
            text = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False)
            assert text.count('<tool_call>\n{"name": "') == row["meta"]["n_tool_calls"]
            assert all(json.dumps(t["function"]["name"]) in text for t in tools)
    first = tokenizer.apply_chat_template(*chat_inputs(rows[0]), tokenize=False)
    assert rows[0]["messages"][2]["reasoning_content"] in first
    assert "<think>" in first and tasks[0].instruction in first


def test_keep_passing_filters_any_agents_trajectories(tasks, tmp_path):
    runs = run_rollouts(tasks[:4], AgentFactory(RandomAgent, seed=1)) + run_rollouts(tasks[:2])
    assert sum(r["meta"]["score"] for r in runs) == 2.0
    assert [r["meta"]["task_id"] for r in keep_passing(runs)] == [t.id for t in tasks[:2]]
    partial = max(runs[:4], key=lambda r: r["meta"]["rubric_score"])
    save_trajectories(runs, tmp_path / "runs.jsonl")
    kept, counts = filter_trajectories([tmp_path / "runs.jsonl"], min_rubric_score=1.0)
    assert counts == {"read": 6, "passed": 2, "failed": 4} and len(kept) == 2
    assert partial["meta"]["score"] == 0.0


def _bad(record: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    data = json.loads(json.dumps(record))
    *keys, last = path.split(".")
    node = data
    for key in keys:
        node = node[int(key) if key.isdigit() else key]
    if value is KeyError:
        del node[last]
    else:
        node[int(last) if last.isdigit() else last] = value
    return data


@pytest.mark.parametrize("path, value, message", [
    ("messages.2.tool_calls.0.function.arguments", 5, "arguments must be a JSON object or its"),
    ("messages.4.tool_calls.0.id", "call_0", "tool call id 'call_0' is used again"),
    ("meta.n_real_tool_calls", 0, "meta.n_real_tool_calls is 0 but the messages hold"),
    ("messages.1.content", None, "valid string"),
    ("messages.3.tool_call_id", "call_9", "does not call"),
    ("messages.3.name", "other", "differs from the called function"),
    ("meta.score", 0.5, "score is the binary outcome"),
    ("meta.n_tool_calls", 99, "meta.n_tool_calls is 99"),
    ("messages.0.role", "robot", "robot"),
    ("messages.2.tool_calls.0.type", "code", "'function'"),
    ("source", KeyError, "source"),
])
def test_malformed_records_are_rejected_with_the_reason(direct, path, value, message):
    with pytest.raises(ValidationError, match=message):
        Trajectory.model_validate(_bad(direct[0], path, value))


def test_a_bad_line_names_the_file_line_and_field(direct, tmp_path):
    path = tmp_path / "bad.jsonl"
    lines = [json.dumps(direct[0]), json.dumps(_bad(direct[1], "meta.score", 2))]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TrajectoryFileError, match=r"bad.jsonl:2: field 'meta.score'"):
        load_trajectories(path)


def test_cli_writes_verified_trajectories_from_composed_tasks(tmp_path):
    out = tmp_path / "sft.jsonl"
    result = CliRunner().invoke(main, ["sft", "--num", "3", "--seed", "5", "-o", str(out),
                                       "--mode", "gateway", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["written"] == 3 and summary["oracle"]["passed"] == 3
    records = load_trajectories(out)
    assert {t.function.name for r in records for t in r.tools} >= {"call_tool", "list_tools"}


def test_cli_merges_a_task_file_and_passing_trajectories(tasks, tmp_path):
    save_tasks(tasks[:2], tmp_path / "tasks.jsonl")
    save_trajectories(run_rollouts(tasks[2:5], AgentFactory(RandomAgent, seed=3)) +
                      run_rollouts(tasks[5:6]), tmp_path / "runs.jsonl")
    out = tmp_path / "sft.jsonl"
    result = CliRunner().invoke(main, ["sft", "--tasks", str(tmp_path / "tasks.jsonl"),
                                       "--trajectories", str(tmp_path / "runs.jsonl"),
                                       "--thoughts", "none", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "3 verified trajectories" in result.output and "4 read" in result.output
    ids = [r.meta.task_id for r in load_trajectories(out)]
    assert ids == [tasks[0].id, tasks[1].id, tasks[5].id]


@pytest.mark.parametrize("args, message", [
    (["--num", "2", "--tasks", "{tasks}"], "give --tasks FILE or --num N, not both"),
    (["--min-rubric-score", "0.5"], "only applies to --trajectories"),
    (["--trajectories", "{tasks}"], "tasks.jsonl:1: field"),
])
def test_cli_rejects_bad_input_with_a_clear_message(tasks, tmp_path, args, message):
    save_tasks(tasks[:1], tmp_path / "tasks.jsonl")
    args = [a.format(tasks=tmp_path / "tasks.jsonl") for a in args]
    result = CliRunner().invoke(main, ["sft", "-o", str(tmp_path / "o.jsonl"), *args])
    assert result.exit_code != 0 and message in result.output, result.output


def test_cli_an_unbuildable_world_model_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.delenv("COMPOENV_LLM_BASE_URL", raising=False)
    result = CliRunner().invoke(main, ["sft", "--num", "1", "-o", str(tmp_path / "o.jsonl"),
                                       "--world-model", "endpoint"])
    assert result.exit_code == 2 and "COMPOENV_LLM_BASE_URL" in result.output
