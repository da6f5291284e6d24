"""The task linter: each rule on its bad and good example, real tasks, the CLI, the summary."""

from __future__ import annotations

import json
import time
from typing import Annotated

import pytest
from click.testing import CliRunner

from compoenv.cli import main
from compoenv.compose.lint import RULES, RULES_BY_ID, Example, lint_task, lint_tasks, select_rules
from compoenv.compose.lint.fields import field_phrases, not_a_noun
from compoenv.compose.taskset import summarize
from compoenv.interfaces import Money
from compoenv.registry import Registry
from compoenv.roles import Role
from compoenv.service import Service, tool
from compoenv.task import Task, save_tasks

# World 0: the user is Carlos Castro; Sara Kim and Lina Silva are two others; Ironwood Health
# is an employer, CityCare Pharmacy a pharmacy
SARA, SARA_MAIL = "Sara Kim", "sara.kim@bluebirdsystems.com"
LINA_MAIL = "lina.silva@juniperventures.com"
USER = "Carlos Castro"


DINNER = RULES_BY_ID["L113"].bad.calls
HOTEL = (("hotels__search_hotels", {"city": "Madrid"}),
         ("hotels__book_hotel", {"hotel_id": "H-0031", "guest": SARA, "guest_email": SARA_MAIL,
                                 "check_in": "2026-03-17", "nights": 2}))
LUNCH = (("restaurants__book_reservation", {"restaurant_name": "Casa Mar", "city": "Lisbon",
                                            "date": "2026-03-20", "time": "12:30",
                                            "party_size": 2, "guest_name": SARA}),)


def messages(example: Example, rule: str) -> list[str]:
    return [f.message for f in lint_task(example.task(), rules=[rule])]


# -- every rule of the table, on the examples it documents ---------------------------------------

TABLE = {
    "L101": [('"the candidate\'s applied on" names a field, not a thing ("applied on" ends in '
              'a preposition)')],
    "L102": ['two articles in a row: "a room at the the Grand Hotel."'],
    "L103": ['"the restaurant\'s restaurant name" repeats "restaurant"'],
    "L104": ['quotes the raw value "off_peak" in "Get "off_peak" parking in Oslo."'],
    "L105": ['malformed unit "minutes minutes" in "the event\'s duration minutes minutes."'],
    "L106": ['placeholder value "quarterly name"'],
    "L107": ['sentence starts in lower case: "then"',
             'no final punctuation: "...book the cheapest one"'],
    "L108": ['doubled space: "Find flights to  Oslo."'],
    "L109": ['filler "the default"', 'filler "( )"'],
    "L110": ['"between Chicago and Chicago" has the same value at both ends'],
    "L111": ['"the files shared with\'s" names a tool\'s result, not a thing'],
    "L112": ['"lowest" twice: "event with the lowest lowest price."'],
    "L113": ['dictates 3 steps in order: "Search hotels in Madrid." to "Then check free tables '
             'for ..."'],
    "L114": ['names the service real_estate: "listing LST-5988 in real_estate also fits, but"'],
    "L115": [('the goal asks for the "newest listing" but a step takes the listing with the '
              'earliest publication date')],
    "L201": ['origin_city and destination_city are both "Stockholm"'],
    "L202": [('patient_name "Sara Kim" and patient_email "lina.silva@juniperventures.com" '
              'name different people (Sara Kim, Lina Silva)')],
    "L203": [('candidate_email "sara.kim@bluebirdsystems.com" and interviewer "Sara Kim" are '
              'the same person (Sara Kim)')],
    "L204": ['pharmacy_name "Ironwood Health" is an employer, not a pharmacy'],
    "L205": ['salary of 8.28 is outside the plausible 18000-260000 (salary)'],
}


def test_every_rule_has_an_expected_message_and_a_distinct_id_and_name():
    assert list(TABLE) == [r.id for r in RULES]
    assert len({r.name for r in RULES}) == len(RULES)
    assert all(r.kind in ("wording", "value-flow") and "\n" not in r.description for r in RULES)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_each_rule_flags_its_bad_example_with_the_exact_message(rule):
    assert messages(rule.bad, rule.id) == TABLE[rule.id]


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_each_rule_passes_its_good_example(rule):
    assert messages(rule.good, rule.id) == []


# -- more bad input per rule, each with its exact message ----------------------------------------

def _text(instruction: str, *services: str) -> Example:
    return Example(instruction, services=services)


