"""Helpers every service shares: id generation, lookups with did-you-mean, search, pagination."""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar

from pydantic import BaseModel

from compoenv.service import ToolError, did_you_mean
from compoenv.world import CityInfo, World

__all__ = ["next_id", "drawn_id", "get_or_404", "update", "cancel", "find_one", "find_city",
           "search", "page", "norm"]

T = TypeVar("T")
R = TypeVar("R", bound=BaseModel)


def norm(text: Any) -> str:
    """Case- and whitespace-insensitive form of a value, for matching user-given text."""
    return " ".join(str(text).split()).casefold()


def next_id(prefix: str, existing: Iterable[str], width: int = 4, salt: Any = None) -> str:
    """A new id of ``prefix`` and ``width`` digits not among ``existing``.

    Without ``salt``: the next after the largest numeric suffix (``C-0007`` -> ``C-0008``).
    With one (what makes the record: the World's seed, the service, the call's arguments):
    digits drawn from a hash of it and of how many ids exist, so an id a write makes cannot be
    guessed from other tasks, while the same episode replayed makes the same one."""
    keys = existing if isinstance(existing, (set, frozenset, dict)) else set(existing)
    if salt is None:
        cut = len(prefix)
        numbers = [int(key[cut:]) for key in keys
                   if key.startswith(prefix) and key[cut:].isdigit()]
        return f"{prefix}{(max(numbers) + 1) if numbers else 1:0{width}d}"
    return drawn_id(prefix, keys, width, (salt, len(keys)))


def drawn_id(prefix: str, taken: Any, width: int, salt: Any) -> str:
    """``prefix`` and ``width`` digits drawn from a hash of ``salt``, none of ``taken``."""
    text = json.dumps(salt, sort_keys=True, separators=(",", ":"), default=str)
    rng = random.Random(hashlib.blake2b(text.encode(), digest_size=8).digest())
    low, high = 10 ** (width - 1) if width > 1 else 1, 10 ** width - 1
    for _ in range(64):
        made = f"{prefix}{rng.randint(low, high):0{width}d}"
        if made not in taken:
            return made
    return next_id(prefix, taken, width + 1)


def get_or_404(records: Mapping[str, T], key: str, kind: str) -> T:
    """``records[key]``, or ToolError(404) with the closest keys as suggestions."""
    try:
        return records[key]
    except KeyError:
        raise ToolError(404, did_you_mean(key, records.keys(), kind)) from None


def update(records: dict[str, R], key: str, /, **changes: Any) -> R:
    """Replace ``records[key]`` by a copy with ``changes`` applied, and return the new record.

    Records are immutable (shared copy-on-write between episodes), so tools change them here.
    """
    records[key] = new = records[key].model_copy(update=changes)
    return new


def cancel(records: dict[str, R], key: str, kind: str, label: str) -> R:
    """Move a confirmed record (a booking, a reservation) to cancelled and return it.

    Raises:
        ToolError: 404 with suggestions for an unknown key, 409 when it is not confirmed.
    """
    record = get_or_404(records, key, kind)
    status = getattr(record, "status", None)
    if status != "confirmed":
        raise ToolError(409, f"{label} {key} is already {status}")
    return update(records, key, status="cancelled")


def find_one(records: Iterable[T], value: str, key: Callable[[T], str], kind: str) -> T:
    """The single record whose ``key`` equals ``value`` (normalised).

    Raises:
        ToolError: 404 with suggestions when none matches, 409 when several do.
    """
    items = list(records)
    wanted = norm(value)
    hits = [item for item in items if key(item).casefold() == wanted]
    if not hits:  # stored keys are normally clean; only then pay for normalising them
        hits = [item for item in items if norm(key(item)) == wanted]
    if not hits:
        raise ToolError(404, did_you_mean(value, [key(item) for item in items], kind))
    if len(hits) > 1:
        raise ToolError(409, f"{len(hits)} records match {kind} {value!r}; be more specific")
    return hits[0]


def find_city(world: World, name: str) -> CityInfo:
    """The World's city called ``name``, or ToolError(404) with the closest city names."""
    return find_one(world.cities, name, lambda c: c.name, "city")


def search(records: Iterable[T], query: str, *fields: Callable[[T], Any]) -> list[T]:
    """Records where every word of ``query`` occurs in one of ``fields`` (case-insensitive)."""
    words = norm(query).split()
    out = []
    for item in records:
        text = " ".join(norm(f(item)) for f in fields)
        if all(w in text for w in words):
            out.append(item)
    return out


def page(items: Sequence[T], limit: int = 20, offset: int = 0) -> list[T]:
    """A slice of ``items``; ``limit`` is capped at 100 so results stay readable."""
    if limit < 1 or offset < 0:
        raise ToolError(400, f"limit must be >= 1 and offset >= 0, got limit={limit}, "
                             f"offset={offset}")
    return list(items[offset: offset + min(limit, 100)])
