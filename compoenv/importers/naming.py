"""Names and texts for imported services: snake_case names, unique names, short descriptions."""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import accumulate
from typing import Any

__all__ = ["snake", "unique", "short_text"]


@lru_cache(maxsize=1 << 16)  # field names repeat: a large API asks for the same ones 10^6 times
def snake(text: str, limit: int = 48, prefix: str = "x") -> str:
    """``getPetById`` -> ``get_pet_by_id``: lowercase words joined by ``_`` (whole words, at most
    ``limit`` characters), starting with a letter (else ``prefix`` goes first)."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", text))
    words = [w for w in re.split(r"[^a-z0-9]+", text.lower()) if w]
    words = [prefix, *words] if not words or not words[0][0].isalpha() else words
    ends = accumulate(len(w) + 1 for w in words)  # the name's length up to each word, plus 1
    return "_".join(w for w, end in zip(words, ends) if end <= limit + 1) or words[0][:limit]


def short_text(*candidates: Any, fallback: str, low: int = 5, limit: int = 400) -> str:
    """The first candidate with at least ``low`` characters, whitespace collapsed, shortened."""
    text = next((t for c in candidates if len(t := " ".join(str(c or "").split())) >= low),
                fallback)
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def unique(name: str, taken: set[str], limit: int = 48) -> str:
    out, n = name, 2
    while out in taken:
        out, n = f"{name[: limit - len(str(n)) - 1].rstrip('_')}_{n}", n + 1
    taken.add(out)
    return out