MORE_BAD = [
    ("L101", _text("Find the files owned by me. Tell me the file's modified.", "cloud_storage"),
     '"the file\'s modified" names a field, not a thing ("modified" ends in a past participle)'),
    ("L101", _text("Find the files owned by me. Tell me the modified of that file.",
                   "cloud_storage"),
     ('"the modified of that file" names a field, not a thing ("modified" ends in a past '
      'participle)')),
    ("L101", _text("List my events, and take the event with the lowest duration minutes.",
                   "calendar"),
     ('"with the lowest duration minutes" names a field, not a thing ("duration minutes" '
      'carries a unit suffix)')),
    ("L101", _text("Pay the invoice by the invoice's due.", "invoices"),
     '"the invoice\'s due" names a field, not a thing ("due" ends in an adjective)'),
    ("L102", _text("Post a the employee's title job."),
     'two articles in a row: "Post a the employee\'s title job."'),
    ("L103", _text("Find a city halfway between the customer profile's customer city and Oslo.",
                   "helpdesk"),
     '"the customer profile\'s customer city" repeats "customer"'),
    ("L104", _text('Sign me up for a "monthly" membership.', "fitness"),
     'quotes the enum value "monthly" in "up for a "monthly" membership."'),
    ("L105", _text("Schedule a 45-minute minutes interview."),
     'malformed unit "minute minutes" in "Schedule a 45-minute minutes interview."'),
    ("L105", _text("Schedule a duration minutes-minute interview."),
     'malformed unit "minutes-minute" in "Schedule a duration minutes-minute interview."'),
    ("L106", _text("Book tickets for quiet event name 555."),
     'placeholder value "quiet event name 555"'),
    ("L106", _text("Cancel the booking harbor id 459."), 'placeholder value "harbor id 459"'),
    ("L107", _text("House rules: Always pay on time\nRequest: Pay the bill."),
     'no final punctuation: "...Always pay on time"'),
    ("L108", _text("Find flights to Oslo ."), 'space before punctuation: "flights to Oslo ."'),
    ("L110", _text("Rent a car from the email's sent at to the email's sent at."),
     '"from the email\'s sent at to the email\'s sent at" has the same value at both ends'),
    ("L111", _text("Book a trip to the articles by author's city."),
     '"the articles by author\'s" names a tool\'s result, not a thing'),
    ("L112", _text("Mark that that invoice as paid."), '"that" twice: "Mark that that invoice as paid."'),
    ("L113", Example("Search hotels in Madrid, find restaurants near the hotel's street and "
                     "check free tables for 6 at the restaurant.", DINNER),
     'dictates 3 steps in order: "Search hotels in Madrid" to "check free tables for 6 ..."'),
    ("L113", Example("I need a team dinner in Madrid. Search hotels in Madrid. Next, find "
                     "restaurants near the hotel's street. Finally, check free tables for 6 at "
                     "the restaurant. Tell me the restaurant's name.", DINNER),
     ('dictates 3 steps in order: "Search hotels in Madrid." to "Finally, check free tables '
      'for ..."')),
    ("L114", _text("Call hotels__search_hotels for Madrid.", "hotels"),
     'names the tool hotels__search_hotels: "Call hotels__search_hotels for Madrid."'),
    ("L114", _text("Use search_hotels to find a room in Madrid.", "hotels"),
     'names the tool search_hotels: "Use search_hotels to find a"'),
    ("L114", _text("Find homes in Oslo with listing_type rent.", "real_estate"),
     'names the identifier listing_type: "in Oslo with listing_type rent."'),
    ("L115", Example("I want the cheapest hotel in Madrid booked. Search hotels in Madrid, and "
                     "take the hotel with the highest nightly rate. Then book that hotel for "
                     f"{SARA} from 2026-03-17 for 2 nights.", HOTEL),
     ('the goal asks for the "cheapest hotel" but a step takes the hotel with the highest '
      'nightly rate')),
    ("L115", Example("A client lunch has to be booked and my share filed as a meals expense. "
                     "Book Sara Kim a table for 2 at Casa Mar in Lisbon on 2026-03-20 at 12:30.",
                     LUNCH),
     'the goal says "my share filed as a" but no call of the solution records anything'),
    ("L115", Example("The trip has to be booked, put on the calendar with them invited. Book "
                     "Sara Kim a table for 2 at Casa Mar in Lisbon on 2026-03-20 at 12:30.",
                     LUNCH),
     ['the goal says "with them invited." but no call of the solution invites anyone',
      ('the goal says "be booked, put on the calendar with them" but no call of the '
       'solution writes to a calendar')]),
    ("L115", Example("I need a hotel in Madrid under 300 a night. Search hotels in Madrid above "
                     "300 a night.", HOTEL[:1]),
     'the goal says "under 300" but a step says above 300'),
    ("L201", Example(calls=(("ride_hailing__book_ride", {"city": "Oslo",
                                                         "pickup_address": "1 Mill Street",
                                                         "dropoff_address": "1 Mill Street"}),)),
     'pickup_address and dropoff_address are both "1 Mill Street"'),
    ("L201", Example(calls=(("crypto_wallet__create_swap", {"value": 500, "from_asset": "LTC",
                                                            "to_asset": "LTC"}),)),
     'from_asset and to_asset are both "LTC"'),
    ("L202", Example(calls=(("contacts__add_contact", {"name": SARA, "email": LINA_MAIL}),)),
     ('name "Sara Kim" and email "lina.silva@juniperventures.com" name different people '
      '(Sara Kim, Lina Silva)')),
    ("L203", Example(calls=(("payroll__add_bonus_payment", {"employee_name": USER, "amount": 500,
                                                            "reason": "as discussed"}),)),
     'employee_name "Carlos Castro" is the user (Carlos Castro) acting as their own employee'),
    ("L203", Example(calls=(("contacts__add_contact", {"name": USER}),)),
     'name "Carlos Castro" is the user (Carlos Castro) acting as their own contact'),
    ("L204", Example(calls=(("restaurants__get_menu", {"restaurant_name": "CityCare Pharmacy",
                                                       "city": "Amsterdam"}),)),
     'restaurant_name "CityCare Pharmacy" is a pharmacy, not a restaurant'),
    ("L205", Example(calls=(("tax_advisor__calculate_quarterly_estimate",
                             {"annual_income": 193.17, "quarter": 4}),)),
     'income of 193.17 is outside the plausible 20000-400000 (annual_income)'),
]


