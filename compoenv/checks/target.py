"""What ``verify`` checks: a service class, a registered name, a Python file or a spec file."""

from __future__ import annotations

import importlib.util
import json
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compoenv.registry import Registry, RegistryError
from compoenv.service import Service, ToolSpec

__all__ = ["Target", "TargetError", "LoadFailure", "resolve"]


class TargetError(ValueError):
    """The target names no service: an unknown name, or a file that cannot be read."""


class LoadFailure(Exception):
    """The target's file was read but gives no service (it raises, or defines none or
    several); a verification failure, not a usage error."""


@dataclass(frozen=True)
class Target:
    """A resolved service to verify.

    Attributes:
        cls: The service class.
        label: The target as given, for the report.
        ref: How a fresh process loads it: ``("registry", name)``, ``("file", path)``,
            ``("module", module, qualname)``, or ``()`` when it cannot.
        spec: The tools of a spec of the same service (when one exists), by name.
        spec_origin: Where that spec comes from.
        registry: The registry it is checked beside.
    """

    cls: type[Service]
    label: str
    ref: tuple[str, ...]
    spec: dict[str, ToolSpec] | None
    spec_origin: str
    registry: Registry

    @property
    def name(self) -> str:
        return self.cls.name


def _spec_tools(path: Path) -> dict[str, ToolSpec]:
    from compoenv.worldmodel.spec import load_spec, spec_tools

    return spec_tools(load_spec(path, strict=False))


def _registered_spec(cls: type[Service], registry: Registry) -> tuple[dict[str, ToolSpec] | None,
                                                                     str]:
    """The tools of the spec-only service of ``cls``'s name in ``registry``, if there is one."""
    from compoenv.worldmodel.base import SimulatedService

    if cls.name not in registry:
        return None, ""
    other = registry.get(cls.name)
    if other is cls and issubclass(cls, SimulatedService):
        return cls.tool_specs(), "its own spec"
    if other is cls or not issubclass(other, SimulatedService):
        return None, ""
    return dict(other.tool_specs()), f"the spec of {cls.name!r} in the library"


def load_file(path: Path) -> type[Service]:
    """The one Service subclass a Python file defines (imported under a private name)."""
    name = f"compoenv_verify_{abs(hash(str(path.resolve())))}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise TargetError(f"{path}: not a Python module")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module  # pydantic resolves the file's annotations through it
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:  # the file is under test: its failure is the report
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        raise LoadFailure(f"importing {path} raised {type(exc).__name__}: {exc} "
                          f"(line {frame.lineno})") from None
    found = [v for v in vars(module).values() if isinstance(v, type)
             and issubclass(v, Service) and v.__module__ == name and v.name]
    if len(found) != 1:
        names = ", ".join(c.__qualname__ for c in found) or "none"
        raise LoadFailure(f"{path} must define exactly one Service subclass with a name, "
                          f"found {len(found)} ({names})")
    return found[0]


def _with(cls: type[Service], base: Registry) -> Registry:
    """``base`` with ``cls`` in it, replacing a service of its name (a spec it implements)."""
    if cls.name in base and base.get(cls.name) is cls:
        return base
    return Registry([c for c in base if c.name != cls.name] + [cls])


def resolve(target: Any, registry: Registry | None = None,
            spec: str | Path | None = None) -> Target:
    """The Target for a service class, a registered name, or a ``.py`` / ``.json`` path.

    A spec file verifies the library's implementation of that spec (a service of the spec's
    name that is no spec-only service), or the spec-only service itself when there is none.

    Raises:
        TargetError: unknown name, missing or unreadable file, invalid spec.
        LoadFailure: a Python file that raises on import or defines no single service.
    """
    from compoenv.worldmodel.spec import SpecError, load_spec, service_from_spec
    from compoenv.worldmodel.base import SimulatedService

    base = registry or Registry.default()
    spec_tools: dict[str, ToolSpec] | None = None
    origin = ""
    if spec is not None:
        try:
            spec_tools, origin = _spec_tools(Path(spec)), str(spec)
        except (OSError, SpecError, json.JSONDecodeError) as exc:
            raise TargetError(f"spec {spec}: {exc}") from None
    label = getattr(target, "__qualname__", None) or str(target)
    if isinstance(target, type) and issubclass(target, Service):
        cls = target
        module = sys.modules.get(cls.__module__)
        local = "<locals>" in cls.__qualname__ or cls.__module__ == "__main__"
        ref: tuple[str, ...] = () if local or module is None else \
            ("module", cls.__module__, cls.__qualname__)
        if cls.__module__.startswith("compoenv_verify_") and module is not None:
            ref = ("file", str(getattr(module, "__file__", "")))
        if getattr(cls, "fresh_seedings", None) is not None:
            ref = ()  # its module lives in a sandboxed process, which seeds it afresh
    elif isinstance(target, (str, Path)) and str(target).endswith((".py", ".json")):
        path = Path(target)
        if not path.is_file():
            raise TargetError(f"{path}: no such file")
        if path.suffix == ".py":
            cls, ref = load_file(path), ("file", str(path.resolve()))
        else:
            try:
                data = load_spec(path, strict=False)
            except (OSError, SpecError, json.JSONDecodeError) as exc:
                text = str(exc)  # a SpecError names its file already
                raise TargetError(text if text.startswith(f"{path}:") else f"{path}: {text}"
                                  ) from None
            spec_tools, origin = spec_tools or _spec_tools(path), origin or str(path)
            implemented = data["name"] in base and not issubclass(
                base.get(data["name"]), SimulatedService)
            cls = base.get(data["name"]) if implemented \
                else service_from_spec(data, SimulatedService)
            ref = ("registry", cls.name) if implemented else ("spec", str(path.resolve()))
    elif isinstance(target, str):
        try:
            cls = base.get(target)
        except RegistryError as exc:
            raise TargetError(str(exc.args[0] if exc.args else exc)) from None
        ref = ("registry", target)
    else:
        raise TargetError(f"cannot verify {target!r}: give a service class, a registered "
                          f"service name, or a path to a .py or spec .json file")
    if spec_tools is None:
        spec_tools, origin = _registered_spec(cls, base)
    return Target(cls, label, ref, spec_tools, origin, _with(cls, base))
