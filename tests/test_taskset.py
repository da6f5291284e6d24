"""Task sets: dedup by content, train/test split by unseen service combinations, statistics."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compoenv.compose.taskset import (TaskSetStats, combination, dedup, split_by_combination,
                                      summarize)
from compoenv.task import Call, Task

SERVICES = ["bank", "calendar", "contacts", "email", "flights", "hotels", "shop", "weather"]


def make(services: list[str], text: str = "Do it.", hops: int = 2,
         capabilities: tuple[str, ...] = ("sequential-dependency",)) -> Task:
    """A small hand-built task (the split only looks at services)."""
    return Task(instruction=text, services=services, seed=0, date="2025-01-01",
                solution=[Call(name=f"{services[0]}__noop")], rubric=[],
                capabilities=list(capabilities), domain="productivity", hops=hops).with_id()


def task_set(sizes: dict[tuple[str, ...], int]) -> list[Task]:
    """``sizes[combination]`` tasks for each combination, interleaved."""
    tasks = []
    for combo, size in sizes.items():
        tasks += [make(list(combo), f"{'+'.join(combo)} #{i}") for i in range(size)]
    return sorted(tasks, key=lambda t: t.id)


def many_combinations(count: int = 20, per: int = 5) -> list[Task]:
    combos = [(a, b) for i, a in enumerate(SERVICES) for b in SERVICES[i + 1:]][:count]
    return task_set({c: per for c in combos})


# -- dedup ---------------------------------------------------------------------------------------

def test_dedup_keeps_the_first_of_equal_tasks_in_order():
    a, b, c = make(["bank", "email"], "A"), make(["bank", "email"], "B"), make(["shop"], "C")
    assert dedup([a, b, a, c, b]) == [a, b, c]


def test_dedup_compares_content_not_the_id():
    a = make(["bank", "email"], "A")
    stale = a.model_copy(update={"id": "t-stale"})
    assert dedup([a, stale]) == [a]
    assert dedup([]) == []


# -- split ---------------------------------------------------------------------------------------

def test_no_service_combination_is_in_both_splits():
    tasks = many_combinations()
    train, test = split_by_combination(tasks, test_fraction=0.2, seed=0)
    assert {combination(t) for t in train}.isdisjoint(combination(t) for t in test)
    assert sorted(t.id for t in train + test) == sorted(t.id for t in tasks)


def test_combination_is_a_set_so_service_order_does_not_matter():
    tasks = task_set({("bank", "email"): 3, ("shop", "weather"): 3})
    tasks.append(make(["email", "bank"], "reversed"))
    train, test = split_by_combination(tasks, test_fraction=0.5, seed=1)
    assert {combination(t) for t in train}.isdisjoint(combination(t) for t in test)


@pytest.mark.parametrize("fraction", [0.1, 0.2, 0.3, 0.5])
def test_test_fraction_is_roughly_respected(fraction):
    tasks = many_combinations(count=20, per=5)          # 100 tasks, whole combinations of 5
    _, test = split_by_combination(tasks, test_fraction=fraction, seed=3)
    assert abs(len(test) - fraction * len(tasks)) <= 5


def test_split_is_deterministic_for_a_seed_and_independent_of_input_order():
    tasks = many_combinations()
    first = split_by_combination(tasks, seed=7)
    assert split_by_combination(tasks, seed=7) == first
    train, test = split_by_combination(list(reversed(tasks)), seed=7)
    assert {t.id for t in test} == {t.id for t in first[1]}
    assert any(split_by_combination(tasks, seed=s)[1] != first[1] for s in range(8, 12))


def test_splits_keep_the_input_order():
    tasks = many_combinations()
    train, test = split_by_combination(tasks, seed=0)
    position = {t.id: i for i, t in enumerate(tasks)}
    for part in (train, test):
        assert [position[t.id] for t in part] == sorted(position[t.id] for t in part)


def test_both_sides_get_a_combination_even_when_the_target_is_off():
    small_and_big = task_set({("bank", "email"): 1, ("shop", "weather"): 50})
    train, test = split_by_combination(small_and_big, test_fraction=0.01, seed=0)
    assert len(test) == 1 and len(train) == 50
    two = task_set({("bank", "email"): 1, ("shop", "weather"): 1})
    train, test = split_by_combination(two, test_fraction=0.9, seed=0)
    assert len(train) == 1 and len(test) == 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=2, max_size=12), st.floats(0.05, 0.95),
       st.integers(0, 2**16))
def test_split_properties_hold_for_any_combination_sizes(sizes, fraction, seed):
    combos = [(a, b) for i, a in enumerate(SERVICES) for b in SERVICES[i + 1:]]
    tasks = task_set(dict(zip(combos, sizes, strict=False)))
    train, test = split_by_combination(tasks, test_fraction=fraction, seed=seed)
    assert train and test
    assert {combination(t) for t in train}.isdisjoint(combination(t) for t in test)
    assert len(train) + len(test) == len(tasks)


def test_empty_input_gives_two_empty_splits():
    assert split_by_combination([]) == ([], [])


def test_a_single_combination_cannot_be_split():
    tasks = task_set({("bank", "email"): 4})
    with pytest.raises(ValueError, match="same services \\(bank, email\\)"):
        split_by_combination(tasks)


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.1, 1.5])
def test_the_fraction_must_be_strictly_between_0_and_1(fraction):
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        split_by_combination(many_combinations(), test_fraction=fraction)


# -- statistics ----------------------------------------------------------------------------------

def test_summarize_counts_hops_services_capabilities_domains_and_rejections():
    tasks = [make(["bank", "email"], "A", hops=2), make(["bank", "email"], "B", hops=3),
             make(["shop", "weather", "bank"], "C", hops=3,
                  capabilities=("sequential-dependency", "aggregation"))]
    summary = summarize(tasks, Counter({"dead_end": 4, "duplicate": 1}))
    assert summary["tasks"] == 3 and summary["attempted"] == 8
    assert summary["hops"] == {"2": 1, "3": 2}
    assert summary["services"] == {"2": 2, "3": 1}
    assert summary["capabilities"] == {"sequential-dependency": 3, "aggregation": 1}
    assert summary["domains"] == {"productivity": 3}
    assert summary["service_usage"]["bank"] == 3
    assert summary["combinations"] == 2
    assert summary["rejections"] == {"dead_end": 4, "duplicate": 1}
    assert json.loads(json.dumps(summary)) == summary


def test_summarize_lists_the_top_tools_of_each_reason_by_count_then_name():
    by_tool = Counter({("dead_end", "crm__get_lead"): 3, ("dead_end", "bank__pay"): 3,
                       ("dead_end", "email__send"): 1, ("nothing_to_report", "maps__route"): 2,
                       ("start_failed", "shop__find"): 9})
    stats = TaskSetStats.from_tasks([], Counter({"dead_end": 7, "nothing_to_report": 2,
                                                 "start_failed": 4}), by_tool, top=2)
    assert stats.rejections_by_tool == {"start_failed": {"shop__find": 9},
                                        "dead_end": {"bank__pay": 3, "crm__get_lead": 3},
                                        "nothing_to_report": {"maps__route": 2}}
    assert list(stats.rejections_by_tool) == ["start_failed", "dead_end", "nothing_to_report"]
    assert summarize([], {"dead_end": 1}, {("dead_end", "x__y"): 1})["rejections_by_tool"] == {
        "dead_end": {"x__y": 1}}
    assert summarize([])["rejections_by_tool"] == {}


def test_stats_of_nothing():
    stats = TaskSetStats.from_tasks([])
    assert stats.tasks == 0 and stats.attempted == 0 and stats.combinations == 0
    assert stats.to_dict()["rejections"] == {}


def test_summarize_on_composed_tasks(tasks50):
    summary = summarize(tasks50, {"dead_end": 2})
    assert summary["tasks"] == 50 and sum(summary["hops"].values()) == 50
    assert summary["combinations"] == len({frozenset(t.services) for t in tasks50}) > 1