@pytest.mark.parametrize("rule,example,message", MORE_BAD,
                         ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(MORE_BAD)])
def test_rule_flags_bad_input_with_the_exact_message(rule, example, message):
    assert messages(example, rule) == (message if isinstance(message, list) else [message])


# -- what must not be flagged: the precision the baseline depends on ----------------------------

MORE_GOOD = [
    ("L101", _text("Pay the invoice by the invoice's due date.", "invoices")),
    ("L101", _text("Book a table at the restaurant's city in the restaurant's name.",
                   "restaurants")),
    ("L101", _text('Send "the file\'s modified" as the subject.', "cloud_storage")),
    ("L103", _text("Get the pay stub's pay date and the pay stub's net pay.", "payroll")),
    ("L103", _text("Email the account's account manager.", "crm")),
    ("L104", _text('Create an event "Budget review" at 10:00.', "calendar")),
    ("L106", _text("Open a deal with Helix Ventures worth 109.", "crm")),
    ("L106", _text('Create a project "Project sync".', "project_tracker")),
    ("L107", _text('Send the body "Are you free? let me know." to Sara Kim.')),
    ("L107", _text("Quote parking at Station Parking Co. in London for 60 minutes.")),
    ("L110", _text("Start an expense report for the trip from 2026-03-21 to 2026-03-26.")),
    ("L111", _text("Book a trip to the author of the article's city.")),
    ("L112", _text('Post "so so good" on my feed.')),
    ("L113", Example("Book Sara Kim a table for 6 at Casa Mar in Madrid on 2026-03-17 at 19:30, "
                     "near the hotel we found, and let everyone know.", DINNER)),
    ("L113", Example("Search hotels in Madrid. Then book a table for 6 near the hotel.", DINNER)),
    ("L113", Example("Next week I fly to Madrid. Then I want a hotel. Then a table for 6 near "
                     "it, please.", DINNER)),
    ("L114", _text("Email sara_kim@example.com and save https://www.example.com/a_b for me.")),
    ("L114", _text('Get "off_peak" parking in Oslo, e.g. near the station.', "parking")),
    ("L114", _text("Find hotels in Madrid for the team.", "hotels")),
    ("L115", Example("A colleague is already booked on a flight and needs a hotel where it "
                     "lands. Search hotels in Madrid.", HOTEL[:1])),
    ("L115", Example("An advertiser who hasn't paid their bill needs a word. Search hotels in "
                     "Madrid.", HOTEL[:1])),
    ("L115", Example("I run paid campaigns, and every task gets a tracked follow-up. Search "
                     "hotels in Madrid.", HOTEL[:1])),
    ("L115", Example("The speakers need rooms in one hotel, paid by us, and are told the plan. "
                     f"Book that hotel for {SARA} from 2026-03-17 for 2 nights, and send an "
                     "email to them.", HOTEL[1:] + (("email__send_email", {}),))),
    ("L115", Example("I want the latest headline's author emailed. Search hotels in Madrid, and "
                     "take the hotel with the lowest nightly rate.",
                     HOTEL[:1] + (("email__send_email", {}),))),
    ("L203", Example(calls=(("payroll__get_pay_stub", {"employee_name": USER,
                                                       "pay_date": "2026-03-26"}),))),
    ("L203", Example(calls=(("pharmacy__book_vaccination",
                             {"pharmacy_name": "CityCare Pharmacy", "city": "Amsterdam",
                              "vaccine": "flu", "date": "2026-03-20", "patient_name": USER,
                              "patient_email": "carlos.castro@willowbiotech.com"}),))),
    ("L202", Example(calls=(("contacts__add_contact", {"name": SARA,
                                                       "email": "hello@citycarepharmacy.com"}),))),
    ("L204", Example(calls=(("events_tickets__get_venue", {"venue_name": "Oakhall Hall",
                                                           "city": "Oslo"}),))),
]


