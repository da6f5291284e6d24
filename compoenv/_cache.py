"""Shared data: SharedCache (one instance per key while anything holds it, plus an LRU of recent
keys), ByIdentity (one computed value per object), ViewCache (one value per live object) and
read-only views (``frozen``)."""

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
    lives. ``maxsize`` bounds the entries (all are dropped when it is reached; None: no bound):
    smaller for objects that come and go, such as states; the default is a guard for library
    objects (schemas), of which there are a few thousand.
    """

    def __init__(self, compute: Callable[[Any], V], maxsize: int | None = 1 << 16) -> None:
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


class ViewCache(Generic[V]):
    """One value per live object (a read-only view of a task), made on first use; an entry
    goes when its object does, so the cache holds nothing its callers let go of."""

    def __init__(self, make: Callable[[Any], V]) -> None:
        self.make = make
        self._items: dict[int, tuple[weakref.ref[Any], V]] = {}

    def __call__(self, obj: Any) -> V:
        key = id(obj)
        hit = self._items.get(key)
        if hit is not None and hit[0]() is obj:
            return hit[1]
        value = self.make(obj)
        items = self._items
        self._items[key] = (weakref.ref(obj, lambda _, key=key: items.pop(key, None)), value)
        return value

    def __len__(self) -> int:
        return len(self._items)


def _read_only(self: Any, *args: Any, **kwargs: Any) -> Any:
    raise TypeError(f"this {type(self).__name__} is shared and read-only: copy it first "
                    f"(copy.deepcopy gives a plain, writable copy)")


class FrozenDict(dict):  # type: ignore[type-arg]
    """A read-only dict (JSON-serialisable like any dict); copies and pickles are plain."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only

    def __copy__(self) -> dict[Any, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[Any, Any]:
        return thawed(self)

    def __reduce_ex__(self, protocol: Any) -> Any:
        return dict, (dict(self),)


class FrozenList(list):  # type: ignore[type-arg]
    """A read-only list (JSON-serialisable like any list); copies and pickles are plain."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _read_only
    append = extend = insert = pop = remove = clear = sort = reverse = _read_only

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return thawed(self)

    def __reduce_ex__(self, protocol: Any) -> Any:
        return list, (list(self),)


def frozen(data: Any) -> Any:
    """A read-only deep copy of JSON-like data (dicts and lists become FrozenDict/FrozenList),
    for handing out data that several owners share (tool listings, a task in ``info``)."""
    if isinstance(data, dict):
        return FrozenDict({k: frozen(v) for k, v in data.items()})
    if isinstance(data, (list, tuple)):
        return FrozenList(frozen(v) for v in data)
    return data


def thawed(data: Any) -> Any:
    """A plain, writable deep copy of JSON-like data (the inverse of ``frozen``)."""
    if isinstance(data, dict):
        return {k: thawed(v) for k, v in data.items()}
    if isinstance(data, list):
        return [thawed(v) for v in data]
    return data


def fresh_view(view: FrozenDict, plan: tuple[Any, ...] | None = None) -> FrozenDict:
    """New dict objects over the same read-only content (lists and their items are shared):
    what an ``info`` needs, as Gymnasium's checker asks each call for dicts of its own.
    ``plan``: where ``view``'s nested dicts are (``view_plan``), when known."""
    return _fresh(view, view_plan(view) if plan is None else plan)


def _fresh(view: FrozenDict, plan: tuple[Any, ...]) -> FrozenDict:
    out = FrozenDict(view)
    for key, inner in plan:
        _set(out, key, _fresh(view[key], inner))
    return out


_set = dict.__setitem__


def view_plan(view: FrozenDict) -> tuple[Any, ...]:
    """Where a read-only view's nested dicts are, for ``fresh_view``: ``(key, plan)`` pairs
    of the keys whose values are read-only dicts (made once per view, not per copy)."""
    return tuple((k, view_plan(v)) for k, v in view.items() if type(v) is FrozenDict)
