"""World models: answers for tools that cannot be implemented reliably (spec-only services)."""

from __future__ import annotations

from compoenv._lazy import lazy_attributes
from compoenv.worldmodel.base import (
    SimulatedService, SimState, ToolAnswer, ToolRequest, WorldModel, WorldModelError,
)
from compoenv.worldmodel.offline import OfflineWorldModel
from compoenv.worldmodel.simulator import Simulator, default_simulator

__all__ = ["WorldModel", "ToolRequest", "ToolAnswer", "WorldModelError", "SimulatedService",
           "SimState", "OfflineWorldModel", "Simulator", "default_simulator", "SpecError",
           "load_spec", "validate_spec", "service_from_spec", "spec_services",
           "world_model_from", "simulator_from"]

# imported at first use (their modules import jsonschema and the endpoint client): playing a
# task of implemented services needs neither
_LAZY = {"simulator_from": "config", "world_model_from": "config", "SpecError": "spec",
         "load_spec": "spec", "service_from_spec": "spec", "validate_spec": "spec"}

__getattr__ = lazy_attributes(__name__, _LAZY)


def spec_services(folder: str, strict: bool = False) -> list[type[SimulatedService]]:
    """Service classes for every ``*.json`` spec in ``folder`` (sorted by file name)."""
    from pathlib import Path

    from compoenv.worldmodel.spec import load_spec, service_from_spec

    return [service_from_spec(load_spec(p, strict), SimulatedService)  # type: ignore[misc]
            for p in sorted(Path(folder).glob("*.json"))]
