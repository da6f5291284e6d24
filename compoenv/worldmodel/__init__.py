"""World models: answers for tools that cannot be implemented reliably (spec-only services)."""

from __future__ import annotations

from compoenv.worldmodel.base import (
    SimulatedService, SimState, ToolAnswer, ToolRequest, WorldModel, WorldModelError,
)
from compoenv.worldmodel.offline import OfflineWorldModel
from compoenv.worldmodel.simulator import Simulator, default_simulator
from compoenv.worldmodel.config import simulator_from, world_model_from
from compoenv.worldmodel.spec import SpecError, load_spec, service_from_spec, validate_spec

__all__ = ["WorldModel", "ToolRequest", "ToolAnswer", "WorldModelError", "SimulatedService",
           "SimState", "OfflineWorldModel", "Simulator", "default_simulator", "SpecError",
           "load_spec", "validate_spec", "service_from_spec", "spec_services",
           "world_model_from", "simulator_from"]


def spec_services(folder: str, strict: bool = False) -> list[type[SimulatedService]]:
    """Service classes for every ``*.json`` spec in ``folder`` (sorted by file name)."""
    from pathlib import Path

    return [service_from_spec(load_spec(p, strict), SimulatedService)  # type: ignore[misc]
            for p in sorted(Path(folder).glob("*.json"))]
