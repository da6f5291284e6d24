"""A corpus of API documents imported into a library folder: resumable (a state file records
finished documents by path and content hash), parallel and bounded (``importers.pool``), one
report line per document, stable and unique service names (``<api>.<group>``).

    LIBDIR/github/github.repos.json       one spec per service, in a folder per provider
    LIBDIR/import-state.jsonl             finished documents: a rerun skips them
    LIBDIR/import-report.jsonl            this run: one line per document
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import chain, islice
from pathlib import Path

from compoenv.importers.document import Converted, convert_openapi
from compoenv.importers.naming import unique
from compoenv.importers.pool import Outcome, one_line, run_bounded
from compoenv.importers.split import SERVICE_MAX, NothingToImport, fit, namespaces
from compoenv.worldmodel.spec import SpecError, spec_signatures

__all__ = ["Record", "Summary", "Library", "import_corpus", "find_documents",
           "write_library_index", "STATE", "REPORT", "MAX_BYTES"]

STATE, REPORT = "import-state.jsonl", "import-report.jsonl"
MAX_BYTES = 50_000_000
_WARNINGS = 20  # warnings kept per report line (the count is always whole)
Convert = Callable[[Path], Converted]


@dataclass(frozen=True)
class Record:
    """One document's line of the report."""

    document: str
    status: str  # "imported", "skipped" or "failed"
    reason: str = ""
    api: str = ""
    services: tuple[str, ...] = ()
    tools: int = 0
    warnings: tuple[str, ...] = ()
    warning_count: int = 0


@dataclass
class Summary:
    """What an import did: the records in document order, and names it had to change."""

    records: list[Record] = field(default_factory=list)
    renamed: int = 0  # APIs whose first-choice namespace an earlier API held
    largest: tuple[int, str] = (0, "")  # bytes and path of the largest spec written
    index_error: str = ""  # why the library index was not written, if it was not

    def by_status(self) -> Counter[str]:
        return Counter(r.status for r in self.records)

    def by_reason(self) -> Counter[tuple[str, str]]:
        """``(status, kind of reason)`` counts, a reason's file and JSON path left out."""
        return Counter((r.status, reason_kind(r.reason)) for r in self.records
                       if r.status != "imported")

    @property
    def services(self) -> int:
        return sum(len(r.services) for r in self.records if r.status == "imported")

    @property
    def tools(self) -> int:
        return sum(r.tools for r in self.records if r.status == "imported")


