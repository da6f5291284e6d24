"""Answer matching: a final message passes an answer criterion only when it reports the value
as *the* answer, not as one candidate among many.

The reply is read as a set of typed mentions: numbers, dates, date-times, times, emails,
phones, URLs, ids, and the World's people, organisations, cities and job titles. Formats are
normalised ("$1,234.50" is 1234.5, "March 3, 2026" is 2026-03-03, casing, punctuation, look-alike
digits under Unicode NFKC). An answer criterion for value ``v`` of kind ``K`` passes when

1. ``v`` is among the reply's mentions of kind ``K`` (for text without a kind: its words stand
   on their own in the reply, not inside a longer name; see ``compoenv.text_answers``), and
2. the reply mentions at most ``allowed`` distinct values of kind ``K``, where ``allowed`` is
   the number of answers of that kind the request asks for plus ``SLACK[K]``. Values the
   request itself states (echoes) and today's date do not count, nor do the numbers and marks
   of a list ("1. ...", "- 82958"), nor up to ``MAX_WORKED`` values the episode's own work
   accounts for (``worked_values``: what its writes were given or answered, the counts its
   calls answered). Text values count the short text items listed beside them, and every
   word of a piece that runs on without a sentence's structure.

A reply longer than ``MAX_ANSWER_CHARS`` fails every answer criterion: a report needs no more,
and reading it stays bounded whatever the agent sends.
"""

from __future__ import annotations

import itertools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping  # isinstance checks: typing's alias checks the same, slower
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from compoenv._cache import ByIdentity
from compoenv.text_answers import (
    content, short_items, stands_alone, tokens, without_run_ons, words,
)
from compoenv.world import World

__all__ = ["MAX_ANSWER_CHARS", "SLACK", "KINDS", "MAX_WORKED", "Mentions", "kind_of",
           "read_mentions", "check_answer", "canonical", "worked_values"]

MAX_ANSWER_CHARS = 8_000  # about 2,000 tokens: a long report
# extra distinct values of a kind a reply may hold beyond those asked for; small integers
# (counts) are the easiest to guess, so they get the least
SLACK: dict[str, int] = {
    "integer": 1, "decimal": 2, "date": 2, "datetime": 2, "email": 2, "phone": 1, "url": 1,
    "id": 2, "person": 2, "organization": 2, "city": 2, "title": 1, "text": 1,
}
KINDS = tuple(SLACK)
# values of a kind the episode's own work accounts for (what its writes created or were given,
# how many records its calls returned) stand beside the answer for free, up to this many: an
# honest report mentions them, a spray of many values is still a spray
MAX_WORKED = 8
_WORKED_SCALARS = 400  # the values of the episode's writes read for them, at most

_MONTHS = {m: i + 1 for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}
_MONTH = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_URL = re.compile(r"https?://[^\s<>\"')\]]+", re.I)
_EMAIL = re.compile(r"[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}", re.I)
_ISO_DATETIME = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})[t ](\d{2}):(\d{2})(?::\d{2})?\b", re.I)
_ISO_DATE = re.compile(r"\b(\d{4})[-/](\d{2})[-/](\d{2})\b")
_MONTH_FIRST = re.compile(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_DAY_FIRST = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+(\d{{4}})\b",
                        re.I)
_TIME = re.compile(r"\b(\d{1,2})(?::(\d{2}))?(?::\d{2})?\s*([ap])\.?m\.?(?![a-z])|"
                   r"\b(\d{1,2}):(\d{2})(?::\d{2})?\b", re.I)
