"""A giant API imports: the schema-node budget holds per service, not per document; an
operation too large alone is skipped with a line saying so, never the whole document."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from compoenv.importers import openapi_spec
from compoenv.importers.corpus import import_corpus
from compoenv.importers.document import convert_openapi
from compoenv.importers.openapi import openapi_services
from compoenv.worldmodel import SimulatedService, SpecError, service_from_spec

TAGS = ("users", "groups", "sites", "drives")
PER_TAG = 13  # 52 operations: more than one service holds, split by tag
BUDGET = 300  # schema nodes: one tag's service (~240) fits, the whole API (~940) does not


def _record(fields: int) -> dict[str, Any]:
    return {"type": "object", "properties": {
        f"field_{i}": {"type": "string", "description": f"Field {i}."} for i in range(fields)}}


def giant_api(per_tag: int = PER_TAG, fields: int = 12, huge: tuple[str, ...] = ()
              ) -> dict[str, Any]:
    """An API of ``TAGS`` × ``per_tag`` operations, each with a request body of ``fields``
    fields, answering with its tag's shared record; the ``huge`` operations answer with a
    shared record of far more fields than any budget a test sets."""
    paths: dict[str, Any] = {}
    for tag in TAGS:
        for n in range(per_tag):
            op_id = f"update_{tag}_{n}"
            record = "Huge" if op_id in huge else tag.title()
            answer = {"type": "object", "properties": {
                "record": {"$ref": f"#/components/schemas/{record}"}}}
            paths[f"/{tag}/{{id}}/part{n}"] = {"patch": {
                "operationId": op_id, "tags": [tag], "summary": f"Update part {n} of a {tag}",
                "parameters": [{"name": "id", "in": "path", "required": True,
                                "schema": {"type": "string"}}],
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": _record(fields)}}},
                "responses": {"200": {"content": {"application/json": {"schema": answer}}}}}}
    records = {tag.title(): {"type": "object", "properties": {
        "id": {"type": "string"}, "title": {"type": "string"},
        "owner": {"$ref": "#/components/schemas/Entity"}}} for tag in TAGS}
    return {"openapi": "3.0.3", "info": {"title": "Giant Graph", "version": "1"},
            "tags": [{"name": t} for t in TAGS], "paths": paths,
            "components": {"schemas": {**records, "Huge": _record(2_000), "Entity": {
                "type": "object", "properties": {
                    "id": {"type": "string"}, "displayName": {"type": "string"},
                    "manager": {"$ref": "#/components/schemas/Entity"}}}}}}


def _whole(defs: dict[str, Any]) -> bool:
    """Whether every definition is converted (none left a placeholder by an undone one)."""
    return bool(defs) and all(d.get("properties") or "$ref" in d for d in defs.values())


def _tools(services: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [t["name"] for _, spec in services for t in spec["tools"]]


def test_an_api_past_the_budget_imports_as_services_each_within_it():
    doc = giant_api()
    with pytest.raises(SpecError, match="too large"):  # as one service it passes the budget
        openapi_spec(doc, max_tools=len(TAGS) * PER_TAG, max_nodes=BUDGET)
    _, services, warnings = openapi_services(doc, max_nodes=BUDGET)
    assert [group for group, _ in services] == sorted(TAGS)
    assert len(_tools(services)) == len(TAGS) * PER_TAG and not warnings
    for _, spec in services:  # each loads, its shared record whole
        assert _whole(spec["$defs"])
        service_from_spec(spec, SimulatedService).tool_specs()


def test_a_group_past_the_budget_continues_in_a_service_of_its_own():
    _, services, warnings = openapi_services(giant_api(per_tag=30), max_nodes=BUDGET)
    groups = [group for group, _ in services]
    assert {"users", "users_2", "groups_2"} <= set(groups) and len(set(groups)) == len(groups)
    assert len(_tools(services)) == len(TAGS) * 30 and not warnings


def test_an_operation_too_large_alone_is_skipped_with_a_line_saying_so():
    # both answer with one shared record past the budget: what the first converted of it is
    # undone, so the second converts it again (and is skipped too) rather than reusing a stub
    huge = ("update_sites_0", "update_sites_1")
    _, services, warnings = openapi_services(giant_api(huge=huge), max_nodes=BUDGET)
    names = _tools(services)
    assert not set(huge) & set(names) and len(names) == len(TAGS) * PER_TAG - 2
    assert warnings == [f"$.paths['/sites/{{id}}/part{n}'].patch: too large: its schemas pass "
                        f"300 nodes; operation skipped" for n in (0, 1)]
    sites = dict(services)["sites"]
    assert _whole(sites["$defs"]) and "Huge" not in sites["$defs"]
    service_from_spec(sites, SimulatedService).tool_specs()


def test_a_corpus_import_reports_the_skipped_operation_and_keeps_the_document(tmp_path: Path):
    source = tmp_path / "giant.json"
    source.write_text(json.dumps(giant_api(huge=("update_users_0",))), encoding="utf-8")
    report = import_corpus([source], tmp_path / "lib",
                           convert=partial(convert_openapi, max_nodes=BUDGET))
    (record,) = report.records
    assert record.status == "imported" and report.services == len(TAGS)
    assert report.tools == len(TAGS) * PER_TAG - 1
    assert record.warnings[0] == ("$.paths['/users/{id}/part0'].patch: too large: its schemas "
                                  "pass 300 nodes; operation skipped")


def test_a_document_whose_every_operation_is_too_large_fails_saying_so():
    with pytest.raises(SpecError, match="too large: every operation's schemas pass 10 nodes"):
        openapi_services(giant_api(), max_nodes=10)
