"""Optional LLM rewrite of a template instruction into one natural request, kept only if safe."""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from compoenv.llm import ChatClient, LLMError

__all__ = ["REJECT_REASONS", "SYSTEM_PROMPT", "RewriteStats", "check_rewrite",
           "rewrite_instruction", "keeps"]

logger = logging.getLogger(__name__)

REJECT_REASONS = ("missing_value", "leaked_value", "length", "format", "llm_error")

SYSTEM_PROMPT = """\
You edit requests that a user will send to an AI assistant that can use tools. The draft \
request was assembled from templates and reads mechanically. Rewrite it as ONE natural, \
coherent paragraph written by the user, in the first person, addressed to the assistant.

Rules:
- Keep everything the draft asks for: every step or outcome, every decision, rule and \
question, and the order in which one step depends on another. If the draft states a goal \
rather than steps, do not turn it into steps: say no more about how to do it than it does.
- Keep every quoted text, name, email address, phone number, number, amount, date, time and \
identifier exactly as written, character for character.
- Add no new facts, values, names, reasons or steps. Do not guess or answer anything.
- If the draft asks to be told something, keep that question.
- No lists, headings, line breaks or markdown.
- Reply with the rewritten request only: no preamble, no explanation, no surrounding quotes."""

_NUMBER = re.compile(r"(?<![\w.,-])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w]|[.,]\d)")
_WHOLE_NUMBER = re.compile(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_LIST_LINE = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s", re.MULTILINE)
_LABEL = re.compile(r"^(?:here is |here's )?(?:the )?(?:rewritten|rewrite|natural)[\w ]{0,20}:\s*",
                    re.IGNORECASE)
_QUOTES = {'"': '"', "'": "'", "\u201c": "\u201d"}
_MIN_RATIO, _MAX_RATIO = 0.5, 3.0


@dataclass
class RewriteStats:
    """Counts over many ``rewrite_instruction`` calls.

    Attributes:
        calls: Instructions submitted.
        attempts: Model requests made (a call makes one per try).
        accepted: Calls that returned a rewrite.
        rejected: Failed tries by reason: missing_value (a kept value is gone), leaked_value
            (a hidden value appears), length (outside 0.5x-3x of the original), format
            (a list or several paragraphs) and llm_error (the request itself failed).
    """

    calls: int = 0
    attempts: int = 0
    accepted: int = 0
    rejected: Counter[str] = field(default_factory=Counter)

    def merge(self, other: RewriteStats) -> None:
        """Add ``other``'s counts (say, from another worker) to these."""
        self.calls += other.calls
        self.attempts += other.attempts
        self.accepted += other.accepted
        self.rejected.update(other.rejected)

    def as_dict(self) -> dict[str, object]:
        """A JSON-able summary."""
        return {"calls": self.calls, "attempts": self.attempts, "accepted": self.accepted,
                "rejected": {r: self.rejected[r] for r in REJECT_REASONS if self.rejected[r]}}


def _number(text: str) -> Decimal | None:
    text = text.strip()
    if not _WHOLE_NUMBER.fullmatch(text):
        return None
    try:
        return Decimal(text.replace(",", ""))
    except InvalidOperation:
        return None


def _numbers(text: str) -> list[Decimal]:
    return [n for m in _NUMBER.finditer(text) if (n := _number(m.group())) is not None]


def keeps(text: str, value: str) -> bool:
    """``value`` occurs in ``text`` as a whole phrase (case-insensitive), or, for a number,
    the same number appears however it is formatted ("236.1" = "236.10" = "236.100")."""
    number = _number(value)
    if number is not None:
        return number in _numbers(text)
    needle = " ".join(value.split()).casefold()
    if not needle:
        return True
    left = r"(?<!\w)" if needle[0].isalnum() else ""
    right = r"(?!\w)" if needle[-1].isalnum() else ""
    return re.search(left + re.escape(needle) + right, text.casefold()) is not None


def _count(text: str, value: str) -> int:
    """How often ``value`` occurs anywhere in ``text`` (plain substring, as the leak check of
    ``verify_walk`` counts; numbers also in any other formatting)."""
    number = _number(value)
    plain = text.casefold().count(value.casefold()) if value.strip() else 0
    return max(plain, _numbers(text).count(number)) if number is not None else plain


def _clean(reply: str) -> str:
    text = _LABEL.sub("", reply.strip()).strip()
    if len(text) >= 2 and _QUOTES.get(text[0]) == text[-1] and text.count(text[0]) == 1 + (
            text[0] == text[-1]):
        text = text[1:-1].strip()
    return text


def check_rewrite(original: str, rewrite: str, keep: Sequence[str],
                  forbid: Sequence[str]) -> tuple[str, str] | None:
    """Why ``rewrite`` may not replace ``original``, as (reason, detail), or None if it may.

    A hidden value that the original already contains (say, inside a stated value) is a leak
    only if the rewrite repeats it more often than the original does.
    """
    if _LIST_LINE.search(rewrite) or "\n\n" in rewrite.strip():
        return "format", "a list or several paragraphs"
    flat = " ".join(rewrite.split())
    ratio = len(flat) / max(1, len(" ".join(original.split())))
    if not _MIN_RATIO <= ratio <= _MAX_RATIO:
        return "length", f"{ratio:.2f}x the original"
    for value in keep:
        if not keeps(flat, str(value)):
            return "missing_value", str(value)
    for value in forbid:
        if _count(flat, str(value)) > _count(original, str(value)):
            return "leaked_value", str(value)
    return None


def _feedback(reason: str, detail: str) -> str:
    why = {"missing_value": f'It must contain "{detail}" exactly as written.',
           "leaked_value": f'It added "{detail}", which the draft does not say. Add nothing.',
           "length": f"Its length ({detail}) is off: keep it about as long as the draft.",
           "format": "It must be one plain paragraph, with no list or line breaks."}[reason]
    return f"That rewrite cannot be used. {why} Write the rewritten request again."


def rewrite_instruction(instruction: str, keep: Sequence[str], forbid: Sequence[str],
                        client: ChatClient, attempts: int = 2,
                        stats: RewriteStats | None = None) -> str | None:
    """Rewrite a composed instruction into one natural request, if the model does it safely.

    Args:
        instruction: The template text (``render_instruction``).
        keep: Values the user states; each must survive verbatim (numbers in any format).
        forbid: Values the agent must find out (intermediate values, answers); none may
            appear (more often than in ``instruction``).
        client: The chat endpoint.
        attempts: Tries; each retry tells the model why its last rewrite was refused.
        stats: Counts to update.

    Returns:
        The rewrite, or None (keep the template text) when every try was refused or the
        endpoint failed. The caller re-verifies the task with the new instruction.
    """
    stats = stats if stats is not None else RewriteStats()
    stats.calls += 1
    values = "\n".join(f"- {v}" for v in keep)
    prompt = f"Draft request:\n{instruction}"
    if values:
        prompt += f"\n\nValues that must appear exactly as written:\n{values}"
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}]
    for _ in range(attempts):
        stats.attempts += 1
        try:
            reply = client.complete(messages)
        except LLMError as exc:
            stats.rejected["llm_error"] += 1
            logger.debug("rewrite: endpoint failed: %s", exc)
            return None
        candidate = _clean(reply)
        refused = check_rewrite(instruction, candidate, keep, forbid)
        if refused is None:
            stats.accepted += 1
            return " ".join(candidate.split())
        reason, detail = refused
        stats.rejected[reason] += 1
        logger.debug("rewrite refused (%s: %s): %r", reason, detail, candidate)
        messages += [{"role": "assistant", "content": reply},
                     {"role": "user", "content": _feedback(reason, detail)}]
    return None
