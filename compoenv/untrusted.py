"""Reading what someone else wrote: JSON files within size and depth limits, and error texts
cut to a length that fits a terminal line.

A spec, index or scenario file may come from anywhere (an importer's corpus, a model, a
download). ``load_json_file`` refuses one that is too large or nested too deep with one
line saying so, before the parser (whose recursion would overflow on a 200,000-deep array)
sees it; ``clip`` keeps a value quoted in an error message short.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

__all__ = ["MAX_FILE_BYTES", "MAX_FILE_DEPTH", "MAX_MESSAGE_CHARS", "UntrustedFileError",
           "clip", "load_json_file", "too_deep"]

MAX_FILE_BYTES = 64 << 20  # a spec, index or scenario file (the largest index: ~40 MB)
MAX_FILE_DEPTH = 100       # nesting of arrays and objects in such a file
MAX_MESSAGE_CHARS = 500    # of one error message: a quoted value is cut to fit

_JSON_STRING = re.compile(r'"(?:[^"\\]+|\\.)*"?', re.S)
_NON_BRACKET = re.compile(r"[^\[\]{}]+")


class UntrustedFileError(ValueError):
    """A file that cannot be read as JSON data: too large, too deep, or not JSON."""


def clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    cut = max(0, limit - 40)
    return f"{text[:cut]}... ({len(text) - cut:,} more characters)"


def too_deep(text: str, limit: int) -> bool:
    """Whether the JSON ``text`` nests arrays and objects more than ``limit`` levels (brackets
    inside strings do not count); linear in the text, no recursion."""
    if text.count("{") + text.count("[") <= limit:
        return False
    depth = 0
    for char in _NON_BRACKET.sub("", _JSON_STRING.sub("", text)):
        depth += 1 if char in "{[" else -1
        if depth > limit:
            return True
    return False


def load_json_file(path: str | Path, *, max_bytes: int = MAX_FILE_BYTES,
                   max_depth: int = MAX_FILE_DEPTH) -> Any:
    """The JSON data of the file ``path``.

    Raises:
        UntrustedFileError: larger than ``max_bytes``, nested deeper than ``max_depth``, or
            not valid JSON (one line, naming the file).
        OSError: the file cannot be read.
    """
    path = Path(path)
    size = path.stat().st_size
    if size > max_bytes:
        raise UntrustedFileError(f"{path}: {size:,} bytes, over the limit of {max_bytes:,} "
                                 f"for a JSON file")
    text = path.read_text(encoding="utf-8", errors="replace")
    if too_deep(text, max_depth):
        raise UntrustedFileError(f"{path}: nested more than {max_depth} levels deep (the "
                                 f"limit for a JSON file)")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UntrustedFileError(f"{path}: invalid JSON at line {exc.lineno} column "
                                 f"{exc.colno}: {exc.msg}") from None
    except (RecursionError, ValueError) as exc:  # integers over the digit limit
        raise UntrustedFileError(f"{path}: not JSON data: {clip(str(exc), 200)}") from None
