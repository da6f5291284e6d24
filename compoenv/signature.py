"""Tool signatures: what the dependency graph needs of a tool (its typed slots), without its
schemas, validators or code, so a library index can describe 50,000 tools cheaply."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from compoenv.schema import Slot

if TYPE_CHECKING:
    from compoenv.service import ToolSpec

__all__ = ["ToolSignature"]


@dataclass(frozen=True, slots=True)
class ToolSignature:
    """A tool as the graph sees it.

    Attributes:
        service: The service's name.
        name: The tool's name within its service.
        qualified_name: ``<service>__<tool>``, the name an agent calls.
        read_only: Whether the tool only reads.
        simulated: Whether the world model answers it.
        required: Names of the required parameters.
        inputs: Interface-tagged places of the parameters.
        outputs: Interface-tagged places of the result.
        returns_list: Whether the result is a list at its root.
    """

    service: str
    name: str
    qualified_name: str
    read_only: bool
    simulated: bool
    required: tuple[str, ...]
    inputs: tuple[Slot, ...]
    outputs: tuple[Slot, ...]
    returns_list: bool

    @classmethod
    def of(cls, spec: ToolSpec) -> ToolSignature:
        """The signature of a parsed tool."""
        return cls(spec.service, spec.name, spec.qualified_name, spec.read_only, spec.simulated,
                   tuple(spec.parameters.get("required", ())), spec.inputs, spec.outputs,
                   spec.returns.get("type") == "array")

    def to_json(self) -> dict[str, Any]:
        """A compact JSON form for a library index (the service is the index entry's)."""
        return {"name": self.name, "read_only": self.read_only, "simulated": self.simulated,
                "required": list(self.required), "returns_list": self.returns_list,
                "inputs": [_slot_json(s) for s in self.inputs],
                "outputs": [_slot_json(s) for s in self.outputs]}

    @classmethod
    def from_json(cls, service: str, data: dict[str, Any], qualified_name: str) -> ToolSignature:
        """The signature ``to_json`` wrote, for a tool of ``service``."""
        return cls(service, data["name"], qualified_name, bool(data["read_only"]),
                   bool(data["simulated"]), tuple(data["required"]),
                   tuple(_slot(s) for s in data["inputs"]),
                   tuple(_slot(s) for s in data["outputs"]), bool(data["returns_list"]))


def _slot_json(slot: Slot) -> list[Any]:
    return [slot.interface, list(slot.path), slot.required, slot.kind, slot.role]


def _slot(data: list[Any]) -> Slot:
    interface, path, required, kind, role = data
    key = (interface, tuple(path), bool(required), kind, role)
    slot = _SLOTS.get(key)
    if slot is None:
        slot = _SLOTS[key] = Slot(*key)
    return slot


# one Slot object per distinct slot: 50,000 tools of a library index have some 250,000 slots
# but only a few thousand distinct ones (frozen, so they may be shared)
_SLOTS: dict[tuple[Any, ...], Slot] = {}
