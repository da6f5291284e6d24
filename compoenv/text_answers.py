"""Text answers: where a word answer stands on its own in a reply, and the items listed beside it.

A value of no typed kind (a category, a status, a section) is matched as words. Two things keep
that honest. A word counts only where it stands on its own: "health" inside "Granite Health" (a
World name) or inside any longer capitalised name ("Mayo Health Clinic") is part of that name,
not a report of the section. And a reply whose short items list the answer among other
candidates ("news, sports, health or tech") reports none of them; ``short_items`` lists those
items for ``compoenv.answers`` to count like the mentions of a typed kind.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from functools import lru_cache

from compoenv._cache import ViewCache
from compoenv.world import World

__all__ = ["Token", "tokens", "words", "content", "stands_alone", "short_items",
           "without_run_ons"]

_TOKEN = re.compile(r"[^\W_]+(?:[.,'-][^\W_]+)*")
# words that open a sentence or sit between names without being part of one: "The Health
# section", "In Progress" are no names
_PLAIN = frozenset(
    "a about all an and are as at be been but by did do done for from had has have he her here "
    "his i if in into is it its me my no not of on or our she so that the their them there "
    "these they this those to was we were what which with yes you your".split())
# an item of nothing but these answers no question ("Done.", "Sure!")
_FILLER = _PLAIN | frozenset("hello hi ok okay sure thanks thank".split())
# where one item of a list ends and the next begins
_BETWEEN_ITEMS = re.compile(r"[,;|\n\u2022:()\[\]]|[.!?](?=\s|$)|\s(?:or|and)\s", re.I)
_LIST_MARK = re.compile(r"(?m)^[ \t>]*(?:\d{1,3}[.)]|[-*+\u2022\u2013\u2014])[ \t]")
# a Markdown table's rule row ("| --- | :--: |") and the header row above it
_TABLE_HEAD = re.compile(r"(?m)^[^\n]*\|[^\n]*\n[ \t]*\|?(?:[ \t]*:?-{3,}:?[ \t]*\|)+[ \t]*"
                         r"(?::?-{3,}:?[ \t]*)?$")
# the label of a labelled line ("Total: ...", "- **Status:** ...", "| Status | ... |"): a few
# words that name what follows, not a value beside it
_LABEL = re.compile(r"(?m)^([ \t>]*(?:(?:\d{1,3}[.)]|[-*+\u2022])[ \t]+)?)"
                    r"(?:\*\*|__)?([^\W_][^:|\n*_]{0,40}?)(?:\*\*|__)?[ \t]*"
                    r"(?::(?:\*\*|__)?(?=[ \t]*\S)|\|(?=[^\n]*\|))")
_TABLE_START = re.compile(r"(?m)^[ \t]*\|")
# links and emails are values of a typed kind, never a text candidate; left whole they would
# be cut at their ':' and '.' into word items ("https", "www maplemedia com")
_LINK_OR_EMAIL = re.compile(r"https?://[^\s<>\"')\]]+|[\w.%+-]+@[\w.-]+\.[a-z]{2,}", re.I)


@dataclass(frozen=True, slots=True)
class Token:
    """One word of a reply: casefolded, whether it is capitalised as a name's word is, and
    whether only spaces part it from the word before (a name's words are not split by marks)."""

    word: str
    capital: bool
    joined: bool


@lru_cache(maxsize=1 << 14)  # bounded; a tuple of strings: nothing a caller can change
def words(text: str) -> tuple[str, ...]:
    """The casefolded words (and numbers) of ``text``."""
    return tuple(t.casefold() for t in _TOKEN.findall(text))


def tokens(text: str) -> list[Token]:
    """The words of ``text`` as tokens, in order."""
    out: list[Token] = []
    end = 0
    for match in _TOKEN.finditer(text):
        raw = match.group(0)
        word = raw.casefold()
        gap = text[end:match.start()]
        out.append(Token(word, raw[0].isupper() and word not in _PLAIN,
                         bool(out) and gap.isspace() and "\n" not in gap))
        end = match.end()
    return out


@dataclass(frozen=True, slots=True)
class _Names:
    """The World's names of two or more words, by first word, and the longest one's length."""

    by_first: dict[str, tuple[tuple[str, ...], ...]]
    longest: int


def _names(world: World) -> _Names:
    """People, organisations, businesses, job titles and cities named in several words."""
    every = [p.name for p in world.people] + [o.name for o in world.orgs]
    every += [name for kind in world.businesses for name, _ in world.businesses.names(kind)]
    every += [p.title for p in world.people] + [c.name for c in world.cities]
    index: dict[str, set[tuple[str, ...]]] = {}
    for name in every:
        parts = words(name)
        if len(parts) > 1:
            index.setdefault(parts[0], set()).add(parts)
    return _Names({first: tuple(found) for first, found in index.items()},
                  max((len(n) for found in index.values() for n in found), default=0))


# one per live world (an entry goes with its world: a cache here would keep worlds alive)
_NAMES: ViewCache[_Names] = ViewCache(_names)
_NO_NAMES = _Names({}, 0)


def _in_capitalised_name(toks: list[Token], start: int, end: int) -> bool:
    """Whether the words ``start:end`` continue into a capitalised neighbour ("Granite
    Health", "Health Weekly"): together they are a longer name."""
    before = start > 0 and toks[start].joined and toks[start].capital and toks[start - 1].capital
    after = (end < len(toks) and toks[end].joined and toks[end - 1].capital
             and toks[end].capital)
    return before or after


def _in_world_name(toks: list[Token], start: int, end: int, names: _Names) -> bool:
    """Whether a World name the words ``start:end`` are not overlaps them and reaches beyond."""
    for first in range(max(0, start - names.longest + 1), end):
        for name in names.by_first.get(toks[first].word, ()):
            last = first + len(name)
            if (last > start and not (start <= first and last <= end)
                    and tuple(t.word for t in toks[first:last]) == name):
                return True
    return False


def stands_alone(target: tuple[str, ...], toks: list[Token], world: World | None) -> bool:
    """Whether the words ``target`` occur in ``toks`` at least once on their own: not as a
    part of a longer capitalised name nor of a World name they are not."""
    if not target:
        return False
    names = _NAMES(world) if world is not None else _NO_NAMES
    size = len(target)
    for start, tok in enumerate(toks):
        if tok.word != target[0] or tuple(t.word for t in toks[start:start + size]) != target:
            continue
        end = start + size
        if not _in_capitalised_name(toks, start, end) and not _in_world_name(toks, start, end,
                                                                             names):
            return True
    return False


def content(found: tuple[str, ...]) -> tuple[str, ...]:
    """``found`` without its plain words ("it is health" is "health"), unless nothing else."""
    return tuple(w for w in found if w not in _PLAIN) or found


def _unlabelled(text: str, key: tuple[str, ...]) -> str:
    """``text`` without its table headers and the labels of its labelled lines and table
    rows (they name what follows), unless the value itself stands as a label: then a list of
    labels is a list of candidates, and they all count."""
    if "|" in text:
        text = _TABLE_HEAD.sub("", text)
        text = _TABLE_START.sub("", text)
    if ":" not in text and "|" not in text:
        return text
    labels = [content(words(m.group(2))) for m in _LABEL.finditer(text)]
    if key in labels:
        return text
    return _LABEL.sub(lambda m: m.group(1) + " ; ", text)


def _frame(found: tuple[str, ...]) -> tuple[str, ...]:
    """An item's shape: its plain words kept, each run of other words one ``_`` ("it is _",
    "the _ is _")."""
    out: list[str] = []
    for w in found:
        if w in _PLAIN:
            out.append(w)
        elif not out or out[-1] != "_":
            out.append("_")
    return tuple(out)


def _run_on(rest: tuple[str, ...], every: tuple[str, ...], least: int = 5,
            share: int = 5) -> bool:
    """Whether the words of one piece of a reply, beside the value (``rest``; ``every``: all
    of them), run on without the structure of a sentence: ``least`` words or more with
    under one in ``share`` of them plain ("news sports tech business science"), or one frame
    of plain words repeated around the words between ("it is news it is sports it is
    health")."""
    if len(rest) < least:
        return False
    if sum(w in _PLAIN for w in rest) * share < len(rest):
        return True
    frames: dict[tuple[str, ...], int] = {}
    gap: list[str] = []
    for w in every:
        if w in _PLAIN:
            gap.append(w)
        elif gap:
            frames[tuple(gap)] = frames.get(tuple(gap), 0) + 1
            gap = []
    return max(frames.values(), default=0) >= 3


def without_run_ons(text: str) -> str:
    """``text`` with every piece that runs on without a sentence's structure blanked out: 12
    words or more between two marks, under one in eight of them plain, or one frame of plain
    words repeated ("zurich the harbor suites 177 church street riverside pavilion ..."). A
    value inside such a piece is sprayed, not reported."""
    if text.count(" ") < _RUN_ON_TYPED - 1:
        return text
    out, start, blanked = [], 0, False
    for mark in itertools.chain(_BETWEEN_ITEMS.finditer(text), (None,)):
        end = len(text) if mark is None else mark.start()
        every = words(text[start:end])
        if _run_on(every, every, _RUN_ON_TYPED, 8):
            out.append(" " * (end - start))
            blanked = True
        else:
            out.append(text[start:end])
        if mark is not None:
            out.append(mark.group(0))
            start = mark.end()
    return "".join(out) if blanked else text


_RUN_ON_TYPED = 12  # words a piece needs before a typed value in it may be sprayed
_RUN_ON_WORDS = 5  # fewer words beside the value are read as they stand


def _beside(found: tuple[str, ...], key: tuple[str, ...]) -> tuple[tuple[str, ...], bool]:
    """The words of a piece outside the value's first occurrence, and whether it occurs."""
    size = len(key)
    for i in range(len(found) - size + 1):
        if found[i:i + size] == key:
            return found[:i] + found[i + size:], True
    return found, False


def short_items(text: str, target: tuple[str, ...]) -> list[tuple[tuple[str, ...], str]]:
    """The list-like items of ``text`` (what commas, semicolons, lines, 'or', 'and' and
    sentence ends part) no longer than ``target`` and one word, as (content words, raw
    text). Left out: items of fillers alone ("Done."), labels ("Total:", a table's first
    column and header), and clauses ("the booking is confirmed") unless another item shares
    their frame ("It is news. It is sports."). A piece that runs on without a sentence's
    structure ("news sports health tech ...") is as many items as it has words."""
    key = content(target)
    text = _unlabelled(_LINK_OR_EMAIL.sub(";", text), key)
    found_items: list[tuple[tuple[str, ...], tuple[str, ...], str]] = []
    for piece in _BETWEEN_ITEMS.split(_LIST_MARK.sub(" ", text)):
        every = words(piece)
        found = content(every)
        rest, has_value = _beside(every, target)
        if len(found) > len(key) + 1 and _run_on(rest, every):  # as many items as words
            if has_value:
                found_items.append((key, (), " ".join(key)))
            found_items.extend(((w,), ("_",), w) for w in rest if w not in _PLAIN)
        elif (0 < len(found) <= len(key) + 1
              and (found == key or not all(w in _FILLER for w in found))):
            found_items.append((found, _frame(every), piece.strip()))
    frames: dict[tuple[str, ...], int] = {}
    for _, frame, _ in found_items:
        frames[frame] = frames.get(frame, 0) + 1
    return [(found, raw) for found, frame, raw in found_items
            if found == key or all(w == "_" for w in frame) or frames[frame] > 1]
