"""Composer: verified multi-service tasks, reproducible from their seed, with sound rubrics."""

from __future__ import annotations

from collections import Counter

import pytest

from compoenv.compose import Composer, ComposerConfig, Rejected, replay, verify_task
from compoenv.compose.doctor import REASONS
from compoenv.compose.verify import appears, verify_walk
from compoenv.compose.walk import Binding, Step, Walk
from compoenv.registry import Registry, RegistryError
from compoenv.task import Call, StateCriterion


def test_generated_tasks_are_verified_multi_service_2_to_4_hops(tasks50):
    assert len(tasks50) == 50 and len({t.id for t in tasks50}) == 50
    for t in tasks50:
        assert 2 <= t.hops <= 4 and len(t.services) >= 2 and t.hops == len(t.solution)
        assert t.id == t.content_hash()
        assert replay(t).rubric_score == 1.0
        empty = replay(t, calls=False)  # guards pass on an empty run; the work does not
        assert not any(c.passed for c in empty.criteria if c.required and c.kind != "unchanged")


def test_every_task_needs_a_write_or_a_report(tasks50):
    for t in tasks50:
        kinds = {c.kind for c in t.rubric if c.required}
        assert kinds & {"state", "answer"}, t.id
        assert ("report" in t.capabilities) == bool(t.answer)


def test_answers_and_intermediate_values_do_not_leak_into_instructions(tasks50):
    from compoenv.compose.verify import appears

    for t in tasks50:
        for value in t.answer:
            assert not appears(value.casefold(), t.instruction.casefold())


def test_regeneration_from_seed_is_identical(tasks50):
    composer = Composer()
    for t in tasks50[:10]:
        assert composer.compose(t.walk_seed) == t


def test_a_composition_that_does_not_regenerate_identically_is_rejected(tasks50, monkeypatch):
    import compoenv.compose.generator as generator

    composer = Composer()
    seed = tasks50[0].walk_seed
    calls = iter(range(1_000))  # shared state that leaks into the instruction: a planted bug
    render = generator.render_instruction
    monkeypatch.setattr(generator, "render_instruction",
                        lambda walk, context=None: f"{render(walk, context)} (#{next(calls)})")
    with pytest.raises(Rejected) as info:
        composer.compose(seed)
    assert info.value.reason == "not_reproducible"
    monkeypatch.setattr(generator, "render_instruction", render)
    assert composer.compose(seed) == tasks50[0]


def test_different_seeds_give_different_tasks():
    composer = Composer()
    assert composer.sample(1).id != composer.sample(2).id


def test_generation_is_reproducible_across_composer_instances():
    a = [t.id for t in Composer().generate(8, seed=3)]
    b = [t.id for t in Composer().generate(8, seed=3)]
    assert a == b


def test_min_services_and_hops_controls_are_respected():
    config = ComposerConfig(min_hops=3, max_hops=4, min_services=3)
    for t in Composer(config=config).generate(10, seed=5):
        assert 3 <= t.hops <= 4 and len(t.services) >= 3


def test_services_control_restricts_walks():
    allowed = ("contacts", "email", "calendar")
    for t in Composer(config=ComposerConfig(services=allowed)).generate(8, seed=2):
        assert set(t.services) <= set(allowed)


@pytest.mark.parametrize("kwargs", [{"min_hops": 0}, {"min_hops": 3, "max_hops": 2},
                                    {"min_services": 5, "max_hops": 4}])
def test_bad_composer_config_is_rejected(kwargs):
    with pytest.raises(ValueError):
        ComposerConfig(**kwargs)


def test_rejections_are_counted_by_reason():
    composer = Composer()
    list(composer.generate(40, seed=0))
    assert composer.rejections and all(isinstance(k, str) for k in composer.rejections)


