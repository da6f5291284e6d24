"""A report that hedges fails: naming the same detail of another candidate beside the value
asked for ("either 31066 or 98379") is no answer, however few values it names; an honest
report, and values the request or the job's own work accounts for, still pass."""

from __future__ import annotations

from functools import lru_cache

import pytest

from compoenv.agents.variants import Play, hedged, session_for
from compoenv.answers import check_answer
from compoenv.cli.common import composer_config
from compoenv.compose.parallel import generate_parallel
from compoenv.compose.verify import oracle_message
from compoenv.registry import Registry
from compoenv.reward import Outcome, score_rubric
from compoenv.task import AnswerCriterion, Task
from compoenv.world import World

WORLD = World(0)


@pytest.mark.parametrize("expected, rivals, message", [
    ("31066", ["98379"], "The hotel's postal code is 31066; the other hotel's is 98379."),
    ("150", ["149.50"], "The daily maximum is $150. Another garage charges $149.50."),
    ("229.03", ["341.51", "21.98"], "Most recent order: 229.03. Others: 21.98."),
    ("2026-11-21", ["2026-11-06"], "Published on November 21, 2026. One ran on 6 November 2026."),
    ("Eco Teapot", ["Deluxe Notebook"], "The product is the Eco Teapot or the Deluxe Notebook."),
    ("billing", ["account"], "Done. The category: billing or account."),
])
def test_a_report_naming_another_candidates_detail_fails(expected, rivals, message):
    passed, why = check_answer(expected, message, WORLD, rivals=rivals)
    assert not passed and "another candidate" in why
    assert check_answer(expected, message, WORLD)[0]  # within the slack, without rivals


@pytest.mark.parametrize("expected, rivals, message, instruction", [
    ("31066", ["98379"], "The hotel's postal code is 31066.", ""),
    # a value the request itself states is an echo, not a hedge
    ("31066", ["98379"], "It is 31066, not the 98379 you mentioned.", "I was told 98379."),
    # one word of text is too common to be told from the sentence around it
    ("billing", ["general"], "In general, the top category is billing.", ""),
    # 150 is the answer whichever way it is written
    ("150", ["149.50"], "The daily maximum is $150.00.", ""),
])
def test_an_honest_report_passes_beside_rivals(expected, rivals, message, instruction):
    assert check_answer(expected, message, WORLD, rivals=rivals, instruction=instruction)[0]


def test_the_rivals_of_a_composed_task_are_none_of_its_own_writes_values():
    registry = Registry.default()
    for task in _tasks():
        written = {str(v) for call in task.solution if not registry.spec(call.name).read_only
                   for v in call.arguments.values()}
        for c in task.rubric:
            if isinstance(c, AnswerCriterion):
                assert not written & set(c.rivals), (task.id, written & set(c.rivals))


@lru_cache(maxsize=1)
def _tasks() -> tuple[Task, ...]:
    tasks, _ = generate_parallel(40, 5, composer_config(scenarios="all", distractors=10),
                                 workers=1)
    return tuple(tasks)


def _binary(task: Task, play: Play) -> bool:
    session = session_for(task, Registry.default())
    for call in play.calls:
        session.call(call.name, call.arguments)
    return score_rubric(task.rubric, Outcome(session, play.message, task.instruction)).passed


def test_composed_tasks_record_the_rivals_of_a_picked_value():
    rivalled = [c for t in _tasks() for c in t.rubric
                if isinstance(c, AnswerCriterion) and c.rivals]
    assert len(rivalled) >= 5
    for c in rivalled:
        assert c.value not in c.rivals


def test_hedging_a_composed_tasks_report_fails_and_the_oracle_passes():
    registry, tried = Registry.default(), 0
    for task in _tasks():
        plays = hedged(task, registry)
        if not plays:
            continue
        assert _binary(task, Play("oracle", tuple(task.solution), oracle_message(task)))
        for play in plays:
            tried += 1
            assert not _binary(task, play), (task.id, play.detail)
    assert tried >= 5


@pytest.mark.parametrize("expected, message", [
    ("TKT-7735", "Done. Either TKT-7735 or TKT-7736."),
    ("-1958.70", "The largest one is -1958.70 or -540.40."),
    ("EXP-4385", "Logged as EXP-4385 (or EXP-4386)."),
    ("77539.53", "The value is 77539.53 or maybe 12000.00."),
    ("Austin", "It is in Austin or maybe Chicago."),
    ("2026-03-05", "It was March 5, 2026, or possibly 2026-03-07."),
])
def test_an_answer_offered_with_an_alternative_fails_without_any_rival(expected, message):
    passed, why = check_answer(expected, message, WORLD)
    assert not passed and "alternative" in why


@pytest.mark.parametrize("expected, message", [
    ("TKT-7735", "Solved TKT-7735. Tell me if you need anything else or another update."),
    ("2026-03-05", "Booked for March 5, 2026 or thereabouts."),
    ("150", "The maximum is $150. The request said 120 or 150.", ),
])
def test_an_or_that_offers_no_other_value_of_the_kind_passes(expected, message):
    instruction = "I was quoted 120 or 150." if "request said" in message else ""
    assert check_answer(expected, message, WORLD, instruction=instruction)[0]
