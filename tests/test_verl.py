"""verl integration: compoenv's agent loop under verl's real AgentLoopBase and AgentLoopWorker,
with a server manager faked on CPU the way verl's agent-loop tests fake it (``generate`` gives
verl's TokenOutput): the oracle's actions as tokens, or the tiny local model generating."""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("transformers")
pytest.importorskip("verl.experimental.agent_loop")

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf
from verl.experimental.agent_loop.agent_loop import (AgentLoopWorker, DictConfigWrap,
                                                     _agent_loop_registry)
from verl.protocol import DataProto
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
from verl.workers.rollout.replica import TokenOutput

from compoenv.agents import OracleAgent
from compoenv.compose import Composer, ComposerConfig
from compoenv.env import CompoWorldEnv
from compoenv.integrations.verl import CompoWorldAgentLoop, TaskRowError
from compoenv.integrations.verl_data import verl_record, write_verl_dataset
from compoenv.reward import CRITERION_KINDS, completion_focused
from compoenv.task import Task
from compoenv.tiny_lm import tiny_lm_path

# hydra 1.4 warns that verl instantiates config targets without an execution whitelist
pytestmark = pytest.mark.filterwarnings("ignore:hydra.utils.instantiate:UserWarning")

ROOT = Path(__file__).resolve().parents[1]
VERL_CONFIG = Path(importlib.util.find_spec("verl").origin).parent / "trainer" / "config"


@pytest.fixture(scope="module")
def model_path() -> str:
    return str(tiny_lm_path(chat_template="qwen3"))


@pytest.fixture(scope="module")
def tokenizer(model_path: str) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_path)


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    return list(Composer(config=ComposerConfig(min_hops=2, max_hops=2)).generate(2, seed=5))


def verl_config(model_path: str, response_length: int = 4096, **multi_turn: Any) -> DictConfig:
    """verl's own PPO trainer config (the generated defaults), sized for a tiny model."""
    config = OmegaConf.load(VERL_CONFIG / "_generated_ppo_trainer.yaml")
    config.data.max_prompt_length, config.data.max_response_length = 16384, response_length
    config.actor_rollout_ref.model.path = model_path
    config.actor_rollout_ref.rollout.name = "vllm"
    config.actor_rollout_ref.rollout.multi_turn.update(multi_turn)
    return config


def oracle_actions(task: Task, mode: str = "direct") -> list[str]:
    """The oracle's replies: one solution call each, then the report."""
    _, info = CompoWorldEnv(mode=mode).reset(options={"task": task})
    agent = OracleAgent()
    agent.reset("", info)
    return [agent.act("", info) for _ in range(len(task.solution) + 1)]


class ScriptedServer:
    """verl's server manager on CPU: each episode (request id) plays the next script of the
    task whose request its prompt holds; each reply is the script's next action as the
    tokenizer's token ids closed by the end-of-turn token, cut to ``max_tokens``; logprobs are
    distinct numbers, so the test can follow them."""

    def __init__(self, tokenizer: Any, scripts: dict[str, list[list[str]]]) -> None:
        self.tokenizer, self.scripts = tokenizer, {k: list(v) for k, v in scripts.items()}
        self.playing: dict[str, list[str]] = {}
        self.turns: Counter[str] = Counter()
        self.replies: list[list[int]] = []

    async def generate(self, *, request_id: str, prompt_ids: list[int],
                       sampling_params: dict[str, Any], **kwargs: Any) -> TokenOutput:
        if request_id not in self.playing:
            prompt = self.tokenizer.decode(prompt_ids)
            scripts = next(s for request, s in self.scripts.items() if request in prompt)
            self.playing[request_id] = scripts.pop(0)
        text = self.playing[request_id][self.turns[request_id]]
        self.turns[request_id] += 1
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        ids = [*ids, self.tokenizer.eos_token_id][:sampling_params["max_tokens"]]
        self.replies.append(ids)
        return TokenOutput(token_ids=ids, log_probs=[-1.0 - i / 1000 for i in range(len(ids))])


