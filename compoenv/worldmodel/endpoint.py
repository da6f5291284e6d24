"""Endpoint world model: simulated tool answers from an OpenAI-compatible chat endpoint.

Any ``/v1/chat/completions`` server (vLLM, SGLang, a hosted API) plays the service: the prompt
states the tool, its arguments, today's date, the user, the service's stored records and the
return schema, and the reply is JSON of the schema ``{"data": <return value>, "patch": ...}``
(``patch`` only for writes: ``{collection: {key: record or null}}``), asked for as structured
output where the server supports it. An invalid reply gets one repair round; then the backend
gives up with ``WorldModelError`` and the Simulator falls back to the offline model.

The prompt and schema helpers here are shared with the local transformers backend.
"""

from __future__ import annotations

import json
from typing import Any

from compoenv.llm import ChatClient, EndpointConfig, LLMError
from compoenv.worldmodel.base import ToolAnswer, ToolRequest, WorldModelError
from compoenv.worldmodel.offline import collection_of

__all__ = [
    "RECORDS_BUDGET",
    "EndpointWorldModel",
    "answer_from",
    "build_messages",
    "response_schema",
]

RECORDS_BUDGET = 4000  # characters of stored records shown to the model

SYSTEM_PROMPT = (
    "You simulate the backend of a software service inside a test environment. For each tool "
    "call you receive, reply with what the real service would return: realistic, specific "
    "values (names, emails, dates, amounts) that are consistent with today's date, the user, "
    "the arguments and the records the service already stores. A read must return the stored "
    "records it matches; a write returns the created or changed record and, in \"patch\", "
    "the records to store (collection -> key -> record, or null to delete). Reply with one "
    "JSON object only, no prose and no code fence.")


def _strip_extensions(node: Any) -> Any:
    """The schema without ``x-*`` annotations (some structured-output engines reject them)."""
    if isinstance(node, dict):
        return {k: _strip_extensions(v) for k, v in node.items() if not str(k).startswith("x-")}
    if isinstance(node, list):
        return [_strip_extensions(v) for v in node]
    return node


def response_schema(request: ToolRequest) -> dict[str, Any]:
    """The JSON schema of a reply: ``{"data"}`` for reads, ``{"data", "patch"}`` for writes."""
    spec = request.spec
    properties: dict[str, Any] = {"data": _strip_extensions(spec.returns)}
    if not spec.read_only:
        record = {"anyOf": [{"type": "object"}, {"type": "null"}]}
        collection = collection_of(spec.name, spec.returns)
        properties["patch"] = {
            "type": "object", "additionalProperties": False,
            "properties": {collection: {"type": "object", "additionalProperties": record}}}
    return {"title": f"{spec.service}_{spec.name}_answer", "type": "object",
            "properties": properties, "required": sorted(properties),
            "additionalProperties": False}


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def records_excerpt(request: ToolRequest, budget: int = RECORDS_BUDGET) -> tuple[Any, int]:
    """(stored records to show, how many were left out): the tool's own collection first,
    records mentioning an argument value before the others, newest before oldest."""
    own = collection_of(request.spec.name, request.spec.returns)
    wanted = {str(v) for v in request.arguments.values() if isinstance(v, (str, int))}
    order = sorted(request.records, key=lambda c: c != own)
    shown: dict[str, dict[str, Any]] = {}
    used, omitted = 2, 0
    for collection in order:
        items = list((request.records.get(collection) or {}).items())[::-1]
        items.sort(key=lambda kv: not (kv[0] in wanted or any(
            str(v) in wanted for v in (kv[1].values() if isinstance(kv[1], dict) else ()))))
        for key, record in items:
            size = len(_dump({key: record})) + len(collection) + 6
            if used + size > budget:
                omitted += 1
                continue
            shown.setdefault(collection, {})[key] = record
            used += size
    return shown, omitted


def build_messages(request: ToolRequest, schema: dict[str, Any] | None = None,
                   records_budget: int = RECORDS_BUDGET) -> list[dict[str, str]]:
    """The chat messages for one simulated call (system prompt and one user message)."""
    spec, world = request.spec, request.world
    schema = schema if schema is not None else response_schema(request)
    user = world.user
    records, omitted = records_excerpt(request, records_budget)
    kind = "read-only" if spec.read_only else "write: it changes the service's stored records"
    lines = [
        f"Service: {spec.service}",
        f"Tool: {spec.qualified_name} ({kind})",
        f"Description: {spec.description}",
        f"Arguments: {_dump(request.arguments)}",
        f"Today: {world.today.isoformat()} ({world.today.strftime('%A')})",
        f"User: {user.name} <{user.email}>, {user.title} at {user.employer}, {user.city}",
        f"Stored records: {_dump(records)}"
        + (f" ({omitted} more not shown)" if omitted else ""),
        f"Return schema (of \"data\"): {_dump(spec.returns)}",
    ]
    if spec.read_only:
        lines.append('Reply with {"data": <the tool\'s return value>}.')
    else:
        collection = collection_of(spec.name, spec.returns)
        lines.append(f'Reply with {{"data": <the tool\'s return value>, "patch": '
                     f'{{"{collection}": {{"<record id>": <the record as stored, or null to '
                     f'delete it>}}}}}}. Use the id of the created or changed record as its key.')
    lines.append(f"Reply schema: {_dump(schema)}")
    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": "\n".join(lines)}]


def answer_from(value: Any, request: ToolRequest, source: str) -> ToolAnswer:
    """A ToolAnswer from a reply already valid against ``response_schema(request)``."""
    patch = (value.get("patch") or {}) if not request.spec.read_only else {}
    return ToolAnswer(value["data"], {c: dict(v) for c, v in patch.items()}, source)


class EndpointWorldModel:
    """Simulated answers from an OpenAI-compatible endpoint.

    Args:
        config: The endpoint (a ChatClient is built for it), or a ready ChatClient to share.
        records_budget: Characters of stored records put into each prompt.

    Raises (from ``answer``):
        WorldModelError: reason "invalid_output" when the reply is not valid after one repair
            round, else the ChatClient's reason ("timeout", "unreachable", "http_5xx",
            "http_4xx", "http_429", "too_large", "bad_response").
    """

    def __init__(self, config: EndpointConfig | ChatClient,
                 records_budget: int = RECORDS_BUDGET) -> None:
        self.client = config if isinstance(config, ChatClient) else ChatClient(config)
        self.records_budget = records_budget
        self.name = f"endpoint:{self.client.config.model}"

    def __repr__(self) -> str:
        return f"EndpointWorldModel({self.client.config.base_url!r}, {self.name!r})"

    def answer(self, request: ToolRequest) -> ToolAnswer:
        schema = response_schema(request)
        messages = build_messages(request, schema, self.records_budget)
        name = str(schema["title"])
        try:
            try:
                value = self.client.complete_json(messages, schema, schema_name=name)
            except LLMError as exc:
                if exc.reason != "bad_output":
                    raise
                repair = messages + [{"role": "user", "content": (
                    f"Your previous reply was not valid: {exc.detail}. Reply again with one "
                    "JSON object only that matches the reply schema exactly.")}]
                try:
                    value = self.client.complete_json(repair, schema, schema_name=name)
                except LLMError as again:
                    if again.reason != "bad_output":
                        raise
                    raise WorldModelError("invalid_output", f"after a repair round: "
                                                            f"{again.detail}") from None
        except LLMError as exc:
            raise WorldModelError(exc.reason, exc.detail) from None
        return answer_from(value, request, self.name)

    def close(self) -> None:
        """Release the client's connections."""
        self.client.close()
