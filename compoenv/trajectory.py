"""The trajectory record (the SFT format of docs/architecture.md) as pydantic models, with JSONL reading and writing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Iterable, Iterator, Literal, Union

from pydantic import (BaseModel, ConfigDict, Field, field_validator, model_serializer,
                      model_validator)

from compoenv.task import iter_jsonl

__all__ = ["Trajectory", "TrajectoryMeta", "call_counts", "discover_mode", "AssistantMessage",
           "ToolMessage", "ToolCallEntry", "TrajectoryFileError", "iter_trajectories",
           "load_trajectories", "save_trajectories", "chat_inputs", "ARGUMENT_FORMS",
           "arguments_as"]

ARGUMENT_FORMS = ("object", "string")  # tool-call arguments: a JSON object, or its JSON text


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FunctionCall(_Strict):
    """A called function: its name and its arguments, a JSON object (the published format)
    or its JSON text (the OpenAI form); a call the env could not parse keeps its raw text."""

    name: str
    arguments: dict[str, Any] | str

    @field_validator("arguments", mode="before")
    @classmethod
    def _object_or_text(cls, value: Any) -> Any:
        if not isinstance(value, (str, dict)):
            raise ValueError(f"arguments must be a JSON object or its JSON text (json.dumps "
                             f"of the object), got {type(value).__name__}")
        return value


class ToolCallEntry(_Strict):
    """One entry of an assistant message's ``tool_calls``."""

    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class SystemMessage(_Strict):
    role: Literal["system"]
    content: str


class UserMessage(_Strict):
    role: Literal["user"]
    content: str