def make_loop(config: DictConfig, server: Any, tokenizer: Any, family: str | None = "qwen3",
              **settings: Any) -> CompoWorldAgentLoop:
    return CompoWorldAgentLoop(trainer_config=DictConfigWrap(config), server_manager=server,
                               tokenizer=tokenizer, processor=None, dataset_cls=RLHFDataset,
                               data_config=DictConfigWrap(config.data), hf_model_type=family,
                               **settings)


def play(config: DictConfig, server: Any, tokenizer: Any, task: Task, mode: str = "direct",
         family: str | None = "qwen3", **settings: Any) -> Any:
    row = verl_record(task, 0, mode=mode)

    async def run() -> Any:  # verl builds its loops inside the worker's event loop
        loop = make_loop(config, server, tokenizer, family, **settings)
        return await loop.run({"temperature": 1.0}, raw_prompt=row["prompt"],
                              extra_info=row["extra_info"])
    return asyncio.run(run())


def runs(mask: list[int]) -> list[tuple[int, int, int]]:
    """(value, start, end) of each run of equal mask values."""
    out: list[tuple[int, int, int]] = []
    for i, value in enumerate(mask):
        if out and out[-1][0] == value:
            out[-1] = (value, out[-1][1], i + 1)
        else:
            out.append((value, i, i + 1))
    return out


def test_oracle_episode_scores_one_with_model_tokens_trained_and_tool_tokens_masked(
        model_path, tokenizer, tasks):
    task = tasks[0]
    server = ScriptedServer(tokenizer, {task.instruction: [oracle_actions(task)]})
    out = play(verl_config(model_path), server, tokenizer, task)
    assert out.reward_score == 1.0
    assert out.extra_fields["passes"] == [1] * len(task.rubric)
    assert out.extra_fields["criteria"] == [c.id for c in task.rubric]
    assert out.extra_fields["task_id"] == task.id and out.extra_fields["stop_reason"] == "done"
    assert out.extra_fields["reward_extra_info"]["tool_calls"] == len(task.solution)
    kinds = [c.kind for c in task.rubric]  # every kind's criteria, all passed
    for kind in CRITERION_KINDS:
        logged = out.extra_fields["reward_extra_info"]
        assert logged[f"criteria/{kind}_passed"] == logged[f"criteria/{kind}_checked"] == \
            kinds.count(kind)
    assert out.num_turns == 1 + len(server.replies) + len(task.solution)
    # the prompt is the chat template's render of the request with the task's tools
    _, info = CompoWorldEnv().reset(options={"task": task})
    assert out.prompt_ids == tokenizer.apply_chat_template(
        info["messages"][:2], tools=list(info["tools"]), add_generation_prompt=True,
        tokenize=True, return_dict=False)
    ids, mask, logprobs = out.response_ids, out.response_mask, out.response_logprobs
    assert len(ids) == len(mask) == len(logprobs)
    model_runs = [(s, e) for v, s, e in runs(mask) if v == 1]
    tool_runs = [(s, e) for v, s, e in runs(mask) if v == 0]
    # every token the model wrote is trained on, with its logprob; nothing else is
    assert [ids[s:e] for s, e in model_runs] == server.replies
    assert [logprobs[s:e] for s, e in model_runs] == [
        [-1.0 - i / 1000 for i in range(len(r))] for r in server.replies]
    assert all(logprobs[i] == 0.0 for s, e in tool_runs for i in range(s, e))
    # each masked run is one turn of tool results, ending in the next generation prompt
    assert len(tool_runs) == len(task.solution)
    for s, e in tool_runs:
        text = tokenizer.decode(ids[s:e])
        assert re.fullmatch(r"\n<\|im_start\|>user\n<tool_response>\n\{\"success\": true.*"
                            r"</tool_response><\|im_end\|>\n<\|im_start\|>assistant\n", text,
                            re.DOTALL), text


def test_a_chat_template_without_tools_gets_the_listing_in_its_system_message(tasks):
    from transformers import AutoTokenizer

    path = str(tiny_lm_path(chat_template="plain"))  # role and content only
    tokenizer = AutoTokenizer.from_pretrained(path)
    task = tasks[0]
    server = ScriptedServer(tokenizer, {task.instruction: [oracle_actions(task, "gateway")]})
    out = play(verl_config(path), server, tokenizer, task, "gateway", family=None)
    system = tokenizer.decode(out.prompt_ids).split("<|im_end|>")[0]
    assert "<tools>" in system and '"name":"call_tool"' in system
    assert out.reward_score == 1.0
    assert [out.response_ids[s:e] for v, s, e in runs(out.response_mask) if v] == server.replies


