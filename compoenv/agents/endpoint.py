"""An agent behind any OpenAI-compatible ``/v1/chat/completions`` endpoint (vLLM, SGLang,
hosted APIs), asynchronous so that one endpoint serves hundreds of episodes at once.

Tool calls go out natively (``tools=`` in the request, ``tool_calls`` in the reply) or as text
in the formats open models are trained on (``hermes``: ``<tool_call>{json}</tool_call>``,
``qwen3_coder``: ``<function=...><parameter=...>``); the env parses whichever comes back. A
reply's reasoning (``reasoning_content``, or a ``<think>`` block) is kept in the trajectory.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Sequence
from urllib.parse import urlsplit

from compoenv.actions import ToolCall, render_calls
from compoenv.llm import _one_line
from compoenv.prompts import tools_block

__all__ = ["EndpointAgent", "EndpointError", "Turn", "TOOL_FORMATS", "split_reasoning"]

TOOL_FORMATS = ("native", "hermes", "qwen3_coder")
_THINK = re.compile(r"^\s*<think>(.*?)</think>\s*", re.DOTALL)
_RETRYABLE = frozenset({408, 409, 429, 500, 502, 503, 504})


class EndpointError(Exception):
    """The endpoint gave no usable reply after every retry (``reason``: "timeout",
    "unreachable", "http_<code>", "bad_response")."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


@dataclass
class Turn:
    """One reply: the assistant message for ``env.step`` (content, optional
    ``reasoning_content`` and ``tool_calls``), the tokens it cost and how long it took."""

    message: dict[str, Any]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    attempts: int = 1
    finish_reason: str | None = None


