"""Wording checks: what in an instruction no person would write (one ``check_*`` per rule)."""

from __future__ import annotations

import re
from typing import Iterator, NamedTuple

from compoenv.compose.lint.context import TaskContext
from compoenv.compose.lint.fields import not_a_noun
from compoenv.compose.lint.records import Hit
from compoenv.compose.render import singular

__all__ = ["check_field_as_noun", "check_double_article", "check_repeated_noun",
           "check_quoted_raw_value", "check_unit", "check_placeholder", "check_sentence",
           "check_spacing", "check_filler", "check_same_ends", "check_owner",
           "check_doubled_word", "possessives"]

_OWNER = re.compile(r"\b(?:the|that|each|this) ((?:(?!(?:the|that|each|this)\b)[a-z0-9-]+ ){0,4}"
                    r"(?!(?:the|that|each|this)\b)[a-z0-9-]+)$")
_LAST_WORD = re.compile(r"(\S+)$")
_RUN = re.compile(r"[a-z0-9]+(?: [a-z0-9]+){0,6}")
_POSSESSIVE = re.compile(r"['\u2019]s ")
_OF_THAT = re.compile(r"\bthe ((?:(?!the\b)[a-z0-9]+ ){1,6})of (?:that|those)(?: [a-z]+)?")
_EXTREME = re.compile(r"\bwith the (?:highest|lowest|earliest|latest) ")
# compounds English uses although they repeat their owner's word ("the pay stub's pay date")
COMPOUNDS = frozenset({"pay date", "account manager"})
# words that, following a field phrase, make it part of a longer noun ("the invoice's due date")
HEADS = frozenset({"date", "time", "day", "amount", "price", "city", "address", "name", "email",
                   "number", "fee", "total", "count", "list", "status", "hour", "hours"})
_FUNCTION = frozenset({"the", "a", "an", "of", "by", "for", "to", "in", "on", "at", "and", "or",
                       "with", "from"})


def _near(text: str, span: tuple[int, int], words: int = 3) -> str:
    """The span with up to ``words`` words either side: the quote a message shows."""
    before = re.split(r"\s", text[:span[0]])[-words - 1:]
    after = re.split(r"\s", text[span[1]:])[:words + 1]
    return (" ".join(before) + text[span[0]:span[1]] + " ".join(after)).strip()


class Possessive(NamedTuple):
    """``the customer profile's customer city``: where it starts and ends, owner and field."""

    start: int
    end: int
    owner: tuple[str, ...]
    field: str


def _field_at(ctx: TaskContext, pos: int) -> str | None:
    """The longest output field phrase of the task's tools that starts at ``pos``, unless a
    longer field phrase of any tool, or a head noun, reads on from it."""
    run = _RUN.match(ctx.text, pos)
    if run is None:
        return None
    tokens = run.group(0).split(" ")
    known = ctx.vocab.all_phrases
    for k in range(len(tokens), 0, -1):
        phrase = " ".join(tokens[:k])
        if phrase in ctx.phrases or phrase in known:
            following = tokens[k] if k < len(tokens) else ""
            return None if phrase not in ctx.phrases or following in HEADS else phrase
    return None


def possessives(ctx: TaskContext) -> list[Possessive]:
    """Every "<owner>'s <field>" of the instruction outside quotes whose field is an output
    field of the task's tools (computed once per task)."""
    if "possessives" in ctx.memo:
        return ctx.memo["possessives"]
    found = []
    for m in _POSSESSIVE.finditer(ctx.text):
        if ctx.in_quotes(m.start()):
            continue
        field = _field_at(ctx, m.end())
        if field is None:
            continue
        before = ctx.text[max(0, m.start() - 80):m.start()]
        owner = _OWNER.search(before) or _LAST_WORD.search(before)
        if owner is None:
            continue
        start = m.start() - len(before) + owner.start()
        found.append(Possessive(start, m.end() + len(field), tuple(owner.group(1).split()),
                                field))
    ctx.memo["possessives"] = found
    return found


