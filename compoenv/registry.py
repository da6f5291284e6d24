"""Registry: discovers services (envs_library, entry points, @register) by unique name."""

from __future__ import annotations

import importlib
import pkgutil
import threading
import types
from importlib.metadata import entry_points
from typing import Iterable, Iterator, TypeVar

from compoenv.service import Service, ToolSpec, did_you_mean, split_qualified

__all__ = ["Registry", "register", "RegistryError", "ENTRY_POINT_GROUP"]

ENTRY_POINT_GROUP = "compoenv.services"
S = TypeVar("S", bound=type[Service])
_USER: dict[str, type[Service]] = {}


class RegistryError(LookupError):
    """An unknown or duplicate service name."""


def register(cls: S) -> S:
    """Class decorator: add a user service to every default registry created afterwards."""
    _check(cls)
    previous = _USER.get(cls.name)
    if previous is not None and previous is not cls:
        raise RegistryError(_duplicate(cls, previous))
    _USER[cls.name] = cls
    _DEFAULT.clear()
    return cls


def _check(cls: type) -> None:
    if not (isinstance(cls, type) and issubclass(cls, Service)):
        raise TypeError(f"Expected a Service subclass, got {cls!r}")
    if not cls.name:
        raise TypeError(f"{cls.__qualname__} has no `name`; set name = 'my_service'")


def _duplicate(new: type[Service], old: type[Service]) -> str:
    return (f"Duplicate service name {new.name!r}: {new.__module__}.{new.__qualname__} and "
            f"{old.__module__}.{old.__qualname__}. Service names must be unique; rename one.")


class Registry:
    """A set of services by unique name.

    Args:
        services: Service classes to start with.
    """

    def __init__(self, services: Iterable[type[Service]] = ()) -> None:
        self._services: dict[str, type[Service]] = {}
        for cls in services:
            self.add(cls)

    def add(self, cls: type[Service]) -> type[Service]:
        _check(cls)
        old = self._services.get(cls.name)
        if old is not None and old is not cls:
            raise RegistryError(_duplicate(cls, old))
        self._services[cls.name] = cls
        return cls

    def get(self, name: str) -> type[Service]:
        try:
            return self._services[name]
        except KeyError:
            raise RegistryError(did_you_mean(name, self._services, "service")) from None

    def __contains__(self, name: object) -> bool:
        return name in self._services

    def __iter__(self) -> Iterator[type[Service]]:
        return iter(self._services.values())

    def __len__(self) -> int:
        return len(self._services)

    def names(self) -> list[str]:
        return sorted(self._services)

    def spec(self, qualified: str) -> ToolSpec:
        """The ToolSpec of ``<service>__<tool>``."""
        service, tool_name = split_qualified(qualified)
        specs = self.get(service).tool_specs()
        if tool_name not in specs:
            raise RegistryError(did_you_mean(qualified, [s.qualified_name for s in
                                                         specs.values()], "tool"))
        return specs[tool_name]

    def tools(self, services: Iterable[str] | None = None) -> list[ToolSpec]:
        """All ToolSpecs of the named services (default: every service), in a stable order."""
        names = self.names() if services is None else list(services)
        return [spec for name in names for spec in self.get(name).tool_specs().values()]

    def domains(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for name in self.names():
            out.setdefault(self._services[name].domain, []).append(name)
        return out

    def related(self, a: str, b: str) -> bool:
        """Whether a request may plausibly go from service ``a`` to ``b`` (either way): the
        same service, one names the other (or ``"*"``) in ``related``, or one declares no
        neighbours at all (an untagged plugin joins anything, as it did before it was tagged).
        A lead's company may be researched on the web, but not parked at."""
        if a == b:
            return True
        first, second = self.get(a).related, self.get(b).related
        if not first or not second:
            return True
        return "*" in first or "*" in second or b in first or a in second

    def fingerprint(self, services: Iterable[str]) -> dict[str, str]:
        """Versions of the named services, recorded in tasks to detect stale task files."""
        return {name: self.get(name).version for name in sorted(services)}

    @classmethod
    def default(cls) -> Registry:
        """envs_library (Python services and specs/*.json), the ``compoenv.services`` entry points,
        and @register'd services."""
        with _LOCK:
            if "registry" not in _DEFAULT:
                registry = cls(_discover("envs_library"))
                for svc in _spec_services():
                    registry.add(svc)
                for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
                    loaded = ep.load()
                    for svc in (_discover(loaded.__name__)
                                if isinstance(loaded, types.ModuleType) else [loaded]):
                        registry.add(svc)
                for svc in _USER.values():
                    registry.add(svc)
                _DEFAULT["registry"] = registry
            return _DEFAULT["registry"]


def _spec_services() -> list[type[Service]]:
    """The spec-only services of envs_library/specs (answered by the world model)."""
    from pathlib import Path

    import envs_library
    from compoenv.worldmodel import spec_services

    folder = Path(envs_library.__file__).with_name("specs")
    return list(spec_services(str(folder))) if folder.is_dir() else []


def _discover(package: str) -> list[type[Service]]:
    """Service subclasses defined in the modules of ``package`` (recursively), sorted by name."""
    root = importlib.import_module(package)
    modules = [root]
    for info in pkgutil.walk_packages(getattr(root, "__path__", []), prefix=package + "."):
        modules.append(importlib.import_module(info.name))
    found = {}
    for module in modules:
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, Service) and value.name
                    and value.__module__ == module.__name__):
                if value.name in found and found[value.name] is not value:
                    raise RegistryError(_duplicate(value, found[value.name]))
                found[value.name] = value
    return [found[name] for name in sorted(found)]


_LOCK = threading.RLock()
_DEFAULT: dict[str, Registry] = {}
