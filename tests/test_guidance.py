"""Guidance levels: goal-level requests (no calls, no reads, no wording dictated), decisions as
business criteria, messages checked for their facts, and an outcome rubric that takes another
valid plan and still fails wrong work."""

from __future__ import annotations

import json
import re
from functools import lru_cache

import pytest
from click.testing import CliRunner

from compoenv.cli import main
from compoenv.compose import Composer, ComposerConfig
from compoenv.compose.choices import choose, plain
from compoenv.compose.config import parse_guidance
from compoenv.compose.difficulty import estimate
from compoenv.agents.variants import session_for
from compoenv.compose.verify import oracle_message, replay
from compoenv.registry import Registry
from compoenv.reward import Outcome, mentions, score_rubric
from compoenv.scenarios import Scenario, ScenarioError, ScenarioRegistry
from compoenv.schema import Slot
from compoenv.session import Session
from compoenv.task import CallCriterion, Task
from compoenv.world import World

HOTEL_TEAM = {
    "name": "team_rooms_and_dinner", "domain": "travel",
    "persona": ["I arrange travel for visiting teams at {employer}."],
    "goal": "A visiting team needs a room each in one hotel and to hear about it from me.",
    "services": ["hotels", "contacts", "email"],
    "stages": [
        {"tools": ["hotels__search_hotels"], "take": "pick", "items": [3, 8],
         "by": [{"field": "nightly_rate", "order": "min", "says": "the cheapest hotel"}]},
        {"tools": ["contacts__list_contacts_at_company"], "take": "all", "fresh": True},
        {"tools": ["hotels__book_hotel"], "each": True},
        {"tools": ["email__send_email"], "each": True,
         "about": "their room at the hotel",
         "args": {"subject": "Your room", "body": "Your room is booked for the visit."}},
    ],
    "rules": [], "report": [0, 1]}


def _composer(guidance: str, scenario: dict = HOTEL_TEAM) -> Composer:
    pool = ScenarioRegistry([Scenario.model_validate(scenario)])
    return Composer(config=ComposerConfig(scenarios=(str(scenario["name"]),),
                                          difficulty=(("hard", 1.0),),
                                          guidance=((guidance, 1.0),)), scenarios=pool)


@lru_cache(maxsize=None)
def _tasks(guidance: str, n: int = 3) -> tuple[Task, ...]:
    composer = _composer(guidance)
    return tuple(composer.sample(seed) for seed in range(n))


@lru_cache(maxsize=None)
def _defaults(n: int = 12) -> tuple[Task, ...]:
    composer = Composer(config=ComposerConfig(
        scenarios=tuple(ScenarioRegistry.default().names()), distractors=4))
    return tuple(composer.sample(seed) for seed in range(n))


_QUALIFIED = re.compile(r"\b[a-z][a-z0-9_]*__[a-z0-9_]+\b")


def test_default_tasks_are_goal_level_and_dictate_no_read() -> None:
    registry = Registry.default()
    for task in _defaults():
        assert task.guidance == "goal"
        request = task.instruction.split("Request: ")[-1]
        assert " Then " not in request and not request.startswith("Then")
        assert not _QUALIFIED.search(task.instruction)
        reads = [c for c in task.solution if registry.spec(c.name).read_only]
        for call in reads:  # no read is asked for by its phrase
            spec = registry.spec(call.name)
            verb = (spec.phrase or "").split(" {")[0]
            if len(verb.split()) >= 3:
                assert verb not in request, (verb, request)
        # no credit for reads, and every required criterion is about the outcome
        assert not any(c.kind == "call" and registry.spec(c.name).read_only
                       for c in task.rubric)


def test_a_message_naming_the_chosen_thing_by_its_last_word_must_name_it() -> None:
    """ "a cook sheet about the batch cook, naming the recipe": the job chose a *cookbook
    recipe*; said by its last word it is still the thing the message must name, checked."""
    composer = Composer(config=ComposerConfig(scenarios=("saved_recipe_batch_cook",)))
    task = next(t for seed in range(12) if (t := _or_none(composer, seed)) is not None)
    assert re.search(r"\bnam(e|ing) the recipe\b", task.instruction)
    named = {c.name: c.mentions for c in task.rubric
             if isinstance(c, CallCriterion) and c.mentions}
    assert set(named) == {"docs_editor__create_document", "email__send_email"}
    recipe = next(iter(named.values()))
    assert len(recipe) == 1 and all(m == recipe for m in named.values())
    assert all(recipe[0] in json.dumps(c.arguments) for c in task.solution
               if c.name in named)
    assert not any("with ," in c.description or c.description.endswith("with ")
                   for c in task.rubric)  # a call told by its facts alone says so cleanly


