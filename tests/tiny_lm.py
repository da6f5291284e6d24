"""A tiny local causal LM for tests: random-init Qwen3 and a byte-level BPE tokenizer, no downloads.

Not a test module: tests import it as ``from tiny_lm import tiny_lm_path`` (tests/ is on
``sys.path``, see chat_server.py). The model and tokenizer are saved to a temporary folder
that loads by path like any hub checkout:

    path = tiny_lm_path()
    model = AutoModelForCausalLM.from_pretrained(path)
    tokenizer = AutoTokenizer.from_pretrained(path)

Built once per process (a few seconds on CPU); the model's output is random, so it never
writes valid JSON.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
from pathlib import Path

__all__ = ["CHAT_TEMPLATE", "SPECIAL_TOKENS", "tiny_lm_path"]

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
_CORPUS = [
    '{"data": {"id": "BOO-0001", "url": "https://example.org/page", "note": "read later"}}',
    '{"data": [{"title": "Result", "url": "https://www.acme.com/news", "snippet": "text"}]}',
    '{"patch": {"bookmark": {"BOO-0001": null}}, "type": "object", "properties": {}}',
    "Service: web_search\nTool: web_search__search_web (read-only)\nArguments: {}\n",
    "Today: 2026-03-16 (Monday)\nUser: Ada Abbott <ada.abbott@example.com>, Engineer\n",
    "Stored records: {} Return schema Reply with one JSON object only, no prose.\n",
    "<|im_start|>system\nYou simulate the backend of a software service.<|im_end|>\n",
    "<|im_start|>user\nthe quick brown fox jumps over the lazy dog 0123456789<|im_end|>\n",
]
_CACHE: dict[str, Path] = {}
_LOCK = threading.Lock()


def _tokenizer(vocab_size: int) -> object:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    core.train_from_iterator(_CORPUS * 4, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>",
                                   pad_token="<|endoftext|>", unk_token=None,
                                   chat_template=CHAT_TEMPLATE, model_max_length=8192)


def _build(folder: Path, vocab_size: int, seed: int) -> None:
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    tokenizer = _tokenizer(vocab_size)
    config = Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, head_dim=16,
        max_position_embeddings=8192, tie_word_embeddings=True,
        bos_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config).eval()
    model.generation_config.do_sample = False
    tokenizer.save_pretrained(folder)
    model.save_pretrained(folder)


def tiny_lm_path(vocab_size: int = 300, seed: int = 0) -> Path:
    """The folder of a tiny random Qwen3 model and its tokenizer (built on first use)."""
    key = f"{vocab_size}-{seed}"
    with _LOCK:
        if key not in _CACHE:
            folder = Path(tempfile.mkdtemp(prefix="compoenv-tiny-lm-"))
            atexit.register(shutil.rmtree, folder, ignore_errors=True)
            _build(folder, vocab_size, seed)
            _CACHE[key] = folder
        return _CACHE[key]
