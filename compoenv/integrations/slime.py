"""slime: a custom generate function that plays a compoenv episode through slime's router, and a
reward function that gives a group of samples compoenv's completion-focused reward.

    python train.py ... --input-key prompt --label-key label --apply-chat-template \\
        --custom-generate-function-path compoenv.integrations.slime.generate \\
        --custom-rm-path compoenv.integrations.slime.reward --group-rm

Rows are ``compoenv export openrlhf`` prompt lines (``prompt``: the episode's opening messages,
``label``: the task JSON). ``generate`` plays the task against the OpenAI-compatible endpoint of
slime's SGLang router (``http://{sglang_router_ip}:{sglang_router_port}/v1``), then renders the
transcript with the policy's chat template (``--hf-checkpoint``): ``tokens`` are the prompt and
the response, ``loss_mask`` is 1 on the model's own turns and 0 on tool results. It keeps the
per-criterion passes in ``sample.metadata["compoenv"]``; without ``--group-rm`` it sets the
rubric score as the reward. ``reward`` is slime's batched reward function: with ``--group-rm``
slime calls it once per group of a prompt's samples, and each gets the completion-focused
reward; called with one sample it returns that sample's rubric score.

Settings come from the environment, named as for OpenRLHF: ``COMPOENV_MODE`` (direct or
gateway), ``COMPOENV_MAX_STEPS``, ``COMPOENV_TOOL_FORMAT`` (hermes, qwen3_coder or native),
``COMPOENV_REWARD_ALPHA`` / ``_EPS`` / ``_LAM``.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Any, Sequence

from compoenv.integrations.episodes import GroupReward, play_task, record_passes
from compoenv.task import Task
from compoenv.trajectory import chat_inputs

__all__ = ["generate", "reward", "router_url", "transcript_tokens", "TemplateError"]

META = "compoenv"  # sample.metadata[META]: the episode's scores and pass vector


class TemplateError(ValueError):
    """The chat template rewrites earlier turns as a transcript grows, so the tokens of a turn
    cannot be told apart from the rest."""


def router_url(args: Any) -> str:
    """The OpenAI-compatible API root of slime's SGLang router."""
    return f"http://{args.sglang_router_ip}:{args.sglang_router_port}/v1"


@lru_cache(maxsize=4)
def _tokenizer(path: str) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, trust_remote_code=True)


def transcript_tokens(tokenizer: Any, record: dict[str, Any]) -> tuple[list[int], list[int],
                                                                       list[int]]:
    """``(prompt_ids, response_ids, loss_mask)`` of an episode's transcript under ``tokenizer``'s
    chat template: the prompt is the opening messages with the generation prompt; the response
    holds the assistant turns (mask 1) and the tool results between them (mask 0); trailing tool
    results after the last assistant turn are left out.

    Raises:
        TemplateError: the template renders a turn's prefix differently once the turn follows.
    """
    messages, tools = chat_inputs(record, parse_arguments=True)

    def render(upto: int, generation_prompt: bool) -> list[int]:
        return list(tokenizer.apply_chat_template(
            messages[:upto], tools=tools or None, add_generation_prompt=generation_prompt,
            tokenize=True, return_dict=False))

    opening = next((i for i, m in enumerate(messages) if m["role"] == "assistant"),
                   len(messages))
    prompt = ids = render(opening, True)
    mask: list[int] = []
    for k in range(opening, len(messages)):
        if messages[k]["role"] != "assistant":
            continue
        before, after = render(k, True), render(k + 1, False)
        if before[:len(ids)] != ids or after[:len(before)] != before:
            raise TemplateError(f"the chat template of {getattr(tokenizer, 'name_or_path', '?')!r}"
                                f" renders turn {k} differently once it follows; slime needs a "
                                f"template that only appends (no rewriting of earlier turns)")
        mask += [0] * (len(before) - len(ids)) + [1] * (len(after) - len(before))
        ids = after
    return prompt, ids[len(prompt):], mask