def reason_kind(reason: str) -> str:
    """A reason without its document, JSON path, quoted names and numbers, to count alike."""
    text = re.sub(r"^[^:]*?\.(json|ya?ml): ", "", reason)
    text = re.sub(r"\$[^ ]*: ", "", text)
    # where in the file (line and column, byte) and sizes are the document's, not the kind's
    text = re.sub(r",? (at |in )?line \d+,? column \d+| \(char \d+\)| \(byte \d+\)", "",
                  text)
    text = re.sub(r" (than|after) \d+(\.\d+)?( s| seconds)?| \(\d+ bytes\)", "", text)
    text = re.sub(r"--max-bytes \d+", "--max-bytes", text)
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", text)
    return text.splitlines()[0][:80] if text else text


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Library:
    """A library folder being written: finished documents, taken names, spec files."""

    def __init__(self, folder: Path) -> None:
        if folder.exists() and not folder.is_dir():
            raise NotADirectoryError(f"{folder}: a library must be a folder, not a file")
        folder.mkdir(parents=True, exist_ok=True)
        self.folder, self.done = folder, {}
        self.summary = Summary()
        for line in (folder / STATE).read_text(encoding="utf-8").splitlines() \
                if (folder / STATE).exists() else ():
            try:
                entry = json.loads(line)
                self.done[entry["document"]] = entry  # a later line supersedes
            except (json.JSONDecodeError, KeyError, TypeError):
                continue  # a line cut short by an interrupted run
        self.apis = {e["api"] for e in self.done.values()}
        self.services = {s for e in self.done.values() for s in e["services"]}
        self._state = (folder / STATE).open("a", encoding="utf-8")
        self._report = (folder / REPORT).open("w", encoding="utf-8")

    def close(self) -> None:
        self._state.close()
        self._report.close()

    def finished(self, document: str, digest: str) -> bool:
        """Whether ``document`` with this content was imported by an earlier run."""
        return self.done.get(document, {}).get("sha256") == digest

    def record(self, record: Record) -> Record:
        """Append ``record`` to the report (flushed: an interrupted run keeps its lines)."""
        self.summary.records.append(record)
        line = {k: v for k, v in asdict(record).items() if v or k == "status"}
        self._report.write(json.dumps(line, ensure_ascii=False) + "\n")
        self._report.flush()
        return record

    def _names(self, converted: Converted, keep: str) -> tuple[str, list[str]]:
        """The API's namespace (its earlier one when free, else the first free candidate)
        and its services' names, none taken by another document."""
        groups = [group for group, _ in converted.services]
        split = groups != [""]
        candidates = namespaces(converted.api, split)
        for n, api in enumerate(chain([keep] if keep else [], islice(candidates, 10_000))):
            budget, taken = SERVICE_MAX - len(api) - 1, set[str]()
            names = [f"{api}.{unique(fit(g, budget), taken, budget)}" for g in groups] \
                if split else [api]
            if api not in self.apis and api not in self.services and not (
                    set(names) & self.services):
                self.summary.renamed += int(n > 0 and api != keep)
                return api, names
        raise ValueError(f"no free name for {converted.api}")

    def add(self, document: str, digest: str, converted: Converted, shown: str = "") -> Record:
        """Name and write the services of a converted ``document`` (a resolved path or a
        command), record it as finished, and return its report line (naming it ``shown``)."""
        previous = self.done.pop(document, None)
        if previous:  # its content changed: it is imported again under its old names if free
            self.apis.discard(previous["api"])
            self.services -= set(previous["services"])
        api, names = self._names(converted, previous["api"] if previous else "")
        # the services of a split API share its api (their resource ids join) but list no
        # neighbours: an imported service may meet any other whose slots fit by interface and
        # role (a repository's maintainer may be emailed), as an untagged plugin does
        family = {"api": api} if len(names) > 1 else {}
        written = []
        for name, (_, spec) in zip(names, converted.services):
            body = {k: v for k, v in spec.items() if k not in ("name", "api", "related")}
            out = {"name": name, **family, **body}
            path = self.folder / api.split(".")[0] / f"{name}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            text = json.dumps(out, indent=1, ensure_ascii=False) + "\n"
            path.write_text(text, encoding="utf-8")
            written.append(path)
            if len(text) > self.summary.largest[0]:
                self.summary.largest = (len(text), str(path))
        for old in previous["services"] if previous else ():
            stale = self.folder / previous["api"].split(".")[0] / f"{old}.json"
            if stale not in written:
                stale.unlink(missing_ok=True)
        entry = {"document": document, "sha256": digest, "api": api, "services": names}
        self._state.write(json.dumps(entry) + "\n")
        self._state.flush()
        self.done[document] = entry
        self.apis.add(api)
        self.services |= set(names)
        tools = sum(len(spec["tools"]) for _, spec in converted.services)
        return Record(shown or document, "imported", "", api, tuple(names), tools,
                      converted.warnings[:_WARNINGS], len(converted.warnings))


def find_documents(paths: Sequence[Path], suffixes: tuple[str, ...] = (".json", ".yaml", ".yml"),
                   skip: Path | None = None) -> list[Path]:
    """The files named, and those under the folders named (recursively, by suffix, sorted),
    without duplicates and without what lies in ``skip`` (the library being written)."""
    found: dict[Path, None] = {}
    for path in paths:
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such file or folder")
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower()
                       in suffixes) if path.is_dir() else [path]
        found.update(dict.fromkeys(f for f in files if skip is None or not f.resolve(
            ).is_relative_to(skip.resolve())))
    return list(found)


def _convert(convert: Convert) -> Callable[[Path], Converted]:
    def run(path: Path) -> Converted:  # in a worker: the result must be what the writer needs
        converted = convert(path)
        if not isinstance(converted, Converted) or not converted.services:
            raise TypeError(f"the converter returned {type(converted).__name__}, not Converted")
        for group, spec in converted.services:  # what a library index will read of it
            try:
                spec_signatures(spec)
            except (TypeError, ValueError) as exc:
                raise SpecError(f"{path}: service {group or spec['name']!r} cannot be loaded: "
                                f"{exc}") from None
        return converted
    return run


