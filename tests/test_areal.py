"""AReaL: the compoenv agent workflow called the ways AReaL's OpenAIProxyWorkflow calls an agent
(inline: ``run(data, base_url=, api_key=, http_client=)``; subprocess: ``run(data)`` with
OPENAI_BASE_URL / OPENAI_API_KEY set), built from AReaL's workflow_kwargs, against the loopback
chat server standing in for AReaL's proxy; the returned reward is the rubric score.

Tested against AReaL's documented protocol (docs/en/reference/agent_workflow.md and
areal/experimental/openai/proxy/workflow.py of inclusionAI/AReaL 1.0.4), not its package:
``areal`` 1.0.4 requires torch 2.10 with CUDA wheels, vLLM/SGLang pins and ~200 other packages,
which would replace this environment's torch.
"""

from __future__ import annotations

import asyncio

import pytest

from chat_server import ChatServer, OraclePolicy
from compoenv.integrations.areal import CompoenvAgent
from compoenv.integrations.episodes import task_rows
from compoenv.task import Task
from group_policy import WRONG, env_score

WORKFLOW_KWARGS = {"temperature": 0.7, "top_p": 0.9, "max_tokens": 1024,
                   "max_completion_tokens": 512, "max_turns": 12}  # as AReaL's examples build them


@pytest.fixture(scope="module")
def answer_task(tasks50: list[Task]) -> Task:
    return next(t for t in tasks50 if any(c.kind == "answer" for c in t.rubric))


@pytest.mark.parametrize("fail_every", [0, 1])
def test_inline_run_returns_the_rubric_score_through_the_session_proxy(answer_task, fail_every):
    responder = OraclePolicy([answer_task], fmt="native", mode="direct", fail_every=fail_every)
    with ChatServer(responder=responder, keep_alive=True) as server:
        agent = CompoenvAgent(**WORKFLOW_KWARGS)
        reward = asyncio.run(agent.run(task_rows([answer_task])[0], base_url=server.url,
                                       api_key="session-7", http_client=None))
    assert reward == (env_score(answer_task, WRONG) if fail_every else 1.0)
    assert (reward < 1.0) == bool(fail_every)
    body = server.bodies[0]
    assert (body["model"], body["temperature"], body["top_p"], body["max_tokens"]) == (
        "default", 0.7, 0.9, 512)
    assert all(r.headers["authorization"] == "Bearer session-7" for r in server.received)
    assert len(server.bodies) == len(answer_task.solution) + 1


def test_subprocess_mode_reads_the_proxy_from_the_environment(answer_task, monkeypatch):
    with ChatServer(responder=OraclePolicy([answer_task], fmt="native", mode="direct"),
                    keep_alive=True) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "session-8")
        reward = asyncio.run(CompoenvAgent().run(task_rows([answer_task])[0]))
    assert reward == 1.0 and server.received[0].headers["authorization"] == "Bearer session-8"


def test_missing_task_or_proxy_is_a_clear_error(answer_task, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="task_rows"):
        asyncio.run(CompoenvAgent().run({"messages": []}, base_url="http://127.0.0.1:9/v1"))
    with pytest.raises(ValueError, match="OPENAI_BASE_URL"):
        asyncio.run(CompoenvAgent().run(task_rows([answer_task])[0]))
