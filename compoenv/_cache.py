"""Caches: SharedCache (one instance per key while anything holds it, plus an LRU of recent
keys) and ByIdentity (one computed value per object)."""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Any, Callable, Generic, Hashable, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class SharedCache(Generic[K, V]):
    """Share immutable-by-convention objects (worlds, seeded states) between episodes.

    Live objects are found through weak references, so 10,000 environments on one task hold one
    copy; a bounded LRU keeps the most recent ones alive for fast re-use.
    """

    def __init__(self, maxsize: int = 64) -> None:
        self.maxsize = maxsize
        self._live: weakref.WeakValueDictionary[K, V] = weakref.WeakValueDictionary()
        self._recent: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, factory: Callable[[], V]) -> V:
        with self._lock:
            value = self._recent.get(key)
            if value is not None:  # the common case: recently used, one lock round
                self._recent.move_to_end(key)
                return value
            value = self._live.get(key)
        if value is None:
            value = factory()  # outside the lock: building a world or a state takes a while
        with self._lock:
            value = self._live.setdefault(key, value)
            self._recent[key] = value
            while len(self._recent) > self.maxsize:
                self._recent.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._live.clear()
            self._recent.clear()


class ByIdentity(Generic[K, V]):
    """Something computed once per object (a schema's compiled check, a collection's JSON).

    Keyed by ``id``, and holding the object itself, so an id is never reused while its entry
    lives. ``maxsize`` bounds the entries (all are dropped when it is reached; None: no bound)
    for objects that come and go, such as states and collections.
    """

    def __init__(self, compute: Callable[[Any], V], maxsize: int | None = None) -> None:
        self.compute, self.maxsize = compute, maxsize
        self._items: dict[int, tuple[Any, V]] = {}

    def __call__(self, obj: Any) -> V:
        hit = self._items.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        if self.maxsize is not None and len(self._items) >= self.maxsize:
            self._items.clear()
        value = self.compute(obj)
        self._items[id(obj)] = (obj, value)
        return value
