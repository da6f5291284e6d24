"""Choosing the world model: from a spec string, an object, or the environment.

    world_model_from(None)                       # $COMPOENV_WORLD_MODEL, else offline
    world_model_from("offline")
    world_model_from("endpoint")                 # EndpointConfig.from_env(): COMPOENV_LLM_*
                                                 # (BASE_URL, MODEL, API_KEY, TIMEOUT_S,
                                                 # TOTAL_TIMEOUT_S, MAX_RETRIES, BACKOFF_S,
                                                 # TEMPERATURE, MAX_TOKENS, CONCURRENCY)
    world_model_from("endpoint:http://localhost:8000/v1")   # model: $COMPOENV_LLM_MODEL
    world_model_from("transformers:/models/qwen3-0.6b")
    simulator_from("endpoint", on_error="error")  # policy default: $COMPOENV_WORLD_MODEL_ON_ERROR

Backends built from a string are kept per process (a local model loads once), so a
Simulator per episode stays cheap.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from typing import Any

from compoenv.llm import EndpointConfig
from compoenv.worldmodel.base import WorldModel
from compoenv.worldmodel.offline import OfflineWorldModel
from compoenv.worldmodel.simulator import Simulator

__all__ = [
    "PinnedWorldModel",
    "ENV_MODEL",
    "ENV_ON_ERROR",
    "ON_ERROR",
    "clear_cache",
    "on_error_from",
    "simulator_for_task",
    "simulator_from",
    "world_model_from",
]

ENV_MODEL = "COMPOENV_WORLD_MODEL"
ENV_ON_ERROR = "COMPOENV_WORLD_MODEL_ON_ERROR"
ON_ERROR = ("fallback", "error")
_FORMS = ("'offline', 'endpoint', 'endpoint:<base_url>', 'transformers:<path>'")

_BUILT: dict[Any, WorldModel] = {}
_LOCK = threading.Lock()


def _endpoint_config(base_url: str | None) -> EndpointConfig:
    """The endpoint from COMPOENV_LLM_* (timeouts, retries, tokens, concurrency included),
    at ``base_url`` when one is given."""
    config = EndpointConfig.from_env(base_url=base_url or None)
    if config is None:
        raise ValueError("world model 'endpoint' needs COMPOENV_LLM_BASE_URL (the API root, "
                         "e.g. http://localhost:8000/v1) and COMPOENV_LLM_MODEL; or use "
                         "'endpoint:<base_url>'")
    return config


def _cached(key: Any, build: Any) -> WorldModel:
    with _LOCK:
        model = _BUILT.get(key)
        if model is None:
            model = _BUILT[key] = build()
        return model


def world_model_from(spec: str | WorldModel | EndpointConfig | None = None) -> WorldModel:
    """The backend ``spec`` names (see the module docstring); an object with ``answer`` and
    ``name`` is returned as it is.

    Raises:
        ValueError: an unknown spec, or 'endpoint' with no endpoint configured.
        ImportError: the backend's packages are missing (``pip install 'compoenv[llm]'``).
    """
    if spec is None:
        spec = os.environ.get(ENV_MODEL, "").strip() or "offline"
    if isinstance(spec, EndpointConfig):
        from compoenv.worldmodel.endpoint import EndpointWorldModel

        config = spec
        return _cached(("endpoint", dataclasses.astuple(config)),
                       lambda: EndpointWorldModel(config))
    if not isinstance(spec, str):
        if callable(getattr(spec, "answer", None)) and isinstance(getattr(spec, "name", None),
                                                                  str):
            return spec
        raise TypeError(f"world model must be a spec string, an EndpointConfig or an object "
                        f"with .name and .answer(request), not {type(spec).__name__}")
    kind, _, rest = spec.strip().partition(":")
    kind, rest = kind.strip().lower(), rest.strip()
    if kind == "offline" and not rest:
        return OfflineWorldModel()
    if kind == "endpoint":
        from compoenv.worldmodel.endpoint import EndpointWorldModel

        config = _endpoint_config(rest or None)
        return _cached(("endpoint", dataclasses.astuple(config)),
                       lambda: EndpointWorldModel(config))
    if kind == "transformers" and rest:
        from compoenv.worldmodel.local import TransformersWorldModel

        return _cached(("transformers", rest), lambda: TransformersWorldModel(rest))
    raise ValueError(f"unknown world model {spec!r}: expected one of {_FORMS} "
                     f"(or set {ENV_MODEL})")


def on_error_from(on_error: str | None = None) -> str:
    """The failure policy: ``on_error``, else $COMPOENV_WORLD_MODEL_ON_ERROR, else "fallback"."""
    policy = (on_error or os.environ.get(ENV_ON_ERROR, "") or "fallback").strip().lower()
    if policy not in ON_ERROR:
        raise ValueError(f"world-model error policy {policy!r}: expected one of {ON_ERROR} "
                         f"(argument on_error or {ENV_ON_ERROR})")
    return policy


def simulator_from(spec: str | WorldModel | EndpointConfig | None = None,
                   recorded: dict[str, Any] | None = None,
                   on_error: str | None = None) -> Simulator:
    """A Simulator for one episode: the backend ``spec`` names, the task's ``recorded``
    answers, and the failure policy ("fallback": answer offline, "error": a 500 envelope)."""
    model = world_model_from(spec)
    policy = on_error_from(on_error)
    offline = isinstance(model, OfflineWorldModel)
    fallback = OfflineWorldModel() if policy == "fallback" and not offline else None
    return Simulator(model, recorded=recorded, fallback=fallback, on_error=policy)


class PinnedWorldModel:
    """A world model that answers some calls with another one: a task's solution calls go to
    the model the task was verified with, so the oracle still scores 1.0 when the player
    configures a different one; every other call goes to ``model``.

    Args:
        model: Who answers calls off the solution's path.
        pinned: Who answered while the task was verified (offline, for a task composed offline).
        calls: The pinned requests as (qualified tool name, canonical arguments JSON).
    """

    def __init__(self, model: WorldModel, pinned: WorldModel,
                 calls: frozenset[tuple[str, str]]) -> None:
        self.model, self.pinned, self.calls = model, pinned, calls
        self.name = model.name

    @staticmethod
    def canonical(arguments: Any) -> str:
        return json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)

    def answer(self, request: Any) -> Any:
        if (request.spec.qualified_name, self.canonical(request.arguments)) in self.calls:
            answer = self.pinned.answer(request)
            return dataclasses.replace(answer, source=f"{answer.source} (pinned: the task was "
                                                      f"verified with it)")
        return self.model.answer(request)


def simulator_for_task(task: Any, configured: Any = None) -> Simulator | None:
    """The Simulator an episode of ``task`` plays with: the task's recorded answers first;
    the solution's own calls answered by the world model the task was verified with
    (``task.recorded["world_model"]``, offline when absent); the rest by ``configured``.
    None when that is all the offline default (the session's own fallback)."""
    answers = task.recorded.get("answers") or {}
    verified_with = task.recorded.get("world_model") or "offline"
    if not answers and configured in (None, "", "offline"):
        return None
    if configured in (None, "", "offline"):
        return simulator_from("offline", recorded=answers)
    model = world_model_from(configured)
    if verified_with == "offline" and not isinstance(model, OfflineWorldModel):
        calls = frozenset((c.name, PinnedWorldModel.canonical(c.arguments))
                          for c in task.solution)
        model = PinnedWorldModel(model, OfflineWorldModel(), calls)
    return simulator_from(model, recorded=answers)


def clear_cache() -> None:
    """Forget the backends built from strings (closing endpoint clients)."""
    with _LOCK:
        built = list(_BUILT.values())
        _BUILT.clear()
    for model in built:
        close = getattr(model, "close", None)
        if callable(close):
            close()
