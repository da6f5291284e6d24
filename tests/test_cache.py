"""The caches: one value per object for ByIdentity, one instance per key for SharedCache."""

from __future__ import annotations

from compoenv._cache import ByIdentity, SharedCache


def test_by_identity_computes_once_per_object_not_per_equal_value():
    calls = []
    cache = ByIdentity(lambda obj: calls.append(obj) or len(obj))
    a, b = {"x": 1}, {"x": 1}
    assert cache(a) == cache(a) == cache(b) == 1
    assert len(calls) == 2  # a and b are equal but distinct objects


def test_by_identity_drops_everything_at_its_bound():
    calls = []
    cache = ByIdentity(lambda obj: calls.append(obj) or 0, maxsize=2)
    items = [[1], [2], [3]]
    for item in items:
        cache(item)
    cache(items[0])  # dropped when the third came in
    assert len(calls) == 4


class Value:
    pass


def test_shared_cache_gives_one_instance_per_key_and_keeps_recent_ones():
    made: list[int] = []
    cache: SharedCache[int, Value] = SharedCache(maxsize=1)
    first = cache.get(1, lambda: made.append(1) or Value())
    assert cache.get(1, lambda: made.append(1) or Value()) is first
    assert made == [1]