def test_what_the_author_says_a_message_names_is_not_said_again() -> None:
    """The stage's own "about reviewing the document, naming the document" is said once."""
    composer = Composer(config=ComposerConfig(scenarios=("stale_document_review",)))
    task = next(t for seed in range(12) if (t := _or_none(composer, seed)) is not None)
    assert re.search(r"\bnam(e|ing) the document\b", task.instruction)
    assert not re.search(r"naming the (\w+), naming the \1", task.instruction)
    assert any(isinstance(c, CallCriterion) and c.mentions for c in task.rubric)


def test_the_goals_own_work_is_not_listed_but_is_still_graded() -> None:
    """ "The policy document edited longest ago gets a review comment, its owner a review task,
    and an email asking them to update it": the goal says the work, so the request lists
    neither the comment nor the email (the task, due on a day only the user knows, is asked
    for); the rubric still requires each, and a run that skips one fails."""
    registry = Registry.default()
    composer = Composer(config=ComposerConfig(scenarios=("stale_document_review",)))
    task = next(t for seed in range(12) if (t := _or_none(composer, seed)) is not None)
    request = task.instruction.split("Request: ")[-1]
    goal = {"docs_editor__add_comment", "email__send_email"}
    assert goal <= {c.name for c in task.solution}
    due = next(c.arguments["due"] for c in task.solution
               if c.name == "project_tracker__create_task")
    assert due in request
    for name in goal:
        verb = (registry.spec(name).phrase or "").split(" {")[0]
        assert verb.casefold() not in request.casefold(), (verb, request)
    for skipped in (i for i, c in enumerate(task.solution) if c.name in goal):
        session = session_for(task, registry)
        for i, call in enumerate(task.solution):
            if i != skipped:
                session.call(call.name, call.arguments)
        result = score_rubric(task.rubric, Outcome(session, oracle_message(task),
                                                   task.instruction))
        assert not result.passed, task.solution[skipped].name


def test_only_work_the_goal_speaks_of_goes_unlisted() -> None:
    """What an optional stage adds is not the goal's work: it is asked for. And what the
    goal leaves unlisted is only writes whose every argument is the agent's wording, a house
    rule's label, what the job found, or what the request states."""
    from compoenv.compose.goal import free_params, goal_work

    composer = Composer(config=ComposerConfig(
        scenarios=tuple(ScenarioRegistry.default().names()), distractors=4))
    seen_extra = seen_implied = 0
    for seed in range(40):
        try:
            task, walk = composer._build(seed)
        except Exception:
            continue
        implied, kinds = goal_work(walk, free_params(walk), "", "")
        assert not implied & walk.extras and not implied & set(walk.rule_steps)
        assert all(not walk.steps[i].spec.read_only for i in implied)
        seen_extra += bool(walk.extras)
        seen_implied += bool(implied)
        # a literal value nobody states keeps its write listed (here nothing is stated but
        # what the writes still listed say)
        listed = " ".join(str(b.value) for j, step in enumerate(walk.steps)
                          if not step.spec.read_only and j not in implied
                          for b in step.bindings if b.source is None).casefold()
        for i in implied:
            for b in walk.steps[i].bindings:
                assert b.source is not None or b.param in free_params(walk).get(i, ()) \
                    or b.param in {p for (n, p) in walk.shown if n == walk.steps[i].spec
                                   .qualified_name} or str(b.value).casefold() in listed, \
                    (walk.steps[i].spec.qualified_name, b)
    assert seen_extra and seen_implied


def test_what_a_request_says_a_message_names_is_checked() -> None:
    """ "email the guest about the dinner, naming the restaurant" (a restaurant listed by its
    "restaurant_name"), "naming the medication" (the prescription's "medication_name"): each
    thing a message must name is a fact the rubric checks, and the oracle's message has it."""
    from compoenv.compose.goal import message_facts

    composer = Composer(config=ComposerConfig(
        scenarios=tuple(ScenarioRegistry.default().names()), distractors=4))
    checked = 0
    for seed in range(60):
        try:
            task, walk = composer._build(seed)
        except Exception:
            continue
        for index, step in enumerate(walk.steps):
            if "naming the" not in walk.about.get(index, ""):
                continue
            facts = message_facts(walk, index)
            assert facts, (step.spec.qualified_name, walk.about[index])
            mentioned = [m for c in task.rubric if isinstance(c, CallCriterion)
                         and c.name == step.spec.qualified_name for m in c.mentions]
            assert {name for _, name in facts} <= set(mentioned)
            assert all(name in json.dumps(step.arguments, ensure_ascii=False) for _, name in facts), \
                (facts, step.arguments)
            checked += 1
    assert checked