def import_corpus(paths: Sequence[Path], folder: Path, convert: Convert = convert_openapi,
                  workers: int = 1, timeout: float = 60.0, max_bytes: int = MAX_BYTES,
                  on_start: Callable[[int], None] | None = None,
                  on_record: Callable[[Record], None] | None = None) -> Summary:
    """Import every document under ``paths`` into the library ``folder``.

    Documents are converted in ``workers`` processes, each within ``timeout`` seconds; a
    document over ``max_bytes`` is skipped, one imported by an earlier run with the same
    content too; any failure is a report line, never an exception. Services are named in
    document order, so the same corpus gives the same names whatever the number of workers.
    An interrupted run (KeyboardInterrupt) leaves the state of every finished document.

    Args:
        paths: Files and folders (searched recursively for .json, .yaml and .yml files).
        folder: The library folder (created); see the module docstring for its layout.
        convert: Path -> Converted, run in the worker processes (``convert_openapi``,
            ``convert_mcp`` or any function of that shape).
        workers: Worker processes.
        timeout: Seconds per document.
        max_bytes: The largest document read.
        on_start: Called once with the number of documents.
        on_record: Called with each document's record, in document order.

    Returns:
        The summary; the library's ``index.json`` is written when ``compoenv.library``
        provides ``write_index``.
    """
    documents = find_documents(paths, skip=folder)
    library = Library(folder)
    early: dict[int, Record] = {}  # documents decided before conversion: skipped, unreadable
    jobs: list[tuple[int, Path]] = []
    digests: dict[int, str] = {}
    for i, path in enumerate(documents):
        try:
            size = path.stat().st_size
            data = path.read_bytes() if size <= max_bytes else b""
        except OSError as exc:
            early[i] = Record(str(path), "failed", f"{path}: cannot read: {exc.strerror}")
            continue
        digests[i] = _digest(data)
        if size > max_bytes:
            early[i] = Record(str(path), "skipped", f"larger than --max-bytes {max_bytes} "
                                                    f"({size} bytes)")
        elif library.finished(str(path.resolve()), digests[i]):
            early[i] = Record(str(path), "skipped", "already imported (same content)")
        else:
            jobs.append((i, path))
    if on_start:
        on_start(len(documents))
    outcomes: dict[int, Outcome] = {}
    upto = 0

    def write_ready() -> None:
        """Record documents in order, as far as they are decided: names then do not depend
        on which worker finished first."""
        nonlocal upto
        while upto < len(documents) and (upto in early or upto in outcomes):
            record = early.pop(upto, None) or _finish(
                library, documents[upto], digests[upto], outcomes.pop(upto))
            library.record(record)
            if on_record:
                on_record(record)
            upto += 1

    try:
        write_ready()
        for i, outcome in run_bounded(_convert(convert), jobs, workers, timeout) if jobs else ():
            outcomes[i] = outcome
            write_ready()
    finally:
        library.close()
    library.summary.index_error = write_library_index(folder)
    return library.summary


def _finish(library: Library, path: Path, digest: str, outcome: Outcome) -> Record:
    """The record of a converted document: its services written, or why not."""
    if outcome.error:
        skip = outcome.kind == NothingToImport.__name__
        return Record(str(path), "skipped" if skip else "failed", outcome.error)
    try:
        return library.add(str(path.resolve()), digest, outcome.value, str(path))
    except (OSError, ValueError) as exc:
        return Record(str(path), "failed", f"cannot write its services: {exc}")


def write_library_index(folder: Path) -> str:
    """Write the library index when ``compoenv.library`` can; why not, else ``""``."""
    try:
        from compoenv.library import write_index
    except ImportError:
        return "compoenv.library.write_index is not available"
    try:
        write_index(folder)
    except Exception as exc:  # noqa: BLE001 - the specs are written; the index is a cache
        return f"the library index was not written: {one_line(exc)}"
    return ""
