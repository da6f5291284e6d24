"""Tool-call parsing (hermes, qwen3_coder, json, openai) and rendering."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from compoenv.untrusted import too_deep

__all__ = ["MAX_ACTION_CHARS", "MAX_JSON_DEPTH", "MAX_CALLS_PER_ACTION", "MAX_ARGUMENT_CHARS",
           "MAX_RESULT_CHARS", "MAX_NAME_CHARS", "FORMATS", "ToolCall", "CallError",
           "ParsedAction", "parse_action", "render_calls", "to_openai_tool_calls"]

MAX_ACTION_CHARS = 1 << 20  # one action's text (or, from Python, its data as JSON)
MAX_JSON_DEPTH = 64
# The per-action budget, so that no action can stall a step or flood an observation:
MAX_CALLS_PER_ACTION = 32   # calls read and run; later ones share one 422 envelope, unrun
MAX_ARGUMENT_CHARS = 1 << 16  # all calls' arguments, as compact JSON; a call that does not fit
                              # in what is left is answered 422 and not run
MAX_RESULT_CHARS = 1 << 15  # one call's output as the agent reads it (less when many calls
                            # share the observation, spaces.tool_output_limit)
MAX_NAME_CHARS = 200        # a tool name or call id
FORMATS = ("hermes", "qwen3_coder", "json", "openai")

# Tag lengths appear as literals on the hot path: <tool_call> 11, </tool_call> 12,
# <function= 10, </function> 11, <parameter= 11, </parameter> 12.
_TC_OPEN, _TC_CLOSE, _TC_CLOSE_ESCAPED = "<tool_call>", "</tool_call>", "<\\/tool_call>"
_FN_OPEN, _FN_CLOSE = "<function=", "</function>"
_P_OPEN, _P_CLOSE = "<parameter=", "</parameter>"
_EXAMPLE = '{"name": "service__tool", "arguments": {...}}'
_OPENAI_EXAMPLE = ('{"id": "call_0", "type": "function", '
                   '"function": {"name": "service__tool", "arguments": "{...}"}}')

# No pattern below backtracks more than a bounded amount per start position (greedy runs that
# always succeed, disjoint alternatives, capped repeats), so parsing 1 MB of hostile text
# stays linear.
_WS = re.compile(r"\s*")
_CALLISH = re.compile(r'"(?:name|arguments|parameters|function|tool_calls)"\s*:')
_NAME_IN_JSON = re.compile(r'"name"\s*:\s*"((?:[^"\\\n]|\\.){1,200})"')
_NAME_IN_TAG = re.compile(r"<function=([^>\n]{1,200})>")
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_FENCE_LANG = re.compile(r"[\w+.-]*")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON (use null or a finite number)")


def _finite(text: str) -> float:
    value = float(text)
    if value - value != 0.0:  # inf: 1e999 overflows to infinity, which JSON cannot carry
        raise ValueError(f"{text[:40]} is out of range for a JSON number")
    return value


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite)
# Python actions become JSON data by a round trip through this encoder: sets, bytes, objects,
# NaN, circular containers and integers over json's digit limit make it raise
_STRICT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_ARGUMENTS = json.JSONEncoder(ensure_ascii=False)  # json.dumps(..., ensure_ascii=False), made once
_Schemas = Mapping[str, Mapping[str, Any]] | None
_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", dict: "object",
               list: "array", type(None): "null"}


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One parsed tool call.

    Attributes:
        name: Qualified tool name (``<service>__<tool>``), stripped.
        arguments: The call's arguments (a JSON object).
        id: The id the agent gave (openai format), else ``call_<i>`` by position in the action.
    """

    name: str
    arguments: dict[str, Any]
    id: str


@dataclass(frozen=True, slots=True)
class CallError:
    """A tool call that was attempted but could not be parsed.

    Attributes:
        message: What was expected, what came (quoted, at most 80 characters), the likely fix.
        raw: The offending text, truncated to 200 characters.
        id: The given openai id, else ``call_<i>`` by position in the action.
        name: The tool name, if it could be recovered.
        code: The error envelope's code: 400 unreadable, 422 over the per-action budget.
    """

    message: str
    raw: str
    id: str
    name: str | None = None
    code: int = 400