class AssistantMessage(_Strict):
    """An assistant turn: text, optional reasoning, optional tool calls (absent, not null)."""

    role: Literal["assistant"]
    content: str
    reasoning_content: str | None = None
    tool_calls: list[ToolCallEntry] | None = None

    @model_serializer(mode="wrap")
    def _drop_absent(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        return {k: v for k, v in data.items()
                if not (v is None and k in ("reasoning_content", "tool_calls"))}


class ToolMessage(_Strict):
    """The result of one tool call: the JSON envelope as text."""

    role: Literal["tool"]
    tool_call_id: str
    name: str
    content: str


Message = Annotated[Union[SystemMessage, UserMessage, AssistantMessage, ToolMessage],
                    Field(discriminator="role")]


class ToolFunction(_Strict):
    name: str
    description: str = ""
    parameters: dict[str, Any]


class ToolDefinition(_Strict):
    """A tool in OpenAI function-calling format."""

    type: Literal["function"] = "function"
    function: ToolFunction


class CriterionMark(_Strict):
    id: str
    passed: bool


class TrajectoryMeta(BaseModel):
    """Where a trajectory came from and how it scored; other keys are kept as given."""

    model_config = ConfigDict(extra="allow")

    task_id: str
    rollout_idx: int = Field(ge=0)
    rubric_score: float = Field(ge=0, le=1)
    score: float
    net_score: float | None = Field(None, ge=0, le=1)  # rubric score net of collateral damage
    n_tool_calls: int = Field(ge=0)
    n_real_tool_calls: int | None = Field(None, ge=0)  # calls that reach a service's tool
    n_steps: int = Field(ge=0)
    services: list[str]
    domain: str
    capabilities: list[str]
    finish_reason: str
    discover_mode: Literal["direct", "gateway"] | None = None
    rubric: list[CriterionMark] = []

    @field_validator("score")
    @classmethod
    def _binary(cls, value: float) -> float:
        if value not in (0.0, 1.0):
            raise ValueError(f"score is the binary outcome, 0 or 1; got {value} "
                             f"(the weighted score goes in rubric_score)")
        return value


class Trajectory(_Strict):
    """One episode: ``tools``, ``messages``, ``meta`` and ``source``.

    Beyond field types it checks that the conversation is well formed: a user turn comes
    before the first assistant turn, tool-call ids are unique within the conversation, every
    tool message answers a call of the assistant turn before it (by ``tool_call_id``), every
    call is answered once, ``meta.n_tool_calls`` counts the calls and
    ``meta.n_real_tool_calls`` (when given) those that reach a service's tool (every call
    but the gateway's list_services, list_tools and describe_tool).
    """

    tools: list[ToolDefinition]
    messages: list[Message] = Field(min_length=2)
    meta: TrajectoryMeta
    source: str

    @model_validator(mode="after")
    def _conversation(self) -> Trajectory:
        open_ids: dict[str, str] = {}
        first_seen: dict[str, int] = {}  # tool-call id -> the message that made the call
        seen_user = False
        calls = real = 0
        for i, msg in enumerate(self.messages):
            if isinstance(msg, SystemMessage) and i:
                raise ValueError(f"messages[{i}]: a system message may only come first")
            if isinstance(msg, UserMessage):
                seen_user = True
            if not isinstance(msg, ToolMessage) and open_ids:
                raise ValueError(f"messages[{i}]: tool call(s) {sorted(open_ids)} of the "
                                 f"assistant turn before have no tool message")
            if isinstance(msg, AssistantMessage):
                if not seen_user:
                    raise ValueError(f"messages[{i}]: an assistant turn before any user turn")
                for call in msg.tool_calls or ():
                    if call.id in first_seen:
                        where = ("this turn" if first_seen[call.id] == i
                                 else f"messages[{first_seen[call.id]}]")
                        raise ValueError(f"messages[{i}]: tool call id {call.id!r} is used "
                                         f"again (first in {where}); ids must be unique "
                                         f"within a conversation")
                    first_seen[call.id] = i
                    real += call.function.name not in _DISCOVERY
                open_ids = {c.id: c.function.name for c in msg.tool_calls or ()}
                calls += len(open_ids)
            elif isinstance(msg, ToolMessage):
                if msg.tool_call_id not in open_ids:
                    raise ValueError(f"messages[{i}]: tool message answers "
                                     f"{msg.tool_call_id!r}, which the assistant turn before "
                                     f"does not call (open calls: {sorted(open_ids) or 'none'})")
                name = open_ids.pop(msg.tool_call_id)
                if msg.name != name[:200]:
                    raise ValueError(f"messages[{i}]: tool message name {msg.name!r} differs "
                                     f"from the called function {name!r}")
        if open_ids:
            raise ValueError(f"tool call(s) {sorted(open_ids)} of the last assistant turn have "
                             f"no tool message")
        if calls != self.meta.n_tool_calls:
            raise ValueError(f"meta.n_tool_calls is {self.meta.n_tool_calls} but the messages "
                             f"hold {calls} tool calls")
        if self.meta.n_real_tool_calls is not None and real != self.meta.n_real_tool_calls:
            raise ValueError(f"meta.n_real_tool_calls is {self.meta.n_real_tool_calls} but the "
                             f"messages hold {real} calls that reach a service's tool (of "
                             f"{calls} calls; list_services, list_tools and describe_tool "
                             f"do not count)")
        return self

    def to_record(self) -> dict[str, Any]:
        """The record as plain JSON-able data (absent optional fields left out)."""
        return self.model_dump(mode="json")

    @property
    def passed(self) -> bool:
        """All required rubric criteria passed (``meta.score == 1``)."""
        return self.meta.score == 1.0


class TrajectoryFileError(ValueError):
    """A trajectory file line that is not valid JSON or not a valid Trajectory."""


def iter_trajectories(path: str | Path) -> Iterator[Trajectory]:
    """Trajectories of a JSONL file, one per non-blank line; errors name the file, line and
    field."""
    return iter_jsonl(path, Trajectory, TrajectoryFileError)


def load_trajectories(path: str | Path) -> list[Trajectory]:
    """Every trajectory of a JSONL file (see iter_trajectories)."""
    return list(iter_trajectories(path))


def save_trajectories(records: Iterable[Trajectory | dict[str, Any]], path: str | Path, *,
                      arguments: str = "object") -> int:
    """Validate and write records as JSONL; returns how many were written.

    Args:
        records: Trajectories (models or records).
        path: The JSONL file to write.
        arguments: Tool-call arguments as JSON objects (``"object"``, the published format)
            or as their JSON text (``"string"``, the OpenAI form); see arguments_as.

    Raises:
        ValidationError: a record is not a valid Trajectory (nothing after it is written).
        ValueError: an unknown ``arguments`` form.
    """
    _check_form(arguments)
    count = 0
    with open(path, "w", encoding="utf-8") as fh:
        for record in records:
            model = record if isinstance(record, Trajectory) else Trajectory.model_validate(record)
            data = arguments_as(model.to_record(), arguments)
            fh.write(json.dumps(data, ensure_ascii=False) + "\n")
            count += 1
    return count


def _check_form(form: str) -> None:
    if form not in ARGUMENT_FORMS:
        raise ValueError(f"arguments must be one of {ARGUMENT_FORMS}, got {form!r}")


def arguments_as(record: Trajectory | dict[str, Any], form: str = "object") -> dict[str, Any]:
    """The record with every tool call's ``arguments`` in one form (the record itself is
    not modified).

    ``"object"``: a JSON object, as in the published CompoWorld data (JSON text that holds an
    object is parsed). ``"string"``: its JSON text, the OpenAI chat-completions form
    (``json.dumps`` of an object). Either way, the raw text of a call the env could not
    parse (not a JSON object) stays the text it was.

    Raises:
        ValueError: an unknown form.
    """
    _check_form(form)
    data = record.to_record() if isinstance(record, Trajectory) else record
    messages = []
    for msg in data["messages"]:
        if msg.get("role") == "assistant" and msg.get("tool_calls"):
            msg = {**msg, "tool_calls": [
                {**c, "function": {**c["function"], "arguments": _in_form(
                    c["function"]["arguments"], form)}} for c in msg["tool_calls"]]}
        messages.append(msg)
    return {**data, "messages": messages}


def _in_form(arguments: Any, form: str) -> Any:
    if form == "string":
        return json.dumps(arguments, ensure_ascii=False) if isinstance(arguments, dict) \
            else arguments
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments)
        except json.JSONDecodeError:
            return arguments
        return value if isinstance(value, dict) else arguments
    return arguments


