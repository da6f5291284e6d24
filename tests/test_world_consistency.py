"""The simulated world never contradicts itself: tests over every spec tool.

Every spec tool's answers hold to each invariant of ``worldmodel.consistency`` (one test per
invariant) and every create makes its record now; property tests (hypothesis) draw sequences
of calls in one episode and arguments: records shown again agree with their first view, and
ids a write makes are drawn, new and repeatable, not counted.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from compoenv.crud import next_id
from compoenv.registry import Registry
from compoenv.world import World
from compoenv.worldmodel import SimulatedService
from compoenv.worldmodel.consistency import (INVARIANTS, PROTECTED, created_before, id_field,
                                             key_param, kind_of, makes_new, reconcile, review,
                                             stamped, violations)
from compoenv.worldmodel.offline import collection_of, example_arguments
from compoenv.worldmodel.offline import OfflineWorldModel
from compoenv.worldmodel.simulator import Simulator
from compoenv.worldmodel.store import naming_a_record

REGISTRY = Registry.default()
SPECS = {spec.qualified_name: spec for cls in REGISTRY if issubclass(cls, SimulatedService)
         for spec in cls.tool_specs().values()}
NAMES = sorted(SPECS)
READS = sorted(n for n in NAMES if SPECS[n].read_only)
WRITES = sorted(n for n in NAMES if not SPECS[n].read_only)
WORLD = World.get(3)
FAST = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])


def episode(service_name: str) -> Any:
    service = REGISTRY.get(service_name).create(WORLD)
    service.simulator = Simulator(OfflineWorldModel())
    return service


def call(service: Any, name: str, seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
    spec = SPECS[name]
    args = naming_a_record(service, spec.name, example_arguments(spec, WORLD, seed))
    return args, service.call(spec.name, args)


@FAST
@given(st.sampled_from(NAMES), st.lists(st.sampled_from(READS), min_size=1, max_size=4),
       st.integers(0, 50))
def test_records_shown_again_agree_with_their_first_view(first: str, then: list[str],
                                                         seed: int) -> None:
    service = episode(SPECS[first].service)
    seen: dict[str, Any] = {}
    for name in [first, *[n for n in then if SPECS[n].service == SPECS[first].service]]:
        _, result = call(service, name, seed)
        if result["success"]:
            spec = SPECS[name]
            _, differ = review(seen, result["data"], kind_of(collection_of(spec.name,
                                                                           spec.returns)),
                               not spec.read_only)
            assert not differ, (name, differ)


@functools.lru_cache(maxsize=1)
def answers() -> tuple[tuple[str, Any, bool], ...]:
    """Every spec tool's answer, a few argument seeds each, each call in its own episode:
    (tool, data, whether it is a successful create)."""
    out = []
    for name in NAMES:
        spec = SPECS[name]
        for seed in (1, 2):
            _, result = call(episode(spec.service), name, seed)
            if result["success"]:
                out.append((name, result["data"], not spec.read_only and makes_new(spec.name)))
    return tuple(out)


@pytest.mark.parametrize("invariant", INVARIANTS)
def test_every_spec_tool_holds_to_the_invariant(invariant):
    found = [(name, problem) for name, data, new in answers()
             for problem in violations(data, WORLD.today, WORLD, success_write=new)
             if problem.startswith(invariant + ":")]
    assert not found, found[:5]


def test_every_create_makes_its_record_now():
    made = [(name, created_before(data, WORLD.today)) for name, data, new in answers() if new]
    assert len(made) > 40
    assert not [m for m in made if m[1]], [m for m in made if m[1]][:5]


@FAST
@given(st.sampled_from(WRITES), st.integers(0, 50))
def test_writes_with_any_arguments_make_records_now(name: str, seed: int) -> None:
    service = episode(SPECS[name].service)
    _, result = call(service, name, seed)
    if result["success"]:
        new = makes_new(SPECS[name].name)
        assert not (new and created_before(result["data"], WORLD.today)), name
        assert not violations(result["data"], WORLD.today, WORLD, success_write=new), name


def test_a_field_shown_before_wins_and_a_write_decides_its_own():
    recall: dict[str, Any] = {}
    schema = {"type": "object", "properties": {"id": {"type": "string"},
                                               "price": {"type": "number"},
                                               "status": {"type": "string"}}}
    reconcile({"id": "R-1", "price": 8.68, "status": "open"}, schema, "restaurant", recall)
    again, moved = reconcile({"id": "R-1", "price": 472.08, "status": "open"}, schema,
                             "restaurant", recall)
    assert moved and again["price"] == 8.68
    written, _ = reconcile({"id": "R-1", "price": 9.5, "status": "closed"}, schema,
                           "restaurant", recall, {"price"}, top_write=True)
    assert written == {"id": "R-1", "price": 9.5, "status": "closed"}
    assert reconcile({"id": "R-1", "price": 1.0}, schema, "restaurant", recall)[0][
        "price"] == 9.5
    # a field that does not fit this tool's schema is not forced on it
    narrow = {"type": "object", "properties": {"id": {"type": "string"},
                                               "price": {"type": "integer"}}}
    assert reconcile({"id": "R-1", "price": 3}, narrow, "restaurant", recall)[0]["price"] == 3


def test_two_records_of_one_name_and_other_ids_stay_apart():
    recall: dict[str, Any] = {}
    schema = {"type": "object", "properties": {"id": {"type": "string"},
                                               "title": {"type": "string"},
                                               "city": {"type": "string"}}}
    reconcile({"id": "E-1", "title": "Design review", "city": "Oslo"}, schema, "event", recall)
    other, moved = reconcile({"id": "E-2", "title": "Design review", "city": "Rome"}, schema,
                             "event", recall)
    assert not moved and other["city"] == "Rome"
    # a view without an id is the record of that name last shown
    unnamed, moved = reconcile({"title": "Design review", "city": "Paris"}, schema, "event",
                               recall)
    assert moved and unnamed["city"] == "Rome"


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.text(min_size=1, max_size=8), st.sets(st.text(max_size=8), max_size=20),
       st.integers())
def test_drawn_ids_are_new_and_repeatable(prefix: str, taken: set[str], salt: int) -> None:
    made = next_id(prefix, taken, 4, salt=salt)
    assert made not in taken and made.startswith(prefix)
    assert made == next_id(prefix, set(taken), 4, salt=salt)


def test_ids_are_not_a_sequence_across_tasks():
    made = {next_id("TX-", {"TX-0001", "TX-0002"}, salt=(seed, "bank", 12.5))
            for seed in range(40)}
    assert "TX-0003" not in made and len(made) > 30


def test_stamped_writes_now_in_the_fields_shape():
    schema = {"type": "object", "properties": {"created": {"type": "string"},
                                               "created_at": {"type": "string"}}}
    out = stamped({"created": "2026-01-02", "created_at": "2026-01-02T08:15"}, schema,
                  WORLD.now)
    assert out == {"created": WORLD.today.isoformat(), "created_at": WORLD.now[:16]}


def test_violations_name_each_invariant():
    assert violations({"amount": 0.57, "price": 3.2, "value": 91.77})
    assert violations({"salary_p25": 90_000, "salary_median": 80_000})
    assert violations({"open_tickets": 97, "total_tickets": 7})
    assert violations({"count": 3, "results": [1, 2]})
    assert violations({"body": "two words", "word_count": 12_980})
    assert violations({"status": "failed"}, success_write=True)
    assert not violations({"status": "failed"})
    person = WORLD.people[5]
    assert violations({"email": "x@nowhere.example", "employer": person.employer}, world=WORLD)
    assert violations({"member_since": "2999-01-01"}, WORLD.today)
    assert violations({"amount": 2, "value": 100.0, "fee": 40.0})
    assert not violations({"quantity": 2, "unit_price": 3.5, "total": 7.7, "tax": 0.7},
                          WORLD.today, WORLD)


# -- a record named by its key is that record ------------------------------------------------

SPEC_SERVICES = sorted({SPECS[n].service for n in NAMES})
_TEXT_COUNTS = frozenset({"word_count", "char_count"})  # what follows from a write's text


def _listed(data: Any) -> list[Any]:
    """The records a list or a page of them shows."""
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        return next((v for v in data.values() if isinstance(v, list) and v
                     and all(isinstance(x, dict) for x in v)), [])
    return []


def _kind(spec: Any) -> str:
    return kind_of(collection_of(spec.name, spec.returns))


def _shown(service_name: str, seed: int) -> tuple[Any, dict[str, dict[Any, dict[str, Any]]]]:
    """An episode in World ``seed`` after every read of the service (two argument draws
    each), and the records its lists showed: kind -> key -> fields."""
    service = REGISTRY.get(service_name).create(World.get(seed))
    service.simulator = Simulator(OfflineWorldModel())
    shown: dict[str, dict[Any, dict[str, Any]]] = {}
    for spec in service.tool_specs().values():
        if not spec.read_only:
            continue
        kind = _kind(spec)
        for draw in (0, 1):
            result = service.call(spec.name, example_arguments(spec, service.world, draw))
            for record in _listed(result.get("data")) if result["success"] else ():
                field = id_field(record, kind)
                if field is not None:
                    shown.setdefault(kind, {}).setdefault(record[field], dict(record))
    return service, shown


def _naming_tools(service_name: str) -> list[tuple[Any, str, str]]:
    """(spec, key parameter, kind) of each tool that names one record of its kind by its key
    and answers a record of that kind."""
    out = []
    for spec in REGISTRY.get(service_name).tool_specs().values():
        kind = _kind(spec)
        param = key_param(spec.name, spec.parameters, kind)
        props = spec.returns.get("properties") or {}
        if param is not None and spec.returns.get("type") == "object" \
                and {"id", f"{kind}_id", param} & set(props):
            out.append((spec, param, kind))
    return out


def named_wrongly(service_name: str, seed: int) -> tuple[int, list[tuple[str, Any, str]]]:
    """Each tool naming one record by its key, called (in an episode of its own) with the
    keys of two records the episode's lists showed: how many calls, and each answer that is
    not that record (its id, or a field shown before that the call did not change)."""
    calls, wrong = 0, []
    _, shown = _shown(service_name, seed)
    for spec, param, kind in _naming_tools(service_name):
        for key in list(shown.get(kind, {}))[:2]:
            service, now = _shown(service_name, seed)  # no other write came first
            record = now[kind][key]
            required = spec.parameters.get("required") or ()
            args = {a: v for a, v in example_arguments(spec, service.world, 5).items()
                    if a in required}
            args[param] = key
            result = service.call(spec.name, args)
            calls += 1
            if not result["success"]:
                error = result["error"]
                if not (error["code"] == 409 and "already" in error["message"]):
                    wrong.append((spec.name, key, f"failed: {error}"))  # not: cancelled twice
                continue
            data = result["data"]
            field = param if param in data else id_field(data, kind)
            if field is None or data[field] != key:
                wrong.append((spec.name, key, f"answered {field}={data.get(field or '')!r}"))
                continue
            if field != id_field(data, kind):
                continue  # a record of its own that refers to the one named (a cookbook entry)
            decided = set(args) | (PROTECTED | _TEXT_COUNTS if not spec.read_only else set())
            differ = [(f, v, data[f]) for f, v in record.items() if f in data
                      and f not in decided and isinstance(v, (str, int, float, bool))
                      and data[f] != v]
            if differ:
                wrong.append((spec.name, key, f"differs: {differ[:3]}"))
                continue
            gets = [s for s, _, k in _naming_tools(service_name) if k == kind and s.read_only]
            if gets and not spec.read_only and not spec.name.startswith(("delete_", "remove_")):
                # a write's record is what a read of it finds from then on
                again = service.call(gets[0].name, {param if param in (gets[0].parameters.get(
                    "required") or ()) else key_param(gets[0].name, gets[0].parameters,
                                                      kind): key})
                if again["success"] and again["data"] != {**again["data"], **{
                        k: v for k, v in data.items() if k in again["data"]}}:
                    wrong.append((spec.name, key, "a read after it says otherwise"))
    return calls, wrong


@pytest.mark.parametrize("service_name", SPEC_SERVICES)
def test_a_shown_record_named_by_its_key_answers_as_itself(service_name: str) -> None:
    calls, wrong = 0, []
    for seed in (0, 3, 7):
        made, found = named_wrongly(service_name, seed)
        calls, wrong = calls + made, wrong + found
    assert not wrong, wrong[:4]


def test_every_kind_of_named_call_is_checked() -> None:
    checked = {spec.qualified_name for name in SPEC_SERVICES
               for spec, _, kind in _naming_tools(name)}
    assert len(checked) > 60
    assert {"helpdesk__get_ticket", "helpdesk__update_ticket", "project_tracker__update_task",
            "reviews__get_review", "crm__delete_lead"} <= checked


@pytest.mark.parametrize("service_name", SPEC_SERVICES)
def test_a_key_never_shown_answers_as_itself_or_not_found(service_name: str) -> None:
    service, shown = _shown(service_name, 3)
    wrong = []
    for spec, param, kind in _naming_tools(service_name):
        known = [k for k in shown.get(kind, {}) if isinstance(k, str)]
        if not known or not spec.read_only:
            continue
        key = next(k for k in (known[0][:-4] + f"{n:04d}" for n in range(17, 9999, 331))
                   if k not in shown[kind])
        result = service.call(spec.name, {**{a: v for a, v in example_arguments(
            spec, service.world, 5).items() if a in (spec.parameters.get("required") or ())},
            param: key})
        if result["success"]:
            data = result["data"]
            field = param if param in data else id_field(data, kind)
            if field is None or data[field] != key:
                wrong.append((spec.name, key, data.get(field or "")))
        elif result["error"]["code"] != 404:
            wrong.append((spec.name, key, result["error"]))
    assert not wrong, wrong[:4]


def test_tickets_a_search_showed_are_got_and_solved_as_themselves():
    from compoenv.session import Session

    session = Session.for_names(["helpdesk", "project_tracker"], World.get(3), REGISTRY, None)
    found = session.call("helpdesk__search_tickets",
                         {"customer_email": "sami.baker@tidalstudios.com"})["data"]
    assert [t["id"] for t in found] == ["TKT-1523", "TKT-4889", "TKT-3961"]
    for ticket in found:
        got = session.call("helpdesk__get_ticket", {"ticket_id": ticket["id"]})["data"]
        assert got == {**got, **ticket}  # the same id, the fields the search showed
    solved = session.call("helpdesk__update_ticket", {"ticket_id": "TKT-1523",
                                                       "status": "solved"})["data"]
    assert solved == {**found[0], "status": "solved"}
    assert session.call("helpdesk__get_ticket", {"ticket_id": "TKT-1523"})["data"] == solved
    # keys no read showed answer as themselves too, and stay so
    assert session.call("helpdesk__update_ticket", {"ticket_id": "TKT-5986", "status": "solved"}
                        )["data"]["id"] == "TKT-5986"
    assert session.call("helpdesk__get_ticket", {"ticket_id": "TKT-5986"}
                        )["data"]["status"] == "solved"
    task = session.call("project_tracker__update_task", {"task_id": "TSK-3051",
                                                         "status": "done"})["data"]
    assert task["id"] == "TSK-3051"
    assert session.call("project_tracker__get_task", {"task_id": "TSK-3051"})["data"] == task


def test_a_shown_record_deleted_stays_gone():
    service, shown = _shown("reviews", 0)
    key = next(iter(shown["review"]))
    assert service.call("get_review", {"review_id": key})["data"]["id"] == key
    assert service.call("delete_review", {"review_id": key})["success"]
    assert service.call("get_review", {"review_id": key})["error"]["code"] == 404


def test_a_shown_document_given_new_content_counts_its_words():
    service, shown = _shown("docs_editor", 0)
    key = next(k for k in shown["document"] if k not in service.state.records["document"])
    text = "One two three four five six seven eight nine ten eleven."
    made = service.call("update_document", {"document_id": key, "content": text})["data"]
    assert (made["id"], made["content"], made["word_count"]) == (key, text, 11)
    assert not violations(made, WORLD.today)
    assert service.call("get_document", {"document_id": key})["data"] == made


def test_a_shown_document_read_or_shared_keeps_its_count_and_a_text_that_fits_it():
    found = []
    for seed in (0, 3, 7):
        service, shown = _shown("docs_editor", seed)
        for key in [k for k in shown["document"] if k not in service.state.records["document"]]:
            for tool, more in (("get_document", {}), ("share_document", {
                    "email": "ada.kim@example.com", "role": "viewer"})):
                data = service.call(tool, {"document_id": key, **more})["data"]
                assert data["word_count"] == shown["document"][key]["word_count"]
                found += [(tool, key, v) for v in violations(data, WORLD.today)]
    assert not found, found[:4]