@dataclass
class EndpointAgent:
    """Plays episodes with a model behind an OpenAI-compatible endpoint.

    Args:
        base_url: The API root, e.g. ``http://localhost:8000/v1``.
        model: The model name the endpoint serves.
        api_key: Sent as a bearer token (servers without auth ignore it).
        tool_format: "native" (the endpoint's tool calling), "hermes" or "qwen3_coder" (the
            tools listed in the system prompt, calls written as text).
        temperature: Sampling temperature.
        max_tokens: Most tokens per reply.
        timeout_s: Seconds one request may take.
        max_retries: Retries of a request that timed out, could not connect or got a 408,
            409, 429 or 5xx, with exponential backoff from ``backoff_s``.
        extra_body: More request fields (``top_p``, ``chat_template_kwargs``, ...), sent as
            they are.
        stream: Ask for the reply as server-sent events and assemble it (content, reasoning,
            tool calls, usage) as it comes.
    """

    base_url: str
    model: str
    api_key: str = "EMPTY"
    tool_format: Literal["native", "hermes", "qwen3_coder"] = "native"
    temperature: float = 0.0
    max_tokens: int = 2048
    timeout_s: float = 120.0
    max_retries: int = 3
    backoff_s: float = 0.5
    extra_body: dict[str, Any] = field(default_factory=dict)
    stream: bool = False
    _client: Any = field(default=None, init=False, repr=False)
    _http: Any = field(default=None, init=False, repr=False)
    _pid: int = field(default=0, init=False, repr=False)  # the process that made _client
    # it holds no model, only connections it makes where it runs: a forked worker process
    # plays with its own (compoenv.evaluation.evaluate(workers=...))
    forkable: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if self.tool_format not in TOOL_FORMATS:
            raise ValueError(f"tool_format must be one of {TOOL_FORMATS}, got "
                             f"{self.tool_format!r}")
        if self.max_retries < 0 or self.timeout_s <= 0:
            raise ValueError("need max_retries >= 0 and timeout_s > 0")
        url = urlsplit(self.base_url)
        if url.scheme not in ("http", "https") or not url.netloc:
            raise ValueError(f"base_url must be an http(s) URL with a host, such as "
                             f"http://localhost:8000/v1; got {self.base_url!r}")

    @property
    def name(self) -> str:
        return f"{self.model} ({self.tool_format})"

    def client(self) -> Any:
        """The aiohttp session (made on first use: it belongs to the running loop). Requests
        go out as plain JSON: the openai SDK's typed request and response models cost
        milliseconds per call, more than an episode step, and aiohttp's client is the
        leanest of the maintained async HTTP clients. A process forked from the one that made
        the session makes its own."""
        if self._client is None or self._pid != os.getpid():
            try:
                import aiohttp
            except ImportError:
                raise ImportError("EndpointAgent needs aiohttp, a dependency of compoenv: "
                                  "pip install aiohttp") from None
            self._http = aiohttp
            self._client = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self.timeout_s),
                headers={"Authorization": f"Bearer {self.api_key}"},
                connector=aiohttp.TCPConnector(limit=0))
            self._pid = os.getpid()
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def check(self) -> None:
        """Send the endpoint one short request and close the connection: a run on an endpoint
        that is down, on a wrong URL or model name, or without a valid key fails here, before
        any episode is played.

        Raises:
            EndpointError: no usable reply after every retry (the reason and the server's
                words).
        """
        request = {"model": self.model, "max_tokens": 1, "temperature": 0.0,
                   "messages": [{"role": "user", "content": "Reply with OK."}]}
        try:
            reply, _ = await self._complete(request)
            _turn(reply)
        finally:
            await self.aclose()

    async def respond(self, messages: Sequence[dict[str, Any]],
                      tools: Sequence[dict[str, Any]]) -> Turn:
        """The model's next turn in an episode whose transcript is ``messages`` (the env's
        ``info["messages"]``) and whose tools are ``tools`` (``info["tools"]``).

        Raises:
            EndpointError: no usable reply after every retry.
        """
        request: dict[str, Any] = {"model": self.model, "messages": self.request_messages(
            messages, tools), "temperature": self.temperature, "max_tokens": self.max_tokens}
        if self.tool_format == "native" and tools:
            request["tools"] = list(tools)
        if self.stream:
            request.update(stream=True, stream_options={"include_usage": True})
        request.update(self.extra_body)
        start = time.perf_counter()
        reply, attempts = await self._complete(request)
        turn = _turn(reply)
        turn.seconds, turn.attempts = time.perf_counter() - start, attempts
        return turn

    def request_messages(self, messages: Sequence[dict[str, Any]],
                         tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """The transcript as this endpoint is sent it: native tool calls as they are; in a
        text format, the tools listed in the system prompt and earlier calls written back as
        the text the model wrote."""
        if self.tool_format == "native":
            return [{k: v for k, v in m.items() if k != "reasoning_content"} for m in messages]
        out = []
        for m in messages:
            if m["role"] == "system":
                out.append({"role": "system", "content": f"{m['content']}\n\n{tools_block(tools)}"})
            elif m["role"] == "assistant" and m.get("tool_calls"):
                calls = [ToolCall(c["function"]["name"], _arguments(c["function"]["arguments"]),
                                  c["id"]) for c in m["tool_calls"]]
                out.append({"role": "assistant", "content": render_calls(
                    calls, self.tool_format, m.get("content") or "")})
            else:
                out.append({k: v for k, v in m.items() if k != "reasoning_content"})
        return out

    async def _complete(self, request: dict[str, Any]) -> tuple[dict[str, Any], int]:
        client = self.client()
        http = self._http
        url = self.base_url.rstrip("/") + "/chat/completions"
        for attempt in range(self.max_retries + 1):
            try:
                async with client.post(url, json=request) as response:
                    if response.status == 200:
                        reply = await (_assembled(response) if request.get("stream")
                                       else response.json(content_type=None))
                        return reply, attempt + 1
                    reason, retry = f"http_{response.status}", response.status in _RETRYABLE
                    detail = _one_line(await response.text())
            except asyncio.TimeoutError as exc:
                reason, retry, detail = "timeout", True, _one_line(f"{type(exc).__name__} {exc}")
            except http.ClientPayloadError as exc:  # the body was cut off
                reason, retry, detail = "bad_response", True, _one_line(str(exc))
            except http.ClientError as exc:
                reason, retry, detail = "unreachable", True, _one_line(f"{type(exc).__name__} "
                                                                       f"{exc}")
            except ValueError as exc:  # a 200 whose body is not JSON
                reason, retry, detail = "bad_response", False, _one_line(str(exc))
            if not retry or attempt == self.max_retries:
                raise EndpointError(reason, detail)
            await asyncio.sleep(self.backoff_s * 2 ** attempt)
        raise AssertionError("unreachable")


async def _assembled(response: Any) -> dict[str, Any]:
    """A streamed reply (server-sent ``data:`` chunks) put together as one chat completion:
    content and reasoning concatenated, tool calls by their index, the last finish reason and
    the usage chunk."""
    content, reasoning = [], []
    calls: dict[int, dict[str, Any]] = {}
    finish, usage = None, {}
    async for raw in response.content:
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            break
        chunk = json.loads(data)
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            finish = choice.get("finish_reason") or finish
            content.append(delta.get("content") or "")
            reasoning.append(delta.get("reasoning_content") or delta.get("reasoning") or "")
            for part in delta.get("tool_calls") or ():
                call = calls.setdefault(int(part.get("index", len(calls))),
                                        {"id": "", "type": "function",
                                         "function": {"name": "", "arguments": ""}})
                call["id"] = part.get("id") or call["id"]
                function = part.get("function") or {}
                call["function"]["name"] += function.get("name") or ""
                call["function"]["arguments"] += function.get("arguments") or ""
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content)}
    if any(reasoning):
        message["reasoning_content"] = "".join(reasoning)
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return {"choices": [{"message": message, "finish_reason": finish}], "usage": usage}


