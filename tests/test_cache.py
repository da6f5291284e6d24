"""The caches: one value per object for ByIdentity, one instance per key for SharedCache, and
read-only views of shared data."""

from __future__ import annotations

import copy
import json
import pickle

import pytest

from compoenv._cache import ByIdentity, FrozenDict, SharedCache, fresh_view, frozen


def test_frozen_views_refuse_every_change_and_read_like_json():
    data = {"a": [1, {"b": 2}], "c": {"d": "e"}}
    view = frozen(data)
    changes = [lambda: view.__setitem__("x", 1), lambda: view.pop("a"), lambda: view.update(),
               lambda: view["a"].append(3), lambda: view["a"].sort(),
               lambda: view["a"][1].setdefault("z", 1), lambda: view["c"].clear()]
    for change in changes:
        with pytest.raises(TypeError, match="read-only"):
            change()
    assert view == data and json.loads(json.dumps(view)) == data


def test_copies_and_pickles_of_frozen_views_are_plain_and_writable():
    view = frozen({"a": [1, {"b": 2}]})
    for copied in (copy.deepcopy(view), pickle.loads(pickle.dumps(view))):
        copied["a"][1]["b"] = 3
        copied["a"].append(4)
        assert type(copied) is dict and type(copied["a"]) is list
    assert view == {"a": [1, {"b": 2}]}


def test_fresh_views_are_new_dicts_over_the_same_content():
    view = frozen({"a": {"b": {"c": 1}}, "l": [{"x": 1}]})
    fresh = fresh_view(view)
    assert fresh == view and fresh is not view and fresh["a"]["b"] is not view["a"]["b"]
    assert type(fresh["a"]) is FrozenDict and fresh["l"] is view["l"]


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
