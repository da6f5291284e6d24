"""Tests for compoenv.actions: tool-call parsing and rendering."""

from __future__ import annotations

import json
import string
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from compoenv.actions import (MAX_ACTION_CHARS, MAX_ARGUMENT_CHARS, MAX_CALLS_PER_ACTION,
                              MAX_JSON_DEPTH, CallError, ParsedAction, ToolCall, parse_action,
                              render_calls, to_openai_tool_calls)

SCHEMAS: dict[str, dict[str, Any]] = {
    "weather__forecast": {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}, "zip": {"type": "string"},
        "metric": {"type": "boolean"}, "tags": {"type": "array"}, "ratio": {"type": "number"},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}]}}},
    "contacts__find": {"type": "object", "properties": {"name": {"type": "string"}}},
}
OPENAI_CALL = {"id": "abc", "type": "function",
               "function": {"name": "a__b", "arguments": '{"x": 1}'}}


def calls_of(parsed: ParsedAction) -> list[tuple[str, dict[str, Any], str]]:
    """(name, arguments, id) of every call; fails on a CallError."""
    assert all(isinstance(c, ToolCall) for c in parsed.calls), parsed.calls
    return [(c.name, c.arguments, c.id) for c in parsed.calls]  # type: ignore[union-attr]


def hermes(name: str, arguments: Any, key: str = "arguments") -> str:
    return f"<tool_call>\n{json.dumps({'name': name, key: arguments})}\n</tool_call>"


def qwen(name: str, params: dict[str, str], wrap: bool = True) -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    text = f"<function={name}>\n{body}</function>"
    return f"<tool_call>\n{text}\n</tool_call>" if wrap else text


def table(cases: list[tuple[Any, ...]]) -> dict[str, Any]:
    """parametrize kwargs for a table whose first column is the case id."""
    return {"argvalues": [c[1:] for c in cases], "ids": [c[0] for c in cases]}


# --- hermes ---------------------------------------------------------------------------------

HERMES_CASES = [
    ("single", hermes("a__b", {"x": 1}), [("a__b", {"x": 1}, "call_0")], ""),
    ("several_in_order", hermes("a__b", {"x": 1}) + "\n" + hermes("c__d", {}),
     [("a__b", {"x": 1}, "call_0"), ("c__d", {}, "call_1")], ""),
    ("content_before_and_between",
     "Let me look.\n" + hermes("a__b", {}) + "\nthen\n" + hermes("c__d", {}) + "\n",
     [("a__b", {}, "call_0"), ("c__d", {}, "call_1")], "Let me look.\nthen"),
    ("no_whitespace", '<tool_call>{"name":"a__b","arguments":{"x":"y"}}</tool_call>',
     [("a__b", {"x": "y"}, "call_0")], ""),
    ("arguments_as_json_string", hermes("a__b", json.dumps({"x": [1, 2]})),
     [("a__b", {"x": [1, 2]}, "call_0")], ""),
    ("parameters_alias", hermes("a__b", {"x": 1}, key="parameters"),
     [("a__b", {"x": 1}, "call_0")], ""),
    ("missing_arguments_is_empty", '<tool_call>{"name": "a__b"}</tool_call>',
     [("a__b", {}, "call_0")], ""),
    ("empty_arguments_string", hermes("a__b", ""), [("a__b", {}, "call_0")], ""),
    ("name_is_stripped", hermes("  a__b\n", {}), [("a__b", {}, "call_0")], ""),
    ("fenced_json_inside_tag",
     '<tool_call>\n```json\n{"name": "a__b", "arguments": {}}\n```\n</tool_call>',
     [("a__b", {}, "call_0")], ""),
    ("escaped_close_tag_in_string",
     '<tool_call>{"name": "a__b", "arguments": {"t": "<\\/tool_call>"}}</tool_call>',
     [("a__b", {"t": "</tool_call>"}, "call_0")], ""),
    ("unicode", hermes("a__b", {"city": "Zürich 東京"}),
     [("a__b", {"city": "Zürich 東京"}, "call_0")], ""),
    ("json_prefix_then_tags", '{"thought": 1}\n' + hermes("a__b", {}),
     [("a__b", {}, "call_0")], '{"thought": 1}'),
]


