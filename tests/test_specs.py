"""Spec-only services: every spec validates, every tool answers schema-valid, deterministic data
offline, writes are read back, and spec tools join composed tasks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from compoenv.compose import Composer, replay
from compoenv.registry import Registry
from compoenv.testing import check_service
from compoenv.world import World
from compoenv.worldmodel import SimulatedService, load_spec
from compoenv.worldmodel.offline import collection_of, example_arguments
from compoenv.worldmodel.store import naming_a_record

SPECS = sorted((Path(__file__).resolve().parents[1] / "envs_library" / "specs").glob("*.json"))
REGISTRY = Registry.default()
SPEC_CLASSES = [cls for cls in REGISTRY if issubclass(cls, SimulatedService)]


def test_the_library_ships_spec_services_that_load_into_the_default_registry():
    assert SPECS and len(SPEC_CLASSES) == len(SPECS)
    for path in SPECS:  # strict: every tool schema is checked against the meta-schema too
        assert load_spec(path, strict=True)["name"] in REGISTRY


@pytest.mark.parametrize("cls", SPEC_CLASSES, ids=lambda c: c.name)
def test_every_spec_service_passes_the_service_checker(cls):
    free = [f"{s.name}.{p}" for s in cls.tool_specs().values()
            for p in s.parameters.get("properties", {})
            if p not in {slot.path[0] for slot in s.inputs}]
    check_service(cls, free_text=free)


def _store_tools(cls: type) -> dict[str, Any]:
    store = getattr(cls, "_store", None)
    return store.by_tool if store is not None else {}


def _cancelled_already(spec: Any, result: dict[str, Any]) -> bool:
    """A cancel's 409: every record of its resource is cancelled already in this world."""
    return not result["success"] and result["error"]["code"] == 409 \
        and spec.name.startswith("cancel_")


def _arguments(cls: type, spec: Any, world: World, seed: int) -> dict[str, Any]:
    """Example arguments; a tool of a CRUD resource names one of its records."""
    return naming_a_record(cls.create(world), spec.name, example_arguments(spec, world, seed))


@pytest.mark.parametrize("cls", SPEC_CLASSES, ids=lambda c: c.name)
def test_every_spec_tool_answers_schema_valid_deterministic_data_offline(cls):
    world = World.get(0)
    for spec in cls.tool_specs().values():
        args = _arguments(cls, spec, world, seed=1)
        first = cls.create(world).call(spec.name, args)
        if _cancelled_already(spec, first):
            continue
        assert first["success"], (spec.qualified_name, first)
        # tools of CRUD resources answer from real records, the others from the world model
        assert ("simulated" in first) != (spec.name in _store_tools(cls)), first
        jsonschema.validate(first["data"], spec.returns)
        assert cls.create(world).call(spec.name, args) == first, spec.qualified_name


@pytest.mark.parametrize("cls", SPEC_CLASSES, ids=lambda c: c.name)
def test_writes_are_read_back_by_list_tools_of_the_same_collection(cls):
    world = World.get(0)
    specs = list(cls.tool_specs().values())
    lists = {collection_of(s.name, s.returns): s for s in specs
             if s.read_only and s.returns.get("type") == "array"
             and not s.parameters.get("required")}
    checked = 0
    for write in (s for s in specs if not s.read_only):
        reader = lists.get(collection_of(write.name, write.returns))
        if reader is None or write.name.startswith(("delete_", "remove_")):
            continue
        service = cls.create(world)
        created = service.call(write.name, _arguments(cls, write, world, seed=2))
        if _cancelled_already(write, created):
            continue
        assert created["success"], created
        if not _fits(created["data"], reader.returns.get("items", {})):
            continue  # a different kind of record (sharing a document is not a document)
        listed = service.call(reader.name, {})["data"]
        # the record, or a summary of it (a list that shows some of its fields)
        assert any(item.items() <= created["data"].items() for item in listed), (
            write.qualified_name, reader.qualified_name)
        checked += 1
    if cls.name == "web_search":
        assert checked >= 1


def test_a_second_write_into_a_collection_leaves_earlier_copies_of_the_state_alone():
    world = World.get(0)
    cls = REGISTRY.get("crm")
    write = next(s for s in cls.tool_specs().values() if s.name == "create_deal")
    service = cls.create(world)
    assert service.call(write.name, example_arguments(write, world, seed=1))["success"]
    before = dict(service.state.records)  # a shallow copy, as the composer's snapshot takes
    forked = service.state.fork()
    assert service.call(write.name, example_arguments(write, world, seed=2))["success"]
    after = dict(service.state.records)
    assert before != after  # the composer's "did this write change anything?" test sees it
    assert forked.records == before


def _fits(value, schema) -> bool:
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError:
        return False
    return True


