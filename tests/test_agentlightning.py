"""Agent Lightning: the compoenv LitAgent run by Agent Lightning's own runner (LitAgentRunner,
in-memory store, OpenTelemetry tracer) against the loopback chat server; the rollout's reward
span holds the rubric score."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

# litellm (imported by the framework) fetches a price list at import unless told to stay local
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("AGENTOPS_LOGGING_TO_FILE", "False")  # agentops (imported too) logs to ./
agl = pytest.importorskip("agentlightning", reason="Agent Lightning is not installed")

from chat_server import ChatServer, OraclePolicy  # noqa: E402
from compoenv.integrations.agentlightning import CompoenvAgent, task_rows  # noqa: E402
from compoenv.task import Task  # noqa: E402
from group_policy import WRONG, env_score  # noqa: E402


@pytest.fixture(scope="module")
def answer_task(tasks50: list[Task]) -> Task:
    return next(t for t in tasks50 if any(c.kind == "answer" for c in t.rubric))


async def _run(agent: CompoenvAgent, item: dict[str, Any],
               resources: dict[str, Any]) -> tuple[Any, list[Any]]:
    store = agl.InMemoryLightningStore()
    runner = agl.LitAgentRunner(tracer=agl.OtelTracer())
    runner.init(agent)
    runner.init_worker(0, store)
    try:
        rollout = await runner.step(item, resources=resources)
    finally:
        runner.teardown_worker(0)
        runner.teardown()
    return rollout, list(await store.query_spans(rollout.rollout_id))


@pytest.mark.parametrize("fail_every", [0, 1])
def test_runner_records_the_rubric_score_as_the_rollout_reward(answer_task, fail_every):
    responder = OraclePolicy([answer_task], fmt="native", mode="direct", fail_every=fail_every)
    with ChatServer(responder=responder, keep_alive=True) as server:
        llm = agl.LLM(endpoint=server.url, model=server.model,
                      sampling_parameters={"temperature": 0.5})
        rollout, spans = asyncio.run(_run(CompoenvAgent(), task_rows([answer_task])[0],
                                          {"main_llm": llm}))
    assert rollout.status == "succeeded"
    expected = 1.0 if not fail_every else env_score(answer_task, WRONG)
    assert agl.find_final_reward(spans) == expected and (expected < 1.0) == bool(fail_every)
    assert server.bodies[0]["temperature"] == 0.5 and server.bodies[0]["tools"]


def test_an_item_without_a_task_or_a_missing_llm_fails_the_rollout_saying_why(answer_task):
    with pytest.raises(ValueError, match="task_rows"):
        asyncio.run(_run(CompoenvAgent(), {"prompt": "hi"},
                         {"main_llm": agl.LLM(endpoint="http://127.0.0.1:9/v1", model="m")}))
    with pytest.raises(ValueError, match="no LLM resource named 'policy'"):
        asyncio.run(_run(CompoenvAgent(llm="policy"), task_rows([answer_task])[0],
                         {"main_llm": agl.LLM(endpoint="http://127.0.0.1:9/v1", model="m")}))
