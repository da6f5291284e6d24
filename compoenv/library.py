"""Service libraries: folders of spec files and Python modules, described by an index file.

A library is a folder holding spec JSON files (``compoenv.worldmodel.spec``) at any depth and
Python modules that define Service classes. ``index.json`` at its root lists every service
(name, file, kind, domain, description, version, related, api) with its tools' signatures
(``compoenv.signature.ToolSignature``) and the size and modification time of every file, so
a registry learns what a library holds by reading one file, and builds a service only when
it is used. An index that is missing, stale (a file added, removed or changed) or corrupt is
rebuilt when the library is opened: files that did not change keep their entries.

Files and folders whose names start with ``.`` or ``_`` are not read, nor is ``index.json``
nor a ``*.provenance.json`` record that ``compoenv synthesize`` writes beside a module; every
other ``*.json`` file must be a valid spec.

A library's Python modules are code: they are imported (to index them, or to build one of
their services) only when the caller trusts them: ``trust_code=True``, ``--trust-code`` on the
command line, or ``COMPOENV_TRUST_CODE=1``. Otherwise a library that holds one is refused with
an error naming it, before any of its code runs; spec files need no trust.
"""

from __future__ import annotations

import gc
import hashlib
import importlib.util
import json
import multiprocessing
import os
import re
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable, Iterator

from compoenv.interfaces import STATABLE, declare_statable
from compoenv.service import Service, qualified_name
from compoenv.signature import ToolSignature
from compoenv.untrusted import clip

__all__ = ["INDEX_NAME", "Library", "LibraryError", "ServiceInfo", "open_library",
           "write_index", "load_service", "services_in", "library_name", "collector_paused",
           "TRUST_ENV", "code_trusted", "trusting_code", "UntrustedCode"]

INDEX_NAME = "index.json"
TRUST_ENV = "COMPOENV_TRUST_CODE"
PROVENANCE_SUFFIX = ".provenance.json"  # compoenv synthesize's record beside its module
FORMAT = 4  # 2: display names, declared jobs and statable interfaces; 3, 4: scope keys statable
_Files = dict[str, tuple[int, int]]  # relative path -> (size, modification time in ns)


class LibraryError(ValueError):
    """A library path that cannot be read, or an index that disagrees with its files; the
    message names the file."""


class UntrustedCode(LibraryError):
    """A library's Python module was to be imported, and its code is not trusted."""


@dataclass(frozen=True, slots=True)
class ServiceInfo:
    """What a registry knows of a service without building it.

    Attributes:
        name: The service's name as its file declares it.
        kind: ``spec`` (a spec file), ``python`` (a module of a library) or ``class`` (a
            Python class registered in code).
        domain: Its domain.
        description: One line on what it does.
        version: Its version (recorded in tasks).
        related: Services a request that uses it plausibly continues into.
        api: The API it was split from (resource ids join within one API), if any.
        file: Its file, relative to the library's folder (None for a class).
        tools: Its tools' signatures (the index holds what ``ToolSignature.to_json`` writes).
    """

    name: str
    kind: str
    domain: str
    description: str
    version: str
    related: tuple[str, ...] = ()
    api: str | None = None
    file: str | None = None
    tools: tuple[ToolSignature, ...] = field(default=(), repr=False)
    display: str = ""
    jobs: tuple[dict[str, Any], ...] = field(default=(), repr=False)
    # the interfaces of its tools a user can state (its own ones too: a pet's name), so an
    # index read back without importing the module still knows where a walk may start
    statable: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        declare_statable(self.statable)

    @classmethod
    def of(cls, service: type[Service], kind: str = "class",
           file: str | None = None) -> ServiceInfo:
        """The info of a service class (its tools parsed)."""
        specs = service.tool_specs().values()
        statable = sorted({slot.interface for spec in specs
                           for slot in (*spec.inputs, *spec.outputs)
                           if slot.interface in STATABLE})
        return cls(service.name, kind, service.domain, service.description(),
                   service.version, tuple(service.related), getattr(service, "api", None),
                   file, tuple(ToolSignature.of(s) for s in specs),
                   service.display, tuple(service.jobs), tuple(statable))

    def renamed(self, name: str, related: tuple[str, ...]) -> ServiceInfo:
        """The same service under another name (its tools' qualified names follow)."""
        tools = self.tools if name == self.name else tuple(
            replace(t, service=name, qualified_name=qualified_name(name, t.name))
            for t in self.tools)
        return replace(self, name=name, related=related, tools=tools)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "file": self.file, "kind": self.kind, "domain": self.domain,
                "description": self.description, "version": self.version,
                "related": list(self.related), "api": self.api, "display": self.display,
                "jobs": list(self.jobs), "statable": list(self.statable),
                "tools": [t.to_json() for t in self.tools]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ServiceInfo:
        name = data["name"]
        return cls(name, data["kind"], data["domain"], data["description"], data["version"],
                   tuple(data["related"]), data.get("api"), data["file"],
                   tuple(ToolSignature.from_json(name, t, qualified_name(name, t["name"]))
                         for t in data["tools"]), data.get("display", ""),
                   tuple(data.get("jobs", ())), tuple(data.get("statable", ())))