def check_field_as_noun(ctx: TaskContext) -> Iterator[Hit]:
    """A field name used as a noun: "the candidate's applied on", "the modified of that file"."""
    for p in possessives(ctx):
        why = not_a_noun(p.field)
        if why:
            yield Hit(f'"{ctx.text[p.start:p.end]}" names a field, not a thing '
                      f'("{p.field}" {why})', span=(p.start, p.end))
    for m in _OF_THAT.finditer(ctx.text):
        phrase = m.group(1).strip()
        phrase = phrase if phrase in ctx.phrases else phrase.removeprefix("total ")
        why = not_a_noun(phrase) if phrase in ctx.phrases else None
        if why and not ctx.in_quotes(m.start()):
            yield Hit(f'"{m.group(0)}" names a field, not a thing ("{phrase}" {why})',
                      span=m.span())
    for m in _EXTREME.finditer(ctx.text):
        field = _field_at(ctx, m.end())
        why = not_a_noun(field) if field else None
        if why and field and not ctx.in_quotes(m.start()):
            end = m.end() + len(field)
            yield Hit(f'"{ctx.text[m.start():end]}" names a field, not a thing '
                      f'("{field}" {why})', span=(m.start(), end))


_ARTICLES = re.compile(r"\b(?:a|an|the) (?:a|an|the)\b", re.IGNORECASE)


def check_double_article(ctx: TaskContext) -> Iterator[Hit]:
    """Two articles in a row: "a the", "the the", "an the", "the The Grand Hotel"."""
    for m in _ARTICLES.finditer(ctx.text):
        yield Hit(f'two articles in a row: "{_near(ctx.text, m.span())}"', span=m.span())


def check_repeated_noun(ctx: TaskContext) -> Iterator[Hit]:
    """A field that repeats its owner's noun: "the restaurant's restaurant name"."""
    for p in possessives(ctx):
        owner = {singular(w) for w in p.owner if w not in _FUNCTION}
        first = singular(p.field.split(" ")[0])
        if first in owner and p.field not in COMPOUNDS:
            yield Hit(f'"{ctx.text[p.start:p.end]}" repeats "{first}"', span=(p.start, p.end))


_OWNERS = re.compile(r"\bthe ((?:(?!the\b)[a-z0-9-]+ ){1,4}[a-z0-9-]+)['\u2019]s\b")
_OWNER_PREPOSITIONS = frozenset({"by", "with", "near", "from", "for", "to", "at", "on", "in"})


def check_owner(ctx: TaskContext) -> Iterator[Hit]:
    """A tool's name used as the owner of a possessive: "the files shared with's name",
    "the articles by author's city"."""
    for m in _OWNERS.finditer(ctx.text):
        if not ctx.in_quotes(m.start()) and \
                _OWNER_PREPOSITIONS.intersection(m.group(1).split(" ")):
            yield Hit(f'"{m.group(0)}" names a tool\'s result, not a thing', span=m.span())


_SNAKE = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)+")


def check_quoted_raw_value(ctx: TaskContext) -> Iterator[Hit]:
    """A quoted machine value: a snake_case token or a parameter's enum value ("off_peak")."""
    for start, end in ctx.quoted:
        value = ctx.text[start + 1:end - 1]
        if _SNAKE.fullmatch(value):
            yield Hit(f'quotes the raw value "{value}" in "{_near(ctx.text, (start, end))}"',
                      span=(start, end))
        elif value in ctx.enums:
            yield Hit(f'quotes the enum value "{value}" in "{_near(ctx.text, (start, end))}"',
                      span=(start, end))


_UNIT = re.compile(r"\b(minute|hour|day|night|week|month|year|km|mile|seat|ticket|room|guest)s?"
                   r"[- ]\1s?\b", re.IGNORECASE)


def check_unit(ctx: TaskContext) -> Iterator[Hit]:
    """A unit said twice: "minutes-minute", "45-minute minutes", "duration minutes minutes"."""
    for m in _UNIT.finditer(ctx.text):
        yield Hit(f'malformed unit "{m.group(0)}" in "{_near(ctx.text, m.span())}"',
                  span=m.span())


# words and adjectives the offline world model and the value filler make placeholders from
_FILLER = ("alpha|bright|clear|daily|early|fresh|grand|harbor|island|jade|keen|lively|modern|"
           "north|open|prime|quiet|river")
_FIELD = "name|id|label|title|code|value|text|note|description|reference|key|handle|tag|slug"
_PLACEHOLDERS = (
    re.compile(rf"\b(?:{_FILLER}) (?:[a-z]+ ){{0,3}}(?:{_FIELD}) \d{{1,4}}\b(?![.,:]\d)",
               re.IGNORECASE),
    re.compile(r"\b[a-z]+ id \d{1,4}\b(?![.,:]\d)"),
    re.compile(rf'"(?:quarterly|weekly|urgent|new|follow-up|team|draft|final|sample|test|'
               rf'example|default|placeholder) (?:{_FIELD})"', re.IGNORECASE),
    re.compile(rf'"(?:{_FILLER}) (?:update|notes from [A-Z][a-z]+ [A-Z][a-z]+\.?)"',
               re.IGNORECASE),
)


