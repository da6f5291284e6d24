"""``compoenv export openrlhf`` and ``openrlhf-sft``: files OpenRLHF's own dataset code reads,
and the launch scripts in rl/ that pass them to OpenRLHF's trainers."""

from __future__ import annotations

import argparse
import ast
import json
import re
import shlex
import subprocess
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

from compoenv.agents import OracleAgent
from compoenv.cli import main
from compoenv.compose import Composer, ComposerConfig
from compoenv.env import CompoWorldEnv
from compoenv.rollout import run_episode
from compoenv.task import Task, save_tasks

TOOLS_TEMPLATE = (  # renders ``tools`` itself, the way tool-calling models' templates do
    "{%- if tools %}<|im_start|>system\n# Tools\n{% for t in tools %}{{ t.function.name }}\n"
    "{% endfor %}<|im_end|>\n{% endif %}"
    "{% for m in messages %}{{ '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    return list(Composer(config=ComposerConfig(min_hops=2, max_hops=3)).generate(3, seed=2))


@pytest.fixture()
def tasks_file(tasks: list[Task], tmp_path: Path) -> Path:
    path = tmp_path / "tasks.jsonl"
    save_tasks(tasks, path)
    return path


@pytest.fixture(scope="module")
def tokenizer_path() -> Path:
    pytest.importorskip("transformers")
    from compoenv.tiny_lm import tiny_lm_path

    return tiny_lm_path()


def export(*args: str) -> tuple[Any, list[dict[str, Any]]]:
    result = CliRunner().invoke(main, ["export", *args])
    out = Path(args[args.index("-o") + 1])
    lines = out.read_text().splitlines() if result.exit_code == 0 else []
    return result, [json.loads(line) for line in lines]


def env_view(task: Task, mode: str) -> dict[str, Any]:
    return CompoWorldEnv(mode=mode).reset(options={"task": task})[1]


def test_messages_export_lists_the_env_tools_and_carries_the_task_as_label(tasks, tasks_file,
                                                                           tmp_path):
    result, records = export("openrlhf", "--tasks", str(tasks_file), "-o",
                             str(tmp_path / "p.jsonl"))
    assert result.exit_code == 0, result.output
    assert "--data.label_key label --data.apply_chat_template" in result.output
    assert len(records) == len(tasks)
    for task, record in zip(tasks, records):
        info = env_view(task, "direct")
        system, user = record["prompt"]
        assert system["content"].startswith(info["messages"][0]["content"] + "\n\n# Tools")
        assert all(json.dumps(t, separators=(",", ":")) in system["content"]
                   for t in info["tools"])
        assert user == info["messages"][1]
        assert Task.coerce(record["label"]) == task and record["mode"] == "direct"


def test_openrlhfs_prompt_dataset_renders_the_messages_and_reads_the_label(tasks_file, tmp_path,
                                                                            tokenizer_path):
    from transformers import AutoTokenizer

    prompts = pytest.importorskip("openrlhf.datasets.prompts_dataset")
    datasets = pytest.importorskip("datasets")
    out = tmp_path / "p.jsonl"
    assert export("openrlhf", "--tasks", str(tasks_file), "-o", str(out))[0].exit_code == 0
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_path)
    rows = datasets.load_dataset("json", data_files=str(out), split="train")
    for row in rows:
        prompt, label = prompts.preprocess_data(row, input_key="prompt", label_key="label",
                                                apply_chat_template=tokenizer.apply_chat_template)
        assert prompt.startswith("<|im_start|>system\nYou are a capable assistant")
        assert "<tools>" in prompt and prompt.endswith("<|im_start|>assistant\n")
        assert Task.coerce(label).id == row["task_id"]


def test_tokenizer_export_renders_tools_with_the_template_or_in_the_system_turn(
        tasks, tasks_file, tmp_path, tokenizer_path):
    from transformers import AutoTokenizer

    result, plain = export("openrlhf", "--tasks", str(tasks_file), "-o", str(tmp_path / "a.jsonl"),
                           "--tokenizer", str(tokenizer_path), "--mode", "gateway")
    assert result.exit_code == 0, result.output
    assert "--data.apply_chat_template" not in result.output
    info = env_view(tasks[0], "gateway")
    names = [t["function"]["name"] for t in info["tools"]]
    assert names == ["list_services", "list_tools", "describe_tool", "call_tool"]
    # this template ignores `tools`, so the listing goes into the system message
    assert plain[0]["prompt"].count("# Tools\n") == 1 and '"name":"call_tool"' in plain[0]["prompt"]
    assert plain[0]["prompt"].endswith("<|im_start|>assistant\n") and plain[0]["mode"] == "gateway"

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_path)
    tokenizer.chat_template = TOOLS_TEMPLATE
    tokenizer.save_pretrained(tmp_path / "tok")
    _, native = export("openrlhf", "--tasks", str(tasks_file), "-o", str(tmp_path / "b.jsonl"),
                       "--tokenizer", str(tmp_path / "tok"))
    prompt = native[0]["prompt"]
    direct = [t["function"]["name"] for t in env_view(tasks[0], "direct")["tools"]]
    assert prompt.startswith("<|im_start|>system\n# Tools\n" + "\n".join(direct) + "\n")
    assert "<tools>" not in prompt


