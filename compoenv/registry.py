"""Registry: the services of the built-in library, plugins, @register and library folders."""

from __future__ import annotations

import functools
import importlib
import inspect
import os
import pkgutil
import threading
import types
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import entry_points
from itertools import count
from pathlib import Path
from typing import Any, Iterable, Iterator, TypeVar

from compoenv.library import Library, ServiceInfo, load_service, open_library, services_in
from compoenv.service import (
    MAX_QUALIFIED_NAME, SEP, Service, ToolSpec, did_you_mean, split_qualified,
)
from compoenv.signature import ToolSignature

__all__ = ["Registry", "register", "RegistryError", "Renamed", "ENTRY_POINT_GROUP",
           "LIBRARY_ENV", "library_paths", "using_libraries"]

ENTRY_POINT_GROUP = "compoenv.services"
LIBRARY_ENV = "COMPOENV_LIBRARY"
S = TypeVar("S", bound=type[Service])
_USER: dict[str, type[Service]] = {}
PathLike = str | os.PathLike[str]


class RegistryError(LookupError):
    """An unknown or duplicate service name."""


@dataclass(frozen=True, slots=True)
class Renamed:
    """A library service whose name was taken, and the name it got.

    Attributes:
        name: Its name in the registry (``<library>.<original>``).
        original: The name its file declares.
        file: The file that declares it.
    """

    name: str
    original: str
    file: str


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


def _duplicate(new: type[Service], old: type[Service] | str) -> str:
    where = old if isinstance(old, str) else f"{old.__module__}.{old.__qualname__}"
    return (f"Duplicate service name {new.name!r}: {new.__module__}.{new.__qualname__} and "
            f"{where}. Service names must be unique; rename one.")


def _class_info(cls: type[Service]) -> ServiceInfo:
    """What the registry keeps of a class: its tools are read from the class when needed."""
    kind = "spec" if "_spec_tools" in cls.__dict__ else "class"  # envs_library/specs
    return ServiceInfo(cls.name, kind, cls.domain, cls.description(), cls.version,
                       tuple(cls.related), display=cls.display, jobs=tuple(cls.jobs))


