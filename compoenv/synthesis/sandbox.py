"""Verify untrusted generated code: the module lives in worker processes behind the operating
system's boundary (bubblewrap, see ``compoenv.synthesis.boundary``), with rlimits and a
wall-clock kill; the checks run here, in the caller's process, on a mirror of its service
whose tools run in the worker one call at a time (``compoenv.synthesis.remote``), so the
verdict is made here from data the worker sends."""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from compoenv.checks.report import VerifyReport
from compoenv.service import State
from compoenv.synthesis import boundary
from compoenv.synthesis.boundary import SandboxUnavailable
from compoenv.synthesis.remote import ModuleError, Worker, WorkerFailed, mirror, seeded_states
from compoenv.untrusted import clip

__all__ = ["Limits", "SandboxResult", "SandboxUnavailable", "verify_sandboxed",
           "readable_roots", "import_path"]

_TAIL = 4_000  # characters of the workers' stderr kept for the report
_LINE = 2_000  # characters kept of the module's load failure


@dataclass(frozen=True)
class Limits:
    """What one sandboxed verification may use.

    Attributes:
        timeout_s: Wall-clock limit of the whole run (the workers are killed after it).
        memory_mb: Address-space limit of each worker process (RLIMIT_AS).
        cpu_s: CPU-time limit of each worker process (RLIMIT_CPU); default: ``timeout_s``.
        call_timeout_s: Wall-clock limit of one request to a worker (loading the module,
            seeding an instance, one tool call).
        unsafe: Run without the operating system's boundary when none can be made here (the
            in-process audit hook and the rlimits only). Without it, verification refuses
            (``SandboxUnavailable``) where bubblewrap is missing or fails.
    """

    timeout_s: float = 180.0
    memory_mb: int = 2048
    cpu_s: int | None = None
    unsafe: bool = False
    call_timeout_s: float = 60.0

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise ValueError(f"timeout must be > 0 seconds, got {self.timeout_s}")
        if self.call_timeout_s <= 0:
            raise ValueError(f"the limit per call must be > 0 seconds, got "
                             f"{self.call_timeout_s}")
        if self.memory_mb < 256:
            raise ValueError(f"memory limit must be at least 256 MB (Python and compoenv "
                             f"need about 200), got {self.memory_mb}")


@dataclass(frozen=True)
class SandboxResult:
    """How one sandboxed verification ended.

    Attributes:
        ok: Whether the code loaded and passed every check, with nothing contained.
        report: The verify report as JSON (``VerifyReport.to_json()``), when one was made.
        summary: The report's summary: one line per failed check (what the model is told).
        contained: What the code tried that the sandbox stopped (``contained: ...``), or
            the limit it ran into; empty when nothing was contained.
        error: Why the module is rejected beyond its report: why no report was made (its
            process ended, or broke the protocol), or a service of another name.
        seconds: Wall-clock time of the run.
        stderr: The end of the workers' stderr, for a human.
    """

    ok: bool
    report: dict[str, Any] | None
    summary: str
    contained: list[str] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0
    stderr: str = ""

    def reasons(self) -> list[str]:
        """Why the code was not accepted, one line each (empty when it was)."""
        if self.ok:
            return []
        lines = list(self.contained)
        if self.error and self.error not in lines:
            lines.append(self.error)
        lines += [line for line in self.summary.splitlines() if line.strip()]
        return lines or ["verification failed without a reason (see stderr)"]


def readable_roots() -> list[str]:
    """What jailed code may read besides its temp dir: the Python installation, compoenv,
    and the service library (verification composes tasks with it)."""
    import compoenv
    import envs_library

    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, *compoenv.__path__,
             *envs_library.__path__}
    return sorted(roots)


def import_path() -> list[str]:
    """The folders that hold this process's compoenv and service library: first on the jailed
    job's path, so it verifies with the same code as its caller."""
    import compoenv
    import envs_library

    return list(dict.fromkeys(str(Path(p).parent) for p in (*compoenv.__path__,
                                                            *envs_library.__path__)))


def verify_sandboxed(code: str, filename: str, *, limits: Limits = Limits(),
                     checks: Sequence[str] | None = None, spec: str | Path | None = None
                     ) -> SandboxResult:
    """Write ``code`` to a fresh temp dir as ``filename`` and run ``compoenv.checks.verify``
    on it: the checks run in this process, on a mirror of the module's service whose every
    tool call runs in a jailed worker process (``compoenv.synthesis.remote``); the seeding
    check's fresh processes are jailed workers too.

    Args:
        code: The generated Python module (one Service subclass).
        filename: Its file name in the temp dir (``<service>.py``).
        limits: Time and memory limits.
        checks: The verify checks to run (default: all).
        spec: The spec JSON the service's schemas must agree with (read here, by the checks).

    Returns:
        The outcome; this function raises only for its own misuse, never for the code.

    Raises:
        SandboxUnavailable: no operating-system boundary can be made here and
            ``limits.unsafe`` is not set.
    """
    from compoenv.checks import check_names

    isolated = boundary.required(limits.unsafe)
    names = check_names(checks)
    root = tempfile.mkdtemp(prefix="compoenv-synth-")
    logs = tempfile.mkdtemp(prefix="compoenv-synth-logs-")  # outside the jail's reach
    started = time.monotonic()
    try:
        target = Path(root, Path(filename).name)
        target.write_text(code, encoding="utf-8")
        config = {"root": root, "readable": readable_roots(), "path": import_path(),
                  "isolated": isolated, "memory_mb": limits.memory_mb,
                  "cpu_s": int(limits.cpu_s or max(1, round(limits.timeout_s)))}
        if isolated:
            config["user"] = boundary.sandbox_user()
            boundary.prepare(root, config["user"])
        run = _Run(config, limits, Path(logs), started + limits.timeout_s, target)
        try:
            report, failure = run.verify(names, spec)
        finally:
            run.close()
        return _result(report, failure, run.denied, Path(filename).stem, limits,
                       time.monotonic() - started, run.stderr())
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(logs, ignore_errors=True)


