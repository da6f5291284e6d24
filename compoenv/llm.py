"""A small OpenAI-compatible chat client: bounded time, bounded size, one error type."""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import jsonschema

__all__ = ["MAX_RESPONSE_BYTES", "REASONS", "ChatClient", "EndpointConfig", "LLMError"]

MAX_RESPONSE_BYTES = 256 * 1024
REASONS = ("timeout", "unreachable", "http_429", "http_5xx", "http_4xx", "bad_response",
           "too_large", "bad_output")
_RETRYABLE = frozenset({"timeout", "unreachable", "http_429", "http_5xx"})
_NAME = re.compile(r"[^A-Za-z0-9_-]")
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


class LLMError(Exception):
    """A chat request that gave no usable answer.

    Attributes:
        reason: One of ``REASONS``; "bad_response": not a chat completion, "too_large": body
            over the cap, "bad_output": ``complete_json`` got no JSON of the schema.
        detail: One line for humans; never a traceback.
    """

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


# settings read from <prefix>_<NAME>: field, parser, what a valid value looks like
_ENV_FIELDS: tuple[tuple[str, str, Any, str], ...] = (
    ("MODEL", "model", str, "a model name"),
    ("API_KEY", "api_key", str, "a token"),
    ("TIMEOUT_S", "timeout_s", float, "seconds > 0"),
    ("TOTAL_TIMEOUT_S", "total_timeout_s", float, "seconds > 0"),
    ("MAX_RETRIES", "max_retries", int, "an integer >= 0"),
    ("BACKOFF_S", "backoff_s", float, "seconds >= 0"),
    ("TEMPERATURE", "temperature", float, "a number >= 0"),
    ("MAX_TOKENS", "max_tokens", int, "an integer >= 1"),
    ("CONCURRENCY", "concurrency", int, "an integer >= 1"),
)


@dataclass(frozen=True)
class EndpointConfig:
    """Where and how to call an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    The defaults are safe for a hung server: a call, retries and backoff included, returns
    (or raises ``LLMError("timeout")``) within ``total_timeout_s`` (30 s).

    Attributes:
        base_url: The API root including ``/v1``, e.g. ``http://localhost:8000/v1``.
        model: Model name as the server knows it.
        api_key: Bearer token ("EMPTY" suits vLLM and SGLang without auth).
        timeout_s: Limit of one attempt (connect, and each read of the body).
        max_retries: Extra attempts after a timeout, connection error, 429 or 5xx.
        backoff_s: Sleep before the first retry; doubles with each further retry.
        temperature: Sampling temperature (0.0: as deterministic as the server allows).
        max_tokens: Most tokens the model may generate per reply.
        total_timeout_s: Limit of one call, every attempt and backoff included.
        concurrency: Most requests one client has in flight at once (others wait, within
            their own time limit).
    """

    base_url: str
    model: str
    api_key: str = "EMPTY"
    timeout_s: float = 10.0
    max_retries: int = 2
    backoff_s: float = 0.5
    temperature: float = 0.0
    max_tokens: int = 1024
    total_timeout_s: float = 30.0
    concurrency: int = 8

    def __post_init__(self) -> None:
        for name, low, strict in (("timeout_s", 0, True), ("total_timeout_s", 0, True),
                                  ("max_retries", 0, False), ("backoff_s", 0, False),
                                  ("temperature", 0, False), ("max_tokens", 1, False),
                                  ("concurrency", 1, False)):
            value = getattr(self, name)
            if value < low or (strict and value == low):
                raise ValueError(f"EndpointConfig.{name} must be {'>' if strict else '>='} "
                                 f"{low}, got {value!r}")

    @classmethod
    def from_env(cls, prefix: str = "COMPOENV_LLM",
                 base_url: str | None = None) -> EndpointConfig | None:
        """From ``<prefix>_BASE_URL`` (or ``base_url``) and the other ``<prefix>_*`` settings:
        ``_MODEL``, ``_API_KEY``, ``_TIMEOUT_S``, ``_TOTAL_TIMEOUT_S``, ``_MAX_RETRIES``,
        ``_BACKOFF_S``, ``_TEMPERATURE``, ``_MAX_TOKENS``, ``_CONCURRENCY``; None if no base URL.

        Raises:
            ValueError: a setting that does not parse, naming the variable.
        """
        base_url = base_url or os.environ.get(f"{prefix}_BASE_URL", "").strip()
        if not base_url:
            return None
        values: dict[str, Any] = {"model": "default"}
        for suffix, field_name, parse, expected in _ENV_FIELDS:
            raw = os.environ.get(f"{prefix}_{suffix}", "").strip()
            if not raw:
                continue
            try:
                values[field_name] = parse(raw)
            except ValueError:
                raise ValueError(f"{prefix}_{suffix}={raw!r}: expected {expected}") from None
        try:
            return cls(base_url=base_url, **values)
        except ValueError as exc:
            raise ValueError(f"{exc} (from the {prefix}_* environment variables)") from None

    def max_wall_s(self) -> float:
        """The longest one ``complete`` call may take: every attempt plus every backoff,
        capped by ``total_timeout_s``."""
        return min(self.total_timeout_s, self.timeout_s * (self.max_retries + 1)
                   + self.backoff_s * (2 ** self.max_retries - 1))