@pytest.mark.parametrize("rule,example", MORE_GOOD,
                         ids=[f"{r}-{i}" for i, (r, _) in enumerate(MORE_GOOD)])
def test_rule_passes_good_input(rule, example):
    assert messages(example, rule) == []


def test_a_venue_role_takes_a_restaurant_but_not_an_employer():
    from compoenv.world import World

    restaurant = World.get(0).businesses_in("restaurant")[0].name
    ok = Example(calls=(("events_tickets__get_venue", {"venue_name": restaurant,
                                                       "city": "Oslo"}),))
    assert messages(ok, "L204") == []


class Payouts(Service):
    """Money parameters with and without a role, for the magnitude rule."""

    name = "payouts"

    @tool
    def fund(self, daily_budget: Money, amount: Annotated[Money, Role("salary")],
             annual_salary: Money | None = None) -> str:
        """Fund something."""
        return "ok"


@pytest.mark.parametrize("arguments,found", [
    ({"daily_budget": 50, "amount": 95000}, []),  # "budget" read from a name is not trusted
    ({"daily_budget": 50, "amount": 95}, ["salary of 95 is outside the plausible "
                                          "18000-260000 (amount)"]),  # x-role is
    ({"daily_budget": 50, "amount": 95000, "annual_salary": 12.5},
     ["salary of 12.5 is outside the plausible 18000-260000 (annual_salary)"]),
])
def test_magnitudes_follow_x_role_else_only_the_roles_a_name_tells_surely(arguments, found):
    task = Example(calls=(("payouts__fund", arguments),)).task()
    assert [f.message for f in lint_task(task, Registry([Payouts]), ["L205"])] == found


@pytest.mark.parametrize("phrase,why", [
    ("applied on", "ends in a preposition"), ("modified", "ends in a past participle"),
    ("due", "ends in an adjective"), ("drive minutes", "carries a unit suffix"),
    ("requires prescription", "a yes/no flag"), ("to asset", "starts with a preposition"),
    ("employees paid", "ends in a past participle"), ("expires", "not a noun phrase"),
    ("due date", None), ("amount due", None), ("speed", None), ("minutes", None),
    ("opening hours", None), ("check in", None), ("name", None),
])
def test_field_phrases_that_are_no_noun_are_told_apart_from_nouns(phrase, why):
    assert not_a_noun(phrase) == why


def test_field_phrases_read_nested_keys_as_the_renderer_joins_them():
    schema = {"type": "object", "properties": {"applied_on": {"type": "string"}, "address": {
        "type": "object", "properties": {"street": {"type": "string"}}}},
        "items": {}}
    assert field_phrases(schema) == {"applied on", "address", "address street", "street"}


# -- the API on real tasks ------------------------------------------------------------------------

def test_findings_on_composed_tasks_point_at_what_they_quote(tasks50):
    report = lint_tasks(tasks50)
    assert report.tasks == 50 and set(report.counts) == set(RULES_BY_ID)
    by_id = {t.id: t for t in tasks50}
    for f in report.findings:
        task = by_id[f.task]
        if f.span is not None:
            start, end = f.span
            assert 0 <= start < end <= len(task.instruction)
            assert task.instruction[start:end].strip('"') in f.message.replace("  ", " ") or \
                RULES_BY_ID[f.rule].id in ("L107", "L108")
        else:
            assert f.argument in task.solution[f.call].arguments
    assert report.flagged == len({f.task for f in report.findings})
    assert report.share == round(report.flagged / 50, 4)


def test_lint_task_on_a_composed_task_matches_the_report(tasks50):
    report = lint_tasks(tasks50[:5])
    assert [f for t in tasks50[:5] for f in lint_task(t)] == list(report.findings)


