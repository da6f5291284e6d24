"""Task files cannot break the reward: weights finite and bounded, criteria and answer values
capped, each refusal naming the file, the line and the field."""

from __future__ import annotations

import json
import math

import pytest

from compoenv.reward import Outcome, completion_focused, score_rubric
from compoenv.registry import Registry
from compoenv.session import Session
from compoenv.task import (
    MAX_ALLOWED, MAX_CRITERIA, MAX_VALUE_CHARS, MAX_WEIGHT, TaskFileError,
)
from compoenv.task_check import load_checked
from compoenv.world import World


def _write(tmp_path, good, bad) -> str:
    path = tmp_path / "tasks.jsonl"
    # json.dumps writes Infinity and NaN as such: what a careless producer writes
    path.write_text(good.to_json() + "\n" + json.dumps(bad) + "\n")
    return str(path)


@pytest.mark.parametrize("weight", [math.inf, -math.inf, math.nan, -1.0, 0.0, 1e308,
                                    MAX_WEIGHT * 1.01])
def test_a_weight_out_of_bounds_names_file_line_and_field(tmp_path, tasks50, weight):
    bad = tasks50[1].model_dump(mode="json")
    bad["rubric"][1]["weight"] = weight
    kind = bad["rubric"][1]["kind"]
    with pytest.raises(TaskFileError, match=rf"tasks\.jsonl:2: field 'rubric\.1\.{kind}\.weight'"):
        load_checked(_write(tmp_path, tasks50[0], bad), Registry.default())


def test_bounded_weights_load(tmp_path, tasks50):
    ok = tasks50[1].model_dump(mode="json")
    ok["rubric"][0]["weight"] = MAX_WEIGHT
    ok["rubric"][1]["weight"] = 1e-6
    assert len(load_checked(_write(tmp_path, tasks50[0], ok), Registry.default())) == 2


def _with_answers(task, count: int, value: str, allowed: int | None = None) -> dict:
    bad = task.model_dump(mode="json")
    bad["rubric"] += [{"kind": "answer", "id": f"a{i}", "description": "", "value": value,
                       "allowed": allowed} for i in range(count)]
    return bad


@pytest.mark.parametrize("count, value, allowed, field", [
    (MAX_CRITERIA + 1, "42", None, "rubric"),
    (1, "x" * (MAX_VALUE_CHARS + 1), None, r"rubric\.\d+\.answer\.value"),
    (1, "", None, r"rubric\.\d+\.answer\.value"),
    (1, "42", MAX_ALLOWED + 1, r"rubric\.\d+\.answer\.allowed"),
], ids=["criteria", "long-value", "empty-value", "allowed"])
def test_criteria_and_answer_sizes_are_capped(tmp_path, tasks50, count, value, allowed, field):
    task = tasks50[1]
    bad = _with_answers(task, count, value, allowed)
    with pytest.raises(TaskFileError, match=rf"tasks\.jsonl:2: field '{field}'"):
        load_checked(_write(tmp_path, tasks50[0], bad), Registry.default())
    long_answer = {**task.model_dump(mode="json"), "answer": ["y" * (MAX_VALUE_CHARS + 1)]}
    with pytest.raises(TaskFileError, match=r"tasks\.jsonl:2: field 'answer\.0'"):
        load_checked(_write(tmp_path, tasks50[0], long_answer), Registry.default())


@pytest.mark.parametrize("weight", [math.inf, math.nan, -5.0, 1e308])
def test_a_criterion_that_skipped_validation_cannot_make_the_score_nan(tasks50, weight):
    task = tasks50[0]
    # model_copy does not validate: the reward itself keeps scores numbers in [0, 1]
    rubric = [c.model_copy(update={"weight": weight}) if i == 0 else c
              for i, c in enumerate(task.rubric)]
    rubric.append(rubric[0].model_copy(update={"weight": 1e308}))
    session = Session([Registry.default().get(n) for n in task.services],
                      World.get(task.seed, task.today()))
    result = score_rubric(rubric, Outcome(session, " ".join(task.answer), task.instruction))
    for value in (result.rubric_score, float(result.passed), result.net_score):
        assert math.isfinite(value) and 0.0 <= value <= 1.0
    assert all(0.0 <= c.weight <= MAX_WEIGHT for c in result.criteria)


def test_group_reward_weights_must_be_finite_and_huge_ones_do_not_overflow():
    with pytest.raises(ValueError, match="weights must be finite"):
        completion_focused([[True, False]], weights=[math.inf, 1.0])
    rewards = completion_focused([[True, False], [False, True]], weights=[1e308, 1e308])
    assert all(math.isfinite(r) and 0.0 <= r <= 1.0 for r in rewards)
    assert rewards == completion_focused([[True, False], [False, True]], weights=[1.0, 1.0])