@dataclass(frozen=True, slots=True)
class ParsedAction:
    """An agent action split into free text and tool calls.

    Attributes:
        content: Text outside the calls, stripped: the final answer when there are no calls.
        calls: Parsed calls and failed attempts, in the order they appeared.
        format: "hermes", "qwen3_coder", "json", "openai", or None for plain text.
    """

    content: str
    calls: tuple[ToolCall | CallError, ...]
    format: str | None

    @property
    def is_final(self) -> bool:
        """True iff the action holds no tool call, not even a failed one."""
        return not self.calls


def parse_action(action: str | Mapping[str, Any] | Sequence[Mapping[str, Any]],
                 schemas: Mapping[str, Mapping[str, Any]] | None = None) -> ParsedAction:
    """Split an agent action into text and tool calls. Never raises on agent input.

    Args:
        action: Model output text (hermes ``<tool_call>`` JSON, qwen3_coder ``<function=...>``,
            or text that is entirely call-shaped JSON, fenced or not), an OpenAI assistant
            message or tool-call dict, or a list of OpenAI tool-call dicts.
        schemas: Tool name -> that tool's JSON-schema "parameters" object; types qwen3_coder
            parameter values and lets a bare ``{"name": ...}`` count as a call.

    Returns:
        The ParsedAction; calls that could not be parsed are CallError entries in ``calls``,
        and so are calls over the per-action budget (``MAX_CALLS_PER_ACTION`` calls, their
        arguments ``MAX_ARGUMENT_CHARS`` characters together; code 422). A Python action is
        JSON data or an error: its calls' arguments are plain copies.
    """
    if isinstance(action, str):
        # an action this short cannot hold more arguments than the budget (JSON re-encoding
        # at most sextuples a character: a control character becomes \u0001)
        return _budgeted(_parse_text(action, schemas), len(action) * 6 > MAX_ARGUMENT_CHARS)
    try:
        return _budgeted(_parse_data(action, schemas))
    except Exception as exc:  # an agent-built object that breaks when read (a broken Mapping)
        message = (f"the action could not be read ({type(exc).__name__}: "
                   f"{_quote(str(exc))}): send text, or JSON data such as {_OPENAI_EXAMPLE}")
        return ParsedAction("", (_error(message, None, 0),), None)


def _parse_data(action: Any, schemas: _Schemas) -> ParsedAction:
    if not isinstance(action, (Mapping, Sequence)) or isinstance(action, (str, bytes,
                                                                          bytearray)):
        message = (f"unsupported action type {type(action).__name__}: expected str (model "
                   f"output), an assistant message dict, or a list of tool-call dicts like "
                   f"{_OPENAI_EXAMPLE}")
        return ParsedAction("", (_error(message, None, 0, None, action),), None)
    plain, problem = _as_json(action, "the action")
    if problem is None:
        if isinstance(plain, dict):
            return _parse_message(plain, schemas)
        return _parse_openai_list(plain, "")
    # not JSON data as a whole: read it call by call, so the calls that are data still run
    calls = action.get("tool_calls") if isinstance(action, Mapping) else action
    if isinstance(action, Mapping) and isinstance(calls, Sequence) and calls \
            and not isinstance(calls, (str, bytes, bytearray)):
        content, problem = _as_json(_content_text(action.get("content")), "the content")
        return _parse_openai_list(calls, content if problem is None else "", checked=False)
    if not isinstance(action, Mapping) and action:
        return _parse_openai_list(action, "", checked=False)
    return ParsedAction("", (_error(problem, None, 0, None, action),), None)


def _as_json(value: Any, what: str) -> tuple[Any, str | None]:
    """``value`` as plain JSON data (a copy), or what keeps it from being JSON data."""
    try:
        text = _STRICT.encode(value)
    except (TypeError, ValueError, RecursionError) as exc:
        return None, (f"{what} is not JSON data ({type(exc).__name__}: {_quote(str(exc))}): "
                      f"send only objects with string keys, arrays, strings, finite numbers, "
                      f"true, false and null")
    if len(text) > MAX_ACTION_CHARS:
        return None, (f"{what} is {len(text):,} characters as JSON, over the limit of "
                      f"{MAX_ACTION_CHARS:,} (MAX_ACTION_CHARS); send shorter calls")
    return _loads(text, f"in {what}")