def _or_none(composer: Composer, seed: int) -> Task | None:
    from compoenv.compose.walk import Rejected

    try:
        return composer.compose(seed)
    except Rejected:
        return None


def test_the_same_seed_is_the_same_job_at_every_level() -> None:
    goal, steps, hints = _tasks("goal"), _tasks("steps"), _tasks("hints")
    for g, s, h in zip(goal, steps, hints):
        assert g.solution == s.solution == h.solution
        assert (g.guidance, s.guidance, h.guidance) == ("goal", "steps", "hints")
        assert "Then " in s.instruction and "Then " not in g.instruction
        hinted = ("Hint: it helps to ", "Tip: you can ", "A pointer: you may want to ")
        assert any(x in h.instruction for x in hinted)
        assert not any(x in g.instruction for x in hinted)
        assert estimate(g) > estimate(h) > estimate(s)


def test_a_goal_request_states_the_decision_and_asks_for_the_message_by_its_facts() -> None:
    for task in _tasks("goal"):
        assert re.search(r"(Go with|Pick|It should be|Use|Choose) the cheapest hotel in ",
                         task.instruction)
        # the goal says the fan-out (a room each, told about it): what only the user knows of
        # the bookings is said as facts, what the emails must name once for all of them
        assert re.search(r"For each hotel reservation, the check-in date is [-\d]+ and the "
                         r"number of nights is \d\.", task.instruction)
        assert re.search(r"name the hotel|should name the hotel", task.instruction)
        assert "book that hotel" not in task.instruction
        assert "Your room is booked" not in task.instruction  # the wording is the agent's
        named = [c for c in task.rubric if isinstance(c, CallCriterion) and c.mentions]
        sends = [c for c in task.solution if c.name == "email__send_email"]
        assert len(named) == len(sends) >= 2
        hotel = task.solution[0].arguments  # the search
        assert hotel and all(c.mentions == named[0].mentions for c in named)
        assert "Your room" not in json.dumps([c.model_dump() for c in task.rubric])


RESTOCK = {
    "name": "restock_two_kinds", "domain": "procurement",
    "persona": ["I handle purchasing at {employer}."],
    "goal": ["The cheapest office and kitchen supplies in stock have to be reordered.",
             "We are low on office and kitchen supplies: the cheapest of each gets ordered."],
    "services": ["shop", "email", "docs_editor"],
    "stages": [
        {"tools": ["shop__cheapest_in_category"], "args": {"category": "office"}},
        {"tools": ["shop__place_order"], "args": {"quantity": 4}},
        {"tools": ["shop__cheapest_in_category"], "fresh": True, "args": {"category": "kitchen"}},
        {"tools": ["shop__place_order"], "args": {"quantity": 3}},
        {"tools": ["email__send_email"], "fresh": True, "about": "the supplies we reordered",
         "args": {"subject": "Supplies reordered", "body": "The supplies are reordered."}},
        {"tools": ["docs_editor__create_document"], "fresh": True, "about": "the purchase",
         "args": {"title": "Purchase log", "content": "Reordered office and kitchen supplies."}},
    ],
    "rules": [], "report": [0, 1]}


def test_writes_on_things_of_one_kind_say_which_each_one_means() -> None:
    """Two products found alike: each order names its product's category and quantity, not
    "that product" twice; the goal is one of its phrasings."""
    composer = _composer("goal", RESTOCK)
    for seed in range(3):
        task = composer.sample(seed)
        request = task.instruction.rpartition("Request: ")[2]
        assert "that product" not in request, request
        # the goal says the orders: what only the user knows of them is said per product
        assert ("The quantities are 4 for the cheapest in-stock product in the office category "
                "and 3 for the cheapest in-stock product in the kitchen category.") in request
        assert any(goal in request for goal in RESTOCK["goal"])
        assert replay(task).rubric_score == 1.0


def _play(task: Task, calls: list[tuple[str, dict]], message: str) -> float:
    session = Session.for_names(task.services + task.distractors,
                                World.get(task.seed, task.today()))
    for name, args in calls:
        session.call(name, args)
    return score_rubric(task.rubric, Outcome(session, message, task.instruction)).rubric_score


def _with_words(task: Task, body: str) -> list[tuple[str, dict]]:
    return [(c.name, {**c.arguments, "subject": "Hi", "body": body}
             if c.name == "email__send_email" else c.arguments) for c in task.solution]


