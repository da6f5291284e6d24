"""What composition keeps between calls (for speed) gives every caller a value of its own, or
one nobody can change, and the same answers as computing afresh; the wrong-argument check's
early exit agrees with the whole score."""

from __future__ import annotations

import random

import pytest

from compoenv.answers import _typed, canonical, kind_of
from compoenv.businesses import build_businesses, draw_businesses
from compoenv.compose import Composer, ComposerConfig
from compoenv.compose.verify import _graded_texts, _session, free_wording, oracle_message
from compoenv.registry import Registry
from compoenv.reward import (
    Outcome, Shown, _as_number, normalize_text, score_rubric, scores_full,
)
from compoenv.scenarios import ScenarioRegistry
from compoenv.task import AnswerCriterion, Call, CallCriterion, Task, UnchangedCriterion
from compoenv.text_answers import words
from compoenv.world import World
from compoenv.worldmodel.base import ToolRequest
from compoenv.worldmodel.offline import OfflineWorldModel
from compoenv.worldmodel.store import _generated

REGISTRY = Registry.default()


@pytest.fixture(scope="module")
def scenario_tasks() -> list[Task]:
    """A few default (scenario) tasks: long, goal-level, with house rules."""
    config = ComposerConfig(scenarios=tuple(ScenarioRegistry.default().names()), distractors=10)
    return list(Composer(config=config).generate(6, seed=5))


def _stateful_store():
    name = next(n for n in REGISTRY.names() if getattr(REGISTRY.get(n), "_store", None))
    return REGISTRY.get(name)._store


def test_kept_offline_records_are_each_callers_own():
    store = _stateful_store()
    world = World.dated(3)
    seeder = next(iter(store._seeders.values()))
    request = ToolRequest(seeder, {}, world, {}, 1234)
    fresh = OfflineWorldModel().answer(request).data
    first = _generated(request)
    assert first == fresh and isinstance(first, list) and first
    first[0]["injected"] = "corrupted"  # a caller changing its copy...
    first.append({"also": "corrupted"})
    again = _generated(ToolRequest(seeder, {}, world, {}, 1234))
    assert again == fresh  # ...changes nothing the next caller gets
    again[0].clear()
    assert _generated(request) == fresh


def test_kept_offline_records_follow_the_world_and_the_seed():
    store = _stateful_store()
    seeder = next(iter(store._seeders.values()))
    model = OfflineWorldModel()
    for seed, request_seed in ((3, 1), (4, 1), (3, 2)):
        request = ToolRequest(seeder, {}, World.dated(seed), {}, request_seed)
        assert _generated(request) == model.answer(request).data


def test_words_are_immutable_and_the_same_each_time():
    text = "Send the Q3 report to Ana Silva, by 2026-03-04."
    first = words(text)
    assert isinstance(first, tuple) and first == words(text)
    assert first == ("send", "the", "q3", "report", "to", "ana", "silva", "by", "2026-03-04")
    assert words.__wrapped__(text) == first  # as computed afresh


def test_normalize_text_is_the_same_for_strings_and_other_values():
    assert normalize_text("  Hello,   World! ") == " hello world "
    assert normalize_text("Hello, World!") == normalize_text("hello world")
    assert normalize_text(12) == " 12 " and normalize_text(1.5) == " 1 5 "


def test_shown_values_match_their_uncached_reading():
    results = [{"total": "1,234.50", "name": "Ana Silva", "n": 3, "ok": True, "none": None},
               ["$12", "12.004", "Hotel Aurora"]]
    shown = Shown.of(results)
    assert shown.numbers == {1234.5, 3.0, 12.0}
    texts = {normalize_text(v) for v in ("1,234.50", "Ana Silva", 3, "$12", "12.004",
                                         "Hotel Aurora")}
    assert shown.texts == texts
    again = Shown.of(results)
    assert (again.numbers, again.texts) == (shown.numbers, shown.texts)
    assert _as_number("$1,234.50") == 1234.5