_PHONE = re.compile(r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?\(?\d{3}\)?[ .-]\d{3}[.-]\d{4}(?!\d)")
_ID = re.compile(r"\b(?:[A-Z]{1,5}-\d{2,}|TRK\d{8}|[A-Z]{2}\d{2,4})\b")
# a slashed date: month first (US) or day first; a reading that cannot be a date is none
_SLASH_DATE = re.compile(r"(?<![\d/])(\d{1,2})/(\d{1,2})/(\d{4})(?![\d/])")
# the number of a numbered list and the mark of a bulleted one ("- 82958" is no negative number)
_LIST_MARK = re.compile(r"(?m)^[ \t>]*(?:\d{1,3}[.)]|[-*+\u2022\u2013\u2014])[ \t]")
# a sign belongs to a number only when nothing parts them ("-5", "-$5", not "- 5")
_NUMBER = re.compile(r"(?<![\w.])(?:[-+\u2212](?=[$€£]?\d))?[$€£]?\s?\d[\d,]*(?:\.\d+)?"
                     r"(?![\d,]*\.?\w)")
_WORDS = re.compile(r"[^\W\d_]+")


@dataclass
class Mentions:
    """The typed values a text mentions, each kind a set of canonical strings."""

    values: dict[str, set[str]] = field(default_factory=dict)
    text: str = ""  # the normalised text, for values of no known kind

    def of(self, kind: str) -> set[str]:
        return self.values.get(kind, set())


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _number(text: str) -> float | None:
    cleaned = text.replace("\u2212", "-").replace("$", "").replace("€", "").replace("£", "")
    cleaned = cleaned.replace(",", "").replace(" ", "")
    try:
        value = float(cleaned)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _number_key(value: float) -> str:
    return f"{round(value, 2):.2f}"


def _date(year: int, month: int, day: int) -> str | None:
    import datetime as dt

    try:
        return dt.date(year, month, day).isoformat()
    except ValueError:
        return None


def _vocabulary(world: World) -> dict[str, tuple[str, str]]:
    """Casefolded phrase -> (kind, canonical) for the World's named things."""
    vocab: dict[str, tuple[str, str]] = {}
    for title in {p.title for p in world.people}:
        vocab[title.casefold()] = ("title", title.casefold())
    for city in world.cities:
        vocab[city.name.casefold()] = ("city", city.name.casefold())
    for org in world.orgs:
        vocab[org.name.casefold()] = ("organization", org.name.casefold())
    for person in world.people:
        vocab[person.name.casefold()] = ("person", person.name.casefold())
    return vocab


_VOCAB: ByIdentity[World, dict[str, tuple[str, str]]] = ByIdentity(_vocabulary, maxsize=64)


_NEEDS = {  # what a kind is read from: the patterns to mask first, then its own reader
    "integer": "numbers", "decimal": "numbers", "date": "dates", "datetime": "dates",
    "time": "dates", "email": "email", "url": "url", "phone": "phone", "id": "id",
    "person": "names", "organization": "names", "city": "names", "title": "names",
}
_ANY_MONTH = re.compile(r"(?i)\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)")


def _masked(text: str) -> str:
    """``text`` with everything that holds digits but is no plain number blanked out (each
    pattern tried only when the characters it needs are there: regexes cost)."""
    if "://" in text:
        text = _URL.sub(" ", text)
    if "@" in text:
        text = _EMAIL.sub(" ", text)
    if "-" in text or "/" in text:
        text = _ISO_DATE.sub(" ", _ISO_DATETIME.sub(" ", text))
        if "/" in text:
            text = _SLASH_DATE.sub(" ", text)
    if _ANY_MONTH.search(text):
        text = _DAY_FIRST.sub(" ", _MONTH_FIRST.sub(" ", text))
    if ":" in text or "m" in text or "M" in text:
        text = _TIME.sub(" ", text)
    text = _PHONE.sub(" ", text)
    return _ID.sub(" ", text)


class _Enough(Exception):
    """More distinct values of a kind than anyone asked about: reading can stop."""


def read_mentions(text: str, world: World | None = None,
                  kinds: frozenset[str] | None = None, stop: int | None = None) -> Mentions:
    """The typed values ``text`` mentions: of every kind, or only of ``kinds`` (cheaper).

    Call it on at most ``MAX_ANSWER_CHARS`` characters. With ``stop``, reading ends once some
    kind has more than ``stop`` distinct values (the result is then partial).
    """
    try:
        return _read(text, world, kinds, stop)
    except _Enough as enough:
        return enough.args[0]


def _read(text: str, world: World | None, kinds: frozenset[str] | None,
          stop: int | None) -> Mentions:
    text = text if text.isascii() else _fold(text)
    readers = set(_NEEDS.values()) if kinds is None else {_NEEDS[k] for k in kinds
                                                          if k in _NEEDS}
    found: dict[str, set[str]] = {}

    def add(kind: str, value: str | None) -> None:
        if value is not None:
            seen = found.setdefault(kind, set())
            seen.add(value)
            if stop is not None and len(seen) > stop:
                raise _Enough(Mentions(found, ""))

    if "url" in readers:
        for m in _URL.finditer(text):
            add("url", m.group(0).rstrip(".,;:!?").casefold().rstrip("/"))
    if "email" in readers and "@" in text:
        for m in _EMAIL.finditer(text):
            add("email", m.group(0).casefold())
    if "dates" in readers:
        rest = _URL.sub(" ", text)
        for m in _ISO_DATETIME.finditer(rest):
            day = _date(*map(int, m.group(1, 2, 3)))
            add("datetime", None if day is None else f"{day}T{m.group(4)}:{m.group(5)}")
            add("date", day)
        rest = _ISO_DATETIME.sub(" ", rest)
        for m in _ISO_DATE.finditer(rest):
            add("date", _date(*map(int, m.groups())))
        if "/" in rest:
            for m in _SLASH_DATE.finditer(rest):
                first, second, year = map(int, m.groups())
                us, other = _date(year, first, second), _date(year, second, first)
                add("date", us if us is not None else other)  # 03/31/2026, 31/03/2026
                if us is not None and other is not None and other != us:
                    add("date", other)  # 03/04/2026: both readings are mentioned
        for m in _MONTH_FIRST.finditer(rest):
            add("date", _date(int(m.group(3)), _MONTHS[m.group(1)[:3].lower()], int(m.group(2))))
        for m in _DAY_FIRST.finditer(rest):
            add("date", _date(int(m.group(3)), _MONTHS[m.group(2)[:3].lower()], int(m.group(1))))
        if ":" in rest or "m" in rest.lower():
            for m in _TIME.finditer(_ISO_DATE.sub(" ", rest)):
                add("time", _time(m))
    if "phone" in readers:
        for m in _PHONE.finditer(text):
            add("phone", re.sub(r"\D", "", m.group(0))[-10:])
    if "id" in readers:
        for m in _ID.finditer(text):
            add("id", m.group(0).upper())
    if "numbers" in readers:
        rest = _LIST_MARK.sub(" ", _masked(text))
        for raw in dict.fromkeys(_NUMBER.findall(rest)):  # each distinct spelling once
            value = _number(raw)
            if value is not None:
                add("integer" if value == int(value) and abs(value) < 1e15 else "decimal",
                    _number_key(value))
    if "names" in readers and world is not None:
        vocab = _VOCAB(world)
        words = _WORDS.findall(text.casefold())
        get = vocab.get
        for i, word in enumerate(words):
            hit = get(word)
            if hit is not None:
                add(*hit)
            if i + 1 < len(words):
                hit = get(word + " " + words[i + 1])
                if hit is not None:
                    add(*hit)
    normalised = ""
    if kinds is None or "text" in kinds:
        normalised = " " + " ".join(_WORDS_AND_NUMBERS.findall(text.casefold())) + " "
    return Mentions(found, normalised)


_WORDS_AND_NUMBERS = re.compile(r"[^\W_]+(?:[.,'-][^\W_]+)*")


def _time(match: re.Match[str]) -> str | None:
    if match.group(4) is not None:
        hour, minute = int(match.group(4)), int(match.group(5))
    else:
        hour, minute = int(match.group(1)), int(match.group(2) or 0)
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if match.group(3).lower() == "p" else 0)
    return f"{hour:02d}:{minute:02d}" if hour < 24 and minute < 60 else None


