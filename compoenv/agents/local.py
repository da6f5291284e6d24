"""A local transformers model as an agent: the model's own chat template renders the
transcript and the tools, and the model's reply (tool calls written the way its template
teaches, e.g. ``<tool_call>`` JSON for Qwen) goes to the env as text, which parses it."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any, Sequence

from compoenv.agents.endpoint import Turn, split_reasoning
from compoenv.worldmodel.local import load_causal_lm

__all__ = ["TransformersAgent"]


class TransformersAgent:
    """Plays episodes with a local causal LM (CPU or a device), one generation at a time.

    Args:
        model_path_or_obj: A model directory (or hub id), or a loaded model.
        tokenizer: Its tokenizer (or path); default: the model's. It must have a chat template
            (one that takes ``tools=`` lists the tools; others get them in the system prompt).
        max_new_tokens: Most tokens per reply.
        temperature: 0 decodes greedily; above 0 samples.
        device: Where the model runs ("cpu", "cuda", ...).

    Raises:
        ImportError: torch or transformers is missing.
        ValueError: the model or tokenizer cannot be loaded, or has no chat template.
    """

    forkable = False  # the model lives in this process (maybe on a device): never forked

    def __init__(self, model_path_or_obj: Any, tokenizer: Any = None,
                 max_new_tokens: int = 512, temperature: float = 0.0,
                 device: str = "cpu") -> None:
        import torch

        self._torch = torch
        model, self.tokenizer, source = load_causal_lm(model_path_or_obj, tokenizer,
                                                       "TransformersAgent")
        self.model = model.to(device).eval()
        self.max_new_tokens, self.temperature, self.device = max_new_tokens, temperature, device
        label = Path(source.rstrip("/\\")).name if source else type(model).__name__
        self.name = f"transformers:{label}"
        self._lock = threading.Lock()

    async def respond(self, messages: Sequence[dict[str, Any]],
                      tools: Sequence[dict[str, Any]]) -> Turn:
        """The model's next turn (generated in a worker thread, so other episodes' env steps
        go on meanwhile)."""
        return await asyncio.to_thread(self.reply, messages, tools)

    def reply(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> Turn:
        torch, tok = self._torch, self.tokenizer
        start = time.perf_counter()
        shown = [{k: v for k, v in m.items() if k != "reasoning_content"} for m in messages]
        prompt = tok.apply_chat_template(shown, tools=[t.get("function", t) for t in tools],
                                         tokenize=False, add_generation_prompt=True)
        inputs = tok(prompt, return_tensors="pt", add_special_tokens=False).to(self.device)
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        sampling = ({"do_sample": True, "temperature": self.temperature}
                    if self.temperature > 0 else {"do_sample": False})
        with self._lock, torch.inference_mode():
            output = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens,
                                         pad_token_id=pad, **sampling)
        new = output[0, inputs["input_ids"].shape[1]:]
        message = split_reasoning(str(tok.decode(new, skip_special_tokens=True)))
        return Turn(message, int(inputs["input_ids"].shape[1]), int(new.shape[0]),
                    seconds=time.perf_counter() - start)
