"""World models for imported services: the offline model answers every imported tool with data
that fits the tool's schemas (shared $defs, recursion cut), and its coherence rules hold with
the tags importers give (dates in order, totals of parts, one person per name and email,
filters and bounds respected, the record asked for by its imported id)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from compoenv.importers import from_mcp, from_openapi, openapi_spec
from compoenv.world import World
from compoenv.worldmodel import SimulatedService, service_from_spec
from compoenv.worldmodel.offline import example_arguments
from compoenv.worldmodel.store import naming_a_record

FIXTURES = Path(__file__).parent / "fixtures"


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def imported() -> dict[str, dict[str, Any]]:
    return {"hotel": openapi_spec(load(FIXTURES / "importers" / "hotel_bookings_openapi.json"))[0],
            "petstore": from_openapi(load(FIXTURES / "petstore_openapi.json")),
            "mcp": from_mcp(load(FIXTURES / "mcp_tools_list.json"), name="mcp_tickets")}


def _answers(spec: dict[str, Any], seeds: tuple[int, ...] = (1, 2, 3)) -> Any:
    """(tool spec, arguments, data) of offline answers to every tool of ``spec``."""
    cls = service_from_spec(spec, SimulatedService)
    world = World(0)
    for name, tool in cls.tool_specs().items():
        for seed in seeds:
            service = cls(world)  # a get, update or delete names a record the service holds
            args = naming_a_record(service, name, example_arguments(tool, world, seed))
            result = service.call(name, args)
            assert result["success"] is True, (name, args, result)
            yield tool, args, result["data"]


@pytest.mark.parametrize("source", ["hotel", "petstore", "mcp"])
def test_offline_answers_to_imported_tools_fit_their_schemas(source, imported):
    for tool, args, data in _answers(imported[source]):
        jsonschema.validate(args, tool.parameters)
        jsonschema.validate(data, tool.returns)  # $defs inlined, recursion cut


def test_offline_answers_to_imported_tools_are_coherent(imported):
    world, seen, broken = World(0), Counter[str](), []

    def check(rule: str, holds: bool, *what: Any) -> None:
        seen[rule] += 1
        if not holds:
            broken.append((rule, *what))

    for tool, args, data in _answers(imported["hotel"]):
        keyed = next((a for a, p in tool.parameters["properties"].items() if p.get("x-key")
                      and p["x-key"] == (tool.returns.get("properties") or {}).get(
                          "id", {}).get("x-key")), None)
        for record in data if isinstance(data, list) else [data]:
            fields = set(record) if isinstance(record, dict) else set()
            if {"check_in", "check_out"} <= fields:
                check("end after start", record["check_out"] >= record["check_in"], record)
            if {"subtotal", "tax", "total"} <= fields:
                check("total of parts", abs(record["subtotal"] + record["tax"] - record[
                    "total"]) < 0.011, record)
            if {"customer_name", "customer_email"} <= fields:
                person = world.person(record["customer_name"])
                check("one person", person.email == record["customer_email"], record)
            for arg in {"check_in", "customer_id"} & set(args) & fields:
                check("filter", record[arg] == args[arg], tool.name, arg, record)
            if "max_total" in args and "total" in fields:
                check("bound", record["total"] <= args["max_total"], record)
            if keyed and "id" in fields:  # get_booking(booking_id=56) is booking 56
                check("asked id", record["id"] == args[keyed], tool.name, record["id"])
    assert not broken, broken[:5]
    assert set(seen) == {"end after start", "total of parts", "one person", "filter", "bound",
                         "asked id"}, seen