@pytest.mark.parametrize("action,expected,content", **table(HERMES_CASES))
def test_hermes_calls_are_parsed_in_order_with_content(action: str, expected: list,
                                                       content: str) -> None:
    parsed = parse_action(action)
    assert (parsed.format, calls_of(parsed), parsed.content) == ("hermes", expected, content)
    assert not parsed.is_final


def test_mixed_tag_formats_keep_order_and_report_the_first_format() -> None:
    parsed = parse_action(hermes("a__b", {}) + qwen("c__d", {"k": "v"}), SCHEMAS)
    assert parsed.format == "hermes"
    assert calls_of(parsed) == [("a__b", {}, "call_0"), ("c__d", {"k": "v"}, "call_1")]


# --- qwen3_coder ----------------------------------------------------------------------------

QWEN_CASES = [
    ("typed_by_schema",
     qwen("weather__forecast", {"city": "Paris", "days": "3", "zip": "007", "metric": "true",
                                "tags": '["a"]', "ratio": "0.5"}),
     [("weather__forecast", {"city": "Paris", "days": 3, "zip": "007", "metric": True,
                             "tags": ["a"], "ratio": 0.5}, "call_0")], ""),
    ("string_schema_keeps_json_looking_text",
     qwen("weather__forecast", {"city": "3", "zip": "[1]"}),
     [("weather__forecast", {"city": "3", "zip": "[1]"}, "call_0")], ""),
    ("string_or_null_anyof",
     qwen("weather__forecast", {"note": "null"}) + qwen("weather__forecast", {"note": "1"}),
     [("weather__forecast", {"note": None}, "call_0"),
      ("weather__forecast", {"note": "1"}, "call_1")], ""),
    ("bad_typed_value_stays_raw_for_validation", qwen("weather__forecast", {"days": "three"}),
     [("weather__forecast", {"days": "three"}, "call_0")], ""),
    ("python_style_boolean", qwen("weather__forecast", {"metric": "False"}),
     [("weather__forecast", {"metric": False}, "call_0")], ""),
    ("one_newline_stripped_each_side", qwen("contacts__find", {"name": "\n  Ada\nLovelace \n"}),
     [("contacts__find", {"name": "\n  Ada\nLovelace \n"}, "call_0")], ""),
    ("unknown_tool_decodes_only_non_string_json",
     qwen("zz__unknown", {"n": "3", "s": "Paris", "b": "true", "o": '{"k": 1}', "q": '"quoted"',
                          "z": "null", "f": "-1.5e3", "bad": "{oops"}),
     [("zz__unknown", {"n": 3, "s": "Paris", "b": True, "o": {"k": 1}, "q": '"quoted"', "z": None,
                       "f": -1500.0, "bad": "{oops"}, "call_0")], ""),
    ("without_tool_call_wrapper", qwen("contacts__find", {"name": "Ada"}, wrap=False),
     [("contacts__find", {"name": "Ada"}, "call_0")], ""),
    ("dangling_close_tag_swallowed",
     qwen("contacts__find", {"name": "Ada"}, wrap=False) + "\n</tool_call>",
     [("contacts__find", {"name": "Ada"}, "call_0")], ""),
    ("several_with_content",
     "Checking.\n" + qwen("contacts__find", {"name": "A"}) + "\n"
     + qwen("contacts__find", {"name": "B"}) + "\nDone?",
     [("contacts__find", {"name": "A"}, "call_0"), ("contacts__find", {"name": "B"}, "call_1")],
     "Checking.\nDone?"),
    ("no_parameters", qwen("contacts__list", {}), [("contacts__list", {}, "call_0")], ""),
    ("missing_parameter_close_is_lenient",
     "<function=contacts__find>\n<parameter=name>\nAda\n<parameter=x>\n1\n</function>",
     [("contacts__find", {"name": "Ada", "x": 1}, "call_0")], ""),
    ("missing_function_close_inside_block",
     "<tool_call>\n<function=a__b>\n<parameter=k>\nv\n</parameter>\n</tool_call>",
     [("a__b", {"k": "v"}, "call_0")], ""),
]


@pytest.mark.parametrize("action,expected,content", **table(QWEN_CASES))
def test_qwen3_coder_calls_are_typed_by_schema(action: str, expected: list, content: str) -> None:
    parsed = parse_action(action, SCHEMAS)
    assert (parsed.format, calls_of(parsed), parsed.content) == ("qwen3_coder", expected, content)