def chat_inputs(record: Trajectory | dict[str, Any], parse_arguments: bool = False
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(messages, tools)`` for ``tokenizer.apply_chat_template(messages, tools=tools)``.

    Args:
        record: A trajectory (a model, a record dict, or a row loaded by ``datasets``), its
            arguments in either form.
        parse_arguments: Give tool-call arguments as objects instead of JSON text; templates
            such as Llama 3.1's need objects (Qwen's accept both).
    """
    data = record.to_record() if isinstance(record, Trajectory) else record
    messages = []
    for msg in data["messages"]:
        msg = {k: v for k, v in msg.items() if v is not None}
        if msg.get("tool_calls"):
            msg["tool_calls"] = [{**c, "function": {**c["function"], "arguments": _object(
                c["function"]["arguments"]) if parse_arguments else _in_form(
                c["function"]["arguments"], "string")}} for c in msg["tool_calls"]]
        messages.append(msg)
    return messages, list(data["tools"])


def _object(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments)
    except json.JSONDecodeError:
        return {"raw": arguments}
    return value if isinstance(value, dict) else {"value": value}


_DISCOVERY = frozenset({"list_services", "list_tools", "describe_tool"})


def discover_mode(tools: Iterable[dict[str, Any]]) -> str:
    """"gateway" when the tools are the gateway's meta-tools, else "direct"."""
    names = {t.get("function", t).get("name") for t in tools}
    return "gateway" if "call_tool" in names and names <= _DISCOVERY | {"call_tool"} else "direct"


def call_counts(messages: Iterable[dict[str, Any]]) -> tuple[int, int]:
    """(tool calls, real tool calls): every call the assistant made, and those that reach a
    service's tool (not the gateway's list_services, list_tools or describe_tool)."""
    calls = [c for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls") or ()]
    real = sum(c.get("function", {}).get("name") not in _DISCOVERY for c in calls)
    return len(calls), real
