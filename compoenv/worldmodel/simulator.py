"""Simulator: consistent world-model answers for one episode (cache, recording, patches, faults)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from typing import Any, Callable

from compoenv._cache import ByIdentity
from compoenv.schema import is_valid, validator_for
from compoenv.service import Service, ToolError, ToolSpec
from compoenv.worldmodel.base import SimState, ToolAnswer, ToolRequest, WorldModel, WorldModelError

__all__ = ["Simulator", "default_simulator", "request_key"]

_CACHE_SIZE = 50_000


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)


def request_key(spec: ToolSpec, arguments: dict[str, Any], version: str) -> str:
    """``<tool>|<canonical arguments>|<world/state version>``: the cache and recording key
    (the world is part of it: one process composes in many worlds)."""
    canonical = _CANONICAL.encode(arguments)
    return f"{spec.qualified_name}|{canonical}|{version}"


def _version(service: Service) -> str:
    if isinstance(service.state, SimState):
        # the digest of json.dumps(records, sort_keys=True), assembled from each collection's
        # text: collections are replaced, never edited, so each one is serialised once
        records = service.state.records
        blob = "{" + ", ".join(f"{json.dumps(name)}: {_collection_json(records[name])}"
                               for name in sorted(records)) + "}"
        return hashlib.blake2b(blob.encode(), digest_size=8).hexdigest()
    return f"w{service.writes}"  # typed services: the write count is a stable version


_collection_json: Callable[[Any], str] = ByIdentity(
    lambda collection: json.dumps(collection, sort_keys=True, default=str), maxsize=8192)


class Simulator:
    """The world model as an episode sees it.

    Answers are looked up in order: the task's recorded answers (so every agent and the oracle
    see the same ones), this simulator's cache, then the model. A model failure falls back to
    ``fallback`` (the offline model) or becomes a 500 envelope, as ``on_error`` says. Writes'
    patches are validated and applied to the service's simulated records.

    Args:
        model: The backend.
        recorded: Answers recorded in the task: request key -> {"data", "patch", "source"}.
        fallback: Backend used when ``model`` fails (None: no fallback).
        on_error: "fallback" or "error".
    """

    def __init__(self, model: WorldModel, recorded: dict[str, Any] | None = None,
                 fallback: WorldModel | None = None, on_error: str = "fallback") -> None:
        self.model, self.fallback, self.on_error = model, fallback, on_error
        self.recorded = recorded or {}
        self.recording: dict[str, Any] = {}   # answers from models other than offline
        self.events: list[dict[str, Any]] = []  # what happened: fallbacks, errors, repairs
        self._cache: OrderedDict[str, ToolAnswer] = OrderedDict()
        self._lock = threading.Lock()

    def answer(self, service: Service, spec: ToolSpec, arguments: dict[str, Any]) -> ToolAnswer:
        """The answer (its patch applied); raises ToolError when nothing valid came. Its
        ``source`` says who answered: the model, "recorded", or a fallback and why."""
        key = request_key(spec, arguments, f"{service.world.seed}/{_version(service)}")
        answer = self._lookup(key)
        if answer is None:
            answer = self._ask(service, spec, arguments, key)
        self._apply(service, spec, answer)
        return answer

    def _lookup(self, key: str) -> ToolAnswer | None:
        saved = self.recorded.get(key)
        if saved is not None:
            return ToolAnswer(saved["data"], saved.get("patch") or {}, "recorded")
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
            return hit

    def _ask(self, service: Service, spec: ToolSpec, arguments: dict[str, Any],
             key: str) -> ToolAnswer:
        records = service.state.records if isinstance(service.state, SimState) else {}
        # the seed leaves the state out: what a read finds besides stored records is the same
        # before and after a write, so earlier answers stay true
        stable = key.rsplit("|", 1)[0]
        seed = int.from_bytes(hashlib.blake2b(f"{service.world.seed}|{stable}".encode(),
                                              digest_size=8).digest(), "big")
        request = ToolRequest(spec, arguments, service.world, records, seed)
        try:
            answer = self._checked(self.model, request)
        except WorldModelError as exc:
            self.events.append({"tool": spec.qualified_name, "event": "model_failed",
                                "reason": exc.reason, "detail": exc.detail[:200]})
            if self.on_error != "fallback" or self.fallback is None:
                raise ToolError(500, f"The world model could not answer {spec.qualified_name}: "
                                     f"{exc.reason}") from None
            answer = self._checked(self.fallback, request)
            answer = ToolAnswer(answer.data, answer.patch,
                                f"{self.fallback.name} (fallback: {self.model.name} {exc.reason})")
            self.events.append({"tool": spec.qualified_name, "event": "fallback",
                                "model": self.fallback.name})
        with self._lock:
            self._cache[key] = answer
            while len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        if answer.source == self.model.name and answer.source != "offline":
            self.recording[key] = {"data": answer.data, "patch": answer.patch,
                                   "source": answer.source}
        return answer

    @staticmethod
    def _checked(model: WorldModel, request: ToolRequest) -> ToolAnswer:
        """The model's answer, or WorldModelError if its data or patch is not valid."""
        try:
            answer = model.answer(request)
        except WorldModelError:
            raise
        except Exception as exc:  # a backend bug is a failed answer, not a crashed episode
            raise WorldModelError("backend_error", f"{type(exc).__name__}: {exc}") from None
        # the offline model builds answers from the schema, checking each value as it goes
        # (and tests check every spec tool): only other models' answers are checked here
        returns = request.spec.returns
        if ((not getattr(model, "valid_by_construction", False) or _risky(returns))
                and not is_valid(answer.data, returns)):
            problem = next(iter(validator_for(returns).iter_errors(answer.data)), None)
            raise WorldModelError("invalid_output", problem.message[:200] if problem else
                                  "the answer does not match the return schema")
        if request.spec.read_only and answer.patch:
            raise WorldModelError("invalid_patch", "a read-only tool proposed a state change")
        for collection, changes in answer.patch.items():
            if not isinstance(changes, dict) or not all(
                    isinstance(k, str) and (v is None or isinstance(v, dict))
                    for k, v in changes.items()):
                raise WorldModelError("invalid_patch", f"collection {collection!r} must map "
                                                       f"keys to records or null")
        return answer

    @staticmethod
    def _apply(service: Service, spec: ToolSpec, answer: ToolAnswer) -> None:
        if not answer.patch or not isinstance(service.state, SimState):
            return  # typed services keep their typed state; simulated answers are reads there
        records = service.state.records
        for collection, changes in answer.patch.items():
            # copy on write: a snapshot or fork that shares the old collection stays as it was
            target = records[collection] = dict(records.get(collection, {}))
            for key, record in changes.items():
                if record is None:
                    target.pop(key, None)
                else:
                    target[key] = record