def test_report_counts_findings_and_tasks_per_rule():
    bad = RULES_BY_ID["L201"].bad.task()
    other = bad.model_copy(update={"id": "other"})
    report = lint_tasks([bad, other, RULES_BY_ID["L201"].good.task()], rules=["L201", "L205"])
    assert report.counts == {"L201": 2, "L205": 0}
    assert report.tasks_by_rule == {"L201": 2, "L205": 0}
    assert report.flagged == 2 and report.share == round(2 / 3, 4)
    data = report.to_dict(show=1)
    assert len(data["shown"]) == 1 and data["shown"][0]["where"] == "solution[0].origin_city"


def test_calls_to_tools_the_registry_lacks_are_skipped():
    task = Example(calls=(("nowhere__go", {"origin_city": "Oslo"}),)).task()
    assert lint_task(task, rules=["L202", "L203", "L204", "L205"]) == []


def test_unknown_rule_ids_name_the_closest():
    with pytest.raises(ValueError, match="unknown rule 'M205'. Did you mean L205[?]"):
        select_rules(["M205"])
    assert [r.id for r in select_rules(["l205", "L101"])] == ["L101", "L205"]


def test_linting_is_cheap(tasks50):
    many = tasks50 * 40  # 2000 tasks: 10,000 must take well under a minute
    start = time.perf_counter()
    lint_tasks(many)
    assert time.perf_counter() - start < 12


# -- the CLI -------------------------------------------------------------------------------------

def _file(tmp_path, tasks: list[Task]) -> str:
    path = tmp_path / "tasks.jsonl"
    save_tasks(tasks, path)
    return str(path)


def test_cli_exits_1_with_findings_and_prints_json(tmp_path):
    path = _file(tmp_path, [r.bad.task() for r in RULES])
    result = CliRunner().invoke(main, ["lint", path, "--json", "--show", "3"])
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert data["tasks"] == len(RULES) and data["flagged"] == 1  # the examples share an id
    assert set(data["findings"]) == set(RULES_BY_ID) and len(data["shown"]) == 3
    assert set(data["shown"][0]) == {"rule", "task", "where", "message"}


def test_cli_exits_0_on_a_clean_file_and_runs_only_the_rules_asked(tmp_path):
    path = _file(tmp_path, [RULES_BY_ID["L201"].bad.task()])
    result = CliRunner().invoke(main, ["lint", path, "--rule", "L101,L102", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["findings"] == {"L101": 0, "L102": 0}


def test_cli_table_lists_rules_and_findings(tmp_path):
    path = _file(tmp_path, [RULES_BY_ID["L201"].bad.task()])
    result = CliRunner().invoke(main, ["lint", path, "--rule", "L201"])
    assert result.exit_code == 1
    assert "same-endpoints" in result.output and "solution[0].origin_city" in result.output


@pytest.mark.parametrize("args,message", [
    (["--rule", "L999"], "unknown rule 'L999'"),
    (["--show", "-1"], "--show"),
])
def test_cli_usage_errors_exit_2(tmp_path, args, message):
    path = _file(tmp_path, [RULES_BY_ID["L201"].good.task()])
    result = CliRunner().invoke(main, ["lint", path, *args])
    assert result.exit_code == 2 and message in result.output


def test_cli_file_errors_are_one_line_with_exit_2(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    for path in (str(bad), str(tmp_path / "missing.jsonl")):
        result = CliRunner().invoke(main, ["lint", path])
        assert result.exit_code == 2
        assert result.output.startswith("Error: ") and result.output.count("\n") == 1


# -- generate's statistics -----------------------------------------------------------------------

def test_summarize_reports_lint_counts_and_share(tasks50):
    lint = summarize(tasks50)["lint"]
    assert set(lint) == {"flagged", "share", "findings", "tasks_by_rule"}
    assert set(lint["findings"]) == set(RULES_BY_ID)
    assert lint["share"] == round(lint["flagged"] / 50, 4)


def test_generate_summary_includes_lint(tmp_path):
    out = str(tmp_path / "t.jsonl")
    result = CliRunner().invoke(main, ["generate", "--num", "3", "--seed", "1", "-o", out,
                                       "--json"])
    assert result.exit_code == 0, result.output
    assert set(json.loads(result.stdout)["lint"]["findings"]) == set(RULES_BY_ID)
    table = CliRunner().invoke(main, ["generate", "--num", "3", "--seed", "1", "-o", out])
    assert "lint" in table.output and "of tasks flagged" in table.output