def test_export_errors_name_the_line_or_the_tokenizer(tasks, tmp_path, tokenizer_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(tasks[0].to_json() + "\n{not json\n")
    result, _ = export("openrlhf", "--tasks", str(bad), "-o", str(tmp_path / "o.jsonl"))
    assert result.exit_code == 1 and f"{bad}:2: invalid JSON" in result.output
    result, _ = export("openrlhf", "--tasks", str(bad), "-o", str(tmp_path / "o.jsonl"),
                       "--tokenizer", str(tmp_path / "missing"))
    assert result.exit_code == 1 and "cannot load tokenizer" in result.output

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_path)
    tokenizer.chat_template = None
    tokenizer.save_pretrained(tmp_path / "plain")
    result, _ = export("openrlhf", "--tasks", str(bad), "-o", str(tmp_path / "o.jsonl"),
                       "--tokenizer", str(tmp_path / "plain"))
    assert result.exit_code == 1 and "has no chat template" in result.output


def test_sft_export_feeds_openrlhfs_multiturn_sft_dataset(tasks, tmp_path, tokenizer_path):
    from transformers import AutoTokenizer

    from compoenv.actions import parse_action

    sft_dataset = pytest.importorskip("openrlhf.datasets.sft_dataset")
    datasets = pytest.importorskip("datasets")
    env = CompoWorldEnv(tasks)
    trajectories = [run_episode(env, OracleAgent(), options={"index": i})
                    for i in range(len(tasks))]
    source = tmp_path / "sft.jsonl"
    source.write_text("".join(json.dumps(t) + "\n" for t in trajectories))
    result, records = export("openrlhf-sft", "--sft", str(source), "-o", str(tmp_path / "s.jsonl"))
    assert result.exit_code == 0, result.output
    _, structured = export("openrlhf-sft", "--sft", str(source), "-o", str(tmp_path / "t.jsonl"),
                           "--calls", "structured")
    for trajectory, record, kept in zip(trajectories, records, structured):
        assert list(record) == ["messages"] and kept["messages"][1:] == trajectory["messages"][1:]
        assert record["messages"][0]["content"].count("# Tools\n") == 1
        for mine, theirs in zip(record["messages"][1:], trajectory["messages"][1:]):
            assert "tool_calls" not in mine  # the calls are in the text, as the policy writes them
            parsed = parse_action(mine["content"]).calls if mine["role"] == "assistant" else ()
            assert [(c.name, c.arguments) for c in parsed] == [
                (c["function"]["name"], json.loads(c["function"]["arguments"]))
                for c in theirs.get("tool_calls") or ()]

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_path)
    data = SimpleNamespace(input_key="messages", output_key=None, apply_chat_template=True,
                           tokenizer_chat_template=None)
    dataset = sft_dataset.SFTDataset(datasets.Dataset.from_list(records), tokenizer, 16384,
                                     SimpleNamespace(args=SimpleNamespace(data=data)),
                                     num_processors=1, multiturn=True)
    assert len(dataset) == len(records)
    for ranges, record in zip(dataset.response_ranges, records):
        assert len(ranges) == sum(m["role"] == "assistant" for m in record["messages"])
    input_ids, _, loss_mask = dataset[0]
    trained = tokenizer.decode(input_ids[0][loss_mask[0].roll(1).bool()])
    assert "<tool_call>" in trained and "<tool_response>" not in trained
    assert "Request" not in trained and 0 < loss_mask.sum().item() < loss_mask.numel()