def test_any_wording_carrying_the_facts_passes_and_a_message_without_them_fails() -> None:
    for task in _tasks("goal"):
        hotel = next(c for c in task.rubric if isinstance(c, CallCriterion)
                     and c.mentions).mentions[0]
        message = "Done. " + "; ".join(task.answer) + "."
        assert replay(task).rubric_score == 1.0
        assert _play(task, _with_words(task, f"All set at {hotel} for you."), message) == 1.0
        assert _play(task, _with_words(task, "All set for you."), message) < 1.0
        # another hotel's name is not this one's
        assert _play(task, _with_words(task, "All set at the Grand Plaza."), message) < 1.0


def test_steps_tasks_still_check_the_dictated_wording() -> None:
    for task in _tasks("steps"):
        message = "Done. " + "; ".join(task.answer) + "."
        assert _play(task, [(c.name, c.arguments) for c in task.solution], message) == 1.0
        assert _play(task, _with_words(task, "Other words."), message) < 1.0


def test_wrong_work_fails_a_goal_task() -> None:
    """Another hotel booked for one person, one person skipped: both fail."""
    for task in _tasks("goal"):
        message = "Done. " + "; ".join(task.answer) + "."
        books = [i for i, c in enumerate(task.solution) if c.name == "hotels__book_hotel"]
        calls = [(c.name, dict(c.arguments)) for c in task.solution]
        hotels = Session.for_names(task.services, World.get(task.seed, task.today())).call(
            task.solution[0].name, task.solution[0].arguments)["data"]
        booked = calls[books[0]][1]["hotel_id"]
        other = next(h["id"] for h in hotels if h["id"] != booked)
        wrong = [(n, {**a, "hotel_id": other} if k == books[0] else a)
                 for k, (n, a) in enumerate(calls)]
        assert _play(task, wrong, message) < 1.0
        skipped = [x for k, x in enumerate(calls) if k != books[-1]]
        assert _play(task, skipped, message) < 1.0


def test_near_ties_leave_no_single_choice() -> None:
    slot = Slot("Money", ("*", "price"), role="price")
    assert choose([{"price": 100.0}, {"price": 150.0}], slot, "min") == (0, "")
    assert choose([{"price": 100.0}, {"price": 101.0}], slot, "min") == (None, "tied_pick")
    assert choose([{"price": 100.0}, {"price": 100.0}], slot, "max") == (None, "tied_pick")
    when = Slot("DateTime", ("*", "start"), role="event_date")
    assert choose([{"start": "2026-03-20T10:00"}, {"start": "2026-03-20T10:30"}], when,
                  "min") == (None, "tied_pick")
    assert choose([{"start": "2026-03-20T10:00"}, {"start": "2026-03-20T14:30"}], when,
                  "max") == (1, "")
    assert plain(slot, "min", "hotel", {}) == "the cheapest hotel"
    assert plain(Slot("Money", ("*", "x"), role=None), "min", "hotel", {}) is None


def test_a_pick_criterion_must_be_an_orderable_field_of_a_pick_stage() -> None:
    bad_field = json.loads(json.dumps(HOTEL_TEAM))
    bad_field["stages"][0]["by"][0]["field"] = "stars_rating"
    with pytest.raises(ScenarioError, match="cannot pick by 'stars_rating'"):
        Scenario.model_validate(bad_field).check(Registry.default())
    not_a_pick = json.loads(json.dumps(HOTEL_TEAM))
    not_a_pick["stages"][1]["by"] = [{"field": "x", "order": "min", "says": "the first one"}]
    with pytest.raises(ValueError, match="'by' gives the criteria of a take='pick' stage"):
        Scenario.model_validate(not_a_pick)


def test_guidance_flags() -> None:
    assert parse_guidance("goal") == (("goal", 1.0),)
    assert parse_guidance("mix=goal=0.8,steps=0.2") == (("goal", 0.8), ("steps", 0.2))
    for bad in ("plan", "mix=goal=x", "mix=goal=0", "mix=chat=1"):
        with pytest.raises(ValueError):
            parse_guidance(bad)
    result = CliRunner().invoke(main, ["generate", "--num", "1", "--guidance", "plan", "-o",
                                       "/dev/null"])
    assert result.exit_code == 2 and "--guidance" in result.output
    assert "Traceback" not in result.output


def test_mentions_reads_every_text_argument_as_whole_words() -> None:
    assert mentions(["Hotel Aurora"], {"subject": "Your room", "body": "at hotel aurora!"})
    assert mentions(["Hotel Aurora"], {"subject": "Hotel Aurora", "body": "see you"})
    assert not mentions(["Aurora"], {"body": "at Auroras"})
    assert not mentions(["Hotel Aurora"], {"to": 3, "body": "see you"})


