"""A house rule names what its criteria check: a re-check rule names the record its own read
re-reads, and a goal-level request keeps the rules' words plain."""

from __future__ import annotations

import re

from compoenv.cli.common import composer_config
from compoenv.compose.parallel import generate_parallel
from compoenv.compose.render import noun
from compoenv.registry import Registry
from compoenv.task import OrderCriterion


def test_a_recheck_rule_names_the_record_its_order_criterion_reads():
    tasks, _ = generate_parallel(60, 77, composer_config(scenarios="all", distractors=10),
                                 workers=1)
    registry, checked = Registry.default(), 0
    for task in tasks:
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
