"""A tiny local causal LM (random Qwen3 + byte-level BPE) for tests and CPU examples; no downloads.

    path = tiny_lm_path(chat_template="qwen3")      # a folder that loads like a hub checkout
    model = AutoModelForCausalLM.from_pretrained(path)
    tokenizer = AutoTokenizer.from_pretrained(path)

``chat_template="qwen3"`` is Qwen3's own template with tool calling (``<tool_call>`` JSON,
``<tool_response>``, ``<think>`` reasoning), taken from TRL so that TRL recognises it and parses
tool calls; ``"plain"`` renders role and content only. Needs torch, transformers and tokenizers
(and TRL for the qwen3 template). The model's weights are random: it writes noise until trained,
e.g. by ``imitate``, which teaches it one reply (a first tool call) in a few dozen steps.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, Sequence

__all__ = ["PLAIN_TEMPLATE", "SPECIAL_TOKENS", "qwen3_chat_template", "build_tiny_lm",
           "tiny_lm_path", "imitate"]

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
PLAIN_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
# Text the BPE merges are learnt from: the shapes of chat turns, tool calls and tool results.
_CORPUS = [
    '{"data": {"id": "BOO-0001", "url": "https://example.org/page", "note": "read later"}}',
    '{"data": [{"title": "Result", "url": "https://www.acme.com/news", "snippet": "text"}]}',
    '{"patch": {"bookmark": {"BOO-0001": null}}, "type": "object", "properties": {}}',
    "Service: web_search\nTool: web_search__search_web (read-only)\nArguments: {}\n",
    "Today: 2026-03-16 (Monday)\nUser: Ada Abbott <ada.abbott@example.com>, Engineer\n",
    "Stored records: {} Return schema Reply with one JSON object only, no prose.\n",
    "<|im_start|>system\nYou simulate the backend of a software service.<|im_end|>\n",
    "<|im_start|>user\nthe quick brown fox jumps over the lazy dog 0123456789<|im_end|>\n",
    '<|im_start|>assistant\n<think>\nFirst I will look it up.\n</think>\n\n<tool_call>\n{"name": '
    '"call_tool", "arguments": {"name": "flights__search_flights", "arguments": {}}}\n'
    "</tool_call><|im_end|>\n",
    '<|im_start|>user\n<tool_response>\n{"success": true, "data": [{"name": "list_services"}]}\n'
    '</tool_response><|im_end|>\n{"success": false, "error": {"code": 404, "message": "x"}}',
    '{"type": "function", "function": {"name": "describe_tool", "description": "Show a tool", '
    '"parameters": {"type": "object", "properties": {"service": {"type": "string"}}, '
    '"required": ["name"], "additionalProperties": false}}}',
]
_CACHE: dict[tuple[int, int, str, int, tuple[str, ...]], Path] = {}
_LOCK = threading.Lock()


def qwen3_chat_template() -> str:
    """Qwen3's chat template with tools, exactly as TRL ships it (so TRL can parse responses).

    Raises:
        ImportError: TRL is not installed.
    """
    try:
        from trl.chat_template_utils import qwen3_chat_template as template
    except ImportError:
        raise ImportError("the qwen3 chat template is read from TRL: pip install 'compoenv[rl]'"
                          ) from None
    return str(template)


def _template(name: str) -> str:
    if name == "qwen3":
        return qwen3_chat_template()
    if name == "plain":
        return PLAIN_TEMPLATE
    raise ValueError(f"chat_template must be 'qwen3' or 'plain', got {name!r}")


def _tokenizer(vocab_size: int, chat_template: str, extra_tokens: Sequence[str]) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    core.train_from_iterator(_CORPUS * 4, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>",
                                        pad_token="<|endoftext|>", unk_token=None,
                                        chat_template=chat_template, model_max_length=32768)
    tokenizer.add_tokens(list(extra_tokens))  # plain tokens: they decode like any text
    return tokenizer


def build_tiny_lm(folder: str | Path, vocab_size: int = 300, seed: int = 0,
                  chat_template: str = "plain", hidden_size: int = 32,
                  extra_tokens: Sequence[str] = ()) -> Path:
    """Write a tiny random Qwen3 model and its tokenizer into ``folder``.

    Args:
        folder: Where to save (created if missing).
        vocab_size: BPE vocabulary size (at least the 256 bytes plus the special tokens).
        seed: Seed of the random weights.
        chat_template: ``"plain"`` or ``"qwen3"`` (tool calling; needs TRL).
        hidden_size: Width of the model (a multiple of 16; 2 layers, heads of 16 dims).
        extra_tokens: Strings added to the vocabulary as single tokens, so that a tiny model
            learns to write them in a few steps (e.g. a whole tool call).

    Returns:
        ``folder`` as a Path.
    """
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    if hidden_size < 16 or hidden_size % 16:
        raise ValueError(f"hidden_size must be a positive multiple of 16, got {hidden_size}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = _tokenizer(vocab_size, _template(chat_template), extra_tokens)
    config = Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
        num_hidden_layers=2, num_attention_heads=hidden_size // 16, num_key_value_heads=1,
        head_dim=16,
        max_position_embeddings=32768, tie_word_embeddings=True,
        bos_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config).eval()
    model.generation_config.do_sample = False
    tokenizer.save_pretrained(folder)
    model.save_pretrained(folder)
    return folder


def tiny_lm_path(vocab_size: int = 300, seed: int = 0, chat_template: str = "plain",
                 hidden_size: int = 32, extra_tokens: Sequence[str] = ()) -> Path:
    """The folder of a tiny random model (see build_tiny_lm), built on first use in this
    process (a few seconds) into a temporary folder removed at exit."""
    key = (vocab_size, seed, chat_template, hidden_size, tuple(extra_tokens))
    with _LOCK:
        if key not in _CACHE:
            folder = Path(tempfile.mkdtemp(prefix="compoenv-tiny-lm-"))
            atexit.register(shutil.rmtree, folder, ignore_errors=True)
            _CACHE[key] = build_tiny_lm(folder, vocab_size, seed, chat_template, hidden_size,
                                        extra_tokens)
        return _CACHE[key]


def imitate(model: Any, tokenizer: Any, conversations: Sequence[list[dict[str, Any]]],
            reply: dict[str, Any] | Sequence[dict[str, Any]], tools: Sequence[Any] | None = None,
            steps: int = 40, lr: float = 1e-2) -> list[float]:
    """Teach ``model`` to answer every conversation with ``reply``: next-token loss on the
    reply's tokens as the chat template renders them after the conversation (a quick warm
    start for a tiny model, e.g. to make its first tool call before RL).

    Args:
        model: A causal LM (trained in place).
        tokenizer: Its tokenizer, with a chat template.
        conversations: Message lists the reply should follow.
        reply: The assistant message to learn, or one per conversation (e.g. each task's
            first oracle call).
        tools: Tools for the chat template (schemas or functions).
        steps: Optimiser steps, cycling through the conversations.
        lr: AdamW learning rate.

    Returns:
        The loss of every step.
    """
    import torch

    if not conversations:
        raise ValueError("imitate needs at least one conversation")
    replies = [reply] * len(conversations) if isinstance(reply, dict) else list(reply)
    if len(replies) != len(conversations):
        raise ValueError(f"{len(replies)} replies for {len(conversations)} conversations")
    examples = []
    for messages, answer in zip(conversations, replies):
        prompt = tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True,
                                               tokenize=True, return_dict=False)
        full = tokenizer.apply_chat_template([*messages, answer], tools=tools, tokenize=True,
                                             return_dict=False)
        if full[:len(prompt)] != prompt:
            raise ValueError("the chat template renders the conversation differently once the "
                             "reply follows; imitate needs a prefix-preserving template")
        examples.append((prompt, full[len(prompt):]))
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    losses = []
    for step in range(steps):
        prompt, target = examples[step % len(examples)]
        ids = torch.tensor([prompt + target])
        labels = torch.tensor([[-100] * len(prompt) + target])
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        optimiser.step()
        optimiser.zero_grad()
        losses.append(loss.item())
    model.eval()
    return losses
