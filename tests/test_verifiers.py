"""verifiers v1: the compoenv taskset, its rubric reward replayed from a trace, and a real v1 eval
(the taskset loaded by its id, the null chat harness, a scripted model on the loopback streaming
chat server) whose rewards are compoenv's rubric and completion-focused scores.

The eval needs what verifiers 0.4 itself needs to run a harness: MCP 2 (``verifiers.v1.tasksets``
imports ``mcp.server.mcpserver``) and ``uv`` (each harness is a uv script). Where MCP 1 is
installed for other packages, run this file in its own virtualenv (docs/frameworks/verifiers.md);
the eval test is skipped otherwise, saying why.
"""

from __future__ import annotations

import asyncio
import importlib.util
import shutil
from pathlib import Path
from typing import Any

import pytest

vf = pytest.importorskip("verifiers.v1", reason="verifiers 0.4 is not installed")

from chat_server import ChatServer  # noqa: E402
from compoenv.compose.verify import oracle_message  # noqa: E402
from compoenv.integrations.episodes import GroupReward  # noqa: E402
from compoenv.integrations.verifiers import (CompoenvData, CompoenvTaskset,  # noqa: E402
                                             CompoenvTasksetConfig, replay_score)
from compoenv.task import Task, save_tasks  # noqa: E402
from group_policy import WRONG, FirstRightThenWrong, env_score, oracle_replies  # noqa: E402

PACKAGE = Path(__file__).resolve().parents[1] / "rl" / "verifiers" / "compoenv_env"


@pytest.fixture(scope="module")
def answer_task(tasks50: list[Task]) -> Task:
    return next(t for t in tasks50 if any(c.kind == "answer" for c in t.rubric))


def _oracle_replies(task: Task, final: str) -> list[Any]:
    return [vf.AssistantMessage(content=text) for text in oracle_replies(task, final)]


def test_taskset_rows_hold_the_task_its_request_and_its_tool_listing(answer_task, tmp_path):
    path = tmp_path / "tasks.jsonl"
    save_tasks([answer_task], path)
    (row,) = CompoenvTaskset(CompoenvTasksetConfig(id="compoenv-env", tasks=str(path))).load()
    assert row.data.prompt == answer_task.instruction
    assert row.data.task["id"] == answer_task.id and row.key.startswith(answer_task.id)
    assert "<tools>" in row.data.system_prompt
    assert f'"name":"{answer_task.solution[0].name}"' in row.data.system_prompt


def test_replayed_trace_scores_as_the_env_does(answer_task):
    data = CompoenvData(task=answer_task.model_dump(mode="json"))
    right = replay_score(data, _oracle_replies(answer_task, oracle_message(answer_task)))
    wrong = replay_score(data, _oracle_replies(answer_task, WRONG))
    assert right["rubric_score"] == env_score(answer_task, oracle_message(answer_task)) == 1.0
    assert wrong["rubric_score"] == env_score(answer_task, WRONG) < 1.0
    assert right["finish"] == wrong["finish"] == "stop"
    assert all(right["passes"]) and not all(wrong["passes"])


def test_a_trace_cut_off_before_its_answer_is_scored_on_what_it_did(answer_task):
    data = CompoenvData(task=answer_task.model_dump(mode="json"))
    cut = replay_score(data, _oracle_replies(answer_task, "")[:-1])
    assert cut["finish"] == "unfinished" and cut["rubric_score"] < 1.0


def _eval_ready() -> str | None:
    """Why a v1 eval cannot run here, or None."""
    try:
        importlib.import_module("verifiers.v1.tasksets")
    except ImportError as exc:
        return f"verifiers.v1.tasksets does not import ({exc}); it needs mcp>=2"
    if shutil.which("uv") is None:
        return "v1 runs its harness as a uv script: uv is not on PATH"
    return None



def test_vf_eval_rewards_each_attempt_by_the_rubric_and_the_group_by_completion(
        answer_task, tmp_path, monkeypatch):
    why = _eval_ready()
    if why:
        pytest.skip(why)
    from verifiers.v1.cli.eval.runner import run_eval
    from verifiers.v1.configs.cli.eval import EvalConfig

    if importlib.util.find_spec("compoenv_env") is None:  # not pip-installed: load from the tree
        monkeypatch.syspath_prepend(str(PACKAGE))
    path = tmp_path / "tasks.jsonl"
    save_tasks([answer_task], path)
    monkeypatch.setenv("COMPOENV_TEST_KEY", "EMPTY")
    with ChatServer(responder=FirstRightThenWrong([answer_task]), keep_alive=True,
                    max_requests=100, lifetime_s=120) as server:
        config = EvalConfig(
            env={"taskset": {"id": "compoenv-env", "tasks": str(path)}, "group_size": 2,
                 "reward": "completion_focused",
                 "agent": {"harness": {"id": "null"}, "runtime": {"type": "subprocess"},
                           "max_turns": 12}},
            model=server.model, rich=None, push=False, output_dir=tmp_path, run={"dir": "run"},
            client={"type": "eval", "base_url": server.url, "api_key_var": "COMPOENV_TEST_KEY"})
        records = asyncio.run(run_eval(config))
    traces = [t for r in records for t in r.traces]
    assert len(traces) == 2 and all(t.ok for t in traces), [t.errors for t in traces]
    assert any(body.get("stream") for body in server.bodies)  # v1 streams its requests
    rubric = sorted(t.rewards["rubric"].score for t in traces)
    assert rubric == [env_score(answer_task, WRONG), 1.0]
    assert all(t.rewards["rubric"].weight == 0.0 for t in traces)
    passes = [t.info["compoenv"]["passes"] for t in traces]
    expected = GroupReward().rewards(answer_task, passes)
    assert [t.reward for t in traces] == pytest.approx(expected)
    best = max(traces, key=lambda t: t.rewards["rubric"].score)
    assert best.reward == max(expected) > min(expected)
    assert (tmp_path / "run" / "traces.jsonl").exists()