class Registry:
    """A set of services by unique name; services of libraries are built when first used.

    Args:
        services: Service classes to start with.
    """

    def __init__(self, services: Iterable[type[Service]] = ()) -> None:
        self._classes: dict[str, type[Service]] = {}        # built
        self._infos: dict[str, ServiceInfo] = {}            # every service, by registry name
        self._files: dict[str, tuple[Path, ServiceInfo]] = {}  # not built: library, own info
        self._deferred: dict[str, Path] = {}                # not built: a built-in spec file
        self._signatures: dict[str, tuple[ToolSignature, ...]] = {}
        self._lock = threading.RLock()
        self._recipe: tuple[Any, tuple[Any, ...]] | None = None
        self.renamed: dict[str, Renamed] = {}
        """Library services whose names were taken, by the name they got."""
        for cls in services:
            self.add(cls)

    def add(self, cls: type[Service]) -> type[Service]:
        """Add a service class; a second service of the same name is an error."""
        _check(cls)
        old = self._classes.get(cls.name)
        if old is not None and old is not cls:
            raise RegistryError(_duplicate(cls, old))
        if cls.name in self._files:
            root, info = self._files[cls.name]
            raise RegistryError(_duplicate(cls, str(root / str(info.file))))
        if cls.name in self._deferred:
            raise RegistryError(_duplicate(cls, str(self._deferred[cls.name])))
        self._classes[cls.name] = cls
        self._infos[cls.name] = _class_info(cls)
        self._recipe = None
        return cls

    def _add_spec_file(self, path: Path) -> None:
        """Add a spec-only service of the built-in library, built (validated, its tools
        parsed) when first used: its info is read from the file now."""
        info = _spec_info(path)
        if info.name in self._infos:
            raise RegistryError(f"Duplicate service name {info.name!r}: {path} and "
                                f"{self._where(info.name)}. Service names must be unique; "
                                f"rename one.")
        self._deferred[info.name] = path
        self._infos[info.name] = info
        self._recipe = None

    def _where(self, name: str) -> str:
        if name in self._classes:
            cls = self._classes[name]
            return f"{cls.__module__}.{cls.__qualname__}"
        if name in self._deferred:
            return str(self._deferred[name])
        root, info = self._files[name]
        return str(root / str(info.file))

    def add_library(self, path: PathLike, *, trust_code: bool | None = None) -> Library:
        """Add the services of a library (a folder, or one spec or module file). A service
        whose name is taken is added as ``<library>.<name>`` (see ``docs/libraries.md``), and
        listed in ``renamed``; its library's other services follow it in ``related``. Its
        Python modules are imported only when ``trust_code`` (default:
        ``COMPOENV_TRUST_CODE``) says so.

        Raises:
            LibraryError: no library at ``path``, or Python modules in it not trusted.
            SpecError: a spec file of the library is not valid.
            RegistryError: a taken name cannot be namespaced within the length limit.
        """
        library = open_library(path, trust_code=trust_code)
        own: dict[str, str] = {}  # this library's names -> the registry's names for them
        added: list[tuple[str, ServiceInfo]] = []
        pending: set[str] = set()
        for info in library.services:
            name = info.name
            if self._already(name, library.root, info):
                own.setdefault(info.name, name)
                continue  # a class of this very file, added when @register ran on its import
            if name in self._infos or name in pending:
                name = self._free_name(info, library, pending)
                self.renamed[name] = Renamed(name, info.name, str(library.root / str(info.file)))
            own.setdefault(info.name, name)
            added.append((name, info))
            pending.add(name)
        for name, info in added:
            self._files[name] = (library.root, info)
            self._infos[name] = info.renamed(name, tuple(own.get(r, r) for r in info.related))
        self._recipe = None  # no longer what its sources give
        return library

    def _already(self, name: str, root: Path, info: ServiceInfo) -> bool:
        """Whether the registry holds ``name`` as the class a library's module defines (the
        module was imported, and its ``@register`` ran, before the library was added)."""
        cls = self._classes.get(name)
        if cls is None or info.file is None or not str(info.file).endswith(".py"):
            return False
        try:
            source = inspect.getsourcefile(cls)
        except TypeError:
            return False
        return source is not None and Path(source).resolve() == (root / str(info.file)).resolve()

    def _free_name(self, info: ServiceInfo, library: Library, pending: set[str]) -> str:
        """``<library>.<name>``, else ``<library>_2.<name>``, ..., cut short where a tool's
        qualified name would pass the length limit."""
        longest = max((len(t.name) for t in info.tools), default=0)
        room = MAX_QUALIFIED_NAME - len(SEP) - longest
        for n in count(1):
            space = library.name if n == 1 else f"{library.name}_{n}"
            if room < len(space) + 2:
                raise RegistryError(
                    f"Service {info.name!r} of {library.root / str(info.file)}: its name is "
                    f"taken and no namespaced name fits the {MAX_QUALIFIED_NAME}-character "
                    f"limit of its tool names (its longest tool name has {longest}); rename "
                    f"the service or shorten its tool names")
            name = f"{space}.{info.name}"[:room].rstrip("._")
            if name not in self._infos and name not in pending:
                return name
        raise AssertionError("unreachable")

    def get(self, name: str) -> type[Service]:
        """The service class of ``name``, built now if it comes from a library."""
        cls = self._classes.get(name)
        if cls is not None:
            return cls
        if name not in self._files and name not in self._deferred:
            raise RegistryError(did_you_mean(name, self._infos, "service"))
        with self._lock:
            if name not in self._classes:
                if name in self._deferred:
                    self._classes[name] = _spec_service(self._deferred[name])
                else:
                    root, info = self._files[name]
                    # its library was opened, so its modules (if any) were trusted then
                    self._classes[name] = load_service(root, info, name,
                                                       self._infos[name].related,
                                                       trust_code=True)
            return self._classes[name]

    def loaded(self, name: str) -> bool:
        """Whether the service ``name`` is built (a library service is built on first use)."""
        return name in self._classes

    def __contains__(self, name: object) -> bool:
        return name in self._infos

    def __iter__(self) -> Iterator[type[Service]]:
        """Every service class, by name (library services are built)."""
        return (self.get(name) for name in self.names())

    def __len__(self) -> int:
        return len(self._infos)

    def names(self) -> list[str]:
        return sorted(self._infos)

    def info(self, name: str) -> ServiceInfo:
        """What is known of a service without building it (domain, version, related, ...)."""
        try:
            return self._infos[name]
        except KeyError:
            raise RegistryError(did_you_mean(name, self._infos, "service")) from None

    def spec(self, qualified: str) -> ToolSpec:
        """The ToolSpec of ``<service>__<tool>`` (its service built if need be)."""
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

    def signatures(self, names: Iterable[str] | None = None) -> list[ToolSignature]:
        """The tools of the named services (default: every one) as the graph sees them, read
        from library indexes: no service is built."""
        out: list[ToolSignature] = []
        for name in self.names() if names is None else names:
            found = self._infos[name].tools if name in self._files else self._signatures.get(name)
            if found is None:
                found = self._signatures[name] = tuple(
                    ToolSignature.of(s) for s in self.get(name).tool_specs().values())
            out.extend(found)
        return out

    def domains(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for name in self.names():
            out.setdefault(self._infos[name].domain, []).append(name)
        return out

    def related(self, a: str, b: str) -> bool:
        """Whether a request may plausibly go from service ``a`` to ``b`` (either way): the
        same service, one names the other (or ``"*"``) in ``related``, or one declares no
        neighbours at all (an untagged plugin joins anything, as it did before it was tagged).
        A lead's company may be researched on the web, but not parked at."""
        if a == b:
            return True
        first, second = self.info(a).related, self.info(b).related
        if not first or not second:
            return True
        return "*" in first or "*" in second or b in first or a in second

    def scope(self, name: str) -> tuple[str, bool]:
        """A service's API (``api``, else its own name), and whether it is confined to it: a
        spec that names no related services (an imported API's) trades amounts, dates, codes
        and ids only within its own API (or takes them from its user), and with other
        services only people of a role, places, companies and links (``graph.crosses``)."""
        info = self.info(name)
        return info.api or name, info.kind == "spec" and not info.related

    def fingerprint(self, services: Iterable[str]) -> dict[str, str]:
        """Versions of the named services, recorded in tasks to detect stale task files."""
        return {name: self.info(name).version for name in sorted(services)}

    def __reduce__(self) -> Any:
        # sent to a worker process: rebuilt there from its sources (classes made from spec
        # files cannot be pickled), or from its classes when it was put together by hand
        return self._recipe or (Registry, (list(self),))

    @classmethod
    def from_paths(cls, *paths: PathLike, trust_code: bool | None = None) -> Registry:
        """The services of these libraries, in order (a later one's taken names namespaced).

        Args:
            paths: Library folders (spec JSON files at any depth and Python service modules,
                described by ``index.json``, written when missing or stale) or single spec or
                module files.
            trust_code: Whether their Python modules may be imported (default:
                ``COMPOENV_TRUST_CODE``); a library with modules is refused without it.
        """
        registry = cls()
        for path in paths:
            registry.add_library(path, trust_code=trust_code)
        registry._recipe = (functools.partial(Registry.from_paths, trust_code=trust_code),
                            tuple(str(p) for p in paths))
        return registry

    @classmethod
    def default(cls, libraries: Iterable[PathLike] = ()) -> Registry:
        """envs_library (Python services and specs/*.json), the ``compoenv.services`` entry
        points, @register'd services, then the libraries of ``COMPOENV_LIBRARY`` (paths
        separated by ``os.pathsep``) and ``libraries``; one registry per set of libraries."""
        paths = tuple(library_paths(libraries))
        with _LOCK:
            if paths not in _DEFAULT:
                registry = cls(_discover("envs_library"))
                for spec_file in _spec_files():
                    registry._add_spec_file(spec_file)
                for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
                    loaded = ep.load()
                    for svc in (_discover(loaded.__name__)
                                if isinstance(loaded, types.ModuleType) else [loaded]):
                        registry.add(svc)
                for svc in _USER.values():
                    registry.add(svc)
                for path in paths:
                    registry.add_library(path)
                registry._recipe = (_default_with, (tuple(str(p) for p in paths),))
                _DEFAULT[paths] = registry
            return _DEFAULT[paths]


def library_paths(extra: Iterable[PathLike] = ()) -> list[Path]:
    """The libraries ``COMPOENV_LIBRARY`` names, then ``extra``, each once (absolute)."""
    named = [p for p in os.environ.get(LIBRARY_ENV, "").split(os.pathsep) if p.strip()]
    out: list[Path] = []
    for path in [*named, *extra]:
        absolute = Path(path).expanduser().absolute()
        if absolute not in out:
            out.append(absolute)
    return out


@contextmanager
def using_libraries(paths: Iterable[PathLike]) -> Iterator[list[Path]]:
    """Within this context, ``Registry.default()`` (here and in processes started here) also
    holds these libraries: they are added to ``COMPOENV_LIBRARY``. What ``--library`` does."""
    before = os.environ.get(LIBRARY_ENV)
    chosen = library_paths(paths)
    os.environ[LIBRARY_ENV] = os.pathsep.join(str(p) for p in chosen)
    try:
        yield chosen
    finally:
        if before is None:
            os.environ.pop(LIBRARY_ENV, None)
        else:
            os.environ[LIBRARY_ENV] = before


def _default_with(libraries: tuple[str, ...]) -> Registry:
    return Registry.default(libraries)


def _spec_files() -> list[Path]:
    """The spec files of envs_library/specs (spec-only services, answered by the world
    model), sorted by name."""
    import envs_library

    folder = Path(envs_library.__file__).with_name("specs")
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def _spec_info(path: Path) -> ServiceInfo:
    """What the registry keeps of a built-in spec before it is built: the fields of its file
    that ``_class_info`` reads from the class ``service_from_spec`` makes of it."""
    import json

    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
        name, description = spec["name"], inspect.cleandoc(spec["description"])
        return ServiceInfo(name, "spec", spec["domain"],
                           " ".join((description or name).split("\n\n")[0].split()),
                           spec.get("version", "1"), tuple(spec.get("related", ())),
                           display=spec.get("display", ""), jobs=tuple(spec.get("jobs", ())))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        from compoenv.worldmodel.spec import SpecError

        _spec_service(path)  # says what is wrong with the file, as loading it does
        raise SpecError(f"{path}: not a valid spec") from None


def _spec_service(path: Path) -> type[Service]:
    from compoenv.worldmodel import SimulatedService, load_spec, service_from_spec

    return service_from_spec(load_spec(path, False), SimulatedService)


def _discover(package: str) -> list[type[Service]]:
    """Service subclasses defined in the modules of ``package`` (recursively), sorted by name."""
    root = importlib.import_module(package)
    modules = [root]
    for info in pkgutil.walk_packages(getattr(root, "__path__", []), prefix=package + "."):
        modules.append(importlib.import_module(info.name))
    found: dict[str, type[Service]] = {}
    for module in modules:
        for value in services_in(module):
            if value.name in found and found[value.name] is not value:
                raise RegistryError(_duplicate(value, found[value.name]))
            found[value.name] = value
    return [found[name] for name in sorted(found)]


_LOCK = threading.RLock()
_DEFAULT: dict[tuple[Path, ...], Registry] = {}