def _budgeted(parsed: ParsedAction, measure: bool = True) -> ParsedAction:
    """Calls whose arguments do not fit in what is left of ``MAX_ARGUMENT_CHARS`` (or whose
    name is too long) become CallErrors, and are not run; the calls that fit still run.
    ``measure=False``: the arguments are known to fit, only names are checked."""
    left, calls, changed = MAX_ARGUMENT_CHARS, [], False
    for call in parsed.calls:
        if isinstance(call, ToolCall):
            problem = None
            if len(call.name) > MAX_NAME_CHARS:
                problem = _error(f"tool name is {len(call.name):,} characters, over the limit "
                                 f"of {MAX_NAME_CHARS} (MAX_NAME_CHARS); expected a name like "
                                 f'"service__tool"', call.name, call.id)
            elif measure:
                text = _STRICT.encode(call.arguments)
                if len(text) > left:
                    problem = _error(
                        f"call to {call.name!r} was not run: its arguments are {len(text):,} "
                        f"characters as JSON and {left:,} of this action's {MAX_ARGUMENT_CHARS:,} "
                        f"(MAX_ARGUMENT_CHARS) are left; send shorter arguments, or spread the "
                        f"calls over several actions", text, call.id, call.name, code=422)
                else:
                    left -= len(text)
            if problem is not None:
                call, changed = problem, True
        calls.append(call)
    return ParsedAction(parsed.content, tuple(calls), parsed.format) if changed else parsed


def _too_many(rest: str, index: int, more: int) -> CallError:
    """The one envelope that answers every call after the first ``MAX_CALLS_PER_ACTION``."""
    message = (f"this action holds more than {MAX_CALLS_PER_ACTION} tool calls, the most one "
               f"action may make (MAX_CALLS_PER_ACTION): the first {MAX_CALLS_PER_ACTION} were "
               f"read, the {more:,} after them were not run; send them in later actions")
    return _error(message, rest, index, code=422)