def test_a_malformed_tool_call_is_an_error_result_and_the_episode_goes_on(
        model_path, tokenizer, tasks):
    task = tasks[1]
    broken = '<tool_call>\n{"name": "contacts__add_contact", "arguments": {"name": </tool_call>'
    server = ScriptedServer(tokenizer, {task.instruction: [[broken, *oracle_actions(task)]]})
    out = play(verl_config(model_path), server, tokenizer, task)
    first_tool_turn = runs(out.response_mask)[1]
    assert first_tool_turn[0] == 0
    result = tokenizer.decode(out.response_ids[first_tool_turn[1]:first_tool_turn[2]])
    assert '"success": false' in result and '"code": 400' in result
    assert out.extra_fields["stop_reason"] == "done"
    assert out.reward_score == 1.0  # the broken call changed nothing; the oracle did the work


@pytest.mark.parametrize("turns, settings, stop", [
    ({"max_assistant_turns": 1}, {}, "max_assistant_turns"),
    ({}, {"max_steps": 1, "reward": "binary"}, "max_steps")])
def test_a_turn_limit_ends_the_episode_and_it_is_scored_as_it_stands(
        model_path, tokenizer, tasks, turns, settings, stop):
    task = tasks[0]
    server = ScriptedServer(tokenizer, {task.instruction: [oracle_actions(task)]})
    out = play(verl_config(model_path, **turns), server, tokenizer, task, **settings)
    assert len(server.replies) == 1
    assert out.extra_fields["stop_reason"] == stop
    assert out.response_ids == server.replies[0] and out.response_mask == [1] * len(
        server.replies[0])
    stats = out.extra_fields["reward_extra_info"]
    assert 0 in out.extra_fields["passes"] and stats["passed"] == 0.0
    assert out.reward_score == (0.0 if settings.get("reward") else stats["rubric_score"])


def test_the_tiny_model_fills_the_response_budget_and_the_loop_stops_there(model_path, tokenizer,
                                                                          tasks):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_path).eval()

    class TinyModelServer:
        """Greedy generation with the tiny random model, logprobs from its scores."""

        async def generate(self, *, request_id: str, prompt_ids: list[int],
                           sampling_params: dict[str, Any], **kwargs: Any) -> TokenOutput:
            with torch.no_grad():
                out = model.generate(torch.tensor([prompt_ids]), do_sample=False,
                                     max_new_tokens=sampling_params["max_tokens"],
                                     output_scores=True, return_dict_in_generate=True)
            new = out.sequences[0, len(prompt_ids):].tolist()
            logprobs = [torch.log_softmax(s[0], -1)[t].item() for s, t in zip(out.scores, new)]
            return TokenOutput(token_ids=new, log_probs=logprobs)

    out = play(verl_config(model_path, response_length=8), TinyModelServer(), tokenizer,
               tasks[0], mode="gateway")
    assert 0 < len(out.response_ids) <= 8
    assert len(out.response_ids) == len(out.response_mask) == len(out.response_logprobs)
    assert out.extra_fields["stop_reason"] == "response_length"
    assert out.extra_fields["reward_extra_info"]["cut_short"] == 1.0
    assert out.reward_score == 0.0  # noise does no work
    assert all(p < 0 for p, m in zip(out.response_logprobs, out.response_mask) if m)


def play_group(config: DictConfig, server: Any, tokenizer: Any, rows: list[dict[str, Any]],
               **settings: Any) -> list[Any]:
    """The rollouts of one prompt as verl starts them: tasks created together, one uid."""
    async def run() -> list[Any]:
        loops = [make_loop(config, server, tokenizer, group_reward=True, **settings)
                 for _ in rows]
        return await asyncio.gather(*(
            loop.run({}, raw_prompt=row["prompt"], extra_info=row["extra_info"], uid="u1")
            for loop, row in zip(loops, rows)), return_exceptions=True)
    return asyncio.run(run())


