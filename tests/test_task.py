"""Tests for compoenv.task: the Task contract, criteria union, content hash, JSONL files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from compoenv.task import (
    AnswerCriterion, Call, CallCriterion, Criterion, StateCriterion, Task, TaskFileError,
    UnchangedCriterion, iter_tasks, load_tasks, save_tasks,
)

CONTRACT_FIELDS = {"id", "instruction", "services", "distractors", "seed", "date", "solution",
                   "answer", "rubric", "capabilities", "domain", "hops", "recorded",
                   "fingerprint", "scenario", "difficulty", "rules", "guidance"}


def task_dict(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "instruction": "Find Ada Abbott's email and send her the agenda.",
        "services": ["contacts", "email"], "distractors": ["weather"], "seed": 3,
        "date": "2026-03-16",
        "solution": [{"name": "contacts__find_contact", "arguments": {"name": "Ada Abbott"}},
                     {"name": "email__send_email",
                      "arguments": {"to": ["ada@acme.com"], "subject": "Agenda"}}],
        "answer": ["ada@acme.com"],
        "rubric": [
            {"kind": "state", "id": "c1", "description": "mail sent", "service": "email",
             "collection": "messages", "match": {"subject": "Agenda"}},
            {"kind": "answer", "id": "c2", "description": "reports email",
             "value": "ada@acme.com", "weight": 2.0},
            {"kind": "call", "id": "c3", "description": "looked her up",
             "name": "contacts__find_contact", "arguments": {"name": "Ada Abbott"},
             "required": False},
            {"kind": "unchanged", "id": "c4", "description": "nothing else",
             "service": "contacts", "collection": "contacts", "except_keys": ["C-0001"]},
        ],
        "capabilities": ["sequential-dependency"], "domain": "productivity", "hops": 2,
        "recorded": {"weather__forecast": {"x": 1}}, "fingerprint": {"contacts": "1"},
    }
    body.update(overrides)
    return body


def make_task(**overrides: Any) -> Task:
    return Task.model_validate(task_dict(**overrides))


def test_task_has_the_contract_fields_plus_the_walk_seed():
    assert set(Task.model_fields) == CONTRACT_FIELDS | {"walk_seed"}


def test_task_json_round_trip():
    original = make_task().with_id()
    text = original.to_json()
    again = Task.model_validate_json(text)
    assert again == original
    assert again.to_json() == text
    assert json.loads(text)["rubric"][1]["kind"] == "answer"


def test_task_coerce_accepts_task_dict_and_json():
    original = make_task()
    assert Task.coerce(original) is original
    assert Task.coerce(original.model_dump(mode="json")) == original
    assert Task.coerce(original.to_json()) == original


def test_task_forbids_unknown_fields():
    with pytest.raises(ValidationError, match="extra"):
        make_task(hardness="high")


def test_defaults_for_optional_fields():
    minimal = Task.model_validate({k: v for k, v in task_dict().items() if k in {
        "instruction", "services", "seed", "date", "solution", "rubric", "domain", "hops"}})
    assert minimal.id == "" and minimal.distractors == [] and minimal.answer == []
    assert minimal.recorded == {} and minimal.fingerprint == {}


def test_solution_items_are_calls():
    solution = make_task().solution
    assert solution[0] == Call(name="contacts__find_contact", arguments={"name": "Ada Abbott"})
    assert Call(name="x__y").arguments == {}


# --- content hash ---------------------------------------------------------------------------

def test_content_hash_ignores_id():
    a, b = make_task(id="one"), make_task(id="two")
    assert a.content_hash() == b.content_hash()
    assert a.content_hash().startswith("t-") and len(a.content_hash()) == 18


def test_with_id_sets_the_content_hash():
    original = make_task()
    stamped = original.with_id()
    assert stamped.id == original.content_hash() and original.id == ""
    assert stamped.with_id() == stamped


@pytest.mark.parametrize("change", [
    {"instruction": "Something else."}, {"seed": 4}, {"hops": 3}, {"answer": []},
    {"services": ["email", "contacts"]}, {"date": "2026-03-17"},
    {"solution": []}, {"rubric": []}, {"recorded": {}},
])
def test_content_hash_changes_with_content(change):
    assert make_task(**change).content_hash() != make_task().content_hash()


def test_content_hash_is_independent_of_dict_key_order():
    a = make_task(recorded={"a": 1, "b": 2})
    b = make_task(recorded={"b": 2, "a": 1})
    assert a.content_hash() == b.content_hash()


@given(st.text(min_size=1, max_size=60), st.text(min_size=1, max_size=60))
def test_different_instructions_give_different_hashes(one, two):
    same = one == two
    assert (make_task(instruction=one).content_hash()
            == make_task(instruction=two).content_hash()) is same


# --- criteria -------------------------------------------------------------------------------

def test_criteria_are_a_union_discriminated_by_kind():
    kinds = [type(c) for c in make_task().rubric]
    assert kinds == [StateCriterion, AnswerCriterion, CallCriterion, UnchangedCriterion]


@pytest.mark.parametrize("data, cls", [
    ({"kind": "state", "id": "a", "description": "d", "service": "s", "collection": "c"},
     StateCriterion),
    ({"kind": "answer", "id": "a", "description": "d", "value": "42"}, AnswerCriterion),
    ({"kind": "call", "id": "a", "description": "d", "name": "s__t"}, CallCriterion),
    ({"kind": "unchanged", "id": "a", "description": "d", "service": "s", "collection": "c"},
     UnchangedCriterion),
])
def test_each_kind_parses_to_its_model_with_defaults(data, cls):
    criterion = TypeAdapter(Criterion).validate_python(data)
    assert type(criterion) is cls
    assert criterion.weight == 1.0 and criterion.required is True


def test_state_criterion_defaults():
    c = StateCriterion(id="a", description="d", service="s", collection="c")
    assert (c.key, c.match, c.exists) == (None, {}, True)


@pytest.mark.parametrize("data", [
    {"kind": "mystery", "id": "a", "description": "d"},
    {"id": "a", "description": "d", "value": "x"},
    {"kind": "answer", "id": "a", "description": "d"},
    {"kind": "answer", "id": "a", "description": "d", "value": "x", "weight": -1},
    {"kind": "answer", "id": "a", "description": "d", "value": "x", "service": "s"},
])
def test_bad_criteria_are_rejected(data):
    with pytest.raises(ValidationError):
        TypeAdapter(Criterion).validate_python(data)


def test_unknown_kind_error_lists_the_kinds():
    with pytest.raises(ValidationError) as exc:
        TypeAdapter(Criterion).validate_python({"kind": "mystery", "id": "a", "description": "d"})
    text = str(exc.value)
    assert "mystery" in text and all(k in text for k in ("state", "answer", "call", "unchanged"))


# --- files ----------------------------------------------------------------------------------

def test_save_and_load_round_trip(tmp_path: Path):
    tasks = [make_task(seed=s).with_id() for s in range(3)]
    path = tmp_path / "tasks.jsonl"
    assert save_tasks(tasks, path) == 3
    assert load_tasks(path) == tasks
    assert list(iter_tasks(str(path))) == tasks
    assert len(path.read_text(encoding="utf-8").splitlines()) == 3


def test_save_tasks_accepts_a_generator_and_writes_utf8(tmp_path: Path):
    path = tmp_path / "t.jsonl"
    n = save_tasks((make_task(instruction=f"Réservez à Zürich {i} ✈") for i in range(2)), path)
    assert n == 2
    assert "Zürich" in path.read_text(encoding="utf-8")
    assert [t.instruction for t in load_tasks(path)] == ["Réservez à Zürich 0 ✈",
                                                        "Réservez à Zürich 1 ✈"]


def test_blank_lines_are_skipped(tmp_path: Path):
    path = tmp_path / "t.jsonl"
    path.write_text("\n" + make_task().to_json() + "\n   \n\n" + make_task(seed=9).to_json()
                    + "\n", encoding="utf-8")
    assert [t.seed for t in load_tasks(path)] == [3, 9]


def test_iter_tasks_is_lazy(tmp_path: Path):
    path = tmp_path / "t.jsonl"
    path.write_text(make_task().to_json() + "\n{broken\n", encoding="utf-8")
    stream = iter_tasks(path)
    assert next(stream).seed == 3
    with pytest.raises(TaskFileError):
        next(stream)


def write_with_bad_line(tmp_path: Path, bad: str) -> Path:
    path = tmp_path / "broken.jsonl"
    path.write_text(make_task().to_json() + "\n\n" + bad + "\n" + make_task().to_json() + "\n",
                    encoding="utf-8")
    return path


def test_invalid_json_line_names_file_and_line(tmp_path: Path):
    path = write_with_bad_line(tmp_path, '{"instruction": "unterminated')
    with pytest.raises(TaskFileError) as exc:
        load_tasks(path)
    message = str(exc.value)
    assert message.startswith(f"{path}:3: invalid JSON")


def test_missing_field_names_file_line_and_field(tmp_path: Path):
    body = task_dict()
    del body["instruction"]
    path = write_with_bad_line(tmp_path, json.dumps(body))
    with pytest.raises(TaskFileError) as exc:
        load_tasks(path)
    assert str(exc.value).startswith(f"{path}:3: field 'instruction': Field required")


def test_unknown_criterion_kind_names_file_line_and_field(tmp_path: Path):
    body = task_dict()
    body["rubric"][2]["kind"] = "vibes"
    path = write_with_bad_line(tmp_path, json.dumps(body))
    with pytest.raises(TaskFileError) as exc:
        load_tasks(path)
    message = str(exc.value)
    assert message.startswith(f"{path}:3: field 'rubric.2'")
    assert "'vibes'" in message and "kind" in message


def test_wrong_type_names_the_nested_field(tmp_path: Path):
    body = task_dict()
    body["solution"][1]["arguments"] = "to=ada"
    path = write_with_bad_line(tmp_path, json.dumps(body))
    with pytest.raises(TaskFileError, match=r":3: field 'solution\.1\.arguments'"):
        load_tasks(path)


def test_non_object_line_is_reported(tmp_path: Path):
    path = write_with_bad_line(tmp_path, "[1, 2]")
    with pytest.raises(TaskFileError, match=r":3: "):
        load_tasks(path)


def test_task_file_error_is_a_value_error():
    assert issubclass(TaskFileError, ValueError)
