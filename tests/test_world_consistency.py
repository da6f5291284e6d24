"""The simulated world never contradicts itself: tests over every spec tool.

Every spec tool's answers hold to each invariant of ``worldmodel.consistency`` (one test per
invariant) and every create makes its record now; property tests (hypothesis) draw sequences
of calls in one episode and arguments: records shown again agree with their first view, and
ids a write makes are drawn, new and repeatable, not counted.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from compoenv.crud import next_id
from compoenv.registry import Registry
from compoenv.world import World
from compoenv.worldmodel import SimulatedService
from compoenv.worldmodel.consistency import (INVARIANTS, created_before, kind_of, makes_new,
                                             reconcile, review, stamped, violations)
from compoenv.worldmodel.offline import collection_of, example_arguments
from compoenv.worldmodel.offline import OfflineWorldModel
from compoenv.worldmodel.simulator import Simulator
from compoenv.worldmodel.store import naming_a_record

REGISTRY = Registry.default()
SPECS = {spec.qualified_name: spec for cls in REGISTRY if issubclass(cls, SimulatedService)
         for spec in cls.tool_specs().values()}
NAMES = sorted(SPECS)
READS = sorted(n for n in NAMES if SPECS[n].read_only)
WRITES = sorted(n for n in NAMES if not SPECS[n].read_only)
WORLD = World.get(3)
FAST = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])


def episode(service_name: str) -> Any:
    service = REGISTRY.get(service_name).create(WORLD)
    service.simulator = Simulator(OfflineWorldModel())
    return service


def call(service: Any, name: str, seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
    spec = SPECS[name]
    args = naming_a_record(service, spec.name, example_arguments(spec, WORLD, seed))
    return args, service.call(spec.name, args)


@FAST
@given(st.sampled_from(NAMES), st.lists(st.sampled_from(READS), min_size=1, max_size=4),
       st.integers(0, 50))
def test_records_shown_again_agree_with_their_first_view(first: str, then: list[str],
                                                         seed: int) -> None:
    service = episode(SPECS[first].service)
    seen: dict[str, Any] = {}
    for name in [first, *[n for n in then if SPECS[n].service == SPECS[first].service]]:
        _, result = call(service, name, seed)
        if result["success"]:
            spec = SPECS[name]
            _, differ = review(seen, result["data"], kind_of(collection_of(spec.name,
                                                                           spec.returns)),
                               not spec.read_only)
            assert not differ, (name, differ)


@functools.lru_cache(maxsize=1)
def answers() -> tuple[tuple[str, Any, bool], ...]:
    """Every spec tool's answer, a few argument seeds each, each call in its own episode:
    (tool, data, whether it is a successful create)."""
    out = []
    for name in NAMES:
        spec = SPECS[name]
        for seed in (1, 2):
            _, result = call(episode(spec.service), name, seed)
            if result["success"]:
                out.append((name, result["data"], not spec.read_only and makes_new(spec.name)))
    return tuple(out)


@pytest.mark.parametrize("invariant", INVARIANTS)
def test_every_spec_tool_holds_to_the_invariant(invariant):
    found = [(name, problem) for name, data, new in answers()
             for problem in violations(data, WORLD.today, WORLD, success_write=new)
             if problem.startswith(invariant + ":")]
    assert not found, found[:5]


def test_every_create_makes_its_record_now():
    made = [(name, created_before(data, WORLD.today)) for name, data, new in answers() if new]
    assert len(made) > 40
    assert not [m for m in made if m[1]], [m for m in made if m[1]][:5]


@FAST
@given(st.sampled_from(WRITES), st.integers(0, 50))
def test_writes_with_any_arguments_make_records_now(name: str, seed: int) -> None:
    service = episode(SPECS[name].service)
    _, result = call(service, name, seed)
    if result["success"]:
        new = makes_new(SPECS[name].name)
        assert not (new and created_before(result["data"], WORLD.today)), name
        assert not violations(result["data"], WORLD.today, WORLD, success_write=new), name


def test_a_field_shown_before_wins_and_a_write_decides_its_own():
    recall: dict[str, Any] = {}
    schema = {"type": "object", "properties": {"id": {"type": "string"},
                                               "price": {"type": "number"},
                                               "status": {"type": "string"}}}
    reconcile({"id": "R-1", "price": 8.68, "status": "open"}, schema, "restaurant", recall)
    again, moved = reconcile({"id": "R-1", "price": 472.08, "status": "open"}, schema,
                             "restaurant", recall)
    assert moved and again["price"] == 8.68
    written, _ = reconcile({"id": "R-1", "price": 9.5, "status": "closed"}, schema,
                           "restaurant", recall, {"price"}, top_write=True)
    assert written == {"id": "R-1", "price": 9.5, "status": "closed"}
    assert reconcile({"id": "R-1", "price": 1.0}, schema, "restaurant", recall)[0][
        "price"] == 9.5
    # a field that does not fit this tool's schema is not forced on it
    narrow = {"type": "object", "properties": {"id": {"type": "string"},
                                               "price": {"type": "integer"}}}
    assert reconcile({"id": "R-1", "price": 3}, narrow, "restaurant", recall)[0]["price"] == 3


def test_two_records_of_one_name_and_other_ids_stay_apart():
    recall: dict[str, Any] = {}
    schema = {"type": "object", "properties": {"id": {"type": "string"},
                                               "title": {"type": "string"},
                                               "city": {"type": "string"}}}
    reconcile({"id": "E-1", "title": "Design review", "city": "Oslo"}, schema, "event", recall)
    other, moved = reconcile({"id": "E-2", "title": "Design review", "city": "Rome"}, schema,
                             "event", recall)
    assert not moved and other["city"] == "Rome"
    # a view without an id is the record of that name last shown
    unnamed, moved = reconcile({"title": "Design review", "city": "Paris"}, schema, "event",
                               recall)
    assert moved and unnamed["city"] == "Rome"


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.text(min_size=1, max_size=8), st.sets(st.text(max_size=8), max_size=20),
       st.integers())
def test_drawn_ids_are_new_and_repeatable(prefix: str, taken: set[str], salt: int) -> None:
    made = next_id(prefix, taken, 4, salt=salt)
    assert made not in taken and made.startswith(prefix)
    assert made == next_id(prefix, set(taken), 4, salt=salt)


def test_ids_are_not_a_sequence_across_tasks():
    made = {next_id("TX-", {"TX-0001", "TX-0002"}, salt=(seed, "bank", 12.5))
            for seed in range(40)}
    assert "TX-0003" not in made and len(made) > 30


def test_stamped_writes_now_in_the_fields_shape():
    schema = {"type": "object", "properties": {"created": {"type": "string"},
                                               "created_at": {"type": "string"}}}
    out = stamped({"created": "2026-01-02", "created_at": "2026-01-02T08:15"}, schema,
                  WORLD.now)
    assert out == {"created": WORLD.today.isoformat(), "created_at": WORLD.now[:16]}


def test_violations_name_each_invariant():
    assert violations({"amount": 0.57, "price": 3.2, "value": 91.77})
    assert violations({"salary_p25": 90_000, "salary_median": 80_000})
    assert violations({"open_tickets": 97, "total_tickets": 7})
    assert violations({"count": 3, "results": [1, 2]})
    assert violations({"body": "two words", "word_count": 12_980})
    assert violations({"status": "failed"}, success_write=True)
    assert not violations({"status": "failed"})
    person = WORLD.people[5]
    assert violations({"email": "x@nowhere.example", "employer": person.employer}, world=WORLD)
    assert violations({"member_since": "2999-01-01"}, WORLD.today)
    assert violations({"amount": 2, "value": 100.0, "fee": 40.0})
    assert not violations({"quantity": 2, "unit_price": 3.5, "total": 7.7, "tax": 0.7},
                          WORLD.today, WORLD)