def kind_of(value: str, world: World | None = None) -> str:
    """The kind of an expected answer value (``text`` when it is none of the typed kinds)."""
    mentions = read_mentions(value, world)
    # a value is of the first kind that reads it whole: an email also names a person, a
    # date-time also a date
    for kind in ("url", "email", "datetime", "date", "phone", "id", "integer", "decimal",
                 "person", "organization", "city", "title"):
        if mentions.of(kind) and _whole(value, kind, world):
            return kind
    return "text"


def _whole(value: str, kind: str, world: World | None) -> bool:
    """Whether ``value`` is nothing but one mention of ``kind`` (not "4 invoices", say)."""
    found = read_mentions(value, world, frozenset({kind})).of(kind)
    if len(found) != 1:
        return False
    if kind in ("integer", "decimal"):
        return _number(value.strip()) is not None
    if kind in ("person", "organization", "city", "title"):
        return " ".join(_WORDS.findall(value.casefold())) in found
    return True


def canonical(value: str, kind: str, world: World | None = None) -> str:
    """The canonical form of an expected value of ``kind`` (as ``read_mentions`` writes it)."""
    if kind == "text":
        return " ".join(_WORDS_AND_NUMBERS.findall(_fold(value).casefold()))
    found = read_mentions(value, world, frozenset({kind})).of(kind)
    return next(iter(found)) if len(found) == 1 else _fold(value).casefold().strip()


