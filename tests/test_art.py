"""ART: compoenv episodes as real art.Trajectory objects played by an art.Model over the loopback
chat server, groups scored by ART's own gather_trajectory_groups with the completion-focused
scorer, each assistant turn kept as the sampled Choice ART trains on.

ART's tokenizer trains only on Choices that carry logprobs, which the loopback server does not
sample; a real vLLM endpoint returns them for ``logprobs=True``, which the test checks is asked.
"""

from __future__ import annotations

import asyncio
import os
import json

import pytest

# litellm (imported by the framework) fetches a price list at import unless told to stay local
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
art = pytest.importorskip("art", reason="ART (openpipe-art) is not installed")

from chat_server import ChatServer  # noqa: E402
from compoenv.integrations.art import completion_focused_group, rollout  # noqa: E402
from compoenv.integrations.episodes import GroupReward  # noqa: E402
from compoenv.task import Task  # noqa: E402
from group_policy import FirstRightThenWrong  # noqa: E402


@pytest.fixture(scope="module")
def answer_task(tasks50: list[Task]) -> Task:
    return next(t for t in tasks50 if any(c.kind == "answer" for c in t.rubric))


def _model(server: ChatServer) -> art.Model:
    return art.Model(name="policy", project="compoenv-test", inference_base_url=server.url,
                     inference_api_key="EMPTY", inference_model_name=server.model)


async def _groups(model: art.Model, task: Task, size: int) -> list[art.TrajectoryGroup]:
    return await art.gather_trajectory_groups(
        [art.TrajectoryGroup(rollout(model, task) for _ in range(size))],
        pbar_desc=None, after_each=completion_focused_group)


def test_group_of_rollouts_gets_the_completion_focused_reward(answer_task):
    responder = FirstRightThenWrong([answer_task], fmt="native")
    with ChatServer(responder=responder, keep_alive=True) as server:
        (group,) = asyncio.run(_groups(_model(server), answer_task, 4))
    trajectories = group.trajectories
    rubric = sorted(t.metrics["independent_reward"] for t in trajectories)
    assert len(trajectories) == 4 and rubric[-1] == 1.0 and rubric[0] < 1.0
    passes = [json.loads(str(t.metadata["compoenv_passes"])) for t in trajectories]
    assert [t.reward for t in trajectories] == pytest.approx(
        GroupReward().rewards(answer_task, passes))
    best = max(trajectories, key=lambda t: t.metrics["independent_reward"])
    assert best.reward == max(t.reward for t in trajectories) > min(
        t.reward for t in trajectories)
    assert all(t.metadata["task_id"] == answer_task.id for t in trajectories)
    calls = [m for m in trajectories[0].messages() if m.get("tool_calls")]
    assert calls[0]["tool_calls"][0]["function"]["name"] == answer_task.solution[0].name
    assert server.bodies[0]["model"] == server.model and server.bodies[0]["tools"]


def test_each_assistant_turn_is_the_sampled_choice_between_tool_results(answer_task):
    from openai.types.chat.chat_completion import Choice

    with ChatServer(responder=FirstRightThenWrong([answer_task], fmt="native"),
                    keep_alive=True) as server:
        (trajectory,) = asyncio.run(_groups(_model(server), answer_task, 1))[0].trajectories
    turns = trajectory.messages_and_choices
    roles = ["assistant" if isinstance(t, Choice) else t["role"] for t in turns]
    assert roles[:2] == ["system", "user"] and roles[-1] == "assistant"
    assert not any(isinstance(t, dict) and t["role"] == "assistant" for t in turns)
    first = next(t for t in turns if isinstance(t, Choice))
    assert first.message.tool_calls[0].function.name == answer_task.solution[0].name
    assert turns[turns.index(first) + 1]["role"] == "tool"
    assert all(body["logprobs"] is True for body in server.bodies)
    assert trajectory.tools and trajectory.reward == 1.0


def test_a_model_without_an_endpoint_is_refused_with_the_fix(answer_task):
    model = art.Model(name="policy", project="compoenv-test")
    with pytest.raises(ValueError, match="register it with a backend"):
        asyncio.run(rollout(model, answer_task))