def _import_openai() -> tuple[ModuleType, ModuleType]:
    """``openai`` and the HTTP library under it (httpx, or a successor), whose errors can
    surface while a streamed body is read."""
    try:
        import openai
    except ImportError:
        raise ImportError("compoenv.llm.ChatClient needs the openai package: "
                          "pip install 'compoenv[llm]'") from None
    roots = (cls.__module__.split(".")[0] for cls in openai.DefaultHttpxClient.__mro__)
    return openai, sys.modules[next(r for r in roots if r not in ("openai", "builtins"))]


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class ChatClient:
    """Chat completions from one endpoint, with explicit retries and limits.

    ``complete`` raises only ``LLMError`` for a failed request and returns within
    ``config.max_wall_s()``: each attempt runs in a worker thread that is abandoned at the
    attempt's deadline, however the socket behaves. Safe to share between threads.

    Args:
        config: The endpoint.
        max_response_bytes: Bodies larger than this are rejected as "too_large".
    """

    def __init__(self, config: EndpointConfig,
                 max_response_bytes: int = MAX_RESPONSE_BYTES) -> None:
        self._openai, self._httpx = _import_openai()
        self.config = config
        self.max_response_bytes = max_response_bytes
        self.supports_response_format = True  # until the server rejects one
        self._client = self._openai.OpenAI(base_url=config.base_url, api_key=config.api_key,
                                           timeout=config.timeout_s, max_retries=0)
        self._slots = threading.BoundedSemaphore(config.concurrency)

    @classmethod
    def from_env(cls, prefix: str = "COMPOENV_LLM") -> ChatClient | None:
        """A client for ``EndpointConfig.from_env(prefix)``, or None when none is configured."""
        return cls(config) if (config := EndpointConfig.from_env(prefix)) else None

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
            request: dict[str, Any] = {
                "model": cfg.model, "messages": self._messages(messages, json_schema),
                "temperature": cfg.temperature if temperature is None else temperature,
                "max_tokens": cfg.max_tokens if max_tokens is None else max_tokens}
            if json_schema is not None and self.supports_response_format:
                name = _NAME.sub("_", schema_name or str(json_schema.get("title") or "response"))
                request["response_format"] = {"type": "json_schema", "json_schema": {
                    "name": name[:64], "schema": json_schema, "strict": True}}
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LLMError("timeout", f"no reply within {cfg.max_wall_s():.1f}s")
            try:
                return _content(self._attempt(request, min(cfg.timeout_s, remaining)))
            except _Rejected:
                self.supports_response_format = False  # ask again without it, no backoff
            except LLMError as exc:
                delay = cfg.backoff_s * 2 ** failures
                if (exc.reason not in _RETRYABLE or failures >= cfg.max_retries
                        or time.monotonic() + delay >= deadline):
                    raise
                failures += 1
                time.sleep(delay)

    def complete_json(self, messages: Sequence[Mapping[str, Any]], schema: dict[str, Any], *,
                      schema_name: str | None = None) -> Any:
        """The reply parsed as JSON (a code fence is tolerated) and valid against ``schema``.

        Raises:
            LLMError: as ``complete``, or "bad_output" saying where the reply is off.
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
                  json_schema: dict[str, Any] | None) -> list[dict[str, Any]]:
        """The messages; with a schema the server cannot enforce, the schema is stated."""
        out = [dict(m) for m in messages]
        if json_schema is None or self.supports_response_format:
            return out
        note = ("Reply with one JSON value only, no prose and no code fence, matching this "
                f"JSON schema: {json.dumps(json_schema, separators=(',', ':'))}")
        if out and out[0].get("role") == "system" and isinstance(out[0].get("content"), str):
            out[0]["content"] = f"{out[0]['content']}\n\n{note}"
        else:
            out.insert(0, {"role": "system", "content": note})
        return out

    def _attempt(self, request: dict[str, Any], timeout: float) -> Any:
        """``_post`` in a daemon thread, given up on after ``timeout`` (the thread then ends
        by its own socket timeouts or its deadline check between body chunks); at most
        ``config.concurrency`` attempts of this client run at once."""
        start = time.monotonic()
        if not self._slots.acquire(timeout=timeout):
            raise LLMError("timeout", f"all {self.config.concurrency} request slots stayed "
                                      f"busy for {timeout:.2f}s (COMPOENV_LLM_CONCURRENCY)")
        try:
            return self._run(request, timeout - (time.monotonic() - start))
        finally:
            self._slots.release()

    def _run(self, request: dict[str, Any], timeout: float) -> Any:
        outcome: list[tuple[bool, Any]] = []

        def work() -> None:
            try:
                outcome.append((True, self._post(request, timeout)))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller, type intact
                outcome.append((False, exc))

        worker = threading.Thread(target=work, name="compoenv-llm", daemon=True)
        worker.start()
        worker.join(timeout)
        if not outcome:
            raise LLMError("timeout", f"no reply within {timeout:.2f}s")
        if outcome[0][0]:
            return outcome[0][1]
        raise outcome[0][1]

    def _post(self, request: dict[str, Any], timeout: float) -> Any:
        """One attempt: the parsed JSON body, or LLMError / _Rejected."""
        openai, httpx = self._openai, self._httpx
        completions = self._client.chat.completions.with_streaming_response
        try:  # one place turns the transport's exceptions into LLMError
            with completions.create(**request, timeout=timeout) as response:
                body = self._read(response, time.monotonic() + timeout)
                content_type = response.headers.get("content-type", "")
        except openai.APITimeoutError:
            raise LLMError("timeout", f"no reply within {timeout:.2f}s") from None
        except openai.APIConnectionError as exc:
            detail = f"{self.config.base_url}: {_one_line(str(exc))}"
            raise LLMError("unreachable", detail) from None
        except openai.APIStatusError as exc:
            raise _status_error(exc, "response_format" in request) from None
        except httpx.TimeoutException:
            raise LLMError("timeout", f"body not read within {timeout:.2f}s") from None
        except (httpx.HTTPError, httpx.StreamError) as exc:
            raise LLMError("unreachable", f"connection lost: {type(exc).__name__}") from None
        except openai.OpenAIError as exc:
            detail = f"{type(exc).__name__}: {_one_line(str(exc))}"
            raise LLMError("bad_response", detail) from None
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
        body = bytearray()
        for chunk in response.iter_bytes():
            body += chunk
            if len(body) > cap:
                raise LLMError("too_large", f"body exceeds {cap} bytes")
            if time.monotonic() > deadline:  # a trickling body: the caller has given up
                raise LLMError("timeout", "body still arriving at the attempt's deadline")
        return bytes(body)


class _Rejected(Exception):
    """The server refused ``response_format``: ask again without it."""


def _status_error(exc: Any, structured: bool) -> Exception:
    status, text = int(exc.status_code), str(exc)  # "Error code: 400 - {...server's body...}"
    if structured and status in (400, 422) and ("response_format" in text or "json_schema" in text):
        return _Rejected()
    reason = "http_429" if status == 429 else "http_5xx" if status >= 500 else "http_4xx"
    hint = " (is base_url the API root, ending in /v1?)" if status == 404 else ""
    return LLMError(reason, f"HTTP {status}: {_one_line(text)}{hint}")


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