def _settings() -> dict[str, Any]:
    return {"mode": os.environ.get("COMPOENV_MODE", "direct"),
            "max_steps": int(os.environ.get("COMPOENV_MAX_STEPS", "30")),
            "tool_format": os.environ.get("COMPOENV_TOOL_FORMAT", "hermes")}


def _group_reward() -> GroupReward:
    env = os.environ
    return GroupReward(alpha=float(env.get("COMPOENV_REWARD_ALPHA", "1.0")),
                       eps=float(env.get("COMPOENV_REWARD_EPS", "0.05")),
                       lam=float(env.get("COMPOENV_REWARD_LAM", "0.5")))


def _task(sample: Any) -> Task:
    label = sample.label
    return Task.coerce(json.loads(label) if isinstance(label, str) else label)


async def generate(args: Any, sample: Any, sampling_params: dict[str, Any]) -> Any:
    """slime's custom generate function: one compoenv episode of the sample's task.

    Args:
        args: slime's arguments (``sglang_router_ip``, ``sglang_router_port``,
            ``hf_checkpoint``, ``group_rm``).
        sample: A slime ``Sample`` whose ``label`` is the task JSON.
        sampling_params: slime's sampling parameters (``temperature``, ``top_p``,
            ``max_new_tokens``...), sent with every request.

    Returns:
        The sample with ``tokens``, ``response``, ``response_length``, ``loss_mask``,
        ``status`` (completed, truncated at the step limit, or failed when the endpoint gave up)
        and ``metadata["compoenv"]``; ``reward`` too unless ``args.group_rm``.
    """
    task = _task(sample)
    sampling = {k: v for k, v in sampling_params.items() if k not in ("max_new_tokens", "stop")}
    if "max_new_tokens" in sampling_params:
        sampling["max_tokens"] = sampling_params["max_new_tokens"]
    record = await play_task(task, router_url(args), str(args.hf_checkpoint), **_settings(),
                             sampling=sampling, source="slime")
    meta = record["meta"]
    status = type(sample).Status
    if "error" in record:
        sample.status = status.FAILED
    else:
        tokenizer = _tokenizer(str(args.hf_checkpoint))
        prompt, response, mask = transcript_tokens(tokenizer, record)
        sample.tokens, sample.loss_mask = prompt + response, mask
        sample.response, sample.response_length = tokenizer.decode(response), len(response)
        truncated = meta["finish_reason"] == "max_steps"
        sample.status = status.TRUNCATED if truncated else status.COMPLETED
    sample.metadata = {**(sample.metadata or {}), META: {
        "task_id": task.id, "rubric_score": meta["rubric_score"],
        "passed": meta["score"] == 1.0,
        "passes": record_passes(task, record), "finish_reason": meta["finish_reason"]}}
    if not getattr(args, "group_rm", False):
        sample.reward = float(meta["rubric_score"])
    return sample


async def reward(args: Any, samples: Any, **_: Any) -> float | list[float]:
    """slime's reward function (``--custom-rm-path``): the completion-focused reward of each
    sample of a group (a list, as ``--group-rm`` passes it; samples of different tasks are
    grouped by task), or one sample's rubric score."""
    if not isinstance(samples, Sequence):
        return float(samples.metadata.get(META, {}).get("rubric_score", 0.0))
    rewards = [0.0] * len(samples)
    groups: dict[str, list[int]] = {}
    for i, sample in enumerate(samples):
        groups.setdefault(_task(sample).id, []).append(i)
    scorer = _group_reward()
    for members in groups.values():
        task = _task(samples[members[0]])
        passes = [samples[i].metadata.get(META, {}).get("passes") or [False] * len(task.rubric)
                  for i in members]
        for i, value in zip(members, scorer.rewards(task, passes), strict=True):
            rewards[i] = value
    return rewards