def test_value_kinds_kept_across_worlds_match_kind_of():
    worlds = [World.dated(seed) for seed in range(3)]
    values = ["42", "3.5", "$1,200.00", "2026-03-04", "2026-03-04T10:00", "EVT-0042",
              "a@b.com", "https://example.com/a", "+1 555-200-1000", "hello world",
              "12 invoices", "03/04/2026", "Mar 4, 2026", "10:30", "Café"]
    for w in worlds:  # names are of their own World
        values += [w.people[3].name, w.orgs[2].name, w.people[5].title, w.people[7].email,
                   w.cities[1].name]
    for world in [*worlds, None]:
        for value in values:
            kind = kind_of(value, world)
            expected = (kind, canonical(value, kind, world) if kind != "text" else value)
            assert _typed(value, world) == expected, (value, world)


def test_businesses_are_read_only_and_equal_to_building_them_all():
    cities = [c.name for c in World.dated(0).cities]
    for seed in range(5):
        built = build_businesses(cities, random.Random(seed))
        drawn = draw_businesses(cities, random.Random(seed))
        assert drawn == built and built == drawn and list(drawn) == list(built)
        with pytest.raises(TypeError):
            drawn["restaurant"] = ()  # type: ignore[index]
        kind = next(iter(drawn))
        names = drawn.names(kind)
        names.clear()  # a copy: the mapping keeps its names
        assert [(b.name, b.domain) for b in drawn[kind]] == drawn.names(kind)
    world = World.dated(7)
    for kind, found in world.businesses.items():
        for b in found:
            assert world.business(b.name.upper()) is not None
            assert b in world.businesses_in(kind, b.city)


def test_graded_texts_passed_in_give_the_same_free_wording(scenario_tasks):
    assert any(t.guidance != "steps" for t in scenario_tasks)
    for task in scenario_tasks:
        graded = _graded_texts(task)
        for call in task.solution:
            assert free_wording(task, call, REGISTRY, graded) == \
                free_wording(task, call, REGISTRY)


def _outcomes(task: Task) -> list[Outcome]:
    """The oracle's run, an empty run, and the solution with each call left out or with its
    last string argument changed (one at a time)."""
    runs: list[list[Call]] = [list(task.solution), []]
    for i, call in enumerate(task.solution):
        runs.append(task.solution[:i] + task.solution[i + 1:])
        strings = [k for k, v in call.arguments.items() if isinstance(v, str) and v]
        if strings:
            changed = Call(name=call.name, arguments={**call.arguments,
                                                     strings[-1]: call.arguments[strings[-1]] + "x"})
            runs.append(task.solution[:i] + [changed] + task.solution[i + 1:])
    out = []
    for calls in runs:
        session = _session(task, REGISTRY)
        for call in calls:
            session.call(call.name, call.arguments)
        out.append(Outcome(session, oracle_message(task) if calls else "", task.instruction))
    return out


def test_early_exit_score_agrees_with_the_whole_score(scenario_tasks):
    verdicts = []
    for task in scenario_tasks[:4]:
        for outcome in _outcomes(task):
            full = score_rubric(task.rubric, outcome).rubric_score >= 1.0
            assert scores_full(task.rubric, outcome) == full
            verdicts.append(full)
    assert True in verdicts and False in verdicts  # both verdicts were put to the test


def test_early_exit_score_on_rubrics_a_failure_barely_moves():
    """A failed criterion stops the check only where its failure alone scores below 1: a
    failed guard that is not required, a weight of 0, or several criteria together."""
    task = next(Composer(config=ComposerConfig(min_hops=2, max_hops=3)).generate(1, seed=3))
    outcome = _outcomes(task)[0]
    base = list(task.rubric)
    failing_answer = AnswerCriterion(id="x1", description="", value="no such value 98765",
                                     required=False, weight=0.001)
    optional_guard = UnchangedCriterion(id="x2", description="", service=task.services[0],
                                        collection="*", required=False, acts_on=[])
    never_called = CallCriterion(id="x3", description="", name=task.solution[0].name,
                                 arguments={"nothing": "like this"}, required=False)
    for extra in ([failing_answer], [optional_guard], [never_called],
                  [failing_answer, optional_guard]):
        rubric = base + extra
        assert scores_full(rubric, outcome) == \
            (score_rubric(rubric, outcome).rubric_score >= 1.0)
