"""AReaL: an agent workflow (``async def run(data, **extra_kwargs)``) that plays a compoenv
episode through AReaL's OpenAI-compatible proxy and returns the rubric score as its reward.

    # config.yaml
    workflow: compoenv.integrations.areal.CompoenvAgent
    eval_workflow: ${workflow}

AReaL wraps any class with an async ``run`` into its ``OpenAIProxyWorkflow``: it builds the class
with the trainer's ``workflow_kwargs`` (``temperature``, ``top_p``, ``max_tokens``,
``max_completion_tokens``, ``max_turns``), and calls ``run(data, base_url=, api_key=,
http_client=)`` in inline mode, or ``run(data)`` with ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` set
in subprocess mode. The proxy records the tokens and log-probabilities of every completion;
a float returned by ``run`` becomes the reward of the episode's last completion, spread back over
earlier turns by AReaL's turn discount. Dataset items are ``{"task": <task JSON>}``
(``compoenv.integrations.episodes.task_rows``).
"""

from __future__ import annotations

import os
from typing import Any, Literal

from compoenv.integrations.episodes import play_task, row_task, task_rows

__all__ = ["CompoenvAgent", "task_rows"]


class CompoenvAgent:
    """An AReaL agent workflow over compoenv tasks.

    Args:
        mode: ``direct`` (the task's tools) or ``gateway`` (four meta-tools).
        max_turns: Replies before the episode is cut off (AReaL's ``max_turns``).
        tool_format: ``native`` tool calls, or ``hermes`` / ``qwen3_coder`` text calls.
        model: The model name sent to the proxy (AReaL serves the policy as ``default``).
        **sampling: AReaL's ``workflow_kwargs``: ``temperature``, ``top_p``, ``max_tokens``
            or ``max_completion_tokens`` (the limit of one reply); others are sent as they are.
    """

    def __init__(self, *, mode: Literal["direct", "gateway"] = "direct", max_turns: int = 30,
                 tool_format: Literal["native", "hermes", "qwen3_coder"] = "native",
                 model: str = "default", **sampling: Any) -> None:
        limit = sampling.pop("max_completion_tokens", None)
        if limit is not None:  # the OpenAI name AReaL passes; the proxy reads max_tokens
            sampling["max_tokens"] = limit
        self.sampling = {k: v for k, v in sampling.items() if v is not None}
        self.mode, self.max_turns, self.tool_format, self.model = (mode, max_turns, tool_format,
                                                                   model)

    async def run(self, data: dict[str, Any], **extra_kwargs: Any) -> float:
        """One episode of ``data["task"]`` through the proxy; returns its rubric score.

        Args:
            data: A dataset item with the task JSON under ``task``.
            **extra_kwargs: ``base_url`` and ``api_key`` of this session's proxy (else
                ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``); AReaL's ``http_client`` is not
                used (compoenv's endpoint agent keeps its own connection pool).
        """
        task = row_task(data, "compoenv.integrations.episodes.task_rows(tasks)")
        base_url = extra_kwargs.get("base_url") or os.environ.get("OPENAI_BASE_URL")
        if not base_url:
            raise ValueError("no proxy address: AReaL passes base_url to run() in inline mode "
                             "and sets OPENAI_BASE_URL in subprocess mode")
        api_key = extra_kwargs.get("api_key") or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        record = await play_task(task, base_url, self.model, api_key=api_key, mode=self.mode,
                                 max_steps=self.max_turns, tool_format=self.tool_format,
                                 sampling=self.sampling, source="areal")
        return float(record["meta"]["rubric_score"])
