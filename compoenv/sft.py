"""SFT data: verified trajectories (the oracle's with short thoughts, and any agent's that pass)."""

from __future__ import annotations

import hashlib
import json
import random
import string
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from compoenv.agents import OracleAgent
from compoenv.agents.oracle import oracle_plan
from compoenv.env import MODES
from compoenv.registry import Registry
from compoenv.rollout import AgentFactory, run_rollouts
from compoenv.service import ToolSpec
from compoenv.task import Task
from compoenv.trajectory import ARGUMENT_FORMS, Trajectory, arguments_as, iter_trajectories
from compoenv.untrusted import neutralise

__all__ = ["THOUGHT_STYLES", "add_thoughts", "oracle_sft", "keep_passing", "filter_trajectories"]

THOUGHT_STYLES = ("reasoning", "content", "none")

_FIRST = ("First I'll {action}.", "To start, I need to {action}.", "The first step is to {action}.",
          "Let me {action} first.", "I'll begin: {action}.")
_NEXT = ("Next I'll {action}.", "Now I can {action}.", "With that, I'll {action}.",
         "The next step is to {action}.", "Then I need to {action}.")
_LAST = ("Finally, I'll {action}.", "The last step is to {action}.", "Last, I need to {action}.",
         "One more call: {action}.")
_ONLY = ("This takes one call: {action}.", "I'll {action}.", "All I need is to {action}.")
_FROM = ("The {param} {value} comes from the {tool} result.",
         "I take the {param} ({value}) from what {tool} returned.",
         "{tool} gave me the {param}: {value}.")
_READ = ("That tells me the {noun}.", "I need the {noun} before going on.",
         "This only reads data; nothing changes yet.", "That should show the {noun}.")
_WRITE = ("This makes the change the user asked for.", "This one writes, so the arguments must "
          "be exact.", "This updates the {service} records.")
_REPORT = ("I have everything the user asked for, so I'll report it.",
           "All the calls are done and I have the values to report.",
           "The results give me the answer; time to reply.")
_CONFIRM = ("Everything the user asked for is done, so I'll confirm it.",
            "All the changes are made; I'll say so.", "The request is complete; time to reply.")
_PREPOSITIONS = frozenset({"with", "for", "by", "near", "in", "of", "to", "from", "on", "at"})
_QUOTED = frozenset({"Text", "EmailSubject"})  # free text reads best in quotes
_META = {"list_services": "see which services are available",
         "list_tools": "list the tools of {service}",
         "describe_tool": "check the parameters of {tool}"}


def _words(name: str) -> str:
    return name.replace("__", " ").replace("_", " ")


def _noun(tool: str) -> str:
    """What a tool returns, from its name: ``search_flights`` -> "flights",
    ``transactions_with`` -> "transactions", ``get_fare_estimate`` -> "fare estimate"."""
    parts = tool.split("_")
    cut = next((i for i, w in enumerate(parts) if w in _PREPOSITIONS), len(parts))
    parts = parts[:cut] or parts
    return " ".join(parts[1:] if len(parts) > 1 else parts)