def _echoes(instruction: str, world: World | None, kind: str) -> frozenset[str]:
    """Values of ``kind`` the request states (cached: every episode of a task asks again)."""
    if not instruction:
        return frozenset()
    key = (instruction, world.seed if world is not None else None, kind)
    hit = _ECHOES.get(key)
    if hit is None:
        if len(_ECHOES) >= 4096:
            _ECHOES.clear()
        hit = _ECHOES[key] = frozenset(read_mentions(instruction[:MAX_ANSWER_CHARS], world,
                                                     frozenset({kind})).of(kind))
    return hit


_ECHOES: dict[tuple[str, int | None, str], frozenset[str]] = {}


def check_answer(expected: str, message: str, world: World | None = None, *,
                 kind: str | None = None, allowed: int | None = None,
                 instruction: str = "",
                 worked: Mapping[str, frozenset[str]] | None = None,
                 rivals: Iterable[str] = ()) -> tuple[bool, str]:
    """Whether ``message`` reports ``expected`` as the answer, and why not.

    Args:
        expected: The value the request asks for, as ``Task.answer`` writes it.
        message: The final message.
        world: The episode's World (its named things are typed mentions).
        kind: The value's kind (default: ``kind_of(expected)``).
        allowed: Distinct values of that kind the message may hold (default: 1 + slack).
        instruction: The request; values it states may be echoed without counting.
        worked: Values of each kind the episode's own work accounts for (``worked_values``):
            up to ``MAX_WORKED`` of them may stand beside the answer without counting.
        rivals: The same detail of the other records the job's reads showed beside the
            answer: a message naming one the request does not state hedges, and fails.
    """
    if not isinstance(message, str):
        return False, "the final message is not text"
    if len(message) > MAX_ANSWER_CHARS:
        return False, (f"the final message is {len(message):,} characters; answers are read from "
                       f"at most {MAX_ANSWER_CHARS:,}")
    kind = kind if kind in KINDS else kind_of(expected, world)
    passed, why = _check_kind(expected, message, world, kind, allowed, instruction, worked)
    if passed and kind != "text":
        other = _alternative(expected, message, world, kind, instruction)
        if other is not None:
            return False, (f"the final message offers {other!r} as an alternative to "
                           f"{expected!r} (\"... or ...\"): a hedge is no answer")
    if passed and rivals:
        rival = _rival_named(expected, message, world, kind, instruction, rivals)
        if rival is not None:
            return False, (f"the final message also names {rival!r}, the same detail of another "
                           f"candidate: {expected!r} is the one asked for (a hedge is no answer)")
    return passed, why


# "X or Y", "either X or Y", "X (or maybe Y)": the words on each side of an "or", within one
# clause (a full stop, semicolon or line ends it; a decimal point or an email's dot does not)
_OR = re.compile(r"\bor\b", re.I)
_CLAUSE_END = re.compile(r"[;!?\n]|\.(?!\w)")
_OR_REACH = 60  # characters each side of an "or" read for the two values it parts