def render_calls(calls: Sequence[ToolCall], fmt: str = "hermes", content: str = "") -> str:
    """Render tool calls as model output that parse_action reads back.

    ``parse_action(render_calls(calls, fmt), schemas)`` gives back the same names and
    arguments. qwen3_coder values are raw text, so there string values must not contain
    ``</parameter>``, ``</function>`` or ``</tool_call>``, parameter names must not contain
    ``>``, and non-string values come back typed only when ``schemas`` types them.

    Args:
        calls: The calls to render; none renders ``content`` alone (a final answer).
        fmt: "hermes", "qwen3_coder", "json" (one object, or a list for several calls) or
            "openai" (a JSON ``{"content", "tool_calls"}`` message).
        content: Text before the calls; fmt="json" has no place for it.

    Raises:
        ValueError: Unknown ``fmt``, or ``content`` with calls in fmt="json".
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if not calls:
        return content
    if fmt == "json":
        if content:
            raise ValueError("fmt='json' renders calls only; use 'hermes' or 'openai' for content")
        items = [{"name": c.name, "arguments": c.arguments} for c in calls]
        return json.dumps(items[0] if len(items) == 1 else items, ensure_ascii=False)
    if fmt == "openai":
        message = {"content": content, "tool_calls": to_openai_tool_calls(calls)}
        return json.dumps(message, ensure_ascii=False)
    render = _render_hermes if fmt == "hermes" else _render_qwen
    text = "\n".join(render(c) for c in calls)
    return f"{content}\n{text}" if content else text


def to_openai_tool_calls(calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    """Convert calls to OpenAI chat ``tool_calls`` entries, arguments as a JSON string."""
    return [{"id": c.id, "type": "function", "function": {
        "name": c.name, "arguments": _ARGUMENTS.encode(c.arguments)}} for c in calls]


# --- text ---------------------------------------------------------------------------------

def _parse_text(text: str, schemas: _Schemas) -> ParsedAction:
    if len(text) > MAX_ACTION_CHARS:
        message = (f"action is {len(text):,} characters, over the limit of {MAX_ACTION_CHARS:,} "
                   f"(MAX_ACTION_CHARS); it was not parsed: send shorter calls or a shorter answer")
        return ParsedAction("", (_error(message, text, 0),), None)
    has_tags = _TC_OPEN in text or _FN_OPEN in text
    stripped = text.strip()
    # A JSON call whose string values mention a tag is still JSON; tags win otherwise.
    if stripped[:1] in ("{", "[") or stripped.startswith("```"):
        parsed = _parse_bare_json(stripped, schemas, has_tags)
        if parsed is not None:
            return parsed
    return _parse_tags(text, schemas) if has_tags else ParsedAction(stripped, (), None)


def _parse_tags(text: str, schemas: _Schemas) -> ParsedAction:
    calls: list[ToolCall | CallError] = []
    outside: list[str] = []
    fmt: str | None = None
    pos = 0
    next_tc, next_fn = text.find(_TC_OPEN), text.find(_FN_OPEN)
    while next_tc != -1 or next_fn != -1:
        if len(calls) >= MAX_CALLS_PER_ACTION:  # the rest is counted, not read
            start = min(i for i in (next_tc, next_fn) if i != -1)
            outside.append(text[pos:start])
            rest = text[start:]
            calls.append(_too_many(rest, len(calls), max(rest.count(_TC_OPEN),
                                                         rest.count(_FN_OPEN))))
            pos = len(text)
            break
        if next_fn == -1 or 0 <= next_tc < next_fn:  # <tool_call> ... </tool_call>
            outside.append(text[pos:next_tc])
            close = text.find(_TC_CLOSE, next_tc + 11)
            inner = text[next_tc + 11:close if close != -1 else len(text)].strip()
            is_qwen = inner.startswith(_FN_OPEN)
            fmt = fmt or ("qwen3_coder" if is_qwen else "hermes")
            if close == -1:
                calls.append(_unterminated(_TC_OPEN, _TC_CLOSE, text[next_tc:], len(calls)))
                pos = len(text)
                break
            if is_qwen:
                _parse_qwen_block(inner, calls, schemas)
            else:
                calls.append(_call_from_json_text(inner, len(calls)))
            pos = close + 12
        else:  # a bare <function=...> ... </function>
            outside.append(text[pos:next_fn])
            fmt = fmt or "qwen3_coder"
            end = text.find(_FN_CLOSE, next_fn)
            if end == -1:
                calls.append(_unterminated("<function=...>", _FN_CLOSE, text[next_fn:], len(calls)))
                pos = len(text)
                break
            calls.append(_parse_function(text, next_fn, end, len(calls), schemas))
            pos = _WS.match(text, end + 11).end()
            # Qwen3-Coder sometimes drops the opening <tool_call> but still closes it.
            pos = pos + 12 if text.startswith(_TC_CLOSE, pos) else end + 11
        # Positions are searched again only once passed, and -1 is final: linear overall.
        if 0 <= next_tc < pos:
            next_tc = text.find(_TC_OPEN, pos)
        if 0 <= next_fn < pos:
            next_fn = text.find(_FN_OPEN, pos)
    outside.append(text[pos:])
    joined = "".join(outside)
    content = "\n".join(filter(None, map(str.strip, outside))) if joined.strip() else ""
    return ParsedAction(content, tuple(calls), fmt)


def _unterminated(tag: str, closer: str, tail: str, index: int) -> CallError:
    message = (f"unterminated {tag}: expected {closer} after the call, but the action ended; got "
               f"{_quote(tail)}; close every {tag} with {closer}")
    return _error(message, tail, index, _recover_name(tail))


def _parse_qwen_block(text: str, calls: list[ToolCall | CallError], schemas: _Schemas) -> None:
    pos = 0
    while (start := text.find(_FN_OPEN, pos)) != -1:
        if len(calls) >= MAX_CALLS_PER_ACTION:
            calls.append(_too_many(text[start:], len(calls), text.count(_FN_OPEN, start)))
            return
        end = text.find(_FN_CLOSE, start)
        end = len(text) if end == -1 else end  # </function> is optional inside a closed block
        calls.append(_parse_function(text, start, end, len(calls), schemas))
        pos = end + 11


def _parse_function(text: str, start: int, end: int, index: int,
                    schemas: _Schemas) -> ToolCall | CallError:
    """Parse ``<function=NAME><parameter=KEY>\nVALUE\n</parameter>...`` in text[start:end]."""
    gt = text.find(">", start + 10, end)
    name = text[start + 10:gt].strip() if gt != -1 else ""
    if not name:
        return _error(f"malformed <function=...>: expected <function=service__tool>, got "
                      f"{_quote(text[start:end])}", text[start:end], index)
    props = _properties(schemas, name)
    arguments: dict[str, Any] = {}
    pos, no_close = gt + 1, False
    while (p := text.find(_P_OPEN, pos, end)) != -1:
        p_gt = text.find(">", p + 11, end)
        key = text[p + 11:p_gt].strip() if p_gt != -1 else ""
        if not key:
            raw = text[p:end]
            return _error(f"malformed <parameter=...> in call to {name!r}: expected "
                          f"<parameter=key>\nvalue\n</parameter>, got {_quote(raw)}",
                          raw, index, name)
        close = -1 if no_close else text.find(_P_CLOSE, p_gt + 1, end)
        if close == -1:  # lenient: a missing </parameter> ends at the next parameter
            no_close = True
            nxt = text.find(_P_OPEN, p_gt + 1, end)
            close = pos = end if nxt == -1 else nxt
        else:
            pos = close + 12
        value = text[p_gt + 1:close]
        if value.startswith("\n"):
            value = value[1:]
        if value.endswith("\n"):
            value = value[:-1]
        arguments[key] = _convert(value, props.get(key) if props is not None else None)
    return ToolCall(name, arguments, f"call_{index}")


def _properties(schemas: _Schemas, name: str) -> Mapping[str, Any] | None:
    schema = schemas.get(name) if schemas else None
    for key in ("function", "parameters"):  # also accept OpenAI tool / function entries
        if isinstance(schema, Mapping) and "properties" not in schema and key in schema:
            schema = schema[key]
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    return props if isinstance(props, Mapping) else None


def _schema_types(prop: Any) -> set[str] | None:
    """The JSON types a property allows, or None when its schema does not say."""
    if not isinstance(prop, Mapping):
        return None
    kind = prop.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list) and all(isinstance(k, str) for k in kind):
        return set(kind)
    options = prop.get("anyOf") or prop.get("oneOf")
    if isinstance(options, list) and options:
        option_types = [_schema_types(option) for option in options]
        return None if None in option_types else set().union(*option_types)
    return None


def _convert(value: str, prop: Any) -> Any:
    """Type a raw qwen3_coder parameter value by its schema; raw text when unsure."""
    types = _schema_types(prop)
    stripped = value.strip()
    if types is None:  # untyped: decode only text that looks like non-string JSON
        if stripped[:1] in ("{", "[") or stripped in ("true", "false", "null") \
                or _JSON_NUMBER.fullmatch(stripped):
            decoded, error = _loads(stripped, "")
            if error is None and not isinstance(decoded, str):
                return decoded
        return value
    if "string" in types:
        return None if "null" in types and stripped == "null" else value
    decoded, error = _loads(stripped, "")
    if error is None:
        return decoded
    if "boolean" in types and stripped.lower() in ("true", "false"):
        return stripped.lower() == "true"
    return value  # argument validation reports the type error


# --- JSON ---------------------------------------------------------------------------------

def _parse_bare_json(stripped: str, schemas: _Schemas, has_tags: bool) -> ParsedAction | None:
    """An action that is entirely call-shaped JSON, or None (a final answer, or tags to parse)."""
    text = _unfence(stripped) if stripped.startswith("```") else stripped
    if text is None or text[:1] not in ("{", "["):
        return None
    value, error = _loads(text, "in the action")
    if error is not None:  # broken JSON is a failed call only if it names call keys
        if has_tags or not _CALLISH.search(text):
            return None
        return ParsedAction("", (_error(error, text, 0, _recover_name(text)),), "json")
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
        return _parse_message(value, schemas)
    items = value if isinstance(value, list) else [value]
    if not any(_is_callish(item, schemas) for item in items):
        return None
    first = items[0]
    openai = isinstance(first, dict) and "name" not in first and "function" in first
    fmt = "openai" if openai else "json"
    calls = [_call_from_obj(item, i, "in the JSON action", None, text)
             for i, item in enumerate(items[:MAX_CALLS_PER_ACTION])]
    if len(items) > MAX_CALLS_PER_ACTION:
        calls.append(_too_many(_safe_repr(items[MAX_CALLS_PER_ACTION])[:200], len(calls),
                               len(items) - MAX_CALLS_PER_ACTION))
    return ParsedAction("", tuple(calls), fmt)


def _is_callish(item: Any, schemas: _Schemas) -> bool:
    if not isinstance(item, dict):
        return False
    if "arguments" in item or "parameters" in item or isinstance(item.get("function"), Mapping):
        return True
    name = item.get("name")
    return bool(schemas) and isinstance(name, str) and name.strip() in schemas


def _unfence(text: str) -> str | None:
    """The inside of a ```lang fenced block that is the whole text, else None."""
    newline = text.find("\n")
    if newline == -1 or len(text) < 7 or not text.endswith("```"):
        return None
    return text[newline + 1:-3].strip() if _FENCE_LANG.fullmatch(text, 3, newline) else None