_RISKY_KEYS = frozenset({"pattern", "format", "multipleOf", "uniqueItems", "oneOf", "not",
                         "dependentRequired", "if", "patternProperties"})


def _uses_risky(node: Any) -> bool:
    """Whether a return schema uses keywords the offline model does not build for: then its
    answers are checked too."""
    if isinstance(node, list):
        return any(_uses_risky(item) for item in node)
    if not isinstance(node, dict):
        return False
    if "x-interface" in node and node.get("type") != "object":
        return False  # an interface's value comes from its own generator, pattern and all
    if any(k in _RISKY_KEYS for k in node):
        return True
    children = [v for k, v in node.items() if k not in ("properties", "enum", "const",
                                                         "default", "examples")]
    children += list((node.get("properties") or {}).values())  # names are not keywords
    return any(_uses_risky(child) for child in children)


_risky: Callable[[dict[str, Any]], bool] = ByIdentity(_uses_risky)  # once per schema

_DEFAULT: list[Simulator] = []


def default_simulator() -> Simulator:
    """The process-wide simulator for services outside a configured session: offline."""
    if not _DEFAULT:
        from compoenv.worldmodel.offline import OfflineWorldModel

        _DEFAULT.append(Simulator(OfflineWorldModel()))
    return _DEFAULT[0]