def test_rollouts_of_one_prompt_share_the_completion_focused_reward(model_path, tokenizer,
                                                                     tasks):
    task = tasks[0]
    oracle = oracle_actions(task)
    scripts = [oracle, [*oracle[:-1], "Done."], [oracle[0], "Done."], ["Done."]]
    server = ScriptedServer(tokenizer, {task.instruction: scripts})
    outs = play_group(verl_config(model_path), server, tokenizer, [verl_record(task, 0)] * 4)
    passes = [o.extra_fields["passes"] for o in outs]
    assert len({tuple(p) for p in passes}) >= 3  # different outcomes
    expected = completion_focused(passes, [c.weight for c in task.rubric],
                                  [c.required for c in task.rubric],
                                  kinds=[c.kind for c in task.rubric])
    assert [o.reward_score for o in outs] == pytest.approx(expected)
    stats = [o.extra_fields["reward_extra_info"] for o in outs]
    assert {(s["group_size"], s["group_fallback"]) for s in stats} == {(4.0, 0.0)}
    assert [s["group_reward"] for s in stats] == pytest.approx(expected)
    assert max(expected) == expected[passes.index([1] * len(task.rubric))]


def test_a_group_that_cannot_complete_falls_back_to_each_rollouts_rubric_score(
        model_path, tokenizer, tasks, caplog):
    task, config = tasks[0], verl_config(model_path)
    scripts = {task.instruction: [oracle_actions(task), ["Done."]] * 2}
    # two of the three rollouts of group_size ever start: the group times out
    with caplog.at_level(logging.WARNING, "compoenv.integrations.verl"):
        outs = play_group(config, ScriptedServer(tokenizer, scripts), tokenizer,
                          [verl_record(task, 0)] * 2, group_size=3, group_timeout=0.1)
    assert "2 of 3 episodes of a group ended within" in caplog.text
    assert sorted(o.reward_score for o in outs) == [0.0, 1.0]
    assert {o.extra_fields["reward_extra_info"]["group_fallback"] for o in outs} == {1.0}
    # a rollout that fails releases the rest of its group at once
    broken = json.loads(task.to_json())
    broken["services"] = ["ledger_of_nowhere", *broken["services"]]
    rows = [verl_record(task, 0), {"prompt": [], "extra_info": {"task": json.dumps(broken)}}]
    started = time.perf_counter()
    survivor, failure = play_group(config, ScriptedServer(tokenizer, scripts), tokenizer, rows)
    assert isinstance(failure, TaskRowError) and time.perf_counter() - started < 30
    assert survivor.reward_score == 1.0
    assert survivor.extra_fields["reward_extra_info"]["group_fallback"] == 1.0


def test_verls_worker_runs_exported_rows_by_agent_name_and_config_path(
        model_path, tokenizer, tasks, tmp_path, monkeypatch):
    # the decorator registered the loop by name; the yaml of rl/verl registers it again
    assert _agent_loop_registry["compoenv"] == {
        "_target_": "compoenv.integrations.verl.CompoWorldAgentLoop"}
    monkeypatch.setitem(_agent_loop_registry, "compoenv", _agent_loop_registry["compoenv"])
    path = tmp_path / "train.parquet"
    assert write_verl_dataset(tasks, path) == 2
    config = verl_config(model_path)
    config.actor_rollout_ref.rollout.agent.agent_loop_config_path = str(
        ROOT / "rl" / "verl" / "agent_loop.yaml")
    scripts = {t.instruction: [oracle_actions(t)] for t in tasks}
    worker = AgentLoopWorker(config, ScriptedServer(tokenizer, scripts))
    assert _agent_loop_registry["compoenv"]["reward"] == "rubric"  # the yaml's entry won
    # the rows load back through verl's own dataset class and collate into a batch
    dataset = RLHFDataset(str(path), tokenizer, config.data)
    rows = [dataset[i] for i in range(len(dataset))]
    assert [json.loads(r["extra_info"]["task"])["id"] for r in rows] == [t.id for t in tasks]
    assert [r["agent_name"] for r in rows] == ["compoenv"] * 2
    assert rows[0]["raw_prompt"][1] == {"role": "user", "content": tasks[0].instruction}
    batch = DataProto.from_single_dict(collate_fn(rows))
    out = asyncio.run(worker.generate_sequences(batch))
    scores, width = out.batch["rm_scores"], out.batch["prompts"].shape[1]
    last = out.batch["attention_mask"][:, width:].sum(1) - 1  # the last response token
    assert scores.sum(1).tolist() == [1.0, 1.0] and scores[[0, 1], last].tolist() == [1.0, 1.0]
    per_kind = [f"criteria/{kind}_{n}" for kind in CRITERION_KINDS for n in ("passed", "checked")]
    assert out.meta_info["reward_extra_keys"] == [
        "acc", "rubric_score", "passed", "net_score", "criteria_pass_rate", "tool_calls", "steps",
        "cut_short", *per_kind, "group_reward", "group_size", "group_fallback"]  # group reward
    assert out.non_tensor_batch["group_size"].tolist() == [1.0, 1.0]  # one rollout per row
    assert out.non_tensor_batch["acc"].tolist() == [1.0, 1.0]
    assert list(out.non_tensor_batch["task_id"]) == [t.id for t in tasks]


