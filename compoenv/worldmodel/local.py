"""Local world model: simulated tool answers from a transformers causal LM in this process.

The prompt is the endpoint backend's (``compoenv.worldmodel.endpoint.build_messages``),
rendered with the tokenizer's chat template; generation is greedy, the first balanced
``{...}`` of the reply that parses is taken as the answer and validated against the reply
schema. There is no constrained decoding, so a weak model fails often: every failure is a
``WorldModelError`` and the Simulator falls back to the offline model.

torch and transformers are imported when a model is built: ``pip install 'compoenv[llm]'``.
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema

from compoenv.worldmodel.base import ToolAnswer, ToolRequest, WorldModelError
from compoenv.worldmodel.endpoint import (
    RECORDS_BUDGET,
    answer_from,
    build_messages,
    response_schema,
)

__all__ = ["TransformersWorldModel", "extract_json", "load_causal_lm"]

_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL)


def _import() -> tuple[ModuleType, ModuleType]:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise ImportError(f"TransformersWorldModel needs torch and transformers ({exc.name} is "
                          f"not installed): pip install 'compoenv[llm]'") from None
    return torch, transformers


def extract_json(text: str) -> Any:
    """The first balanced ``{...}`` in ``text`` that parses as JSON (reasoning in
    ``<think>`` blocks is skipped), or None."""
    text = _THINK.sub("", text)
    start = text.find("{")
    while start != -1:
        depth, in_string, escaped = 0, False, False
        for end in range(start, len(text)):
            char = text[end]
            if in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    try:
                        return json.loads(text[start:end + 1])
                    except json.JSONDecodeError:
                        break
        start = text.find("{", start + 1)
    return None


def _brief(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def load_causal_lm(model_path_or_obj: Any, tokenizer: Any, who: str) -> tuple[Any, Any, str]:
    """(model, tokenizer, where the model came from): a model directory (or hub id) loaded
    with ``AutoModelForCausalLM`` or a loaded model, and its tokenizer (given, a path, or
    loaded from the model's path), which must have a chat template.

    Raises:
        ValueError: the model or tokenizer cannot be loaded, or has no chat template.
    """
    _, transformers = _import()
    model = model_path_or_obj
    if isinstance(model, (str, os.PathLike)):
        source = os.fspath(model)
        try:
            model = transformers.AutoModelForCausalLM.from_pretrained(source)
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot load a causal LM from {source!r}: "
                             f"{_brief(str(exc), 300)}") from None
    else:
        config = getattr(model, "config", None)
        source = str(getattr(model, "name_or_path", "")
                     or getattr(config, "_name_or_path", "") or "")
    if tokenizer is None or isinstance(tokenizer, (str, os.PathLike)):
        where = os.fspath(tokenizer) if tokenizer is not None else source
        if not where:
            raise ValueError(f"{who}: pass tokenizer= with a model object that has no "
                             f"name_or_path")
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(where)
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot load a tokenizer from {where!r}: "
                             f"{_brief(str(exc), 300)}") from None
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(f"{who}: the tokenizer has no chat template")
    return model, tokenizer, source


class TransformersWorldModel:
    """Simulated answers from a local causal LM (greedy decoding, CPU or a device).

    Args:
        model_path_or_obj: A model directory (or hub id) for ``AutoModelForCausalLM``, or a
            loaded model.
        tokenizer: The tokenizer (or its path); default: loaded from the model's path.
            It must have a chat template.
        max_new_tokens: Most tokens generated per answer.
        device: Where the model runs ("cpu", "cuda", "cuda:1", ...).
        records_budget: Characters of stored records put into each prompt.

    Raises:
        ImportError: torch or transformers is missing.
        ValueError: the model or tokenizer cannot be loaded, or has no chat template.
    """

    def __init__(self, model_path_or_obj: Any, tokenizer: Any = None, max_new_tokens: int = 256,
                 device: str = "cpu", records_budget: int = RECORDS_BUDGET) -> None:
        self._torch, _ = _import()
        model, tokenizer, source = load_causal_lm(model_path_or_obj, tokenizer,
                                                  "TransformersWorldModel")
        self.model = model.to(device).eval()
        self.tokenizer = tokenizer
        self.max_new_tokens, self.device = max_new_tokens, device
        self.records_budget = records_budget
        label = Path(source.rstrip("/\\")).name if source else type(model).__name__
        self.name = f"transformers:{label}"
        self._lock = threading.Lock()  # one generation at a time per model

    def __repr__(self) -> str:
        return f"TransformersWorldModel({self.name!r}, device={self.device!r})"

    def answer(self, request: ToolRequest) -> ToolAnswer:
        schema = response_schema(request)
        text = self.generate(build_messages(request, schema, self.records_budget))
        value = extract_json(text)
        if value is None:
            raise WorldModelError("invalid_output", f"no JSON object in the reply: "
                                                    f"{_brief(text)!r}")
        error = jsonschema.exceptions.best_match(
            jsonschema.Draft202012Validator(schema).iter_errors(value))
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "(root)"
            raise WorldModelError("invalid_output", f"reply does not match the schema at "
                                                    f"{where}: {_brief(error.message, 120)}")
        return answer_from(value, request, self.name)

    def generate(self, messages: list[dict[str, str]]) -> str:
        """The model's greedy reply to ``messages``, rendered with the chat template."""
        torch, tok = self._torch, self.tokenizer
        try:
            # enable_thinking=False: Qwen3-style templates answer at once; others ignore it
            prompt = tok.apply_chat_template(messages, tokenize=False,
                                             add_generation_prompt=True, enable_thinking=False)
            inputs = tok(prompt, return_tensors="pt", add_special_tokens=False).to(self.device)
            pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
            with self._lock, torch.inference_mode():
                output = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens,
                                             do_sample=False, pad_token_id=pad)
            new_tokens = output[0, inputs["input_ids"].shape[1]:]
            return str(tok.decode(new_tokens, skip_special_tokens=True))
        except Exception as exc:  # noqa: BLE001 - a failed generation is a failed answer
            raise WorldModelError("generation_failed",
                                  f"{type(exc).__name__}: {_brief(str(exc), 200)}") from None