@dataclass(frozen=True)
class Library:
    """An opened library.

    Attributes:
        root: Its folder (for a single file: the folder the file is in).
        name: The namespace its services take when their names are taken (the folder's name
            as a service-name segment: ``My APIs`` -> ``my_apis``).
        services: Its services, in file order.
        rebuilt: Why its index was (re)built when it was opened (``missing``, ``stale: ...``,
            ``corrupt: ...``), or None when the index was read as it was.
    """

    root: Path
    name: str
    services: tuple[ServiceInfo, ...]
    rebuilt: str | None = None


def library_name(folder: Path) -> str:
    """A folder's name as a service-name segment (``My-APIs 2`` -> ``my_apis_2``)."""
    words = re.findall(r"[a-z0-9]+", folder.name.lower())
    name = "_".join(words) or "library"
    return name if name[0].isalpha() else f"lib_{name}"


def code_trusted(trust_code: bool | None = None) -> bool:
    """Whether a library's Python modules may be imported: ``trust_code`` when given, else
    ``COMPOENV_TRUST_CODE`` (``1``, ``true`` or ``yes``)."""
    if trust_code is not None:
        return trust_code
    return os.environ.get(TRUST_ENV, "").strip().lower() in ("1", "true", "yes")


@contextmanager
def trusting_code() -> Iterator[None]:
    """Within this context (and in processes started in it) libraries' Python modules are
    trusted: what ``--trust-code`` does."""
    before = os.environ.get(TRUST_ENV)
    os.environ[TRUST_ENV] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(TRUST_ENV, None)
        else:
            os.environ[TRUST_ENV] = before


def open_library(path: str | os.PathLike[str], *, trust_code: bool | None = None) -> Library:
    """The library at ``path``: a folder (its index read, or rebuilt and written when missing,
    stale or corrupt) or a single spec or module file (parsed; it has no index). Its Python
    modules are imported only when ``code_trusted(trust_code)``.

    Raises:
        LibraryError: ``path`` does not exist or is neither a folder nor a .json/.py file, or
            it holds Python modules and their code is not trusted.
        SpecError: a spec file of the library is not valid (the message names it).
    """
    path = Path(path).expanduser()
    if path.is_file():
        if path.suffix not in (".json", ".py"):
            raise LibraryError(f"{path}: a library is a folder, a spec (.json) or a Python "
                               f"module (.py)")
        root = path.parent
        return Library(root, library_name(root),
                       tuple(_parse(root, path.name, code_trusted(trust_code))))
    if not path.is_dir():
        raise LibraryError(f"{path}: no such library folder or file")
    return _open(path, must_write=False, trusted=code_trusted(trust_code))


def write_index(folder: str | os.PathLike[str], *, trust_code: bool | None = None) -> Path:
    """Write (or bring up to date) ``index.json`` of the library ``folder``; entries of files
    that did not change since the last index are kept. Returns the index's path.

    Raises:
        LibraryError: ``folder`` is not a folder.
        SpecError: a spec file of the library is not valid (the message names it).
        OSError: the index cannot be written.
    """
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise LibraryError(f"{folder}: not a folder; a library index lives in a folder")
    _open(folder, must_write=True, trusted=code_trusted(trust_code))
    return folder / INDEX_NAME


def _open(folder: Path, must_write: bool, trusted: bool) -> Library:
    """The library of ``folder`` from its index, brought up to date first if need be."""
    files = _scan(folder)
    modules = [rel for rel in files if rel.endswith(".py")]
    if modules and not trusted:
        raise UntrustedCode(_untrusted(folder, modules))
    old, problem = _read_index(folder)
    if old is not None and problem is None:
        problem = _difference(old[0], files)
        if problem is None:
            return Library(folder, library_name(folder), old[1])
    services = _build(folder, files, old, trusted)
    try:
        _write(folder, files, services)
    except OSError as exc:  # a read-only library is still usable, only slower to open
        if must_write:
            raise
        problem = f"{problem}; not written: {exc.strerror or exc}"
    return Library(folder, library_name(folder), services, problem)


