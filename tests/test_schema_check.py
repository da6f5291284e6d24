"""Compiled schema checks agree with jsonschema Draft 2020-12, or decline to compile."""

from __future__ import annotations

import copy

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compoenv.registry import Registry
from compoenv.schema import is_valid
from compoenv.schema_check import check_for, compile_check
from compoenv.world import World
from compoenv.worldmodel.offline import example_arguments

CASES = [
    ({"type": "integer"}, [1, 1.0, 1.5, True, "1", None]),
    ({"type": "number", "minimum": 0}, [0, -0.01, 3, False, "3"]),
    ({"type": ["string", "null"], "maxLength": 3}, ["abc", "abcd", None, 1]),
    ({"exclusiveMinimum": 0, "exclusiveMaximum": 10}, [0, 10, 5, "x", True]),
    ({"enum": ["a", "b"]}, ["a", "c", 1, None]),
    ({"const": "x"}, ["x", "y", 0]),
    ({"pattern": "^[A-Z]{2}-\\d+$"}, ["AB-12", "ab-12", "xAB-1", 7]),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
      "additionalProperties": False}, [{"a": 1}, {"a": "1"}, {}, {"a": 1, "b": 2}, [1]]),
    ({"type": "object", "additionalProperties": {"type": "number"}}, [{"x": 1}, {"x": "1"}]),
    ({"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
     [["a"], [], ["a", "b", "c"], [1], "ab"]),
    ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, ["s", 1, 1.5, None]),
    ({"oneOf": [{"type": "number"}, {"type": "integer"}]}, [1, 1.5, "x"]),
    ({"allOf": [{"minimum": 1}, {"maximum": 2}]}, [0, 1, 2, 3]),
    ({"type": "string", "format": "email", "x-interface": "EmailAddress", "nullable": True},
     ["not an email", None]),
    (True, [1, None]),
    (False, [1, None]),
    ({"type": "boolean"}, [True, False, 0, 1]),
    ({"minProperties": 1, "maxProperties": 1}, [{}, {"a": 1}, {"a": 1, "b": 2}, "ab"]),
    ({"const": False}, [False, 0, None, True]),
    ({"const": None}, [None, False, 0, ""]),
    ({"type": "array", "items": {"type": "string"}, "uniqueItems": True},
     [["a", "b"], ["a", "a"], [], ["a", 1], [{"x": 1}, {"x": 1}], "aa"]),
    ({"uniqueItems": False}, [[1, 1], "x"]),
    ({"propertyNames": {"pattern": "^[a-z]+$"}}, [{"ab": 1}, {"Ab": 1}, {}, ["Ab"]]),
]


@pytest.mark.parametrize("schema,values", CASES)
def test_compiled_check_matches_jsonschema(schema, values):
    check = compile_check(schema)
    assert check is not None
    reference = jsonschema.Draft202012Validator(schema)
    for value in values:
        assert check(value) == reference.is_valid(value), (schema, value)


@pytest.mark.parametrize("schema", [
    {"$ref": "#/$defs/x", "$defs": {"x": {"type": "string"}}},
    {"multipleOf": 2},
    {"not": {"type": "string"}},
    {"enum": [1, True]},
    {"uniqueItems": True},
    {"const": 1},
    {"type": "object", "patternProperties": {"^a": {}}, "additionalProperties": False},
    {"if": {"type": "string"}, "then": {"minLength": 2}},
    {"type": "decimal"},
    {"pattern": "("},
])
def test_keywords_without_an_exact_compilation_fall_back_to_jsonschema(schema):
    assert compile_check(schema) is None
    if "pattern" not in schema and "type" not in schema:  # broken schemas raise in jsonschema
        assert is_valid("ab", schema) == jsonschema.Draft202012Validator(schema).is_valid("ab")


def test_checks_are_built_once_per_schema_object():
    schema = {"type": "string"}
    assert check_for(schema) is check_for(schema)
    assert check_for(copy.deepcopy(schema)) is not check_for(schema)


def _mutations(value):
    """The value, and variants that break one thing at a time."""
    yield value
    if isinstance(value, dict):
        yield {}
        yield {**value, "unexpected_field": 1}
        for key, inner in list(value.items())[:6]:
            for bad in (None, "", -1, 10**9, 1.5, True, [], {"x": 1}, "x" * 300):
                yield {**value, key: bad}
            if isinstance(inner, (dict, list)):
                for sub in _mutations(inner):
                    yield {**value, key: sub}
    elif isinstance(value, list):
        yield []
        yield value[:1] * 60
        if value:
            for sub in _mutations(value[0]):
                yield [sub] + value[1:]


def test_every_registry_schema_agrees_with_jsonschema_on_valid_and_broken_values():
    registry = Registry.default()
    world = World(3)
    compiled = 0
    for spec in registry.tools():
        for schema in (spec.parameters, spec.returns):
            check = compile_check(schema)
            if check is None:
                continue
            compiled += 1
            reference = jsonschema.Draft202012Validator(schema)
            sample = example_arguments(spec, world, seed=1) if schema is spec.parameters else None
            for value in _mutations(sample) if sample is not None else ():
                assert check(value) == reference.is_valid(value), (spec.qualified_name, value)
    assert compiled > 600  # nearly every tool schema in the library compiles


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-5, 5, allow_nan=False)
    | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner,
                                                                max_size=3),
    max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(json_values, st.sampled_from([schema for schema, _ in CASES]))
def test_property_compiled_check_equals_jsonschema(value, schema):
    assert compile_check(schema)(value) == jsonschema.Draft202012Validator(schema).is_valid(value)
