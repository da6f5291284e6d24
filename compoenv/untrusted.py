"""Reading what someone else wrote: JSON files within size and depth limits, error texts cut
to a length that fits a terminal line, and text shown to a model with its chat template's
control tokens neutralised.

A spec, index or scenario file may come from anywhere (an importer's corpus, a model, a
download). ``load_json_file`` refuses one that is too large or nested too deep with one
line saying so, before the parser (whose recursion would overflow on a 200,000-deep array)
sees it; ``clip`` keeps a value quoted in an error message short.

``neutralise`` is the one place that keeps a value (an email body, a record's field, a task's
instruction) from closing a tool response or opening a turn: the first character of every
special token and tool-call tag of the chat templates and action formats compoenv supports
becomes a JSON escape (``<`` -> ``\\u003c``, ``[`` -> ``\\u005b``). Inside JSON text (tool
results, the tool listing) the value decodes back unchanged; in plain text it reads as the
token did, but no tokenizer turns it into the special token and no parser sees the tag.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

__all__ = ["MAX_FILE_BYTES", "MAX_FILE_DEPTH", "MAX_MESSAGE_CHARS", "UntrustedFileError",
           "clip", "load_json_file", "too_deep", "neutralise", "CONTROL_TAGS"]

MAX_FILE_BYTES = 64 << 20  # a spec, index or scenario file (the largest index: ~40 MB)
MAX_FILE_DEPTH = 100       # nesting of arrays and objects in such a file
MAX_MESSAGE_CHARS = 500    # of one error message: a quoted value is cut to fit

# Tags of the action formats compoenv parses and renders (Hermes/Qwen <tool_call> JSON,
# Qwen3-Coder <function=..><parameter=..>, <tool_response>, <think>, the <tools> listing) and
# of other templates' tool turns (Gemma's turns, Llama's <|python_tag|> is a bar token below).
CONTROL_TAGS = ("tool_call", "tool_calls", "tool_response", "tool_result", "tools", "think",
                "function", "parameter", "start_of_turn", "end_of_turn", "s")
# Bracket tokens of Mistral's templates.
_BRACKET_TOKENS = ("INST", "TOOL_CALLS", "TOOL_RESULTS", "AVAILABLE_TOOLS", "SYSTEM_PROMPT",
                   "TOOL_CONTENT", "THINK")
_CONTROL = re.compile(
    r"<(?=\|[^\s|<>]{1,64}\|>)"           # <|im_start|>, <|im_end|>, <|endoftext|> (ChatML,
                                          # Qwen), <|eot_id|>, <|start_header_id|> (Llama 3)
    r"|<(?=\uff5c[^\uff5c<>]{1,64}\uff5c>)"  # DeepSeek's full-width bars
    r"|<(?=/?(?:" + "|".join(CONTROL_TAGS) + r")(?=[\s>=/]))"
    r"|\[(?=/?(?:" + "|".join(_BRACKET_TOKENS) + r")\])", re.I)
_ESCAPES = {"<": "\\u003c", "[": "\\u005b"}


def neutralise(text: str) -> str:
    """``text`` with no chat-template control token or tool-call tag left in it (see the
    module's docstring); idempotent, and unchanged when it holds none."""
    if "<" not in text and "[" not in text:
        return text
    return _CONTROL.sub(lambda m: _ESCAPES[m.group()], text)


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