def test_a_stated_short_value_is_a_fact_the_rubric_checks_not_wording():
    from compoenv.compose.goal import _wording

    assert not _wording("folder", "Handover") and not _wording("label", "urgent")
    assert _wording("body", "Thanks") and _wording("title", "File handover")
    assert _wording("special_note", "Please call me when the car is ready")
    composer = Composer(config=ComposerConfig(scenarios=("leaver_files_handover",),
                                              guidance=(("goal", 1.0),), distractors=0))
    task = next(iter(composer.generate(1, seed=1)))
    moves = [c for c in task.rubric if c.kind == "state" and "folder" in c.match]
    assert moves and all(c.match["folder"] == "Handover" for c in moves)


def test_a_read_the_job_exists_for_is_asked_for_and_checked():
    from compoenv.compose.verify import oracle_message

    composer = Composer(config=ComposerConfig(scenarios=("saved_recipe_batch_cook",),
                                              guidance=(("goal", 1.0),), distractors=0))
    task = next(iter(composer.generate(1, seed=3)))
    scale = next(c for c in task.solution if c.name == "recipes__scale_recipe")
    assert f"{scale.arguments['servings']} servings" in task.instruction
    registry = Registry.default()
    for calls, passes in ((task.solution, True),
                          ([c for c in task.solution if c is not scale], False)):
        session = session_for(task, registry)
        for call in calls:
            session.call(call.name, call.arguments)
        outcome = Outcome(session, oracle_message(task), task.instruction)
        assert score_rubric(task.rubric, outcome).passed is passes


def test_a_message_worded_as_a_placeholder_fails_and_any_real_wording_passes():
    from compoenv.agents.variants import placeholders, reworded
    from compoenv.cli.common import composer_config
    from compoenv.compose.parallel import generate_parallel
    from compoenv.reward import worded

    assert worded({"subject": "Your room", "body": "It's booked for the visit."},
                  ["subject", "body"]) == 7
    tasks, _ = generate_parallel(30, 77, composer_config(scenarios="all", distractors=10),
                                 workers=1)
    registry, tried = Registry.default(), 0
    for task in tasks:
        for build, passes in ((placeholders, False), (reworded, True)):
            for play in build(task, registry):
                session = session_for(task, registry)
                for call in play.calls:
                    session.call(call.name, call.arguments)
                outcome = Outcome(session, play.message, task.instruction)
                assert score_rubric(task.rubric, outcome).passed is passes, (task.id, play.detail)
                tried += not passes
    assert tried >= 10


DINNER = {
    "name": "client_dinner_facts", "domain": "hospitality",
    "persona": ["I host client dinners for {employer}."],
    "goal": "A client dinner needs booking at the cheapest restaurant in town, put in my "
            "calendar, and the client told about it.",
    "services": ["restaurants", "calendar", "email"],
    "stages": [
        {"tools": ["restaurants__search_restaurants"], "take": "pick", "items": [2, 8],
         "by": [{"field": "average_price_per_person", "order": "min",
                 "says": "the cheapest restaurant"}]},
        {"tools": ["restaurants__book_reservation"],
         "args": {"party_size": 4, "time": "19:30"}},
        {"tools": ["calendar__create_event"], "args": {"title": "Client dinner"},
         "about": "the client dinner"},
        {"tools": ["email__send_email"], "fresh": True, "about": "the dinner booking",
         "args": {"subject": "Dinner", "body": "Our table is booked."}},
    ],
    "rules": [], "report": [0, 1]}


def test_what_only_the_user_knows_of_a_write_the_goal_covers_is_said_as_facts() -> None:
    """The goal says the booking; its party size and time are facts of the reservation, not a
    call to transcribe, and the grader still holds the booking to them."""
    composer = _composer("goal", DINNER)
    seen = 0
    for seed in range(4):
        task = composer.sample(seed)
        request = task.instruction.rpartition("Request: ")[2]
        booking = next(c for c in task.solution if c.name == "restaurants__book_reservation")
        if "book " in request:
            continue  # a value the goal cannot carry (a found one) keeps the call asked
        seen += 1
        facts = re.search(r"For the reservation, ([^.]*)\.", request)
        assert facts and "the party size is 4" in facts[1] and "the time is 19:30" in facts[1], \
            request
        assert replay(task).rubric_score == 1.0
        message = "Done. " + "; ".join(task.answer) + "."
        calls = [(c.name, {**c.arguments, "party_size": 5} if c is booking else c.arguments)
                 for c in task.solution]
        assert _play(task, calls, message) < 1.0
    assert seen
