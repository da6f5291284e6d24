"""Scenarios: the file format and registry, long tasks composed from them, their house rules
(each needed), decoys, reports, difficulty and the CLI."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Iterator

import pytest
from click.testing import CliRunner

from compoenv.cli import main
from compoenv.compose import Composer, ComposerConfig
from compoenv.compose.difficulty import DifficultyMix, curriculum, estimate, level
from compoenv.compose.records import Binding, Step, Walk
from compoenv.compose.verify import _ignoring, replay, verify_task
from compoenv.compose.walk import Rejected
from compoenv.registry import Registry
from compoenv.reward import check_criterion
from compoenv.scenarios import Scenario, ScenarioError, ScenarioRegistry
from compoenv.task import Call, OrderCriterion, Task, UnchangedCriterion

PAYMENT = {
    "name": "pay_one_invoice", "domain": "month-end close",
    "persona": ["I run accounts payable at {employer}."],
    "goal": "One vendor's invoice has to be paid and confirmed before the month closes.",
    "services": ["invoices", "bank", "email", "docs_editor"],
    "stages": [
        {"tools": ["invoices__invoices_from"], "take": "pick", "items": [2, 8]},
        {"tools": ["bank__transfer"]},
        {"tools": ["invoices__mark_paid"], "optional": True},
        {"tools": ["email__send_email"], "optional": True},
        {"tools": ["docs_editor__create_document"], "optional": True, "fresh": True,
         "args": {"title": "Payment log", "content": "Paid; see the bank history."}},
    ],
    "naming": "ap",
}


def _pool(**changes: object) -> ScenarioRegistry:
    return ScenarioRegistry([Scenario.model_validate({**PAYMENT, **changes})])


def _tasks(n: int, level: str = "hard", **changes: object) -> list[Task]:
    config = ComposerConfig(scenarios=("pay_one_invoice",), difficulty=((level, 1.0),),
                            distractors=10)
    composer = Composer(config=config, scenarios=_pool(**changes))
    out = []
    for seed in range(200):
        try:
            out.append(composer.compose(seed))
        except Rejected:
            continue
        if len(out) == n:
            return out
    raise AssertionError(f"only {len(out)} tasks: {composer.rejections}")


@pytest.fixture(scope="module")
def hard() -> list[Task]:
    return _tasks(12)


# -- format and registry --------------------------------------------------------------------
@pytest.mark.parametrize("change, message", [
    ({"stages": [{"tools": ["bank__transfer"], "each": True}, {"tools": ["x"]}]},
     "stage 0 runs for each item"),
    ({"stages": [{"tools": ["a"]}, {"tools": ["b"], "each": True}]}, "no earlier stage"),
    ({"name": "Bad Name"}, "name"),
    ({"report": [3, 9]}, "report"),
    ({"rules": ["sometimes"]}, "rules"),
])
def test_bad_scenarios_are_refused_with_the_field(tmp_path, change, message) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"scenarios": [{**PAYMENT, **change}]}))
    with pytest.raises(ScenarioError, match=message):
        ScenarioRegistry.from_paths([path])


def test_unknown_tools_and_services_get_did_you_mean() -> None:
    registry = Registry.default()
    bad = Scenario.model_validate({**PAYMENT, "stages": [{"tools": ["bank__transfr"]},
                                                         {"tools": ["bank__transfer"]}]})
    with pytest.raises(ScenarioError, match="Did you mean 'bank__transfer'"):
        bad.check(registry)
    with pytest.raises(ScenarioError, match="service"):
        Scenario.model_validate({**PAYMENT, "services": ["invoice", "bank"]}).check(registry)


def test_broken_json_names_the_file_and_line(tmp_path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"scenarios": [\n{"name": }]}')
    with pytest.raises(ScenarioError, match=r"broken.json: invalid JSON at line 2"):
        ScenarioRegistry.from_paths([tmp_path])


def test_the_library_ships_forty_scenarios_over_twelve_domains() -> None:
    pool = ScenarioRegistry.default()
    registry = Registry.default()
    for scenario in pool:
        scenario.check(registry)
        assert 3 <= len(scenario.services) <= 7, scenario.name
    assert len(pool) >= 40
    assert len(pool.domains()) >= 12


# -- long tasks -----------------------------------------------------------------------------
def test_scenario_tasks_record_their_job_and_verify_again(hard) -> None:
    for task in hard:
        assert task.scenario == "pay_one_invoice" and task.domain == "month-end close"
        assert 0 <= task.difficulty <= 1 and len(task.distractors) == 10
        assert replay(task).rubric_score == 1.0
        verify_task(task)  # the published checks pass again from the task alone
        assert not set(task.distractors) & set(task.services)


def test_every_rule_with_a_step_is_needed(hard) -> None:
    kinds = Counter()
    for task in hard:
        by_id = {c.id: c for c in task.rubric}
        for rule in task.rules:
            kinds[rule.kind] += 1
            assert rule.text in task.instruction and rule.criteria
            if rule.without is None:
                continue
            ignored = _ignoring(task, rule.without, Registry.default())
            assert not all(check_criterion(by_id[c], ignored)[0] for c in rule.criteria), \
                (rule.kind, task.instruction)
    assert {"naming", "source_of_truth", "threshold"} <= set(kinds), kinds


def test_a_source_of_truth_rule_quotes_a_figure_the_solution_does_not_use(hard) -> None:
    task = next(t for t in hard if any(r.kind == "source_of_truth" for r in t.rules))
    rule = next(r for r in task.rules if r.kind == "source_of_truth")
    quoted = rule.without.replace[0].arguments["amount"]
    call = task.solution[rule.without.replace[0].call]
    assert call.arguments["amount"] != quoted
    assert f"{quoted:g}" in task.instruction or str(int(quoted)) in task.instruction


def test_a_threshold_rule_adds_a_sign_off_before_the_payment(hard) -> None:
    task = next(t for t in hard if any(r.kind == "threshold" for r in t.rules))
    rule = next(r for r in task.rules if r.kind == "threshold")
    names = [c.name for c in task.solution]
    for i in rule.without.drop:
        assert names[i] == "email__send_email"
        assert task.solution[i].arguments["subject"].startswith("Sign-off: ")
        assert "bank__transfer" in names[i + 1:]


def test_a_sign_off_limit_is_a_round_figure_a_policy_would_set() -> None:
    import random

    from compoenv.compose.house_rules import _LIMITS, _policy_limit

    rng = random.Random(0)
    for amount in (183.0, 740.0, 4_999.0, 61_500.0, 2_400_000.0):
        for _ in range(20):
            limit = _policy_limit(amount, rng)
            assert limit in _LIMITS and limit <= 0.9 * amount
    assert _policy_limit(60.0, rng) is None  # nobody signs off on a 60.00 payment


def test_long_tasks_report_several_values_each_its_own_criterion(hard) -> None:
    many = [t for t in hard if len(t.answer) >= 2]
    assert many
    for task in many:
        answers = [c for c in task.rubric if c.kind == "answer"]
        assert sorted(c.value for c in answers) == sorted(task.answer)
        assert re.search(r"(?:tell|let|give|send) me\b|like to know", task.instruction)


def test_easy_tasks_are_shorter_and_carry_fewer_rules() -> None:
    easy = _tasks(6, level="easy")
    assert max(len(t.rules) for t in easy) <= 1
    assert all(len(t.answer) == 1 for t in easy)


# -- criteria of the rules ------------------------------------------------------------------
def test_order_criterion_needs_the_first_call_before_the_second(hard) -> None:
    from compoenv.reward import Outcome
    from compoenv.session import Session
    from compoenv.world import World

    world = World.get(0)
    session = Session.for_names(["invoices", "bank"], world)
    invoice = next(k for k, v in session.state("invoices").invoices.items()
                   if v.status == "open")
    criterion = OrderCriterion(id="c", description="", then="invoices__void_invoice",
                               first=Call(name="invoices__get_invoice",
                                          arguments={"invoice_id": invoice}))
    assert not check_criterion(criterion, Outcome(session))[0]
    session.call("invoices__get_invoice", {"invoice_id": invoice})
    assert not check_criterion(criterion, Outcome(session))[0]  # nothing followed yet
    void = {"invoice_id": invoice, "reason": "duplicate"}
    assert session.call("invoices__void_invoice", void)["success"]
    assert check_criterion(criterion, Outcome(session))[0]
    late = Session.for_names(["invoices", "bank"], world)
    late.call("invoices__void_invoice", void)
    late.call("invoices__get_invoice", {"invoice_id": invoice})
    passed, why = check_criterion(criterion, Outcome(late))
    assert not passed and "before" in why


def test_a_decoy_guard_watches_only_its_record() -> None:
    from compoenv.reward import Outcome
    from compoenv.session import Session
    from compoenv.world import World

    session = Session.for_names(["invoices", "bank"], World.get(0))
    first, second = [k for k, v in session.state("invoices").invoices.items()
                     if v.status == "open"][:2]
    guard = UnchangedCriterion(id="g", description="", service="invoices", collection="*",
                               keys=[second])
    session.call("invoices__void_invoice", {"invoice_id": first, "reason": "duplicate"})
    assert check_criterion(guard, Outcome(session))[0]
    session.call("invoices__void_invoice", {"invoice_id": second, "reason": "duplicate"})
    assert not check_criterion(guard, Outcome(session))[0]


# -- difficulty -----------------------------------------------------------------------------
def test_difficulty_grows_with_calls_rules_and_reports(hard) -> None:
    easy = _tasks(3, level="easy")
    assert max(estimate(t) for t in easy) < max(estimate(t) for t in hard)
    assert level(0.1) == "easy" and level(0.3) == "medium" and level(0.9) == "hard"


def test_a_difficulty_mix_sets_quotas_and_a_curriculum_orders_a_set(hard) -> None:
    mix = DifficultyMix.parse("easy=1,medium=2,hard=1")
    assert mix.quotas(10) == {"easy": 3, "medium": 5, "hard": 2} or sum(
        mix.quotas(10).values()) == 10
    with pytest.raises(ValueError, match="unknown difficulty levels"):
        DifficultyMix.parse("tricky=1")
    ordered = curriculum(hard)
    assert [t.difficulty for t in ordered] == sorted(t.difficulty for t in hard)


# -- command line ---------------------------------------------------------------------------
def test_generate_defaults_to_long_scenario_tasks_with_distractors(tmp_path) -> None:
    out = tmp_path / "tasks.jsonl"
    result = CliRunner().invoke(main, ["generate", "--num", "6", "--seed", "2", "-o", str(out),
                                       "--json", "--curriculum"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    tasks = [Task.model_validate_json(line) for line in out.read_text().splitlines()]
    assert all(t.scenario and len(t.distractors) == 10 for t in tasks)
    assert [t.difficulty for t in tasks] == sorted(t.difficulty for t in tasks)
    assert sum(summary["rules"].values()) == 6 and ">=8" in summary["long"]


def test_bad_scenario_and_difficulty_flags_are_usage_errors(tmp_path) -> None:
    out = str(tmp_path / "t.jsonl")
    result = CliRunner().invoke(main, ["generate", "--scenarios", "pay_one_invoce", "-o", out])
    assert result.exit_code == 2 and "Unknown scenario" in result.output
    result = CliRunner().invoke(main, ["generate", "--difficulty", "hard=x", "-o", out])
    assert result.exit_code == 2 and "bad difficulty share" in result.output


def test_scenarios_command_lists_and_checks(tmp_path) -> None:
    path = tmp_path / "pay.json"
    path.write_text(json.dumps(PAYMENT))
    result = CliRunner().invoke(main, ["scenarios", "--scenario-file", str(path), "--check",
                                       "--seeds", "6", "--json"])
    assert result.exit_code == 0, result.output
    row = json.loads(result.output)[0]
    assert row["name"] == "pay_one_invoice" and row["verified"] > 0


# -- what the scenario engine relies on -----------------------------------------------------
def test_untagged_spec_ids_join_only_tools_of_their_own_service() -> None:
    from compoenv.graph import ToolGraph

    registry = Registry.default()
    graph = ToolGraph(registry.tools(), registry.related)
    edges = [e for e in graph.out_edges("events_tickets__search_events")
             if e.interface == "EventsTicketsEventId"]
    assert {e.target for e in edges} >= {"events_tickets__book_tickets"}
    assert all(e.target_service == "events_tickets" for e in edges)


def _composer_for(scenario: dict[str, object], guidance: str = "steps") -> Composer:
    """A composer of hard tasks of this one scenario, told at ``guidance``."""
    pool = ScenarioRegistry([Scenario.model_validate(scenario)])
    return Composer(config=ComposerConfig(scenarios=(str(scenario["name"]),),
                                          difficulty=(("hard", 1.0),),
                                          guidance=((guidance, 1.0),)), scenarios=pool)


def test_per_item_stated_values_are_the_ones_the_request_shows() -> None:
    scenario = {
        "name": "invite_a_client_team", "domain": "sales ops",
        "persona": ["I look after client accounts at {employer}."],
        "goal": "Everyone I know at one client company gets an invitation from me.",
        "services": ["contacts", "email"],
        "stages": [
            {"tools": ["contacts__list_contacts_at_company"], "take": "all"},
            {"tools": ["email__send_email"], "each": True,
             "args": {"subject": "Join us on Thursday", "body": "We'd love to see you there."}},
        ],
        "rules": [], "report": [0, 1]}
    composer = _composer_for(scenario)
    task = composer.sample(0)
    sends = [c for c in task.solution if c.name == "email__send_email"]
    assert len(sends) >= 2 and all(c.arguments["subject"] == "Join us on Thursday"
                                   for c in sends)
    assert '"Join us on Thursday"' in task.instruction
    assert "for each contact found" in task.instruction
    # told as a goal: the same job, its wording the agent's and checked for no wording
    goal = _composer_for(scenario, "goal").sample(0)
    assert goal.guidance == "goal" and [c.name for c in goal.solution] == [
        c.name for c in task.solution]
    assert "We'd love to see you there" not in goal.instruction
    # the goal says the fan-out ("everyone I know there gets an invitation"), and each email
    # goes to that contact's own address: the request says whom it is about, not the calls
    assert re.search(r"(This is about|It concerns|The job concerns) my contacts who work at ",
                     goal.instruction)
    assert "For each" not in goal.instruction and "send an email" not in goal.instruction
    assert "found" not in goal.instruction and "Then" not in goal.instruction
    assert "We'd love to see you there" not in json.dumps([c.model_dump() for c in goal.rubric])


def test_a_report_names_the_last_record_of_its_kind() -> None:
    scenario = {
        "name": "two_kinds_of_supplies", "domain": "procurement",
        "persona": ["I run purchasing at {employer}."],
        "goal": "The cheapest office and kitchen supplies are reordered and the order noted.",
        "services": ["shop", "email", "docs_editor"],
        "stages": [
            {"tools": ["shop__cheapest_in_category"], "args": {"category": "office"}},
            {"tools": ["shop__place_order"], "args": {"quantity": 2}},
            {"tools": ["shop__cheapest_in_category"], "fresh": True,
             "args": {"category": "kitchen"}},
            {"tools": ["shop__place_order"], "args": {"quantity": 3}},
            {"tools": ["email__send_email"], "fresh": True,
             "args": {"subject": "Reordered", "body": "Supplies are on their way."}},
            {"tools": ["docs_editor__create_document"], "fresh": True,
             "args": {"title": "Purchase log", "content": "Two supplies reordered."}},
        ],
        "rules": [], "report": [1, 3]}
    composer = _composer_for(scenario)
    for seed in range(8):
        task, walk = composer._build(composer.sample(seed).walk_seed)
        kinds = [s.spec.name for s in walk.steps]
        for b, ask in zip(walk.reports, walk.asks):  # "the product's price" is the kitchen's
            same = [i for i, k in enumerate(kinds) if k == kinds[b.source]]
            assert b.source == same[-1], (task.instruction, b)
            if kinds[b.source] == "cheapest_in_category":  # after the office one
                assert ask.startswith("the second product's"), ask


def test_the_env_composes_scenario_tasks_and_the_oracle_completes_them() -> None:
    from compoenv.agents import OracleAgent
    from compoenv.env import CompoWorldEnv
    from compoenv.rollout import run_episode

    env = CompoWorldEnv(scenarios="all", mode="gateway", max_steps=45)
    for seed in range(3):
        episode = run_episode(env, OracleAgent(), seed=seed)
        assert env.task.scenario and episode["meta"]["score"] == 1.0
    with pytest.raises(ScenarioError, match="Unknown scenario"):
        CompoWorldEnv(scenarios=["no_such_job"])


def test_the_envs_default_is_what_generate_composes_and_hops_give_free_walks() -> None:
    import dataclasses

    import gymnasium as gym

    from compoenv.cli.common import composer_config
    from compoenv.env import CompoWorldEnv

    env = gym.make("CompoWorld-v0").unwrapped
    _, info = env.reset(seed=0)
    task = info["task"]
    assert task["scenario"] and task["guidance"] == "goal" and env.max_steps >= 48
    # the config `compoenv generate` builds from its defaults (distractors are per command)
    cli = composer_config(scenarios="all", guidance="goal", min_hops=2, max_hops=4,
                          min_services=2, max_calls=40, distractors=10)
    assert dataclasses.replace(env._composer.config, distractors=10) == cli
    for walks in (CompoWorldEnv(hops=(2, 3)), CompoWorldEnv(scenarios="none")):
        _, info = walks.reset(seed=0)
        assert not info["task"]["scenario"] and 2 <= len(info["task"]["solution"]) <= 4
    with pytest.raises(ValueError, match="hops bounds free walks"):
        CompoWorldEnv(scenarios="all", hops=3)


def _built(scenario: str, seeds: int, hard: bool = False,
           guidance: str = "steps") -> Iterator[tuple[Task, Walk]]:
    """The tasks (and walks) this scenario builds from the first ``seeds`` seeds."""
    mix = (("hard", 1.0),) if hard else ComposerConfig().difficulty
    composer = Composer(config=ComposerConfig(scenarios=(scenario,), difficulty=mix,
                                              guidance=((guidance, 1.0),)))
    for seed in range(seeds):
        try:
            yield composer._build(seed)
        except Rejected:
            continue


def _bindings(scenario: str, seeds: int) -> Iterator[tuple[Walk, Step, Binding]]:
    """Every binding of the walks this scenario builds (hard tasks) from ``seeds`` seeds."""
    for _, walk in _built(scenario, seeds, hard=True):
        for step in walk.steps:
            for b in step.bindings:
                yield walk, step, b


def test_a_repeated_payment_sends_the_payments_value_never_its_fee() -> None:
    sends = 0
    for _, step, b in _bindings("recurring_donation_deduction", 40):
        if step.spec.name == "send_payment" and b.param == "value" and b.source is not None:
            sends += 1
            assert b.path[-1] == "value", b.path
    assert sends


@pytest.mark.parametrize("name", ["candidate_offer", "offer_to_payroll", "cohort_offers"])
def test_an_offer_is_for_the_position_applied_for_and_payroll_takes_it(name) -> None:
    """Never the candidate's current title, nor a salary benchmark's."""
    offers = 0
    for walk, step, b in _bindings(name, 30):
        if (step.spec.name, b.param) in (("create_offer", "position"), ("add_employee", "title")):
            offers += step.spec.name == "create_offer"
            source = walk.steps[b.source].spec if b.source is not None else None
            assert source is not None and source.service == "recruiting", b
            assert b.path[-1] == "position", (step.spec.name, b.path)
    assert offers >= 10


@pytest.mark.parametrize("tool, key, thing", [
    ("insurance__list_claims", "policy_id", "policy"),  # a claim carries its policy's id
    ("crm__search_leads", "id", "lead"),
    ("events_tickets__search_events", "event_id", "event"),
])
def test_a_decoy_is_named_by_what_its_key_identifies(tool, key, thing) -> None:
    from compoenv.compose.house_rules import _item_key, _key_noun
    from compoenv.registry import Registry

    spec = Registry.default().spec(tool)
    slot = _item_key(spec)
    assert slot is not None and slot.path[1] == key and _key_noun(spec, slot) == thing


def test_a_fan_out_leaves_out_the_one_person_the_request_named() -> None:
    """"For each lead found other than the reporter": the reporter gets no ticket of their
    own, everyone else does, and the request says whom it leaves out."""
    left = 0
    for task, walk in _built("client_outage_outreach", 40):
        for listed, (item, _) in walk.left_out.items():
            left += 1
            person = walk.steps[listed].result[item]["email"]
            assert f"other than {person}" in task.instruction
            for tool in ("helpdesk__create_ticket", "crm__log_interaction"):  # each write skips
                calls = [c for c in task.solution if c.name == tool]
                assert calls and all(person not in json.dumps(c.arguments) for c in calls)
                assert len(calls) == len(walk.steps[listed].result) - 1
    assert left >= 5


def test_a_fan_out_leaves_out_a_person_the_job_already_found() -> None:
    """The champion who told us is one of their company's leads: they get their own thanks,
    not the outreach meant for everyone else ("for each lead found other than the contact")."""
    left = 0
    for task, walk in _built("account_pipeline_push", 30):
        champion = walk.steps[0].result["email"]
        logged = [c for c in task.solution if c.name == "crm__log_interaction"]
        assert logged and all(champion not in json.dumps(c.arguments) for c in logged)
        left += bool(walk.left_out)
        if walk.left_out:
            assert "for each lead found other than the contact, " in task.instruction
            assert task.instruction.count("for each lead found") == 1  # one sentence
    assert left >= 10


def test_a_stages_stated_days_move_with_the_worlds_today_never_nearer():
    import datetime as dt

    from compoenv.compose.scenario import dated
    from compoenv.world import DEFAULT_TODAY

    args = {"due": "2026-03-18", "start": "2026-04-06T10:00", "count": 3, "note": "2026-03-18 x"}
    assert dated(args, DEFAULT_TODAY) == args
    for today in (dt.date(2025, 9, 2), dt.date(2026, 12, 24), dt.date(2027, 2, 1)):
        moved = dated(args, today)
        assert moved["count"] == 3 and moved["note"] == args["note"]
        for key, day in (("due", dt.date(2026, 3, 18)), ("start", dt.date(2026, 4, 6))):
            new = dt.date.fromisoformat(moved[key][:10])
            assert new.weekday() == day.weekday()
            assert (new - today).days >= (day - DEFAULT_TODAY).days
        assert moved["start"].endswith("T10:00")


def test_a_pick_among_some_items_takes_only_those():
    from compoenv.cli.common import composer_config
    from compoenv.compose.parallel import generate_parallel
    from compoenv.agents.variants import session_for
    from compoenv.registry import Registry

    tasks, _ = generate_parallel(4, 3, composer_config(
        scenarios="close_translation_feedback_form", distractors=0), workers=1)
    assert tasks
    for task in tasks:
        assert "the open form" in task.instruction
        session = session_for(task, Registry.default())
        forms = session.call(task.solution[0].name, task.solution[0].arguments)["data"]
        closed = next(c.arguments["form_id"] for c in task.solution
                      if c.name == "forms__update_form")
        picked = next(f for f in forms if f["id"] == closed)
        assert picked["status"] == "open"
        assert picked["close_date"] == min(f["close_date"] for f in forms
                                           if f["status"] == "open")