def test_rejections_name_the_tool_at_fault_beside_the_reason_counts():
    composer = Composer(config=ComposerConfig(min_hops=4, max_hops=5))
    list(composer.generate(30, seed=1))
    assert composer.rejections_by_tool
    for (reason, tool), count in composer.rejections_by_tool.items():
        assert reason in composer.rejections and tool in composer.graph.specs and count >= 1
    named = {r for r, _ in composer.rejections_by_tool} - {"start_failed"}
    for reason in named:  # one tool per seed, except start_failed (each start tried)
        assert sum(c for (r, _), c in composer.rejections_by_tool.items() if r == reason) \
            == composer.rejections[reason]


def test_rejected_keeps_its_tools_through_pickling():
    import pickle

    again = pickle.loads(pickle.dumps(Rejected("dead_end", "after 2", ("crm__get_lead",))))
    assert (again.reason, again.detail, again.tools) == ("dead_end", "after 2", ("crm__get_lead",))
    assert Rejected("leak").tools == ()


def test_required_services_are_in_every_task_and_checked():
    tasks = list(Composer(config=ComposerConfig(require=("parking",))).generate(5, seed=3))
    assert len(tasks) == 5 and all("parking" in t.services for t in tasks)
    with pytest.raises(RegistryError, match="Did you mean"):
        Composer(config=ComposerConfig(require=("parkin",)))
    with pytest.raises(ValueError, match="not in services"):
        ComposerConfig(services=("email", "calendar"), require=("parking",))


def test_dropped_calls_are_counted_by_reason_and_tool_only_when_asked():
    composer = Composer(config=ComposerConfig(require=("email",)))
    assert composer.misses is None
    composer.misses = Counter()
    list(composer.generate(5, seed=2))
    assert composer.misses and all(why in REASONS and tool in composer.graph.specs
                                   for why, tool in composer.misses)


def test_verifier_rejects_a_trivially_solvable_task(task):
    first = next(c for c in task.rubric if c.required)
    service = task.services[0]
    collection = next(iter(Registry.default().get(service).State.model_fields))
    always = StateCriterion(id="cx", description="no record 'nope'", service=service,
                            collection=collection, key="nope", exists=False)
    trivial = task.model_copy(update={"rubric": [*task.rubric, always]})
    with pytest.raises(Rejected) as info:
        verify_task(trivial)
    assert info.value.reason == "trivial"
    assert first.required


def test_verifier_rejects_a_leaked_answer(tasks50):
    t = next(t for t in tasks50 if t.answer)
    leaked = t.model_copy(update={"instruction": t.instruction + f" (hint: {t.answer[0]})"})
    with pytest.raises(Rejected) as info:
        verify_task(leaked)
    assert info.value.reason == "leak"
    # a value inside a longer word or number gives nothing away: a rate of 3 in "2026-04-03"
    from compoenv.compose.verify import appears

    assert appears("3", "for 3 nights") and not appears("3", "due on 2026-04-03")


def test_verifier_rejects_a_task_whose_oracle_fails(tasks50):
    t = next(t for t in tasks50 if any(c.kind == "state" for c in t.rubric))
    broken = t.model_copy(update={"solution": t.solution[:-1]})
    with pytest.raises(Rejected) as info:
        verify_task(broken)
    assert info.value.reason == "oracle_fails"


def test_verifier_rejects_a_task_without_required_criteria(task):
    soft = task.model_copy(update={"rubric": [c.model_copy(update={"required": False})
                                              for c in task.rubric]})
    with pytest.raises(Rejected) as info:
        verify_task(soft)
    assert info.value.reason == "no_required"


def test_walk_verifier_rejects_intermediate_leak_and_ambiguous_grounding(task):
    registry = Registry.default()
    spec = registry.spec("contacts__find_contact")
    nxt = registry.spec("email__list_messages_from")
    walk = Walk([Step(spec, [Binding("name", "Ada Lovelace", interface="PersonName")],
                      {"email": "ada@example.com"}),
                 Step(nxt, [Binding("sender", "ada@example.com", 0, ("email",), "EmailAddress")],
                      [])])
    leaky = task.model_copy(update={"instruction": "Write to ada@example.com"})
    with pytest.raises(Rejected) as info:
        verify_walk(walk, leaky)
    assert info.value.reason == "leak"
    walk.steps[0].result = [{"email": "a@x.com"}, {"email": "b@x.com"}]
    walk.steps[1].bindings[0] = Binding("sender", "a@x.com", 0, ("*", "email"), "EmailAddress")
    with pytest.raises(Rejected) as info:
        verify_walk(walk, task.model_copy(update={"instruction": "x"}))
    assert info.value.reason == "ambiguous_grounding"


