"""A small OpenAI-compatible chat client: bounded time, bounded size, one error type."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Mapping, Sequence

import jsonschema

__all__ = ["EndpointConfig", "ChatClient", "LLMError", "REASONS", "MAX_RESPONSE_BYTES"]

MAX_RESPONSE_BYTES = 256 * 1024
REASONS = ("timeout", "unreachable", "http_429", "http_5xx", "http_4xx", "bad_response",
           "too_large", "bad_output")
_RETRYABLE = frozenset({"timeout", "unreachable", "http_429", "http_5xx"})
_NAME = re.compile(r"[^A-Za-z0-9_-]")
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


class LLMError(Exception):
    """A chat request that gave no usable answer.

    Attributes:
        reason: One of ``REASONS``: "timeout", "unreachable", "http_429", "http_5xx",
            "http_4xx", "bad_response" (not a chat completion), "too_large" (body over the
            cap) or "bad_output" (``complete_json``: the content is not JSON of the schema).
        detail: One line for humans; never a traceback.
    """

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class EndpointConfig:
    """Where and how to call an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    Attributes:
        base_url: The API root including ``/v1``, e.g. ``http://localhost:8000/v1``.
        model: Model name as the server knows it.
        api_key: Bearer token ("EMPTY" suits vLLM and SGLang without auth).
        timeout_s: Limit of one attempt (connect, and each read of the body).
        max_retries: Extra attempts after a timeout, connection error, 429 or 5xx.
        backoff_s: Sleep before the first retry; doubles with each further retry.
        temperature: Sampling temperature (0.0: as deterministic as the server allows).
        max_tokens: Most tokens the model may generate per reply.
    """

    base_url: str
    model: str
    api_key: str = "EMPTY"
    timeout_s: float = 30.0
    max_retries: int = 3
    backoff_s: float = 0.5
    temperature: float = 0.0
    max_tokens: int = 1024

    @classmethod
    def from_env(cls, prefix: str = "COMPOENV_LLM") -> EndpointConfig | None:
        """Read ``<prefix>_BASE_URL``, ``<prefix>_MODEL`` and ``<prefix>_API_KEY``.

        Returns:
            The config, or None when ``<prefix>_BASE_URL`` is unset or empty.
        """
        base_url = os.environ.get(f"{prefix}_BASE_URL", "").strip()
        if not base_url:
            return None
        return cls(base_url=base_url, model=os.environ.get(f"{prefix}_MODEL", "default"),
                   api_key=os.environ.get(f"{prefix}_API_KEY") or "EMPTY")

    def max_wall_s(self) -> float:
        """The longest one ``complete`` call may take: every attempt plus every backoff."""
        backoffs = self.backoff_s * (2 ** self.max_retries - 1)
        return self.timeout_s * (self.max_retries + 1) + backoffs


def _import_openai() -> ModuleType:
    try:
        import openai
    except ImportError:
        raise ImportError("compoenv.llm.ChatClient needs the openai package: "
                          "pip install 'compoenv[llm]'") from None
    return openai


def _httpx_of(openai: ModuleType) -> ModuleType:
    """The HTTP library under ``openai`` (httpx, or a successor), whose errors can surface
    while a streamed body is read."""
    for cls in openai.DefaultHttpxClient.__mro__:
        root = cls.__module__.split(".")[0]
        if root != "openai" and root != "builtins":
            return sys.modules[root]
    raise ImportError("cannot find the HTTP client library under openai")


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class ChatClient:
    """Chat completions from one endpoint, with explicit retries and limits.

    ``complete`` never raises anything but ``LLMError`` for a failed request and never runs
    longer than ``config.max_wall_s()`` (plus at most one socket read if a server trickles
    its body). Safe to share between threads.

    Args:
        config: The endpoint.
        max_response_bytes: Bodies larger than this are rejected as "too_large".
    """

    def __init__(self, config: EndpointConfig,
                 max_response_bytes: int = MAX_RESPONSE_BYTES) -> None:
        openai = _import_openai()
        self.config = config
        self.max_response_bytes = max_response_bytes
        self.supports_response_format = True  # until the server rejects one
        self._openai = openai
        self._httpx = _httpx_of(openai)
        self._client = openai.OpenAI(base_url=config.base_url, api_key=config.api_key,
                                     timeout=config.timeout_s, max_retries=0)

    @classmethod
    def from_env(cls, prefix: str = "COMPOENV_LLM") -> ChatClient | None:
        """A client for ``EndpointConfig.from_env(prefix)``, or None when none is configured."""
        config = EndpointConfig.from_env(prefix)
        return cls(config) if config is not None else None

    def close(self) -> None:
        """Release the connection pool."""
        self._client.close()

    def complete(self, messages: Sequence[Mapping[str, Any]], *,
                 json_schema: dict[str, Any] | None = None, schema_name: str | None = None,
                 temperature: float | None = None, max_tokens: int | None = None) -> str:
        """The assistant's reply to ``messages``.

        Args:
            messages: OpenAI chat messages (``{"role", "content"}`` dicts).
            json_schema: Ask for JSON of this schema (structured output). Servers that reject
                ``response_format`` are asked again without it, with the schema in the system
                prompt, and are not sent one again by this client.
            schema_name: Name sent with the schema (default: its "title", else "response").
            temperature: Override ``config.temperature``.
            max_tokens: Override ``config.max_tokens``.

        Raises:
            LLMError: no usable reply within the retry budget.
        """
        cfg = self.config
        deadline = time.monotonic() + cfg.max_wall_s()
        failures = 0
        while True:
            structured = json_schema is not None and self.supports_response_format
            request: dict[str, Any] = {
                "model": cfg.model,
                "messages": self._messages(messages, json_schema, structured),
                "temperature": cfg.temperature if temperature is None else temperature,
                "max_tokens": cfg.max_tokens if max_tokens is None else max_tokens,
            }
            if structured:
                assert json_schema is not None
                request["response_format"] = {"type": "json_schema", "json_schema": {
                    "name": _schema_name(json_schema, schema_name), "schema": json_schema,
                    "strict": True}}
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LLMError("timeout", f"no reply within {cfg.max_wall_s():.1f}s")
            try:
                return _content(self._post(request, min(cfg.timeout_s, remaining)))
            except _Rejected:
                self.supports_response_format = False  # ask again without it, no backoff
                continue
            except LLMError as exc:
                if exc.reason not in _RETRYABLE or failures >= cfg.max_retries:
                    raise
                delay = cfg.backoff_s * 2 ** failures
                failures += 1
                if time.monotonic() + delay >= deadline:
                    raise
                time.sleep(delay)

    def complete_json(self, messages: Sequence[Mapping[str, Any]], schema: dict[str, Any], *,
                      schema_name: str | None = None) -> Any:
        """The reply parsed as JSON and validated against ``schema``.

        Raises:
            LLMError: the request failed, or "bad_output" when the reply is not JSON of the
                schema (the detail says where it differs).
        """
        text = self.complete(messages, json_schema=schema, schema_name=schema_name).strip()
        fenced = _FENCE.match(text)
        try:
            value = json.loads(fenced.group(1) if fenced else text)
        except json.JSONDecodeError as exc:
            raise LLMError("bad_output", f"reply is not JSON ({exc.msg}): "
                                         f"{_one_line(text, 80)!r}") from None
        error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema)
                                                 .iter_errors(value))
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "(root)"
            raise LLMError("bad_output", f"reply does not match the schema at {where}: "
                                         f"{_one_line(error.message, 120)}")
        return value

    def _messages(self, messages: Sequence[Mapping[str, Any]],
                  json_schema: dict[str, Any] | None, structured: bool) -> list[dict[str, Any]]:
        out = [dict(m) for m in messages]
        if json_schema is None or structured:
            return out
        note = ("Reply with one JSON value only, no prose and no code fence, matching this "
                f"JSON schema: {json.dumps(json_schema, separators=(',', ':'))}")
        if out and out[0].get("role") == "system" and isinstance(out[0].get("content"), str):
            out[0]["content"] = f"{out[0]['content']}\n\n{note}"
        else:
            out.insert(0, {"role": "system", "content": note})
        return out

    def _post(self, request: dict[str, Any], timeout: float) -> Any:
        """One attempt: the parsed JSON body, or LLMError / _Rejected."""
        openai, httpx = self._openai, self._httpx
        completions = self._client.chat.completions.with_streaming_response
        try:
            with completions.create(**request, timeout=timeout) as response:
                body = self._read(response, time.monotonic() + timeout)
                content_type = response.headers.get("content-type", "")
        except openai.APITimeoutError:
            raise LLMError("timeout", f"no reply within {timeout:.2f}s") from None
        except openai.APIConnectionError as exc:
            raise LLMError("unreachable", f"{self.config.base_url}: {_one_line(str(exc))}") \
                from None
        except openai.APIStatusError as exc:
            raise _status_error(exc, "response_format" in request) from None
        except httpx.TimeoutException:
            raise LLMError("timeout", f"body not read within {timeout:.2f}s") from None
        except (httpx.HTTPError, httpx.StreamError) as exc:
            raise LLMError("unreachable", f"connection lost: {type(exc).__name__}") from None
        except openai.OpenAIError as exc:
            raise LLMError("bad_response", f"{type(exc).__name__}: {_one_line(str(exc))}") \
                from None
        try:
            return json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError):
            text = body[:80].decode("utf-8", "replace")
            raise LLMError("bad_response", f"body is not JSON (content-type {content_type!r}): "
                                           f"{_one_line(text, 80)!r}") from None

    def _read(self, response: Any, deadline: float) -> bytes:
        cap = self.max_response_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise LLMError("too_large", f"body of {int(declared)} bytes exceeds {cap}")
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > cap:
                raise LLMError("too_large", f"body exceeds {cap} bytes")
            if time.monotonic() > deadline:
                raise LLMError("timeout", "body still arriving at the attempt's deadline")
            chunks.append(chunk)
        return b"".join(chunks)


class _Rejected(Exception):
    """The server refused ``response_format``: ask again without it."""


def _status_error(exc: Any, structured: bool) -> Exception:
    status = int(exc.status_code)
    text = str(exc)  # "Error code: 400 - {...the server's error body...}"
    if structured and status in (400, 422) and ("response_format" in text
                                                or "json_schema" in text):
        return _Rejected()
    detail = f"HTTP {status}: {_one_line(text)}"
    if status == 429:
        return LLMError("http_429", detail)
    if status >= 500:
        return LLMError("http_5xx", detail)
    if status == 404:
        detail += " (is base_url the API root, ending in /v1?)"
    return LLMError("http_4xx", detail)


def _schema_name(schema: Mapping[str, Any], name: str | None) -> str:
    raw = name or str(schema.get("title") or "response")
    return _NAME.sub("_", raw)[:64] or "response"


def _content(body: Any) -> str:
    """``choices[0].message.content`` of a chat completion, or LLMError("bad_response")."""
    try:
        choice = body["choices"][0]
        content = choice["message"]["content"]
    except (KeyError, IndexError, TypeError):
        keys = sorted(body)[:6] if isinstance(body, dict) else type(body).__name__
        raise LLMError("bad_response", f"not a chat completion (got {keys})") from None
    if not isinstance(content, str) or not content.strip():
        reason = choice.get("finish_reason") if isinstance(choice, dict) else None
        raise LLMError("bad_response", f"empty reply (finish_reason={reason!r})")
    return content