def _show(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(_show(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _action(name: str, arguments: dict[str, Any], spec: ToolSpec | None) -> str:
    """What a call does, in words: the tool's phrase with the call's arguments filled in
    (free text quoted, as in the instruction)."""
    if spec is None:
        return f"call {name}"
    if not spec.phrase:
        text = spec.description.rstrip(".")
        return f"use {name} to {text[:1].lower()}{text[1:]}" if text else f"call {name}"
    fields = {f for _, f, _, _ in string.Formatter().parse(spec.phrase) if f}
    typed = {slot.path[0] for slot in spec.inputs if slot.interface not in _QUOTED}
    values = {f: "the default" if f not in arguments else _show(arguments[f])
              if f in typed or not isinstance(arguments[f], str) else f'"{arguments[f]}"'
              for f in fields}
    extras = [f"{_words(k)} {_show(v)}" for k, v in arguments.items() if k not in fields]
    return spec.phrase.format(**values) + (f" ({'; '.join(extras)})" if extras else "")


def _inner(name: str, arguments: Any) -> tuple[str, dict[str, Any]]:
    """The service call a gateway ``call_tool`` makes (other calls are themselves)."""
    args = arguments if isinstance(arguments, dict) else {}
    tool = args.get("tool_name", args.get("name")) if name == "call_tool" else None
    if isinstance(tool, str):
        inner = args.get("arguments")
        return tool, inner if isinstance(inner, dict) else {}
    return name, args


def _loads(text: Any) -> Any:
    """A call's arguments as an object (given as one, or as its JSON text)."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


class _Thinker:
    """Writes one trajectory's thoughts; the wording is drawn from a stream seeded by its task."""

    def __init__(self, record: dict[str, Any], specs: dict[str, ToolSpec]) -> None:
        meta = record["meta"]
        key = f"{meta['task_id']}/{meta.get('rollout_idx', 0)}".encode()
        self.rng = random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))
        self.specs = specs
        self.request = next((m["content"] for m in record["messages"] if m["role"] == "user"), "")
        self.results: list[tuple[str, str]] = []  # (tool that produced it, envelope text)

    def call(self, name: str, arguments: dict[str, Any], position: str) -> str:
        if name in _META:
            action = _META[name].format(**{k: _show(v) for k, v in arguments.items()},
                                        **{k: "it" for k in ("service", "tool")
                                           if k not in arguments})
            spec = None
        else:
            spec = self.specs.get(name)
            action = _action(name, arguments, spec)
        templates = {"first": _FIRST, "next": _NEXT, "last": _LAST, "only": _ONLY}[position]
        parts = [self.rng.choice(templates).format(action=action)]
        origin = self._origin(arguments)
        if origin:
            parts.append(origin)
        if spec is not None:
            noun = _noun(spec.name)
            pool = _READ if spec.read_only else _WRITE
            parts.append(self.rng.choice(pool).format(noun=noun, service=spec.service))
        return " ".join(parts)

    def _origin(self, arguments: dict[str, Any]) -> str:
        """Where a value the request does not state came from: the latest result holding it."""
        request = self.request.casefold()
        for param, value in arguments.items():
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                continue
            if isinstance(value, str) and (len(value) < 2 or value.casefold() in request):
                continue
            if not isinstance(value, str) and str(value) in self.request:
                continue
            needles = {json.dumps(value), json.dumps(value, ensure_ascii=False)}
            for tool, text in reversed(self.results):
                if any(n in text for n in needles):
                    return self.rng.choice(_FROM).format(param=_words(param), value=_show(value),
                                                         tool=tool)
        return ""

    def final(self, content: str) -> str:
        reports = content.strip().rstrip(".") not in ("", "Done")
        return self.rng.choice(_REPORT if reports else _CONFIRM)


def _positions(n: int) -> list[str]:
    if n == 1:
        return ["only"]
    return ["first"] + ["next"] * (n - 2) + ["last"]


def add_thoughts(record: dict[str, Any] | Trajectory, *, style: str = "reasoning",
                 registry: Registry | None = None) -> dict[str, Any]:
    """The record with a short thought on each assistant turn, derived from what the turn does.

    A tool-call turn's thought says what the call does (the tool's phrase with the call's
    arguments), where a value the request does not state came from (the earlier result that
    holds it), and whether the call reads or writes; the final turn's thought says whether it
    reports values or confirms changes. Wording varies between tasks (a stream seeded by the
    task id and rollout index) and is the same on every run.

    Args:
        record: A trajectory record (not modified).
        style: ``"reasoning"`` puts thoughts in ``reasoning_content``; ``"content"`` puts them
            in the text before the tool calls (final answers stay as they are); ``"none"``
            leaves the record as it is.
        registry: Where tool phrases are looked up (default: the built-in library).

    Returns:
        A new record.
    """
    if style not in THOUGHT_STYLES:
        raise ValueError(f"style must be one of {THOUGHT_STYLES}, got {style!r}")
    data = record.to_record() if isinstance(record, Trajectory) else json.loads(json.dumps(record))
    if style == "none":
        return data
    registry = registry or Registry.default()
    services = [s for s in data["meta"].get("services", []) if s in registry]
    thinker = _Thinker(data, {s.qualified_name: s for s in registry.tools(services)})
    calls = [c for m in data["messages"] if m["role"] == "assistant"
             for c in m.get("tool_calls") or ()]
    positions = iter(_positions(len(calls)))
    shown: dict[str, str] = {}
    for msg in data["messages"]:
        if msg["role"] == "tool":
            thinker.results.append((shown.get(msg["tool_call_id"], msg["name"]), msg["content"]))
            continue
        if msg["role"] != "assistant":
            continue
        if msg.get("tool_calls"):
            thoughts = []
            for call in msg["tool_calls"]:
                name, args = _inner(call["function"]["name"], _loads(call["function"]["arguments"]))
                shown[call["id"]] = name
                thoughts.append(thinker.call(name, args, next(positions)))
            # a thought quotes the call's arguments: no control text of a template in it
            thought = neutralise(" ".join(thoughts))
            if style == "content":
                msg["content"] = (msg["content"] + "\n" + thought).strip()
                continue
        elif style == "content":
            continue
        else:
            thought = neutralise(thinker.final(msg["content"]))
        msg["reasoning_content"] = thought
    return data


def oracle_sft(tasks: Sequence[Task | dict[str, Any]], *, mode: str = "direct",
               style: str = "reasoning", workers: int | None = 1, ray_address: str | None = None,
               env_kwargs: dict[str, Any] | None = None, registry: Registry | None = None,
               progress: Callable[[int], None] | None = None, verify: bool = True,
               discover: bool = True, arguments: str = "object"
               ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The oracle's trajectories of ``tasks`` that pass the rubric, with thoughts added.

    In gateway mode the oracle discovers before it acts, as an agent that knows nothing of
    the tools must: one ``list_services`` call, ``list_tools`` of each service the solution
    uses before its first tool is called, ``describe_tool`` before each tool's first call,
    then the ``call_tool`` calls; every result is the gateway's real answer in the episode.

    A task file is data from anywhere: with ``verify`` each task is verified first (the
    checks a composed task passes: the oracle scores 1.0, an empty run fails, ...), and an
    unverified task gives no trajectory, so a rubric that anything passes cannot make one.

    Args:
        tasks: The tasks.
        mode: ``"direct"`` (the task's tools) or ``"gateway"`` (meta-tools).
        style: Where thoughts go (see add_thoughts).
        workers: Processes (or Ray actors) for the rollouts; see run_rollouts.
        ray_address: Run the rollouts on Ray (an address, or ``"local"``).
        env_kwargs: More CompoWorldEnv arguments (``max_steps``, ``world_model``...).
        registry: Where thoughts look tool phrases up (default: the built-in library).
        progress: Called with the number of finished episodes.

        verify: Verify each task before playing it.
        discover: In gateway mode, discover before acting (above); without, the oracle
            calls the solution's tools through ``call_tool`` straight away.
        arguments: Tool-call arguments as JSON objects (``"object"``, the published format)
            or their JSON text (``"string"``); see trajectory.arguments_as.

    Returns:
        ``(records, counts)``: the passing records in task order, and
        ``{"episodes", "passed", "failed", "failed_tasks", "unverified"}`` (``unverified``:
        task id -> why it failed verification).
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if style not in THOUGHT_STYLES:
        raise ValueError(f"style must be one of {THOUGHT_STYLES}, got {style!r}")
    if arguments not in ARGUMENT_FORMS:
        raise ValueError(f"arguments must be one of {ARGUMENT_FORMS}, got {arguments!r}")
    coerced = [Task.coerce(t) for t in tasks]
    unverified: dict[str, str] = {}
    if verify:
        from compoenv.compose.records import Rejected
        from compoenv.compose.verify import verify_task

        for task in coerced:
            try:
                verify_task(task, registry)
            except Rejected as exc:
                unverified[task.id or "(no id)"] = str(exc)
        coerced = [t for t in coerced if (t.id or "(no id)") not in unverified]
    if not coerced:
        return [], {"episodes": 0, "passed": 0, "failed": 0, "failed_tasks": [],
                    "unverified": unverified}
    kwargs = {**(env_kwargs or {}), "mode": mode}
    gateway = mode == "gateway"
    if "max_steps" not in kwargs:  # the oracle makes one call per step, then answers
        kwargs["max_steps"] = max([20] + [len(oracle_plan(t, gateway, discover)) + 1
                                          for t in coerced])
    records = run_rollouts(coerced, AgentFactory(OracleAgent, {"discover": discover}),
                           env_kwargs=kwargs, workers=workers, ray_address=ray_address,
                           source="compoenv-oracle", progress=progress)
    kept = [arguments_as(add_thoughts(r, style=style, registry=registry), arguments)
            for r in records if r["meta"]["score"] == 1.0]
    failed = [r["meta"]["task_id"] for r in records if r["meta"]["score"] != 1.0]
    return kept, {"episodes": len(records), "passed": len(kept), "failed": len(failed),
                  "failed_tasks": failed, "unverified": unverified}


def keep_passing(records: Iterable[Trajectory | dict[str, Any]],
                 min_rubric_score: float | None = None) -> list[dict[str, Any]]:
    """The records that pass: every required criterion (``meta.score == 1``) and, if given,
    ``meta.rubric_score >= min_rubric_score``. Each record is validated first.

    Raises:
        pydantic.ValidationError: a record is not a valid trajectory.
    """
    kept = []
    for record in records:
        model = record if isinstance(record, Trajectory) else Trajectory.model_validate(record)
        if model.passed and (min_rubric_score is None
                             or model.meta.rubric_score >= min_rubric_score):
            kept.append(model.to_record())
    return kept


def filter_trajectories(paths: Iterable[str | Path], min_rubric_score: float | None = None
                        ) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The passing trajectories of JSONL files (any agent's), validated line by line.

    Returns:
        ``(records, counts)`` with counts ``{"read", "passed", "failed"}``.

    Raises:
        TrajectoryFileError: a line is not a valid trajectory (names file, line and field).
    """
    read, kept = 0, []
    for path in paths:
        for model in iter_trajectories(path):
            read += 1
            kept.extend(keep_passing([model], min_rubric_score))
    return kept, {"read": read, "passed": len(kept), "failed": read - len(kept)}