def test_qwen3_coder_accepts_openai_tool_entries_as_schemas() -> None:
    schemas = {"a__b": {"type": "function", "function": {"name": "a__b", "parameters": {
        "type": "object", "properties": {"k": {"type": "string"}}}}}}
    parsed = parse_action(qwen("a__b", {"k": "12"}), schemas)
    assert calls_of(parsed) == [("a__b", {"k": "12"}, "call_0")]


# --- json and openai ------------------------------------------------------------------------

JSON_CASES = [
    ("bare_object", '{"name": "a__b", "arguments": {"x": 1}}', "json", [("a__b", {"x": 1})]),
    ("bare_list",
     ' [{"name": "a__b", "arguments": {}}, {"name": "c__d", "parameters": {"y": 2}}]\n',
     "json", [("a__b", {}), ("c__d", {"y": 2})]),
    ("fenced_json", '```json\n{"name": "a__b", "arguments": {}}\n```', "json", [("a__b", {})]),
    ("fenced_no_language", '```\n[{"name": "a__b", "arguments": "{}"}]\n```', "json",
     [("a__b", {})]),
    ("name_known_from_schemas", '{"name": "contacts__find"}', "json", [("contacts__find", {})]),
    ("openai_message_string", json.dumps({"content": "hi", "tool_calls": [OPENAI_CALL]}), "openai",
     [("a__b", {"x": 1})]),
    ("openai_list_string",
     json.dumps([OPENAI_CALL, {"type": "function", "function": {"name": "c__d"}}]), "openai",
     [("a__b", {"x": 1}), ("c__d", {})]),
    ("json_mentioning_tags_is_json",
     '{"name": "a__b", "arguments": {"t": "<tool_call> and <function=x>"}}', "json",
     [("a__b", {"t": "<tool_call> and <function=x>"})]),
]


@pytest.mark.parametrize("action,fmt,expected", **table(JSON_CASES))
def test_action_that_is_entirely_call_json_is_parsed(action: str, fmt: str, expected: list) -> None:
    parsed = parse_action(action, SCHEMAS)
    assert parsed.format == fmt
    assert [(name, arguments) for name, arguments, _ in calls_of(parsed)] == expected


def test_openai_json_string_keeps_given_ids_and_content() -> None:
    parsed = parse_action(json.dumps({"content": " hi ", "tool_calls": [OPENAI_CALL]}))
    assert (calls_of(parsed), parsed.content) == ([("a__b", {"x": 1}, "abc")], "hi")


OPENAI_CASES = [
    ("message_with_tool_calls", {"role": "assistant", "content": "ok", "tool_calls": [OPENAI_CALL]},
     "openai", [("a__b", {"x": 1}, "abc")], "ok"),
    ("message_null_content", {"role": "assistant", "content": None, "tool_calls": [OPENAI_CALL]},
     "openai", [("a__b", {"x": 1}, "abc")], ""),
    ("arguments_dict_and_missing_id",
     [OPENAI_CALL, {"type": "function", "function": {"name": "c__d", "arguments": {"y": [1]}}}],
     "openai", [("a__b", {"x": 1}, "abc"), ("c__d", {"y": [1]}, "call_1")], ""),
    ("single_tool_call_dict", OPENAI_CALL, "openai", [("a__b", {"x": 1}, "abc")], ""),
    ("flat_name_arguments_dict", {"name": "a__b", "arguments": {"x": 2}}, "openai",
     [("a__b", {"x": 2}, "call_0")], ""),
    ("tuple_of_calls", (OPENAI_CALL,), "openai", [("a__b", {"x": 1}, "abc")], ""),
    ("message_without_calls_is_final",
     {"role": "assistant", "content": " Paris. ", "tool_calls": []}, None, [], "Paris."),
    ("content_parts_are_joined", {"role": "assistant", "content": [
        {"type": "text", "text": "Par"}, {"type": "text", "text": "is"}]}, None, [], "Paris"),
    ("tags_in_message_content", {"role": "assistant", "content": "x " + hermes("a__b", {})},
     "hermes", [("a__b", {}, "call_0")], "x"),
    ("empty_list_is_final", [], None, [], ""),
]


