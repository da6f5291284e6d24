"""The synthesis loop: ask a coding model for a service, verify it in the sandbox, feed back."""

from __future__ import annotations

import datetime as dt
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from compoenv.llm import ChatClient, LLMError
from compoenv.synthesis.prompt import (
    example_service, feedback_prompt, system_prompt, task_prompt,
)
from compoenv.synthesis.sandbox import Limits, SandboxResult, verify_sandboxed

__all__ = ["Round", "Synthesis", "SynthesisError", "extract_code", "synthesize"]

_BLOCK = re.compile(r"```(?:python|py)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_ANY_BLOCK = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)
_MAX_CODE = 200_000  # characters: a module larger than this is not a service


class SynthesisError(Exception):
    """The loop could not run: the endpoint failed (unreachable, timeout, no reply)."""


@dataclass(frozen=True)
class Round:
    """One request to the model and the verification of its reply.

    Attributes:
        number: 1 for the first request.
        reasons: Why the reply was not accepted (empty when it was).
        result: The sandboxed verification, or None when the reply held no usable code.
        code: The module the reply held ("" when none).
        seconds: Time of the round: the model's reply and the verification.
    """

    number: int
    reasons: list[str]
    result: SandboxResult | None
    code: str
    seconds: float

    @property
    def accepted(self) -> bool:
        return not self.reasons


@dataclass
class Synthesis:
    """The outcome of ``synthesize``.

    Attributes:
        service: The spec's service name.
        spec_path: The spec file.
        model: The model as the endpoint knows it.
        base_url: The endpoint.
        rounds: Every round, in order.
        started: When the loop began (UTC, ISO 8601).
        finished: When it ended.
    """

    service: str
    spec_path: str
    model: str
    base_url: str
    rounds: list[Round] = field(default_factory=list)
    started: str = ""
    finished: str = ""

    @property
    def accepted(self) -> bool:
        """Whether the last round's module passed verification."""
        return bool(self.rounds) and self.rounds[-1].accepted

    @property
    def code(self) -> str:
        """The accepted module ("" when none was accepted)."""
        return self.rounds[-1].code if self.accepted else ""

    def reasons(self) -> list[str]:
        """Why the last round was rejected (empty when accepted)."""
        return list(self.rounds[-1].reasons) if self.rounds else ["no round ran"]


def extract_code(reply: str) -> str:
    """The Python module in a model's reply: its longest ```python block (or, if it has no
    such block, its only fenced block).

    Raises:
        ValueError: the reply holds no code block, or one too large to be a service.
    """
    blocks = [b for b in _BLOCK.findall(reply) if b.strip()]
    if not blocks:
        fenced = [b for b in _ANY_BLOCK.findall(reply) if b.strip()]
        blocks = fenced if len(fenced) == 1 else []
    if not blocks:
        raise ValueError("the reply has no ```python code block; reply with the whole module "
                         "in one ```python block")
    code = max(blocks, key=len)
    if len(code) > _MAX_CODE:
        raise ValueError(f"the code block is {len(code):,} characters, over {_MAX_CODE:,}")
    return code if code.endswith("\n") else code + "\n"


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _ask(client: ChatClient, messages: list[dict[str, Any]]) -> str:
    try:
        return client.complete(messages)
    except LLMError as exc:
        where = client.config.base_url
        if exc.reason == "bad_response":
            # a garbage body or an empty reply: the round fails, the loop may go on
            return ""
        raise SynthesisError(f"the model endpoint {where} failed ({exc.reason}): "
                             f"{exc.detail}") from None


def _judge(spec: dict[str, Any], code: str, spec_path: Path, limits: Limits,
           checks: Sequence[str] | None) -> tuple[list[str], SandboxResult]:
    result = verify_sandboxed(code, f"{spec['name']}.py", limits=limits, checks=checks,
                              spec=spec_path)
    return result.reasons(), result


def synthesize(spec_path: str | Path, client: ChatClient, *, rounds: int = 3,
               limits: Limits = Limits(), checks: Sequence[str] | None = None,
               example: str | None = None) -> Synthesis:
    """Drive a coding model to implement a spec as a Service, verifying every reply.

    Each round asks the model for the module (the first with the SDK's API, the vocabulary of
    the spec, an example service and the spec; later ones with the previous reply and what
    verification found), runs ``compoenv.checks.verify`` on it inside the sandbox, and stops
    at the first module that passes every check.

    Args:
        spec_path: The spec JSON file (the format of ``envs_library/specs``).
        client: The coding model's endpoint.
        rounds: Most requests to the model.
        limits: Time and memory limits of each sandboxed verification.
        checks: The verify checks to run (default: all).
        example: The example service's source (default: the library's contacts service).

    Returns:
        Every round; ``accepted`` says whether the last one passed.

    Raises:
        SpecError: the spec file is not a valid spec.
        SynthesisError: the endpoint is unreachable or timed out.
        SandboxUnavailable: no operating-system sandbox can be made here and
            ``limits.unsafe`` is not set (raised before the model is asked anything).
    """
    from compoenv.synthesis import boundary
    from compoenv.worldmodel.spec import load_spec

    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    boundary.required(limits.unsafe)
    spec_path = Path(spec_path)
    spec = load_spec(spec_path)
    outcome = Synthesis(str(spec["name"]), str(spec_path), client.config.model,
                        client.config.base_url, started=_now())
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt()},
        {"role": "user", "content": task_prompt(spec, example or example_service())}]
    for number in range(1, rounds + 1):
        began = time.monotonic()
        reply = _ask(client, messages)
        code, result = "", None
        try:
            code = extract_code(reply) if reply else ""
            if not code:
                raise ValueError("the reply was empty or not a chat completion")
            reasons, result = _judge(spec, code, spec_path, limits, checks)
        except ValueError as exc:
            reasons = [str(exc)]
        outcome.rounds.append(Round(number, reasons, result, code,
                                    time.monotonic() - began))
        if not reasons:
            break
        # the conversation keeps the first request and only the latest reply: a bounded prompt
        messages = messages[:2] + [{"role": "assistant", "content": reply or "(no reply)"},
                                   {"role": "user",
                                    "content": feedback_prompt(reasons, number, rounds)}]
    outcome.finished = _now()
    return outcome
