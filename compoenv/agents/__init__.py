"""Agents that act in CompoWorldEnv: the oracle (plays the solution), a random baseline, and
exploit agents that try to score without the work (``compoenv.agents.exploits``)."""

from __future__ import annotations

from typing import Any, Protocol

from compoenv.agents.oracle import OracleAgent
from compoenv.agents.random import RandomAgent

__all__ = ["Agent", "OracleAgent", "RandomAgent"]


class Agent(Protocol):
    """Anything with ``reset(observation, info)`` and ``act(observation, info) -> action``."""

    def reset(self, observation: str, info: dict[str, Any]) -> None: ...

    def act(self, observation: str, info: dict[str, Any]) -> str: ...