def _alternative(expected: str, message: str, world: World | None, kind: str,
                 instruction: str) -> str | None:
    """Another value of ``kind`` the message offers as an alternative to the expected one
    ("TKT-7735 or TKT-7736"), if any: one side of an "or" names the answer, the other a value
    of the same kind that the request does not state."""
    if _OR.search(message) is None:
        return None
    family = _NUMERIC if kind in _NUMERIC else (
        ("datetime", "date") if kind in ("datetime", "date") else (kind,))
    target = canonical(expected, kind, world)
    tally = _rounded if kind in _NUMERIC else (lambda v: v)
    goal = tally(target)
    stated = {tally(v) for k in family for v in _echoes(instruction, world, k)}

    def values(text: str) -> dict[Any, str]:
        found = read_mentions(text, world, frozenset(family))
        return {tally(v): v for k in family for v in found.of(k)}

    for m in _OR.finditer(message):
        left = message[max(0, m.start() - _OR_REACH):m.start()]
        ends = list(_CLAUSE_END.finditer(left))
        left = left[ends[-1].end():] if ends else left
        right = message[m.end():m.end() + _OR_REACH]
        end = _CLAUSE_END.search(right)
        right = right[:end.start()] if end else right
        a, b = values(left), values(right)
        for here, there in ((a, b), (b, a)):
            if goal in here or (kind == "datetime" and target[:10] in here):
                others = [v for key, v in there.items()
                          if key != goal and key not in stated and v != target[:10]]
                if others:
                    return others[0]
    return None


def _rival_named(expected: str, message: str, world: World | None, kind: str,
                 instruction: str, rivals: Iterable[str]) -> str | None:
    """The first of ``rivals`` the message names, each read as a value of its own kind: not
    one the request states, nor the expected value (numbers compare as numbers: 150 and
    149.50 are rivals whichever way written). Values the job's own writes were given or
    answered are no rivals in the first place (``compoenv.compose.rubric``). The message is
    read once per kind, whatever the number of rivals."""
    named: dict[str, tuple[set[Any], set[Any]]] = {}  # kind -> (named, not counted)

    def values(own: str) -> tuple[set[Any], set[Any]]:
        if own not in named:
            family = _NUMERIC if own in _NUMERIC else (own,)
            norm = _rounded if own in _NUMERIC else (lambda v: v)
            seen = {norm(v) for k in family
                    for v in read_mentions(message, world, frozenset({k})).of(k)}
            skip = {norm(v) for k in family for v in _echoes(instruction, world, k)}
            if own in _NUMERIC and kind in _NUMERIC or own == kind:
                skip.add(norm(canonical(expected, kind, world)))
            named[own] = seen, skip
        return named[own]

    text = message if message.isascii() else _fold(message)
    stated = f" {' '.join(words(_fold(instruction)))} "
    target_words = words(_fold(expected))
    listed: set[tuple[str, ...]] | None = None
    for rival in rivals:
        own = kind_of(rival, world)
        if own == "text":  # a name of several words anywhere; one word as a listed item
            said = words(_fold(rival))
            if f" {' '.join(said)} " in stated or content(said) == content(target_words):
                continue
            if len(content(said)) >= 2:
                if stands_alone(said, tokens(text), world):
                    return rival
                continue
            if listed is None:
                listed = {found for found, _ in short_items(text, target_words)}
            if content(said) in listed:
                return rival
            continue
        key = canonical(rival, own, world)
        seen, skip = values(own)
        key = _rounded(key) if own in _NUMERIC else key
        if key in seen and key not in skip:
            return rival
    return None


def _rounded(text: str) -> float | None:
    try:
        return round(float(text.replace(",", "")), 2)
    except ValueError:
        return None


_NUMERIC = ("integer", "decimal")


def _check_kind(expected: str, message: str, world: World | None, kind: str,
                allowed: int | None, instruction: str,
                worked: Mapping[str, frozenset[str]] | None) -> tuple[bool, str]:
    """``check_answer`` for a value read as ``kind``, rivals aside."""
    if kind == "text":
        return _check_text(expected, message, world, allowed, instruction)
    free = (worked or {}).get("date" if kind == "datetime" else kind, frozenset())
    target = canonical(expected, kind, world)
    if kind == "datetime":
        reply = read_mentions(message, world, frozenset({"datetime", "date", "time"}))
        day, _, clock = target.partition("T")
        hit = target in reply.of("datetime") or (day in reply.of("date")
                                                 and clock in reply.of("time"))
        counted, echoes, target_key = reply.of("date"), _echoes(instruction, world, "date"), day
    else:
        echoes = _echoes(instruction, world, kind)
        limit = ((allowed if allowed is not None else 1 + SLACK.get(kind, 0)) + len(echoes)
                 + min(len(free), MAX_WORKED) + 1)
        reply = read_mentions(message, world, frozenset({kind}), stop=limit)
        hit = target in reply.of(kind) or len(reply.of(kind)) > limit
        counted, target_key = reply.of(kind), target
    if not hit:
        return False, f"the final message does not report {expected!r}"
    structured = without_run_ons(message)
    if structured is not message and not _reports(target, kind, structured, world):
        return False, (f"the final message holds {expected!r} only in a run of words without "
                       f"the structure of a sentence (a spray is no answer)")
    if world is not None and kind in ("date", "datetime"):
        echoes = echoes | {world.today.isoformat()}
    others = counted - echoes - {target_key}
    accounted = others & free
    if len(accounted) > MAX_WORKED:  # beyond what a report mentions: they count again
        accounted = set(sorted(accounted)[:MAX_WORKED])
    others -= accounted
    most = allowed if allowed is not None else 1 + SLACK.get(kind, 0)
    if len(others) >= most:
        return False, (f"the final message names {len(others) + 1} or more distinct {kind} "
                       f"values; at most {most} may stand beside what the request states (a "
                       f"list of candidates is not an answer)")
    return True, ""