def _call_from_json_text(text: str, index: int) -> ToolCall | CallError:
    if text.startswith("```"):
        text = _unfence(text) or text
    if not text:
        return _error(f"empty <tool_call>: expected a JSON object like {_EXAMPLE} between "
                      f"<tool_call> and </tool_call>", text, index)
    value, error = _loads(text, "in <tool_call>")
    if error is not None:
        if _TC_OPEN in text:
            error += " (a second <tool_call> opened before </tool_call>)"
        return _error(error, text, index, _recover_name(text))
    return _call_from_obj(value, index, "in <tool_call>", None, text)


def _call_from_obj(obj: Any, index: int, where: str, given_id: str | None,
                   raw: str | None) -> ToolCall | CallError:
    """A call from a decoded object; ``raw`` is its JSON text (None: a caller-owned mapping)."""
    if type(obj) is not dict and not isinstance(obj, Mapping):
        return _error(f"expected a JSON object like {_EXAMPLE} {where}, got {_json_type(obj)} "
                      f"{_quote(obj)}; send one object per call", raw, index, None, obj)
    call_id = given_id or f"call_{index}"
    if "name" not in obj and "function" in obj:  # OpenAI: {"type": "function", "function": {...}}
        obj = obj["function"]
        if not isinstance(obj, Mapping):
            return _error(f'"function" {where} must be an object like {_EXAMPLE}, got '
                          f"{_json_type(obj)} {_quote(obj)}", raw, call_id, None, obj)
    name = obj.get("name")
    if type(name) is not str:
        problem = (f'missing "name" {where}, got keys [{_keys(obj)}]' if "name" not in obj else
                   f'"name" {where} must be a string, got {_json_type(name)} {_quote(name)}')
        return _error(f"{problem}; expected {_EXAMPLE}", raw, call_id, None, obj)
    name = name.strip()
    if not name:
        return _error(f'empty "name" {where}: expected a tool name like "service__tool"',
                      raw, call_id, None, obj)
    arguments = obj.get("arguments")
    if arguments is None:
        arguments = obj.get("parameters")
    if type(arguments) is dict:
        return ToolCall(name, arguments if raw is not None else dict(arguments), call_id)
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return ToolCall(name, {}, call_id)
    if isinstance(arguments, str):  # some models JSON-encode the arguments object
        arguments, error = _loads(arguments, f'in the "arguments" string of {name!r}')
        if error is not None:
            return _error(error, raw, call_id, name, obj)
    if isinstance(arguments, Mapping):
        return ToolCall(name, dict(arguments), call_id)
    return _error(f'"arguments" of {name!r} must be a JSON object like {{"city": "Paris"}}, got '
                  f"{_json_type(arguments)} {_quote(arguments)}", raw, call_id, name, obj)


