"""slime: the custom generate function plays a compoenv episode through an OpenAI-compatible
router (the loopback chat server) and fills the sample's tokens and loss mask from a real chat
template; the --group-rm reward function gives a group the completion-focused reward.

Tested against slime's documented protocol, not its package: slime is not published on PyPI and
its import path needs SGLang and Megatron. ``Sample`` below holds the fields of
``slime.utils.types.Sample`` (THUDM/slime, commit 624b824) that the protocol touches, and the
calls are made as ``slime.rollout.sglang_rollout.generate_and_rm`` / ``generate_and_rm_group``
and ``rm_hub.batched_async_rm`` make them.
"""

from __future__ import annotations

import asyncio
import inspect
from argparse import Namespace
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import pytest

from chat_server import ChatServer
from compoenv.integrations.episodes import GroupReward
from compoenv.integrations.openrlhf_data import prompt_record
from compoenv.integrations.slime import TemplateError, generate, reward, transcript_tokens
from compoenv.task import Task
from compoenv.tiny_lm import tiny_lm_path
from group_policy import FirstRightThenWrong

pytest.importorskip("transformers")


@dataclass
class Sample:
    """The fields of slime's Sample that a custom generate function and reward function use."""

    class Status(Enum):
        PENDING = "pending"
        COMPLETED = "completed"
        TRUNCATED = "truncated"
        ABORTED = "aborted"
        FAILED = "failed"

    prompt: str | list[dict[str, str]] = ""
    tokens: list[int] = field(default_factory=list)
    response: str = ""
    response_length: int = 0
    label: str | None = None
    reward: float | dict[str, Any] | None = None
    loss_mask: list[int] | None = None
    status: Status = Status.PENDING
    metadata: dict = field(default_factory=dict)


@pytest.fixture(scope="module")
def answer_task(tasks50: list[Task]) -> Task:
    return next(t for t in tasks50 if any(c.kind == "answer" for c in t.rubric))


@pytest.fixture(scope="module")
def checkpoint() -> str:
    return str(tiny_lm_path(chat_template="qwen3"))


def _args(server: ChatServer, checkpoint: str, group_rm: bool) -> Namespace:
    return Namespace(sglang_router_ip="127.0.0.1", sglang_router_port=server.port,
                     hf_checkpoint=checkpoint, group_rm=group_rm)


def _sample(task: Task) -> Sample:
    row = prompt_record(task)
    return Sample(prompt=row["prompt"], label=row["label"])


async def _generate_and_rm_group(args: Namespace, group: list[Sample]) -> list[Sample]:
    """What slime does for one prompt's group with --group-rm and --custom-rm-path."""
    params = {"temperature": 1.0, "top_p": 1.0, "max_new_tokens": 256, "stop": None}
    assert "evaluation" not in inspect.signature(generate).parameters
    group = list(await asyncio.gather(*(generate(args, s, dict(params)) for s in group)))
    assert all(s.reward is None for s in group)  # group RM: rewarded after the whole group
    for s, value in zip(group, await reward(args, group), strict=True):
        s.reward = value
    return group


def test_generate_plays_the_task_and_masks_tool_results(answer_task, checkpoint):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    with ChatServer(responder=FirstRightThenWrong([answer_task]), keep_alive=True) as server:
        args = _args(server, checkpoint, group_rm=False)
        sample = asyncio.run(generate(args, _sample(answer_task), {"max_new_tokens": 64}))
    assert sample.status is Sample.Status.COMPLETED and sample.reward == 1.0
    assert len(sample.loss_mask) == sample.response_length < len(sample.tokens)
    response = sample.tokens[-sample.response_length:]
    learned = tokenizer.decode([t for t, m in zip(response, sample.loss_mask) if m])
    shown = tokenizer.decode([t for t, m in zip(response, sample.loss_mask) if not m])
    assert answer_task.solution[0].name in learned and "<tool_response>" not in learned
    assert '"success": true' in shown and answer_task.solution[0].name not in shown
    assert server.bodies[0]["max_tokens"] == 64
    assert server.bodies[0]["model"] == checkpoint


def test_group_rm_gives_the_group_the_completion_focused_reward(answer_task, checkpoint):
    with ChatServer(responder=FirstRightThenWrong([answer_task]), keep_alive=True) as server:
        args = _args(server, checkpoint, group_rm=True)
        group = asyncio.run(_generate_and_rm_group(args, [_sample(answer_task)
                                                          for _ in range(4)]))
    scores = sorted(s.metadata["compoenv"]["rubric_score"] for s in group)
    assert scores[-1] == 1.0 and scores[0] < 1.0 and scores[:3] == [scores[0]] * 3
    passes = [s.metadata["compoenv"]["passes"] for s in group]
    assert [s.reward for s in group] == pytest.approx(GroupReward().rewards(answer_task, passes))
    best = max(group, key=lambda s: s.metadata["compoenv"]["rubric_score"])
    assert best.reward == max(s.reward for s in group) > min(s.reward for s in group)


def test_reward_of_one_sample_is_its_rubric_score():
    sample = Sample(metadata={"compoenv": {"rubric_score": 0.25}})
    assert asyncio.run(reward(Namespace(), sample)) == 0.25


def _transcript(reasoning: bool) -> dict[str, Any]:
    call = {"id": "c0", "type": "function",
            "function": {"name": "notes__add", "arguments": '{"text": "hi"}'}}
    think = {"reasoning_content": "thinking"} if reasoning else {}
    return {"tools": [], "messages": [
        {"role": "system", "content": "sys"}, {"role": "user", "content": "add a note"},
        {"role": "assistant", "content": "", "tool_calls": [call], **think},
        {"role": "tool", "tool_call_id": "c0", "name": "notes__add", "content": "TOOLRESULT"},
        {"role": "assistant", "content": "FINALREPLY", **think}]}


def test_transcript_tokens_keep_the_prompt_and_mask_only_model_turns(checkpoint):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    prompt, response, mask = transcript_tokens(tokenizer, _transcript(reasoning=True))
    assert len(response) == len(mask) and 0 in mask and 1 in mask
    assert "add a note" in tokenizer.decode(prompt)
    assert "TOOLRESULT" in tokenizer.decode([t for t, m in zip(response, mask) if not m])
    learned = tokenizer.decode([t for t, m in zip(response, mask) if m])
    assert "FINALREPLY" in learned and "notes__add" in learned and "TOOLRESULT" not in learned


def test_a_template_that_rewrites_earlier_turns_is_refused_by_name(checkpoint):
    """Qwen3's template gives only the last assistant turn an empty think block."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    with pytest.raises(TemplateError, match="renders turn 4 differently"):
        transcript_tokens(tokenizer, _transcript(reasoning=False))