def _reports(target: str, kind: str, message: str, world: World | None) -> bool:
    """Whether ``message`` mentions the canonical value ``target`` of ``kind``."""
    if kind == "datetime":
        reply = read_mentions(message, world, frozenset({"datetime", "date", "time"}))
        day, _, clock = target.partition("T")
        return target in reply.of("datetime") or (day in reply.of("date")
                                                  and clock in reply.of("time"))
    return target in read_mentions(message, world, frozenset({kind})).of(kind)


_COUNT_FIELD = re.compile(r"(?:^|_)counts?$|^(?:num|n)_", re.I)  # "count", "open_count"


_MISSING = object()
_TYPED: dict[tuple[str, Any], tuple[str, str]] = {}
_PLAIN_TYPED: dict[str, tuple[str, str] | None] = {}
# the kinds ``kind_of`` tries before any name: read from the text alone, whatever the World
_PLAIN_KINDS = ("url", "email", "datetime", "date", "phone", "id", "integer", "decimal")
_NAME_KINDS = ("person", "organization", "city", "title")
_DIGIT = re.compile(r"[0-9]")


def _typed(text: str, world: World | None) -> tuple[str, str]:
    """``kind_of`` and ``canonical`` of a value: what the text alone settles (an id, a date,
    an amount) kept once for every World, what takes the World's names kept per World (the
    same ids, dates and amounts come back in every replay of a task, and in other worlds)."""
    plain = _PLAIN_TYPED.get(text, _MISSING)
    if plain is _MISSING:
        plain = _plain_typed(text)
        if len(_PLAIN_TYPED) >= 200_000:
            _PLAIN_TYPED.clear()
        _PLAIN_TYPED[text] = plain
    if plain is not None:
        return plain
    if world is None:
        return "text", text
    key = (text, (world.seed, world.today))
    hit = _TYPED.get(key)
    if hit is None:
        # the kinds of names, in kind_of's order, else text
        mentions = read_mentions(text, world, frozenset(_NAME_KINDS))
        hit = next(((kind, canonical(text, kind, world)) for kind in _NAME_KINDS
                    if mentions.of(kind) and _whole(text, kind, world)), ("text", text))
        if len(_TYPED) >= 200_000:
            _TYPED.clear()
        _TYPED[key] = hit
    return hit


def _plain_typed(text: str) -> tuple[str, str] | None:
    """``_typed`` of a value of a kind ``kind_of`` reads before names, else None."""
    if text.isascii() and "@" not in text and "://" not in text and not _DIGIT.search(text):
        return None  # each of those kinds is read from a digit, an "@" or a "://"
    mentions = read_mentions(text, None, frozenset(_PLAIN_KINDS))
    for kind in _PLAIN_KINDS:
        if mentions.of(kind) and _whole(text, kind, None):
            return kind, canonical(text, kind, None)
    return None


