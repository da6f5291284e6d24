"""Task linter: flags requests no person would write and argument flows no request would make.

    from compoenv.compose.lint import lint_task, lint_tasks
    report = lint_tasks(load_tasks("tasks.jsonl"))
    report.summary()  # {"tasks", "flagged", "share", "findings": {rule: n}, ...}

Each rule (``RULES``) is a small check over one task: wording rules (``L1xx``) read the
instruction, value-flow rules (``L2xx``) the solution's arguments against the tools' schemas
and the task's World. Rules aim at precision: a finding should be a defect.
"""

from __future__ import annotations

import difflib
import time
import weakref
from typing import Iterable

from compoenv.compose.lint.context import TaskContext, Vocabulary
from compoenv.compose.lint.records import Example, Finding, Hit, LintReport, Rule
from compoenv.compose.lint.rules import RULES, RULES_BY_ID
from compoenv.registry import Registry
from compoenv.task import Task

__all__ = ["lint_task", "lint_tasks", "select_rules", "Finding", "LintReport", "Rule",
           "Example", "Hit", "RULES", "RULES_BY_ID"]

_VOCABULARIES: weakref.WeakKeyDictionary[Registry, Vocabulary] = weakref.WeakKeyDictionary()


def _vocabulary(registry: Registry | None) -> Vocabulary:
    registry = registry or Registry.default()
    if registry not in _VOCABULARIES:
        _VOCABULARIES[registry] = Vocabulary(registry)
    return _VOCABULARIES[registry]


def select_rules(ids: Iterable[str] | None = None) -> tuple[Rule, ...]:
    """The rules with these ids, in table order (all rules without ids).

    Raises:
        ValueError: an unknown id; the message names the closest ones.
    """
    if ids is None:
        return RULES
    wanted = [i.strip().upper() for i in ids]
    for rule_id in wanted:
        if rule_id not in RULES_BY_ID:
            close = difflib.get_close_matches(rule_id, list(RULES_BY_ID), n=2)
            hint = f" Did you mean {' or '.join(close)}?" if close else ""
            raise ValueError(f"unknown rule {rule_id!r}.{hint} Rules: {', '.join(RULES_BY_ID)}")
    return tuple(r for r in RULES if r.id in wanted)


def lint_task(task: Task, registry: Registry | None = None,
              rules: Iterable[str] | None = None) -> list[Finding]:
    """The findings of one task, in rule order.

    Args:
        task: The task.
        registry: Services its tools are read from (default: ``Registry.default()``); calls
            to tools it lacks are skipped by the value-flow rules.
        rules: Rule ids to run (default: all).
    """
    return _lint(task, _vocabulary(registry), select_rules(rules))


def _lint(task: Task, vocab: Vocabulary, rules: tuple[Rule, ...]) -> list[Finding]:
    ctx = TaskContext(task, vocab)
    return [Finding(rule.id, task.id, hit.message, hit.span, hit.call, hit.argument)
            for rule in rules for hit in rule.check(ctx)]


def lint_tasks(tasks: Iterable[Task], registry: Registry | None = None,
               rules: Iterable[str] | None = None) -> LintReport:
    """The findings of a task set, with counts per rule and the share of tasks flagged."""
    start = time.perf_counter()
    vocab, chosen = _vocabulary(registry), select_rules(rules)
    findings: list[Finding] = []
    count = 0
    for task in tasks:
        findings.extend(_lint(task, vocab, chosen))
        count += 1
    return LintReport(count, tuple(findings), tuple(r.id for r in chosen),
                      time.perf_counter() - start)
