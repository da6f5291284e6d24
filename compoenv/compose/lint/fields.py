"""Field names as an instruction reads them, and which of them are no English noun phrase."""

from __future__ import annotations

from typing import Any, Iterator

from compoenv.compose.render import words

__all__ = ["field_phrases", "not_a_noun", "NOUN_OK", "NOT_NOUNS"]

# words that end (or start) a phrase that names no thing: "applied on", "member since"
PREPOSITIONS = frozenset({"at", "on", "in", "by", "from", "to", "of", "for", "with", "since",
                          "until", "per", "as", "near", "through", "via", "into"})
# past participles that do not end in -ed ("employees paid", "reviews given")
PARTICIPLES = frozenset({"paid", "sent", "built", "given", "written", "taken", "made", "held",
                         "known", "shown", "seen", "spent", "sold", "told", "bought", "found",
                         "done", "drawn", "driven", "chosen", "read", "won", "lost", "begun",
                         "hidden", "kept", "met"})
# nouns that end in -ed
ED_NOUNS = frozenset({"speed", "need", "feed", "seed", "bed", "red", "shed", "breed", "deed",
                      "weed", "hundred", "embed"})
# adjectives that make a field a yes/no flag or a state, not a thing
ADJECTIVES = frozenset({"due", "overdue", "active", "open", "available", "public", "private",
                        "remote", "refundable", "reimbursable", "vegetarian", "vegan",
                        "accessible", "enabled", "disabled", "unread", "pending", "complete",
                        "current", "upcoming", "verified", "free", "full", "empty", "late",
                        "visible", "primary", "valid", "eligible", "recurring", "outdoor"})
# verbs that open a yes/no field ("requires prescription", "accepts reservations")
FLAG_VERBS = frozenset({"is", "has", "can", "should", "requires", "accepts", "allows", "needs",
                        "includes", "supports"})
# unit suffixes: "drive minutes", "distance km", "market cap billions" are column names
UNITS = frozenset({"minutes", "seconds", "hours", "km", "m", "m2", "g", "mg", "kb", "gb", "mb",
                   "billions", "millions", "percent", "pct", "usd", "mins", "secs"})
# phrases the word tests would flag that English does use as nouns
NOUN_OK = frozenset({"amount due", "balance due", "tax due", "amount paid", "year built",
                     "check in", "opening hours"})
# field names the word tests miss that are no noun phrase either
NOT_NOUNS = frozenset({"expires", "open now", "open 24h", "safe to combine",
                       "hours logged this week", "drive through"})


def not_a_noun(phrase: str) -> str | None:
    """Why a field phrase (a snake_case name turned into words) is no noun phrase, or None.

    >>> not_a_noun("applied on"), not_a_noun("due date")
    ('ends in a preposition', None)
    """
    if phrase in NOUN_OK:
        return None
    if phrase in NOT_NOUNS:
        return "not a noun phrase"
    tokens = phrase.split()
    if not tokens:
        return None
    first, last = tokens[0], tokens[-1]
    if first in FLAG_VERBS:
        return "a yes/no flag"
    if last in PREPOSITIONS or first in PREPOSITIONS:
        return "ends in a preposition" if last in PREPOSITIONS else "starts with a preposition"
    if last in PARTICIPLES or (last.endswith("ed") and len(last) > 3 and last not in ED_NOUNS):
        return "ends in a past participle"
    if last in ADJECTIVES:
        return "ends in an adjective"
    if len(tokens) > 1 and any(t in UNITS for t in tokens[1:]):
        return "carries a unit suffix"
    return None


def _keys(node: Any, path: tuple[str, ...], depth: int = 0) -> Iterator[tuple[str, ...]]:
    """Every property path of a compact JSON schema (lists and maps read through)."""
    if not isinstance(node, dict) or depth > 12:
        return
    for alt in node.get("anyOf") or node.get("oneOf") or [node]:
        if not isinstance(alt, dict):
            continue
        if isinstance(alt.get("items"), dict):
            yield from _keys(alt["items"], path, depth + 1)
        if isinstance(alt.get("additionalProperties"), dict):
            yield from _keys(alt["additionalProperties"], path, depth + 1)
        for key, child in (alt.get("properties") or {}).items():
            yield path + (key,)
            yield from _keys(child, path + (key,), depth + 1)


def field_phrases(schema: dict[str, Any]) -> frozenset[str]:
    """How an instruction may name each field of an output schema: the words of its key,
    and of each run of nested keys down to it ("address street"), as ``reference`` joins
    the path below the object it names."""
    phrases = set()
    for path in _keys(schema, ()):
        parts = [words(p) for p in path]
        for i in range(len(parts)):
            phrases.add(" ".join(parts[i:]))
    return frozenset(phrases)
