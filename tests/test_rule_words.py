"""A house rule names what its criteria check: a re-check rule names the record its own read
re-reads, and a goal-level request keeps the rules' words plain."""

from __future__ import annotations

import re
from functools import lru_cache

from compoenv.cli.common import composer_config
from compoenv.compose.parallel import generate_parallel
from compoenv.compose.render import noun
from compoenv.registry import Registry
from compoenv.task import OrderCriterion, Task


@lru_cache(maxsize=1)
def _default_tasks() -> tuple[Task, ...]:
    """60 default tasks (scenario jobs, 10 distractors each), composed once."""
    tasks, _ = generate_parallel(60, 77, composer_config(scenarios="all", distractors=10),
                                 workers=1)
    return tuple(tasks)


def test_a_recheck_rule_names_the_record_its_order_criterion_reads():
    registry, checked = Registry.default(), 0
    for task in _default_tasks():
        for rule in task.rules:
            if "re-checked" not in rule.text:
                continue
            first = next(c.first.name for c in task.rubric
                         if isinstance(c, OrderCriterion) and c.id in rule.criteria)
            said = noun(registry.spec(first))
            assert re.search(rf"re-checked the {re.escape(said)}", rule.text), (rule.text, first)
            checked += 1
        assert not re.search(r"\bthe \w+'s \w+'s (email|phone|name)\b", task.instruction)
        assert "per the naming rule" not in task.instruction
    assert checked >= 3


def test_fan_out_work_the_goal_already_says_is_not_listed_again():
    from compoenv.cli.common import composer_config as config

    tasks, _ = generate_parallel(12, 3, config(scenarios="leave_cancels_all_bookings",
                                               distractors=0), workers=1)
    assert tasks
    for task in tasks:
        request = task.instruction.split("Request: ")[-1]
        assert re.search(r"cancel|called off|off", request)  # the goal says it
        assert "For each of" not in request and "cancel that" not in request


def test_a_recheck_rule_over_a_fan_out_rechecks_each_record_before_its_own_change():
    from compoenv.agents.variants import session_for
    from compoenv.compose.verify import oracle_message
    from compoenv.reward import Outcome, score_rubric

    registry, seen = Registry.default(), 0
    for task in _default_tasks():
        for rule in task.rules:
            orders = [c for c in task.rubric
                      if isinstance(c, OrderCriterion) and c.id in rule.criteria]
            if len(orders) < 2 or "re-checked" not in rule.text:
                continue
            seen += 1
            # the solution re-checks each record; dropping the last re-check fails the rule
            last = max(i for i, call in enumerate(task.solution)
                       if call.name == orders[-1].first.name
                       and call.arguments == orders[-1].first.arguments)
            for calls, passes in ((task.solution, True),
                                  (task.solution[:last] + task.solution[last + 1:], False)):
                session = session_for(task, registry)
                for call in calls:
                    session.call(call.name, call.arguments)
                outcome = Outcome(session, oracle_message(task), task.instruction)
                assert score_rubric(task.rubric, outcome).passed is passes, task.id
    assert seen >= 1


def test_a_naming_rule_lists_every_field_its_label_is_required_in():
    from compoenv.task import CallCriterion, StateCriterion

    for task in _default_tasks():
        for rule in task.rules:
            if rule.kind != "naming":
                continue
            label = re.search(r'"(\w+)-<', rule.text).group(1)
            for c in task.rubric:
                held = (c.arguments if isinstance(c, CallCriterion) else
                        c.match if isinstance(c, StateCriterion) else {})
                for field, value in held.items():
                    if isinstance(value, str) and value.startswith(label + "-"):
                        assert f"the {field.replace('_', ' ')} of every" in rule.text, (
                            task.id, field, rule.text)