def test_sft_export_errors_name_the_line(tmp_path):
    source = tmp_path / "sft.jsonl"
    source.write_text('{"messages": [{"role": "user", "content": "hi"}]}\n')
    result, _ = export("openrlhf-sft", "--sft", str(source), "-o", str(tmp_path / "s.jsonl"))
    assert result.exit_code == 1 and f"{source}:1: not a trajectory: field 'tools'" in result.output
    source.write_text('\n{"tools": []}\n')
    result, _ = export("openrlhf-sft", "--sft", str(source), "-o", str(tmp_path / "s.jsonl"))
    assert result.exit_code == 1 and f"{source}:2: not a trajectory" in result.output
    source.write_bytes(b"\x1f\x8b\x08\x00\xff\xfe")
    result, _ = export("openrlhf-sft", "--sft", str(source), "-o", str(tmp_path / "s.jsonl"))
    assert result.exit_code == 1 and "not UTF-8 text" in result.output
    source.write_text("")
    result, _ = export("openrlhf-sft", "--sft", str(source), "-o", str(tmp_path / "s.jsonl"))
    assert result.exit_code == 1 and "holds no trajectories" in result.output
    assert not (tmp_path / "s.jsonl").exists()


def openrlhf_parser(relpath: str) -> argparse.ArgumentParser:
    """The argument parser an OpenRLHF CLI builds under ``if __name__ == "__main__"``."""
    openrlhf = pytest.importorskip("openrlhf")
    path = Path(openrlhf.__file__).parent / relpath
    tree = ast.parse(path.read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n))
    body = []
    for statement in block.body:
        if "parse_args" in ast.unparse(statement):
            break
        body.append(statement)
    namespace: dict[str, Any] = {"argparse": argparse, "datetime": datetime}
    exec(compile(ast.Module(body, []), str(path), "exec"), namespace)
    parser = namespace["parser"]
    parser.allow_abbrev = False  # a flag must be spelled exactly as OpenRLHF defines it
    return parser


def script_arguments(script: Path, module: str) -> list[str]:
    """The arguments a launch script passes to ``module``, its variables at their defaults."""
    text = script.read_text(encoding="utf-8")
    defaults = dict(re.findall(r'^(?:export )?(\w+)="\$\{\1:-([^}]*)\}"', text, re.MULTILINE))
    command = next(line for line in text.replace("\\\n", " ").splitlines() if module in line)
    words = shlex.split(command.split(module, 1)[1], comments=True)
    return [re.sub(r"\$\{?(\w+)\}?", lambda m: defaults.get(m[1], "x"), w)
            for w in words if w != "$@"]


@pytest.mark.parametrize("script, module", [("train_grpo.sh", "openrlhf.cli.train_ppo_ray"),
                                            ("train_sft.sh", "openrlhf.cli.train_sft")])
def test_launch_scripts_use_only_flags_openrlhf_defines(script, module):
    path = Path(__file__).resolve().parents[1] / "rl" / script
    subprocess.run(["bash", "-n", str(path)], check=True)
    text = path.read_text(encoding="utf-8")
    assert text.startswith("#!/usr/bin/env bash\n") and "\nset -euo pipefail\n" in text
    parser = openrlhf_parser(module.replace("openrlhf.", "").replace(".", "/") + ".py")
    words = script_arguments(path, module)
    args, unknown = parser.parse_known_args(words)
    assert unknown == [], f"{script} passes flags {module} does not define: {unknown}"
    args = vars(args)
    if module.endswith("ppo_ray"):
        assert args["algo.advantage.estimator"] == "group_norm"
        assert args["rollout.n_samples_per_prompt"] == 8 and args["vllm.num_engines"] >= 1
        assert args["train.agent_func_path"].endswith("rl/openrlhf_agent.py")
        assert (args["data.input_key"], args["data.label_key"]) == ("prompt", "label")
    else:
        assert args["data.multiturn"] and args["data.apply_chat_template"]
        assert args["data.input_key"] == "messages"


def test_export_verl_writes_rows_of_verified_tasks_and_refuses_other_formats(tasks, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "tasks.jsonl"
    save_tasks(tasks, path)
    out = tmp_path / "train.parquet"
    result = CliRunner().invoke(main, ["export", "verl", "--tasks", str(path), "-o", str(out)])
    assert result.exit_code == 0, result.output
    rows = pq.read_table(out).to_pylist()
    assert [r["extra_info"]["task_id"] for r in rows] == [t.id for t in tasks]
    assert {r["agent_name"] for r in rows} == {"compoenv"}
    bad = CliRunner().invoke(main, ["export", "verl", "--tasks", str(path), "-o",
                                    str(tmp_path / "train.csv")])
    assert bad.exit_code != 0 and "write a .parquet or .jsonl file" in bad.output
    assert "Traceback" not in bad.output