def check_placeholder(ctx: TaskContext) -> Iterator[Hit]:
    """A value that is a generator's placeholder: "quiet event name 555", "quarterly name"."""
    seen: set[tuple[int, int]] = set()
    for pattern in _PLACEHOLDERS:
        for m in pattern.finditer(ctx.text):
            if not any(s <= m.start() < e for s, e in seen):
                seen.add(m.span())
                yield Hit(f'placeholder value "{m.group(0).strip(chr(34))}"', span=m.span())


_LABEL = re.compile(r"^(?:(?:House rules|Request): |- )")
# a sentence ends at . ! or ?, but not at the dot of an abbreviation in a name ("Co.", "St.")
_BREAK = re.compile(r"(?<!\bCo)(?<!\bInc)(?<!\bLtd)(?<!\bSt)(?<!\bDr)(?<!\bMr)(?<!\bMs)"
                    r"(?<!\bMrs)(?<!\bJr)(?<!\bAve)(?<!\bNo)[.!?][\"')\u201d]*\s+(?=\S)")
_END = re.compile(r"[.!?][\"')\u201d]*$")


def check_sentence(ctx: TaskContext) -> Iterator[Hit]:
    """A sentence that starts in lower case, or a line without final punctuation."""
    offset = 0
    for line in ctx.text.split("\n"):
        label = _LABEL.match(line)
        body = line[label.end():] if label else line
        base = offset + (label.end() if label else 0)
        starts = [0] + [m.end() for m in _BREAK.finditer(body)
                        if not ctx.in_quotes(base + m.start())]
        for s in starts:
            if s < len(body) and body[s].islower():
                word = body[s:].split(" ", 1)[0]
                yield Hit(f'sentence starts in lower case: "{word}"', span=(base + s,
                                                                            base + s + len(word)))
        text = body.rstrip()
        if text and not _END.search(text) and line != "House rules:":  # a list follows
            tail = " ".join(text.split(" ")[-4:])
            yield Hit(f'no final punctuation: "...{tail}"', span=(base + len(text) - len(tail),
                                                                 base + len(text)))
        offset += len(line) + 1


_SPACING = ((re.compile(r"(?<=\S) {2,}(?=\S)"), "doubled space"),
            (re.compile(r"(?<=\w) +(?=[,.;:!?](?:\s|$))"), "space before punctuation"))


def check_spacing(ctx: TaskContext) -> Iterator[Hit]:
    """Doubled spaces, or a space before punctuation."""
    for pattern, kind in _SPACING:
        for m in pattern.finditer(ctx.text):
            s, e = m.span()
            yield Hit(f'{kind}: "{_near(ctx.text, (s, e), 2)}"', span=(s, e))


_FILLERS = re.compile(r"\(\s*\)|\(\s*;|;\s*\)|\bthe default\b")


def check_filler(ctx: TaskContext) -> Iterator[Hit]:
    """An empty "( )" or a "the default" standing in for a value nobody stated."""
    for m in _FILLERS.finditer(ctx.text):
        yield Hit(f'filler "{m.group(0)}"', span=m.span())


_SAME_ENDS = re.compile(r"\b(between|from) ([^.;\n]{3,80}?) (and|to) \2(?=[\s.,;:)]|$)")


def check_same_ends(ctx: TaskContext) -> Iterator[Hit]:
    """The same words at both ends of a range: "between Chicago and Chicago"."""
    for m in _SAME_ENDS.finditer(ctx.text):
        if (m.group(1) == "between") == (m.group(3) == "and"):
            yield Hit(f'"{m.group(0)}" has the same value at both ends', span=m.span())


_DOUBLED = re.compile(r"\b([A-Za-z]+) \1\b", re.IGNORECASE)
_QUOTED_TEXT = re.compile(r'"[^"\n]*"')


def check_doubled_word(ctx: TaskContext) -> Iterator[Hit]:
    """A word said twice in a row outside quoted text: "the lowest lowest price", "mark
    that that invoice"."""
    quoted = [m.span() for m in _QUOTED_TEXT.finditer(ctx.text)]
    for m in _DOUBLED.finditer(ctx.text):
        if not any(a <= m.start() < b for a, b in quoted):
            yield Hit(f'"{m.group(1)}" twice: "{_near(ctx.text, m.span())}"', span=m.span())