def load_service(root: Path, info: ServiceInfo, name: str | None = None,
                 related: Iterable[str] | None = None, *, trust_code: bool | None = None
                 ) -> type[Service]:
    """Build the service ``info`` describes from its file in the library at ``root``, as
    ``name`` with neighbours ``related`` (default: as the file declares them).

    Raises:
        LibraryError: the file no longer declares that service (the index is stale).
        SpecError: the spec file is not valid.
    """
    from compoenv.worldmodel import SimulatedService, load_spec, service_from_spec

    path = root / str(info.file)
    name = name or info.name
    related = tuple(info.related if related is None else related)
    stale = (f"{path}: does not declare service {info.name!r} any more; its library's index is "
             f"stale: run `compoenv library index {root}`")
    if info.kind == "spec":
        spec = load_spec(path, strict=False)
        if spec["name"] != info.name:
            raise LibraryError(stale)
        # a renamed spec keeps its API, so its resource ids join as the index says they do
        spec = {**spec, "name": name, "related": list(related),
                "api": spec.get("api") or info.name}
        return service_from_spec(spec, SimulatedService)
    found = [c for c in services_in(_import(path, code_trusted(trust_code)))
             if c.name == info.name]
    if not found:
        raise LibraryError(stale)
    cls = found[0]
    if name == cls.name and related == tuple(cls.related):
        return cls
    return type(cls.__name__, (cls,), {"name": name, "related": related,
                                       "__module__": cls.__module__,
                                       "__qualname__": cls.__qualname__})


def services_in(module: ModuleType) -> list[type[Service]]:
    """The named Service classes ``module`` itself defines, in definition order."""
    return [value for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, Service) and value.name
            and value.__module__ == module.__name__]


def _scan(root: Path) -> _Files:
    """The library's files (relative posix paths, sorted) with their size and mtime."""
    found: _Files = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        for name in names:
            if (name.startswith((".", "_")) or not name.endswith((".json", ".py"))
                    or name.endswith(PROVENANCE_SUFFIX)):
                continue
            path = Path(folder, name)
            rel = path.relative_to(root).as_posix()
            if rel == INDEX_NAME:
                continue
            stat = path.stat()
            found[rel] = (stat.st_size, stat.st_mtime_ns)
    return dict(sorted(found.items()))


_Index = tuple[_Files, tuple[ServiceInfo, ...]]