def test_the_exporter_writes_jsonl_too_and_refuses_other_files(tasks, tmp_path):
    path = tmp_path / "train.jsonl"
    write_verl_dataset(tasks, path, mode="gateway", split="test")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["extra_info"]["index"] for r in rows] == [0, 1]
    assert {r["extra_info"]["mode"] for r in rows} == {"gateway"}
    assert "call_tool" in rows[0]["prompt"][0]["content"]  # the listing verl's filter counts
    assert Task.model_validate_json(rows[1]["extra_info"]["task"]) == tasks[1]
    with pytest.raises(ValueError, match="parquet / .jsonl / .json file"):
        write_verl_dataset(tasks, tmp_path / "train.csv")


@pytest.mark.parametrize("extra, message", [
    ({}, "extra_info has no 'task'"),
    ({"task": '{"id": "x"}'}, "not a valid task"),
    ({"task": "not json"}, "not a valid task")])
def test_a_row_without_a_playable_task_is_a_clear_error(model_path, tokenizer, extra, message):
    async def run() -> Any:
        loop = make_loop(verl_config(model_path), None, tokenizer)
        return await loop.run({}, raw_prompt=[], extra_info=extra)
    with pytest.raises(TaskRowError, match=message):
        asyncio.run(run())


def test_a_task_of_services_the_worker_lacks_names_the_library_variable(model_path, tokenizer,
                                                                        tasks):
    task = json.loads(tasks[0].to_json())
    task["services"] = ["ledger_of_nowhere", *task["services"]]

    async def run() -> Any:
        loop = make_loop(verl_config(model_path), None, tokenizer)
        return await loop.run({}, raw_prompt=[], extra_info={"task": json.dumps(task)})
    with pytest.raises(TaskRowError, match="cannot be played here.*COMPOENV_LIBRARY"):
        asyncio.run(run())


def test_bad_loop_settings_name_the_setting(model_path, tokenizer):
    with pytest.raises(ValueError, match="mode must be one of"):
        make_loop(verl_config(model_path), None, tokenizer, mode="both")
    with pytest.raises(ValueError, match="reward must be one of"):
        make_loop(verl_config(model_path), None, tokenizer, reward="dense")


def test_without_verl_the_import_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "verl.experimental.agent_loop.agent_loop", None)
    monkeypatch.delitem(sys.modules, "compoenv.integrations.verl")
    with pytest.raises(ImportError, match=r"compoenv\[verl\]"):
        importlib.import_module("compoenv.integrations.verl")


def test_the_launch_script_sets_only_keys_verls_config_has():
    script = (ROOT / "rl" / "verl" / "train_grpo_verl.sh").read_text()
    command = script[script.index("verl.trainer.main_ppo"):]
    keys = re.findall(r"^\s+([a-z_][a-z_.]*)=", command, re.MULTILINE)
    assert "actor_rollout_ref.rollout.agent.agent_loop_config_path" in keys
    config = OmegaConf.load(VERL_CONFIG / "_generated_ppo_trainer.yaml")
    for key in keys:
        parent, _, leaf = key.rpartition(".")
        assert leaf in OmegaConf.select(config, parent).keys(), key