def _turn(reply: Any) -> Turn:
    """A chat completion (JSON) as a Turn; one with no ``choices[0].message`` is bad, and
    tool calls that are not ``{function: {name, arguments}}`` are passed on for the env to
    answer with an error envelope."""
    choices = reply.get("choices") if isinstance(reply, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise EndpointError("bad_response", "the reply has no choices[0].message")
    content = message.get("content") if isinstance(message.get("content"), str) else ""
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    out = split_reasoning(content) if not reasoning else {"role": "assistant", "content": content}
    if isinstance(reasoning, str) and reasoning:
        out["reasoning_content"] = reasoning
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        out["tool_calls"] = [_call(c, i) for i, c in enumerate(calls)]
    usage = reply.get("usage") if isinstance(reply.get("usage"), dict) else {}
    return Turn(out, int(usage.get("prompt_tokens") or 0),
                int(usage.get("completion_tokens") or 0),
                finish_reason=choice.get("finish_reason"))


def split_reasoning(text: str) -> dict[str, Any]:
    """A reply's text as an assistant message: a leading ``<think>`` block goes to
    ``reasoning_content``, the rest is the content."""
    think = _THINK.match(text)
    if think is None:
        return {"role": "assistant", "content": text}
    return {"role": "assistant", "content": text[think.end():],
            "reasoning_content": think.group(1).strip()}


def _call(call: Any, index: int) -> dict[str, Any]:
    function = call.get("function") if isinstance(call, dict) else None
    function = function if isinstance(function, dict) else {}
    arguments = function.get("arguments")
    return {"id": str(call.get("id") or f"call_{index}") if isinstance(call, dict)
            else f"call_{index}", "type": "function",
            "function": {"name": str(function.get("name") or ""),
                         "arguments": arguments if isinstance(arguments, str)
                         else json.dumps(arguments if arguments is not None else {})}}


def _arguments(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except json.JSONDecodeError:
        return {"_raw": text}
    return value if isinstance(value, dict) else {"_raw": value}