def test_a_wrong_argument_in_the_solution_fails_a_criterion(tasks50):
    checked = 0
    for t in tasks50:
        if not any(c.kind == "state" for c in t.rubric):
            continue
        i, key, value = next((i, k, v) for i in range(len(t.solution) - 1, -1, -1)
                             for k, v in t.solution[i].arguments.items() if isinstance(v, str))
        call = t.solution[i]
        wrong = [*t.solution[:i], Call(name=call.name, arguments={**call.arguments,
                                                                  key: value + "x"}),
                 *t.solution[i + 1:]]
        result = replay(t.model_copy(update={"solution": wrong}))
        assert result.rubric_score < 1.0, t.id
        checked += 1
    assert checked >= 5


def test_state_criteria_match_created_records_by_value_not_generated_id(tasks50):
    created = [c for t in tasks50 for c in t.rubric
               if isinstance(c, StateCriterion) and c.key is None]
    assert created
    for c in created:
        assert "id" not in c.match


def test_oracle_solves_every_task_of_a_500_task_set_in_both_modes():
    tasks = list(Composer(config=ComposerConfig(distractors=2)).generate(500, seed=123))
    assert len({t.id for t in tasks}) == 500
    from compoenv.agents import OracleAgent
    from compoenv.env import CompoWorldEnv
    from compoenv.rollout import run_episode

    for mode in ("direct", "gateway"):
        env = CompoWorldEnv(tasks, mode=mode, max_steps=12)
        for i, t in enumerate(tasks):
            traj = run_episode(env, OracleAgent(per_action=2), options={"index": i})
            assert traj["meta"]["rubric_score"] == 1.0, (mode, t.id)


@pytest.mark.parametrize("value, text, found", [
    ("vie", "fly to vie tomorrow", True),
    ("vie", "fly to vienna", False),
    ("12.5", "pay 12.5.", True),
    ("12.5", "pay 112.50", False),
    ("12.5", "pay 12.55 or 12.5x", False),
    ("inv-0007", "settle inv-0007, then", True),
    ("inv-0007", "settle inv-00071", False),
    ("ana", "email ana_b and x.ana", False),
])
def test_a_leak_is_a_value_standing_as_a_whole_word(value, text, found):
    assert appears(value, text) is found


def test_a_field_only_one_of_several_items_has_is_no_value_of_the_list():
    """Two events, one with an attendee: "the event's attendees" would not say whose."""
    from compoenv.compose.steps import single_values
    from compoenv.registry import Registry

    spec = Registry.default().spec("calendar__list_events")
    two = [{"id": "EV-1", "title": "Coffee", "start": "2026-03-18T10:00",
            "duration_minutes": 30, "location": "Lisbon", "attendees": ["a.b@acme.com"]},
           {"id": "EV-2", "title": "Dentist", "start": "2026-03-18T15:00",
            "duration_minutes": 90, "location": "Lisbon", "attendees": []}]
    assert single_values(0, spec, two) == []
    one = single_values(0, spec, two[:1])
    assert ("*", "attendees", "*") in {v.slot.path for v in one}


def test_a_set_keeps_one_task_of_a_job_whatever_its_distractors(tasks50):
    from collections import Counter

    from compoenv.compose.generator import Outcome, select

    t = tasks50[0]
    beside = t.model_copy(update={"distractors": ["weather"], "walk_seed": t.walk_seed + 1}
                          ).with_id()
    assert beside.id != t.id and beside.job_key() == t.job_key()
    rejections: Counter[str] = Counter()
    kept = list(select([Outcome(t), Outcome(beside), Outcome(tasks50[1])], 2, rejections))
    assert kept == [t, tasks50[1]] and rejections == {"duplicate": 1}