@pytest.mark.parametrize("action,fmt,expected,content", **table(OPENAI_CASES))
def test_openai_messages_and_tool_call_lists_are_parsed(action: Any, fmt: str | None,
                                                        expected: list, content: str) -> None:
    parsed = parse_action(action)
    assert (parsed.format, calls_of(parsed), parsed.content) == (fmt, expected, content)


def test_openai_mapping_arguments_are_copied_not_shared() -> None:
    arguments = {"x": 1}
    call = parse_action({"name": "a__b", "arguments": arguments}).calls[0]
    assert isinstance(call, ToolCall)
    assert call.arguments == arguments and call.arguments is not arguments


# --- final answers --------------------------------------------------------------------------

FINAL_CASES = [
    ("prose", "  The answer is Paris.\n"),
    ("prose_mentioning_json", 'Send {"name": "x", "arguments": {}} to call a tool.'),
    ("json_object_not_call_shaped", '{"answer": 42, "name": "Ada"}'),
    ("json_list_of_records", '[{"name": "Ada"}, {"name": "Bob"}]'),
    ("json_scalar_list", "[1, 2, 3]"),
    ("broken_json_without_call_keys", "[1] Paris is the capital"),
    ("code_fence_of_python", "```python\nprint('hi')\n```"),
    ("fence_with_prose_after", '```json\n{"name": "a", "arguments": {}}\n```\nI would call that.'),
    ("tag_like_words", "use <tool_call without a bracket or <function name>"),
    ("empty", ""),
    ("deep_brackets_without_call_keys", "[" * 1000),
]


@pytest.mark.parametrize("text", [c[1] for c in FINAL_CASES], ids=[c[0] for c in FINAL_CASES])
def test_text_without_call_syntax_is_a_final_answer(text: str) -> None:
    parsed = parse_action(text)
    assert parsed == ParsedAction(text.strip(), (), None)
    assert parsed.is_final


# --- errors ---------------------------------------------------------------------------------

def nested(depth: int) -> str:
    """A call whose arguments nest ``depth`` objects deep in all."""
    return ('{"name": "a__b", "arguments": ' + '{"k": ' * (depth - 1) + "1"
            + "}" * (depth - 1) + "}")