def test_offline_answers_are_identical_in_another_process():
    code = ("import json; from compoenv.registry import Registry; from compoenv.world import "
            "World; from compoenv.worldmodel.offline import example_arguments; "
            "out = {}\n"
            "for cls in Registry.default():\n"
            "    if not hasattr(cls, '_spec_tools'): continue\n"
            "    for s in cls.tool_specs().values():\n"
            "        a = example_arguments(s, World.get(3), 5)\n"
            "        out[s.qualified_name] = cls.create(World.get(3)).call(s.name, a)\n"
            "print(json.dumps(out, sort_keys=True))")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"}, timeout=120)
            for seed in ("1", "2")]
    assert runs[0].returncode == 0, runs[0].stderr
    assert runs[0].stdout == runs[1].stdout and json.loads(runs[0].stdout)


def test_spec_tools_join_the_graph_and_composed_tasks():
    tasks = list(Composer().generate(150, seed=3))
    spec_names = {cls.name for cls in SPEC_CLASSES}
    using = [t for t in tasks if spec_names & set(t.services)]
    assert using, "no composed task uses a spec-only service"
    for t in using[:10]:
        assert replay(t).rubric_score == 1.0


def test_parameter_strings_without_a_bound_get_the_default_max_length():
    from compoenv.worldmodel.spec import DEFAULT_MAX_LENGTH, bounded_strings

    schema = {"type": "object", "properties": {
        "free": {"type": "string"}, "bounded": {"type": "string", "maxLength": 20_000},
        "choice": {"type": "string", "enum": ["a"]}, "anything": {"description": "any"},
        "list": {"type": "array", "items": {"type": ["string", "null"]}},
        "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}
    props = bounded_strings(schema)["properties"]
    assert props["free"]["maxLength"] == props["anything"]["maxLength"] == DEFAULT_MAX_LENGTH
    assert props["list"]["items"]["maxLength"] == props["either"]["anyOf"][0]["maxLength"]
    assert props["bounded"]["maxLength"] == 20_000 and "maxLength" not in props["choice"]
    assert "maxLength" not in schema["properties"]["free"]  # a copy: the spec is untouched


def test_a_free_text_argument_over_the_default_bound_is_a_400():
    from compoenv.worldmodel.spec import DEFAULT_MAX_LENGTH

    spec = next(s for s in REGISTRY.tools() if s.args_model is None and any(
        p.get("type") == "string" and p.get("maxLength") == DEFAULT_MAX_LENGTH
        for p in s.parameters.get("properties", {}).values()))
    name = next(k for k, p in spec.parameters["properties"].items()
                if p.get("maxLength") == DEFAULT_MAX_LENGTH)
    args = {**example_arguments(spec, World(0)), name: "x" * (DEFAULT_MAX_LENGTH + 1)}
    service = REGISTRY.get(spec.service)(World(0))
    result = service.call(spec.name, args)
    assert result["success"] is False and result["error"]["code"] == 400
    assert name in result["error"]["message"] and "too long" in result["error"]["message"]
    assert f"over maxLength {DEFAULT_MAX_LENGTH:,}" in result["error"]["message"]


def test_offline_answers_to_schemas_it_cannot_build_for_are_still_checked():
    from compoenv.worldmodel import service_from_spec, validate_spec

    spec = validate_spec({
        "name": "codes", "domain": "testing", "description": "Codes with a strict pattern.",
        "tools": [{"name": "get_code", "description": "Get a code.", "read_only": True,
                   "phrase": "get a code", "parameters": {"type": "object", "properties": {}},
                   "returns": {"type": "object", "required": ["code"], "properties": {
                       "code": {"type": "string", "pattern": "^Z{12}$"}}}}]})
    result = service_from_spec(spec, SimulatedService).create(World.get(0)).call("get_code", {})
    assert result["success"] is False and result["error"]["code"] == 500
    assert "invalid_output" in result["error"]["message"]


def test_a_bare_interface_tag_with_a_role_or_label_still_expands():
    from compoenv.worldmodel.spec import validate_spec

    spec = {"name": "tagged", "domain": "test", "description": "A spec to test expansion.",
            "tools": [{"name": "find", "description": "Find one.", "read_only": True,
                       "parameters": {"type": "object", "properties": {
                           "city": {"x-interface": "City", "x-role": "location"}},
                           "required": ["city"]},
                       "returns": {"x-interface": "Money", "x-role": "price",
                                   "x-label": "price"}}]}
    tool = validate_spec(spec, strict=False)["tools"][0]
    city = tool["parameters"]["properties"]["city"]
    assert city["type"] == "string" and city["x-role"] == "location" and "maxLength" in city
    assert tool["returns"]["type"] == "number" and tool["returns"]["x-label"] == "price"