class _Run:
    """The workers of one verification: the one the checks call, and the seeding check's
    two fresh ones; every denial any of them reports."""

    def __init__(self, config: dict[str, Any], limits: Limits, logs: Path, deadline: float,
                 target: Path) -> None:
        self.config, self.limits, self.logs, self.deadline = config, limits, logs, deadline
        self.target = target
        self.denied: list[str] = []
        self.workers: list[Worker] = []

    def start(self) -> Worker:
        worker = Worker(self.config, deadline=self.deadline, stderr=self.logs / (
            f"stderr-{len(self.workers)}"), denied=self.denied,
            call_timeout_s=min(self.limits.call_timeout_s, self.limits.timeout_s))
        worker.timeout_note = f"{self.limits.timeout_s:g} s"
        self.workers.append(worker)
        return worker

    def verify(self, names: Sequence[str], spec: str | Path | None
               ) -> tuple[VerifyReport | None, WorkerFailed | None]:
        """The report of the checks run here on the module, or why none was made."""
        from compoenv.checks import verify
        from compoenv.checks.report import CheckResult

        target, began = self.target, time.perf_counter()
        try:
            worker = self.start()
            described = worker.request({"op": "load", "path": str(target)})
            failed = described.get("load_error") or described.get("error")
            if failed is None:
                try:
                    service = mirror(worker, described, lambda: self.fresh_seedings(
                        service.State))
                except (ValueError, TypeError, KeyError) as exc:
                    failed = f"the module's process described no usable service: {exc}"
            if failed is not None:
                return VerifyReport(target.name, target.name, [CheckResult(
                    "load", False, [clip(str(failed), _LINE)],
                    time.perf_counter() - began)]), None
            report = verify(service, checks=names, spec=spec)
            report.target = target.name
            return report, None
        except WorkerFailed as exc:
            return None, exc

    def fresh_seedings(self, model: type[State]) -> list[dict[str, Any] | str]:
        """The seeding check's two fresh processes: two more workers, each seeding the
        module from World seeds 0 and 1; the digests are taken here, of states validated
        here (a worker that fails gives the failure, as the check's fresh processes do)."""
        from compoenv.checks.seeding import SEEDS, digests_of

        workers = [self.start() for _ in range(2)]
        out: list[dict[str, Any] | str] = []
        try:
            for worker in workers:
                worker.send({"op": "load", "path": str(self.target)})
            for worker in workers:
                try:
                    loaded = worker.receive()
                    if "load_error" in loaded or "error" in loaded:
                        raise ModuleError(str(loaded.get("load_error") or loaded["error"]))
                    worker.send({"op": "seed", "seeds": list(SEEDS)})
                    out.append(digests_of(seeded_states(model, worker.receive())))
                except ModuleError as exc:
                    out.append(f"seeding in a fresh process failed: {clip(str(exc), 300)}")
                except WorkerFailed as exc:
                    if exc.contained:
                        raise
                    out.append(f"seeding in a fresh process failed: {exc.reason}")
        finally:
            for worker in workers:
                worker.close()
        return out

    def close(self) -> None:
        for worker in self.workers:
            worker.close()

    def stderr(self) -> str:
        return "\n".join(_tail(path) for path in sorted(self.logs.glob("stderr-*")))[-_TAIL:]


def _result(report: VerifyReport | None, failure: WorkerFailed | None, denied: list[str],
            service: str, limits: Limits, seconds: float, stderr: str) -> SandboxResult:
    """The verdict, from the report the checks made here and what the workers did."""
    contained = list(denied)
    error = ""
    if failure is not None:
        if failure.contained:
            contained.append(failure.reason)
        else:
            error = failure.reason
    data = report.to_json() if report is not None else None
    contained += [line for line in _contained_in(data, limits)  # a tool's, or a repeat
                  if not any(line.startswith(seen) for seen in contained)]
    contained = list(dict.fromkeys(contained))
    summary = report.summary() if report is not None else ""
    if report is not None and not error:
        ran = [c.name for c in report.checks]
        if ran != ["load"] and report.service != service:
            error = f"the service is named {report.service!r}; the spec's name is {service!r}"
    ok = report is not None and report.ok and not contained and not error
    return SandboxResult(ok, data, summary, contained, error, seconds, stderr)


def _contained_in(report: dict[str, Any] | None, limits: Limits) -> list[str]:
    """What a check saw the jail stop (a denial inside a tool call becomes that check's
    detail) or a memory limit hit, as ``contained:`` lines."""
    found: list[str] = []
    for check in (report or {}).get("checks", ()):
        for detail in check.get("details", ()):
            at = detail.find("contained: ")
            if at >= 0:
                found.append(detail[at:].split("\n")[0][:300])
            elif "MemoryError" in detail:
                found.append(f"contained: exceeded the memory limit of {limits.memory_mb} MB")
    return found


def _tail(path: Path, size: int = _TAIL) -> str:
    with open(path, "rb") as handle:
        handle.seek(max(0, path.stat().st_size - size))
        return handle.read().decode("utf-8", "replace")