ERROR_CASES: list[tuple[str, Any, str]] = [
    ("malformed_json", '<tool_call>{"name": "a__b", "arguments": {"x": 1}</tool_call>',
     "invalid JSON in <tool_call> at char 38: Expecting ',' delimiter"),
    ("python_dict_quotes", "<tool_call>{'name': 'a__b'}</tool_call>", "use double-quoted keys"),
    ("json_array_not_object", "<tool_call>[1, 2]</tool_call>", "expected a JSON object like"),
    ("json_string_not_object", '<tool_call>"a__b"</tool_call>', "got string 'a__b'"),
    ("missing_name", '<tool_call>{"arguments": {}}</tool_call>',
     "missing \"name\" in <tool_call>, got keys ['arguments']"),
    ("non_string_name", '<tool_call>{"name": 7, "arguments": {}}</tool_call>',
     '"name" in <tool_call> must be a string, got integer 7'),
    ("null_name", '<tool_call>{"name": null}</tool_call>', "must be a string, got null"),
    ("empty_name", '<tool_call>{"name": "  ", "arguments": {}}</tool_call>', 'empty "name"'),
    ("arguments_array", hermes("a__b", [1]),
     "\"arguments\" of 'a__b' must be a JSON object like"),
    ("arguments_number", hermes("a__b", 3), "got integer 3"),
    ("arguments_string_bad_json", hermes("a__b", "{x: 1}"),
     "invalid JSON in the \"arguments\" string of 'a__b' at char 1"),
    ("arguments_string_not_object", hermes("a__b", "[1]"), "must be a JSON object"),
    ("too_deep", f"<tool_call>{nested(MAX_JSON_DEPTH + 1)}</tool_call>",
     f"nested more than {MAX_JSON_DEPTH} levels deep"),
    ("too_deep_list", "<tool_call>" + "[" * 5000 + "]" * 5000 + "</tool_call>",
     "nested more than 64"),
    ("control_character", '<tool_call>{"name": "a__b", "arguments": {"x": "a\x01b"}}</tool_call>',
     "Invalid control character"),
    ("raw_newline_in_string", '<tool_call>{"name": "a__b", "arguments": {"x": "a\nb"}}</tool_call>',
     "escape newlines and tabs"),
    ("nan", '<tool_call>{"name": "a__b", "arguments": {"x": NaN}}</tool_call>',
     "NaN is not valid JSON"),
    ("huge_integer",
     '<tool_call>{"name": "a__b", "arguments": {"x": ' + "9" * 5000 + "}}</tool_call>",
     "4300"),
    ("unterminated_tool_call", 'ok <tool_call>{"name": "a__b", "arguments": {}}',
     "unterminated <tool_call>"),
    ("second_open_before_close",
     '<tool_call>{"name": "a__b"\n<tool_call>{"name": "c__d"}</tool_call>',
     "a second <tool_call> opened"),
    ("empty_tool_call", "<tool_call>\n</tool_call>", "empty <tool_call>"),
    ("unterminated_function", "<function=a__b>\n<parameter=x>\n1\n</parameter>",
     "unterminated <function=...>"),
    ("empty_function_name", "<function= >\n</function>", "malformed <function=...>"),
    ("empty_parameter_name", "<function=a__b>\n<parameter=>\n1\n</parameter>\n</function>",
     "malformed <parameter=...>"),
    ("bare_json_broken", '{"name": "a__b", "arguments": {', "invalid JSON in the action at char"),
    ("bare_list_with_junk", '[{"name": "a__b", "arguments": {}}, 5]', "got integer 5"),
    ("too_long", "x" * (MAX_ACTION_CHARS + 1),
     f"{MAX_ACTION_CHARS + 1:,} characters, over the limit of {MAX_ACTION_CHARS:,}"),
    ("none", None, "unsupported action type NoneType"),
    ("int", 42, "unsupported action type int"),
    ("bytes", b"<tool_call>", "unsupported action type bytes"),
    ("object", object(), "unsupported action type object"),
    ("unknown_mapping", {"foo": 1}, "unrecognised action dict with keys ['foo']"),
    ("tool_calls_not_list", {"tool_calls": "a__b"}, '"tool_calls" must be a list'),
    ("tool_call_not_mapping", [OPENAI_CALL, 3], "in tool call #1, got integer 3"),
    ("function_not_object", [{"type": "function", "function": "a__b"}],
     '"function" in tool call #0 must be an object'),
    ("openai_arguments_bad_json", [{"function": {"name": "a__b", "arguments": "{"}}],
     "invalid JSON in the \"arguments\" string of 'a__b'"),
    ("openai_missing_name", [{"function": {"arguments": "{}"}}], 'missing "name" in tool call #0'),
]


@pytest.mark.parametrize("action,expected", **table(ERROR_CASES))
def test_bad_calls_become_call_errors_with_specific_messages(action: Any, expected: str) -> None:
    parsed = parse_action(action)
    errors = [c for c in parsed.calls if isinstance(c, CallError)]
    assert errors and not parsed.is_final, parsed
    assert expected in errors[0].message
    assert len(errors[0].raw) <= 200
    assert len(errors[0].message) < 600  # quotes are capped, even for 1 MB inputs


def test_depth_at_the_limit_still_parses() -> None:
    parsed = parse_action(f"<tool_call>{nested(MAX_JSON_DEPTH)}</tool_call>")
    assert isinstance(parsed.calls[0], ToolCall)


def test_too_long_action_is_rejected_whole_without_a_format() -> None:
    parsed = parse_action(hermes("a__b", {"x": "y" * MAX_ACTION_CHARS}))
    assert parsed.format is None and parsed.content == "" and len(parsed.calls) == 1


def test_errors_keep_position_ids_and_recovered_names() -> None:
    bad = '<tool_call>{"name": "c__d", "arguments": {</tool_call>'
    first, second, third = parse_action(hermes("a__b", {}) + bad + hermes("e__f", {})).calls
    assert isinstance(first, ToolCall) and isinstance(third, ToolCall) and third.id == "call_2"
    assert isinstance(second, CallError) and (second.id, second.name) == ("call_1", "c__d")