def _loads(text: str, where: str) -> tuple[Any, str | None]:
    """Decode JSON, or return an error message; never raises."""
    # The bracket count bounds the depth, so the exact scan runs only on bracket-heavy text.
    if too_deep(text, MAX_JSON_DEPTH):
        return None, (f"JSON {where} is nested more than {MAX_JSON_DEPTH} levels deep (the limit, "
                      f"MAX_JSON_DEPTH); got {_quote(text)}; flatten the arguments")
    try:
        return _DECODER.decode(text), None
    except json.JSONDecodeError as exc:
        near = text[max(0, exc.pos - 30):exc.pos + 30]
        return None, (f"invalid JSON {where} at char {exc.pos}: {exc.msg} near {near!r}; "
                      f"{_hint(exc.msg)}")
    except RecursionError:
        return None, f"JSON {where} is nested too deeply to parse; flatten the arguments"
    except ValueError as exc:  # NaN/Infinity, integers over the digit limit
        return None, f"invalid JSON {where}: {exc}; got {_quote(text)}"


def _hint(msg: str) -> str:
    if "control character" in msg:
        return "escape newlines and tabs inside strings as \\n and \\t"
    if "double quotes" in msg:
        return "use double-quoted keys and strings (JSON, not a Python dict)"
    if msg.startswith("Extra data"):
        return "send one JSON object per call, each in its own <tool_call> block"
    return f"send one complete JSON object like {_EXAMPLE}"


# --- openai -------------------------------------------------------------------------------