def worked_values(calls: Iterable[Any], is_write: Callable[[str], bool],
                  world: World | None = None) -> dict[str, frozenset[str]]:
    """Values of each kind the episode's own work accounts for, canonical as
    ``read_mentions`` writes them: every whole value a successful write was given or answered
    (the id of a record it created, a quantity, a date), every count a successful call
    answered (how many items a list held, a field named like a count), and how many calls,
    successful calls, writes and calls of each tool the episode made. An honest report
    mentions them beside the answer ("I created R-4821 for 4 people; 3 invoices are open").

    Args:
        calls: The episode's calls (``name``, ``arguments``, ``result``: the call log).
        is_write: Whether the tool of that name changes state.
        world: The episode's World.
    """
    found: dict[str, set[str]] = {}
    budget = _WORKED_SCALARS

    def add(value: Any) -> None:
        nonlocal budget
        budget -= 1
        text = str(value)
        if budget < 0 or not 0 < len(text) <= 200:
            return
        kind, value = _typed(text, world)
        if kind != "text":
            found.setdefault(kind, set()).add(value)
            if kind == "datetime":
                found.setdefault("date", set()).add(text[:10])

    calls = list(calls)
    done = [c for c in calls if isinstance(c.result, Mapping) and c.result.get("success", False)]
    writes = [c for c in done if isinstance(c.name, str) and is_write(c.name)]
    # how much work the episode did: "I made 12 calls, 5 of them changes, 3 emails sent"
    tallies = [len(calls), len(done), len(writes), *Counter(c.name for c in done).values()]
    found.setdefault("integer", set()).update(_number_key(n) for n in tallies)
    for call in done:
        result = call.result
        data = result.get("data")
        for count in _counts(data):
            found.setdefault("integer", set()).add(_number_key(count))
        if isinstance(call.name, str) and is_write(call.name):
            for value in itertools.chain(_scalars(call.arguments), _scalars(data)):
                add(value)
    return {kind: frozenset(values) for kind, values in found.items()}


def _scalars(value: Any, depth: int = 0) -> Iterator[Any]:
    """The strings and numbers a JSON value holds (not booleans; not deeper than 4 levels)."""
    if (type(value) is dict or isinstance(value, Mapping)) and depth < 4:
        for item in value.values():
            yield from _scalars(item, depth + 1)
    elif isinstance(value, (list, tuple)) and depth < 4:
        for item in value[:50]:
            yield from _scalars(item, depth + 1)
    elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
        yield value


def _counts(value: Any, depth: int = 0) -> Iterator[int]:
    """How many items each list of a JSON value holds, and the values of its count fields."""
    if (type(value) is dict or isinstance(value, Mapping)) and depth < 4:
        for key, item in value.items():
            if (isinstance(item, int) and not isinstance(item, bool) and isinstance(key, str)
                    and _COUNT_FIELD.search(key) and 0 <= item < 10**9):
                yield item
            else:
                yield from _counts(item, depth + 1)
    elif isinstance(value, (list, tuple)) and depth < 4:
        yield len(value)
        for item in value[:50]:
            yield from _counts(item, depth + 1)


def _check_text(expected: str, message: str, world: World | None, allowed: int | None,
                instruction: str) -> tuple[bool, str]:
    """``check_answer`` for a value of no typed kind (``compoenv.text_answers``): the words
    stand on their own somewhere, and if the reply lists them as a short item, it lists at
    most ``allowed`` other short items of text beside those the request states."""
    text = message if message.isascii() else _fold(message)
    target = words(_fold(expected))
    if not stands_alone(target, tokens(text), world):
        return False, (f"the final message does not report {expected!r} on its own (a part of "
                       f"a longer name is not the value)")
    items = short_items(text, target)
    key = content(target)
    if all(found != key for found, _ in items):
        return True, ""  # said in a sentence ("the section is health"), not as a list item
    stated = " " + " ".join(words(_fold(instruction[:MAX_ANSWER_CHARS]))) + " "
    most = allowed if allowed is not None else 1 + SLACK["text"]
    others: set[tuple[str, ...]] = set()
    for found, raw in items:
        if (found == key or found in others or f" {' '.join(found)} " in stated
                or kind_of(raw, world) != "text"):
            continue  # the value itself, an echo of the request, or a value of a typed kind
        others.add(found)
        if len(others) >= most:
            return False, (f"the final message lists {len(others) + 1} or more short items "
                           f"beside {expected!r}; at most {most} may stand beside what the "
                           f"request states (a list of candidates is not an answer)")
    return True, ""