def test_openai_errors_keep_the_given_id() -> None:
    error = parse_action([{"id": "x9", "function": {"name": "a__b", "arguments": "[]"}}]).calls[0]
    assert isinstance(error, CallError) and (error.id, error.name) == ("x9", "a__b")


def test_unterminated_qwen_call_recovers_the_name() -> None:
    error = parse_action("<tool_call>\n<function=a__b>\n<parameter=x>\n1").calls[0]
    assert isinstance(error, CallError) and error.name == "a__b"
    assert "unterminated <tool_call>" in error.message


def test_error_message_quotes_at_most_80_chars_of_input() -> None:
    error = parse_action("<tool_call>" + "z" * 5000).calls[0]
    assert isinstance(error, CallError)
    assert "z" * 81 not in error.message and "z" * 60 in error.message


def test_broken_repr_of_an_unsupported_action_does_not_raise() -> None:
    class Hostile:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    error = parse_action(Hostile()).calls[0]  # type: ignore[arg-type]
    assert isinstance(error, CallError) and "unsupported action type Hostile" in error.message


@pytest.mark.parametrize("text", [
    "<tool_call>" * (MAX_ACTION_CHARS // len("<tool_call>")),
    "{" * 10**6,
    "<tool_call>" + "[" * 10**6 + "</tool_call>",
    '{"name": "' * 100_000,
    "<function=x>" + "<parameter=a>" * 60_000 + "</function>",
    '["' + '\\"' * 500_000,
], ids=["tool_call_tags", "open_braces", "open_brackets_in_tag", "name_prefixes", "parameters",
        "escapes"])
def test_hostile_megabyte_input_parses_in_linear_time(text: str) -> None:
    start = time.perf_counter()
    parse_action(text)
    assert time.perf_counter() - start < 1.0


# --- the per-action budget -----------------------------------------------------------------

_MANY = [ToolCall("a__b", {"i": i}, f"call_{i}") for i in range(MAX_CALLS_PER_ACTION + 5)]


@pytest.mark.parametrize("action", [
    render_calls(_MANY, "hermes"), render_calls(_MANY, "qwen3_coder"), render_calls(_MANY, "json"),
    render_calls(_MANY, "openai"), json.loads(render_calls(_MANY, "openai"))["tool_calls"],
    "<tool_call>" + "".join(f"<function=a__b><parameter=i>{i}</parameter></function>"
                            for i in range(40)) + "</tool_call>",
], ids=["hermes", "qwen3_coder", "json", "openai_text", "openai_list", "qwen_one_block"])
def test_calls_past_the_call_budget_are_read_as_one_422_error(action: Any) -> None:
    parsed = parse_action(action)
    assert len(parsed.calls) == MAX_CALLS_PER_ACTION + 1
    assert all(isinstance(c, ToolCall) for c in parsed.calls[:-1])
    last = parsed.calls[-1]
    assert isinstance(last, CallError) and last.code == 422
    assert "MAX_CALLS_PER_ACTION" in last.message and "were not run" in last.message


def test_a_flood_of_tiny_calls_is_read_only_up_to_the_budget() -> None:
    tiny = '<tool_call>{"name": "a__b", "arguments": {}}</tool_call>'
    parsed = parse_action(tiny * (MAX_ACTION_CHARS // len(tiny)))
    assert len(parsed.calls) == MAX_CALLS_PER_ACTION + 1
    assert f"the {MAX_ACTION_CHARS // len(tiny) - MAX_CALLS_PER_ACTION:,} after" in \
        parsed.calls[-1].message


def test_calls_past_the_argument_budget_are_422_errors_and_calls_that_fit_stay() -> None:
    big = ToolCall("a__b", {"text": "x" * (MAX_ARGUMENT_CHARS // 2)}, "big")
    parsed = parse_action(render_calls([big, big, ToolCall("a__b", {"n": 1}, "small")]))
    kinds = [type(c).__name__ for c in parsed.calls]
    assert kinds == ["ToolCall", "CallError", "ToolCall"]
    error = parsed.calls[1]
    assert isinstance(error, CallError) and error.code == 422 and error.name == "a__b"
    assert "MAX_ARGUMENT_CHARS" in error.message and len(error.raw) <= 200


def test_a_too_long_tool_name_is_an_error() -> None:
    error = parse_action(render_calls([ToolCall("n" * 201, {}, "c")])).calls[0]
    assert isinstance(error, CallError) and "MAX_NAME_CHARS" in error.message


def test_an_overflowing_number_is_invalid_json_not_infinity() -> None:
    error = parse_action('<tool_call>{"name": "a__b", "arguments": {"x": 1e999}}</tool_call>')
    assert isinstance(error.calls[0], CallError) and "out of range" in error.calls[0].message


def test_python_arguments_become_plain_json_copies() -> None:
    arguments = {"tags": ("a", "b"), "nested": {"n": 1}}
    call = parse_action({"name": "a__b", "arguments": arguments}).calls[0]
    arguments["nested"]["n"] = 2
    assert isinstance(call, ToolCall) and call.arguments == {"tags": ["a", "b"],
                                                             "nested": {"n": 1}}


@pytest.mark.parametrize("value", [{1, 2}, b"x", 10 ** 5000, float("nan"), object()],
                         ids=["set", "bytes", "huge_int", "nan", "object"])
def test_python_values_that_are_not_json_are_call_errors(value: Any) -> None:
    parsed = parse_action([{"name": "a__b", "arguments": {"v": value}},
                           {"name": "a__b", "arguments": {"v": 1}}])
    assert isinstance(parsed.calls[0], CallError) and "not JSON data" in parsed.calls[0].message
    assert isinstance(parsed.calls[1], ToolCall)


# --- rendering ------------------------------------------------------------------------------

CALLS = [ToolCall("a__b", {"city": "Zürich", "n": 2}, "call_0"), ToolCall("c__d", {}, "call_1")]


def test_render_hermes_matches_the_documented_layout() -> None:
    assert render_calls(CALLS, "hermes", "Hi") == (
        'Hi\n<tool_call>\n{"name": "a__b", "arguments": {"city": "Zürich", "n": 2}}\n'
        '</tool_call>\n'
        '<tool_call>\n{"name": "c__d", "arguments": {}}\n</tool_call>')


def test_render_hermes_escapes_a_close_tag_inside_strings() -> None:
    call = ToolCall("a__b", {"t": "x</tool_call>y"}, "call_0")
    assert calls_of(parse_action(render_calls([call]))) == [("a__b", call.arguments, "call_0")]


def test_render_qwen3_coder_matches_the_documented_layout() -> None:
    assert render_calls(CALLS[:1], "qwen3_coder") == (
        "<tool_call>\n<function=a__b>\n<parameter=city>\nZürich\n</parameter>\n"
        "<parameter=n>\n2\n</parameter>\n</function>\n</tool_call>")


def test_render_json_is_an_object_for_one_call_and_a_list_for_several() -> None:
    assert json.loads(render_calls(CALLS[:1], "json")) == {
        "name": "a__b", "arguments": {"city": "Zürich", "n": 2}}
    assert [c["name"] for c in json.loads(render_calls(CALLS, "json"))] == ["a__b", "c__d"]


@pytest.mark.parametrize("fmt", ["hermes", "qwen3_coder", "json", "openai"])
def test_render_without_calls_is_the_content_alone(fmt: str) -> None:
    content = "" if fmt == "json" else "Paris"
    assert render_calls([], fmt, content) == content


def test_render_openai_round_trips_ids_and_content() -> None:
    parsed = parse_action(render_calls(CALLS, "openai", "Hi"))
    assert (parsed.format, parsed.content, parsed.calls) == ("openai", "Hi", tuple(CALLS))


def test_render_rejects_unknown_format_and_content_with_json() -> None:
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        render_calls(CALLS, "xml")
    with pytest.raises(ValueError, match="renders calls only"):
        render_calls(CALLS, "json", "text")


def test_to_openai_tool_calls_uses_json_string_arguments() -> None:
    assert to_openai_tool_calls(CALLS[:1]) == [{"id": "call_0", "type": "function", "function": {
        "name": "a__b", "arguments": '{"city": "Zürich", "n": 2}'}}]


# --- properties -----------------------------------------------------------------------------

WORDS = st.text(alphabet=string.ascii_lowercase + string.digits + "_", min_size=1, max_size=8)
NAMES = st.tuples(WORDS, WORDS).map("__".join)
KEYS = st.text(alphabet=string.ascii_letters + "_", min_size=1, max_size=8)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text()
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8)
QWEN_UNSAFE = ("</parameter>", "</function>", "</tool_call>")  # raw-text values cannot hold these
FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
JSON_TYPE_NAMES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
                   (dict, "object"), (list, "array"), (type(None), "null"))


def json_type(value: Any) -> str:
    return next(name for kind, name in JSON_TYPE_NAMES if isinstance(value, kind))


def call_lists(keys: st.SearchStrategy[str]) -> st.SearchStrategy[list[ToolCall]]:
    call = st.tuples(NAMES, st.dictionaries(keys, JSON_VALUES, max_size=4))
    return st.lists(call, min_size=1, max_size=3, unique_by=lambda item: item[0]).map(
        lambda items: [ToolCall(n, a, f"call_{i}") for i, (n, a) in enumerate(items)])


def names_and_arguments(calls: Any) -> list[tuple[str, Any]]:
    return [(c.name, c.arguments) for c in calls]


@FAST
@given(calls=call_lists(st.text(max_size=10)), fmt=st.sampled_from(["hermes", "json", "openai"]))
def test_render_then_parse_round_trips_json_formats(calls: list[ToolCall], fmt: str) -> None:
    parsed = parse_action(render_calls(calls, fmt))
    assert names_and_arguments(parsed.calls) == names_and_arguments(calls)


@FAST
@given(calls=call_lists(KEYS))
def test_render_then_parse_round_trips_qwen3_coder_given_schemas(calls: list[ToolCall]) -> None:
    assume(not any(bad in json.dumps(c.arguments, ensure_ascii=False)
                   for c in calls for bad in QWEN_UNSAFE))
    schemas = {c.name: {"type": "object", "properties": {
        k: {"type": json_type(v)} for k, v in c.arguments.items()}} for c in calls}
    parsed = parse_action(render_calls(calls, "qwen3_coder"), schemas)
    assert names_and_arguments(parsed.calls) == names_and_arguments(calls)


def assert_well_formed(parsed: ParsedAction) -> None:
    assert isinstance(parsed, ParsedAction) and isinstance(parsed.content, str)
    for call in parsed.calls:
        if isinstance(call, CallError):
            assert call.message and len(call.raw) <= 200 and call.id
        else:
            assert isinstance(call, ToolCall) and call.name and isinstance(call.arguments, dict)


FRAGMENTS = st.sampled_from([
    "<tool_call>", "</tool_call>", "<function=", "</function>", "<parameter=", "</parameter>", ">",
    "{", "}", "[", "]", '"', "\\", ":", ",", "\n", " ", "a", "```", '"name": "a__b"', '"arguments"',
    "1", "null", "\x00"])


@settings(max_examples=300, deadline=None)
@given(text=st.text() | st.lists(FRAGMENTS, max_size=40).map("".join))
def test_parse_never_raises_on_arbitrary_text(text: str) -> None:
    assert_well_formed(parse_action(text, SCHEMAS))


CALL_KEYS = st.sampled_from(["name", "arguments", "parameters", "function"])


@FAST
@given(value=JSON_VALUES | st.dictionaries(CALL_KEYS, JSON_VALUES))
def test_parse_never_raises_on_arbitrary_json_in_tags(value: Any) -> None:
    assert_well_formed(parse_action(f"<tool_call>{json.dumps(value)}</tool_call>"))
    assert_well_formed(parse_action(json.dumps(value)))


MESSAGE_KEYS = st.sampled_from(["role", "content", "tool_calls", "name", "arguments", "function",
                                "id", "type"])


@FAST
@given(value=st.dictionaries(MESSAGE_KEYS | st.text(max_size=5), JSON_VALUES, max_size=5)
       | st.lists(st.dictionaries(MESSAGE_KEYS, JSON_VALUES, max_size=4), max_size=3))
def test_parse_never_raises_on_arbitrary_mappings(value: Any) -> None:
    assert_well_formed(parse_action(value))


@settings(max_examples=300, deadline=None)
@given(text=st.text())
def test_plain_text_is_always_a_final_answer(text: str) -> None:
    assume("<tool_call>" not in text and "<function=" not in text)
    assume(not text.strip().startswith(("{", "[", "```")))
    assert parse_action(text) == ParsedAction(text.strip(), (), None)