@contextmanager
def collector_paused() -> Iterator[None]:
    """No garbage collection inside: reading an index of 50,000 tools makes millions of
    objects, none of them garbage, and the collector would walk them again and again
    (about two thirds of the time)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _read_index(root: Path) -> tuple[_Index | None, str | None]:
    """The index (files, services), or None and why it cannot be used."""
    with collector_paused():
        return _parse_index(root / INDEX_NAME)


def _parse_index(path: Path) -> tuple[_Index | None, str | None]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, "missing"
    except (OSError, ValueError, RecursionError) as exc:  # nested too deep: rebuilt too
        return None, f"corrupt: {path}: {clip(str(exc) or type(exc).__name__)}"
    try:
        if data["format"] != FORMAT:
            return None, f"corrupt: {path}: format {data['format']!r}, expected {FORMAT}"
        files = {str(k): (int(v[0]), int(v[1])) for k, v in data["files"].items()}
        services = tuple(ServiceInfo.from_json(s) for s in data["services"])
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        return None, f"corrupt: {path}: {type(exc).__name__}: {exc}"
    strays = sorted({str(s.file) for s in services} - set(files))
    if strays:
        return None, f"corrupt: {path}: names files it does not list: {strays[:3]}"
    return (files, services), None


def _difference(indexed: _Files, files: _Files) -> str | None:
    """Why an index of ``indexed`` does not describe ``files``, or None."""
    added = files.keys() - indexed.keys()
    gone = indexed.keys() - files.keys()
    changed = [f for f in files.keys() & indexed.keys() if files[f] != indexed[f]]
    if not (added or gone or changed):
        return None
    counts = ((len(added), "added"), (len(gone), "removed"), (len(changed), "changed"))
    return "stale: " + ", ".join(f"{n} {what}" for n, what in counts if n)


def _build(root: Path, files: _Files, old: _Index | None,
           trusted: bool) -> tuple[ServiceInfo, ...]:
    """Every service of ``files``: entries of an earlier index kept where a file is unchanged,
    the other files parsed."""
    kept: dict[str, list[ServiceInfo]] = {}
    if old is not None:
        for info in old[1]:
            if old[0].get(str(info.file)) == files.get(str(info.file)):
                kept.setdefault(str(info.file), []).append(info)
        unchanged = {f for f in files if old[0].get(f) == files[f]}
    else:
        unchanged = set()
    with collector_paused():
        parsed = _parse_all(root, [rel for rel in files if rel not in unchanged], trusted)
    return tuple(info for rel in files
                 for info in (kept.get(rel, []) if rel in unchanged else parsed[rel]))


_PARALLEL = 64  # files to parse from which worker processes share the work
_CHUNK = 16     # files a worker parses per task


def _parse_all(root: Path, rels: list[str], trusted: bool) -> dict[str, list[ServiceInfo]]:
    """The services of each file, parsed by worker processes when there are many (a corpus
    of 2,000 specs), here otherwise."""
    cpus = os.cpu_count() or 1
    # forked, never spawned: a spawned worker runs the caller's script again. A fork copies
    # only this thread (so no other may run), macOS frameworks are not fork-safe, and a
    # daemon process may not start any.
    if (len(rels) < _PARALLEL or cpus < 2 or sys.platform == "darwin"
            or "fork" not in multiprocessing.get_all_start_methods()
            or threading.active_count() > 1 or multiprocessing.current_process().daemon):
        return {rel: _parse(root, rel, trusted) for rel in rels}
    chunks = [rels[i:i + _CHUNK] for i in range(0, len(rels), _CHUNK)]
    with ProcessPoolExecutor(min(cpus, len(chunks)),
                             mp_context=multiprocessing.get_context("fork")) as pool:
        return {rel: infos for part in pool.map(_parse_chunk, [root] * len(chunks), chunks,
                                                [trusted] * len(chunks))
                for rel, infos in part}


def _parse_chunk(root: Path, rels: list[str], trusted: bool
                 ) -> list[tuple[str, list[ServiceInfo]]]:
    return [(rel, _parse(root, rel, trusted)) for rel in rels]


def _parse(root: Path, rel: str, trusted: bool) -> list[ServiceInfo]:
    """The services one file declares (a spec: one; a module: those it defines)."""
    path = root / rel
    if path.suffix == ".py":
        return [ServiceInfo.of(cls, "python", rel) for cls in services_in(_import(path,
                                                                                  trusted))]
    from compoenv.worldmodel.spec import SpecError, load_spec, spec_signatures

    spec = load_spec(path, strict=False)
    try:
        tools = tuple(spec_signatures(spec))
    except TypeError as exc:  # a name the SDK cannot offer (too long for an agent)
        raise SpecError(f"{path}: {exc}") from None
    # reading its tools declared the scopes a user states (``compoenv.schema.SCOPE_KEYS``)
    statable = sorted({s.interface for t in tools for s in (*t.inputs, *t.outputs)
                       if s.interface in STATABLE})
    return [ServiceInfo(spec["name"], "spec", spec["domain"], spec["description"],
                        str(spec.get("version", "1")), tuple(spec.get("related", ())),
                        spec.get("api"), rel, tools, spec.get("display", ""),
                        tuple(spec.get("jobs", ())), tuple(statable))]


def _write(root: Path, files: _Files, services: tuple[ServiceInfo, ...]) -> Path:
    """Write the index atomically (a reader never sees half an index)."""
    path = root / INDEX_NAME
    data = {"format": FORMAT, "files": {k: list(v) for k, v in files.items()},
            "services": [s.to_json() for s in services]}
    partial = path.with_name(f".{INDEX_NAME}.{os.getpid()}.tmp")
    partial.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
    os.replace(partial, path)
    return path


def _untrusted(where: Path, modules: list[str]) -> str:
    shown = ", ".join(modules[:3]) + (f" and {len(modules) - 3} more" if len(modules) > 3
                                      else "")
    return (f"{where}: holds Python modules ({shown}), and importing a module runs its code; "
            f"pass --trust-code (or set {TRUST_ENV}=1) to load them")


def _import(path: Path, trusted: bool) -> ModuleType:
    """The module of a library's Python file, imported once per process under a name of its
    own (two libraries may both hold a ``tools.py``), when its code is trusted."""
    if not trusted:
        raise UntrustedCode(_untrusted(path.parent, [path.name]))
    resolved = path.resolve()
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:10]
    name = f"compoenv_library_{re.sub(r'[^A-Za-z0-9_]', '_', path.stem)}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise LibraryError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before running it: pydantic resolves its types through it
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the library's own code: its failure names the file
        del sys.modules[name]
        raise LibraryError(f"{path}: importing it failed: {type(exc).__name__}: {exc}") from exc
    return module