def _parse_message(msg: Mapping[Any, Any], schemas: _Schemas) -> ParsedAction:
    content = _content_text(msg.get("content"))
    tool_calls = msg.get("tool_calls")
    if tool_calls is not None:
        if not isinstance(tool_calls, Sequence) or isinstance(tool_calls, (str, bytes, bytearray)):
            message = (f'"tool_calls" must be a list like [{_OPENAI_EXAMPLE}], got '
                       f"{_json_type(tool_calls)} {_quote(tool_calls)}")
            error = _error(message, None, 0, None, tool_calls)
            return ParsedAction(content.strip(), (error,), "openai")
        if tool_calls:
            return _parse_openai_list(tool_calls, content.strip())
    if "tool_calls" in msg or "content" in msg or "role" in msg:
        return _parse_text(content, schemas)  # servers without a tool parser leave tags in content
    if "name" in msg or "function" in msg:
        return ParsedAction("", (_openai_call(msg, 0),), "openai")
    message = (f"unrecognised action dict with keys [{_keys(msg)}]: expected an assistant "
               f'message with "content" and "tool_calls", or a tool call like '
               f"{_OPENAI_EXAMPLE}")
    return ParsedAction("", (_error(message, None, 0, None, msg),), None)


def _parse_openai_list(items: Sequence[Any], content: str,
                       checked: bool = True) -> ParsedAction:
    """Calls from a list of tool-call objects; ``checked``: the list is plain JSON data
    already, else each item is made so (or becomes a CallError) first."""
    n = min(len(items), MAX_CALLS_PER_ACTION)
    calls = [_openai_call(items[i], i, checked) for i in range(n)]
    if len(items) > n:
        calls.append(_too_many(_safe_repr(items[n])[:200], n, len(items) - n))
    return ParsedAction(content, tuple(calls), "openai" if calls else None)


def _openai_call(item: Any, index: int, checked: bool = True) -> ToolCall | CallError:
    if not checked:
        item, problem = _as_json(item, f"tool call #{index}")
        if problem is not None:
            return _error(problem, None, index)
    given = item.get("id") if isinstance(item, Mapping) else None
    given_id = (given.strip()[:MAX_NAME_CHARS] or None) if isinstance(given, str) else None
    return _call_from_obj(item, index, f"in tool call #{index}", given_id, None)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        return "".join(p["text"] for p in content
                       if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    return ""


# --- helpers ------------------------------------------------------------------------------

def _render_hermes(call: ToolCall) -> str:
    text = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
    # A string value holding "</tool_call>" would end the block early; "\/" is a JSON escape.
    return f"{_TC_OPEN}\n{text.replace(_TC_CLOSE, _TC_CLOSE_ESCAPED)}\n{_TC_CLOSE}"


def _render_qwen(call: ToolCall) -> str:
    params = "".join(
        f"{_P_OPEN}{key}>\n{v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}\n"
        f"{_P_CLOSE}\n" for key, v in call.arguments.items())
    return f"{_TC_OPEN}\n{_FN_OPEN}{call.name}>\n{params}{_FN_CLOSE}\n{_TC_CLOSE}"


def _error(message: str, raw: str | None, index: int | str, name: str | None = None,
           obj: Any = None, code: int = 400) -> CallError:
    """A CallError with id ``call_<index>`` (or ``index`` itself when it is a given id)."""
    text = raw if raw is not None else _safe_repr(obj)  # caller-owned values have no text
    call_id = index if isinstance(index, str) else f"call_{index}"
    return CallError(message, text[:200], call_id, name, code)


def _keys(obj: Mapping[Any, Any]) -> str:
    return ", ".join(_safe_repr(k) for k in list(obj)[:10])


def _recover_name(text: str) -> str | None:
    """The tool name an unparseable call seems to name, for the error report."""
    match = _NAME_IN_JSON.search(text, 0, 1000) or _NAME_IN_TAG.search(text, 0, 1000)
    return (match.group(1).strip() or None) if match else None


def _json_type(value: Any) -> str:
    kind = _JSON_TYPES.get(type(value))
    return kind or ("object" if isinstance(value, Mapping) else type(value).__name__)


def _quote(value: Any) -> str:
    """A repr of value showing at most 80 characters of it."""
    if isinstance(value, str):
        return repr(value if len(value) <= 80 else value[:77] + "...")
    text = _safe_repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception:  # agent-supplied objects may have a broken __repr__; never raise
        return object.__repr__(value)
