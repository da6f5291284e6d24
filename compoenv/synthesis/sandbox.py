"""Verify untrusted generated code in a subprocess behind the operating system's boundary
(bubblewrap, see ``compoenv.synthesis.boundary``), with rlimits and a wall-clock kill; the
verdict is computed here, outside, from the checks' results the job returns."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from compoenv.synthesis import boundary
from compoenv.synthesis.boundary import SandboxUnavailable
from compoenv.synthesis.jail import MARKER, VIOLATION, command, environment

__all__ = ["Limits", "SandboxResult", "SandboxUnavailable", "verify_sandboxed",
           "readable_roots", "import_path"]

_TAIL = 4_000  # characters of the child's stderr kept for the report
_LINE = 2_000  # characters kept of one detail or error line the job returns
_SHOWN_BY_SUMMARY = ("a check failed", "the module did not load")


@dataclass(frozen=True)
class Limits:
    """What one sandboxed verification may use.

    Attributes:
        timeout_s: Wall-clock limit of the whole run (the process group is killed after it).
        memory_mb: Address-space limit of each process (RLIMIT_AS).
        cpu_s: CPU-time limit of each process (RLIMIT_CPU); default: ``timeout_s``.
        unsafe: Run without the operating system's boundary when none can be made here (the
            in-process audit hook and the rlimits only). Without it, verification refuses
            (``SandboxUnavailable``) where bubblewrap is missing or fails.
    """

    timeout_s: float = 180.0
    memory_mb: int = 2048
    cpu_s: int | None = None
    unsafe: bool = False

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise ValueError(f"timeout must be > 0 seconds, got {self.timeout_s}")
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
        error: Why no report came back (a crash of the job), else empty.
        seconds: Wall-clock time of the run.
        stderr: The end of the job's stderr, for a human.
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
    on it in a jailed ``python -I`` subprocess (see ``compoenv.synthesis.jail``).

    Args:
        code: The generated Python module (one Service subclass).
        filename: Its file name in the temp dir (``<service>.py``).
        limits: Time and memory limits.
        checks: The verify checks to run (default: all).
        spec: The spec JSON the service's schemas must agree with (copied into the temp dir).

    Returns:
        The outcome; this function raises only for its own misuse, never for the code.

    Raises:
        SandboxUnavailable: no operating-system boundary can be made here and
            ``limits.unsafe`` is not set.
    """
    from compoenv.checks import check_names

    isolated = boundary.required(limits.unsafe)
    expected = (list(check_names(checks)), Path(filename).stem)
    root = tempfile.mkdtemp(prefix="compoenv-synth-")
    logs = tempfile.mkdtemp(prefix="compoenv-synth-logs-")  # outside the jail's reach
    try:
        target = Path(root, Path(filename).name)
        target.write_text(code, encoding="utf-8")
        spec_copy = None
        if spec is not None:
            spec_copy = str(Path(root, "spec.json"))
            shutil.copyfile(spec, spec_copy)
        config = {"root": root, "target": str(target), "checks": list(checks) if checks else
                  None, "spec": spec_copy, "readable": readable_roots(), "depth": 0,
                  "path": import_path(), "isolated": isolated,
                  "memory_mb": limits.memory_mb,
                  "cpu_s": int(limits.cpu_s or max(1, round(limits.timeout_s)))}
        if isolated:
            config["user"] = boundary.sandbox_user()
            boundary.prepare(root, config["user"])
        return _run(config, limits, Path(logs), expected)
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(logs, ignore_errors=True)


def _run(config: dict[str, Any], limits: Limits, logs: Path,
         expected: tuple[list[str], str]) -> SandboxResult:
    started = time.monotonic()
    argv, info = command(config), None
    if config["isolated"]:
        info = os.pipe()
        argv = boundary.wrap(argv, writable=config["root"], readable=config["readable"],
                             user=config.get("user"), env=environment(config["root"]),
                             info_fd=info[1])
    with open(logs / "stdout", "wb") as out, open(logs / "stderr", "wb") as err:
        process = subprocess.Popen(
            argv, cwd="/" if config["isolated"] else config["root"],
            stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=environment(config["root"]),
            start_new_session=True, pass_fds=(info[1],) if info else ())
        namespace = None
        if info:
            os.close(info[1])
            namespace = boundary.namespace_of(info[0])
        timed_out = False
        try:
            process.wait(timeout=limits.timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            _kill_group(process)
            boundary.wait_until_empty(namespace)  # nothing of the job runs after this
            if info:
                os.close(info[0])
    seconds = time.monotonic() - started
    stderr = _tail(logs / "stderr")
    outcome, contained = _read_stdout(logs / "stdout")
    if timed_out:
        contained.append(f"contained: ran past the time limit of {limits.timeout_s:g} s")
        return SandboxResult(False, None, "", contained, "", seconds, stderr)
    if outcome is None:
        return SandboxResult(False, None, "", contained + _killed(process.returncode, limits),
                             _last_line(stderr) or f"the job exited with status "
                             f"{process.returncode} and no result", seconds, stderr)
    report, summary, verdict = _judge(outcome.get("report"), expected)
    contained += [line for line in _contained_in(report, limits)  # a helper's, or a repeat
                  if not any(line.startswith(seen) for seen in contained)]
    error = str(outcome.get("error") or "")[:_LINE]
    if error.startswith("contained:"):
        contained.append(error)
        error = ""
    if not error and verdict and verdict not in _SHOWN_BY_SUMMARY:
        error = verdict
    contained = list(dict.fromkeys(contained))
    ok = not verdict and not contained and not error
    return SandboxResult(ok, report, summary, contained, error, seconds, stderr)


def _judge(data: Any, expected: tuple[list[str], str]
           ) -> tuple[dict[str, Any] | None, str, str]:
    """The job's report rebuilt here from its checks' results, its summary, and why it does
    not pass (empty when it does): the job's own ``ok`` and summary are not trusted. Every
    check asked for must be there once, in order, under the service's expected name, and
    passed."""
    from compoenv.checks.report import CheckResult, VerifyReport

    if not isinstance(data, dict):
        return None, "", "the job returned no verify report"
    try:
        checks = [CheckResult(str(c["name"]), c["ok"] is True,
                              [str(d)[:_LINE] for d in c.get("details", ())][:50],
                              float(c.get("seconds", 0))) for c in data["checks"]]
        report = VerifyReport(str(data["service"])[:_LINE], str(data.get("target", ""))[:_LINE],
                              checks)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None, "", "the job returned a malformed verify report"
    names, service = expected
    ran = [c.name for c in checks]
    if ran == ["load"]:
        return report.to_json(), report.summary(), "the module did not load"
    if ran != names:
        return report.to_json(), report.summary(), (
            f"the job's report has the checks {ran}, not the ones asked for {names}")
    if report.service != service:
        return report.to_json(), report.summary(), (
            f"the service is named {report.service!r}; the spec's name is {service!r}")
    return report.to_json(), report.summary(), "" if report.ok else "a check failed"


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """End the job and every process it started (they share its new session)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()


def _killed(returncode: int | None, limits: Limits) -> list[str]:
    # killed by the CPU limit or the kernel: as a signal, or (behind bubblewrap, whose init
    # reports its child's death) as the shell's 128 + the signal's number
    if returncode in (-signal.SIGXCPU, -signal.SIGKILL, 128 + signal.SIGXCPU,
                      128 + signal.SIGKILL):
        return [f"contained: ran past the CPU time limit of "
                f"{limits.cpu_s or round(limits.timeout_s)} s"]
    return []


def _contained_in(report: dict[str, Any] | None, limits: Limits) -> list[str]:
    """What a check saw the jail stop (a denial inside a tool call or a helper process
    becomes that check's detail) or a memory limit hit, as ``contained:`` lines."""
    found: list[str] = []
    for check in (report or {}).get("checks", ()):
        for detail in check.get("details", ()):
            at = detail.find("contained: ")
            if at >= 0:
                found.append(detail[at:].split("\n")[0][:300])
            elif "MemoryError" in detail:
                found.append(f"contained: exceeded the memory limit of {limits.memory_mb} MB")
    return found


def _read_stdout(path: Path) -> tuple[dict[str, Any] | None, list[str]]:
    """The job's result (its last ``MARKER`` line: the code's own output goes to stderr, and
    a line it forges cannot follow the jail's own, written last) and what the jail denied."""
    outcome: dict[str, Any] | None = None
    denied: list[str] = []
    for line in _tail(path, 1_000_000).splitlines():
        try:
            if line.startswith(VIOLATION):
                denied.append(f"contained: {json.loads(line[len(VIOLATION):])}")
            elif line.startswith(MARKER):
                value = json.loads(line[len(MARKER):])
                outcome = value if isinstance(value, dict) else None
        except json.JSONDecodeError:
            continue
    return outcome, list(dict.fromkeys(denied))


def _tail(path: Path, size: int = _TAIL) -> str:
    with open(path, "rb") as handle:
        handle.seek(max(0, path.stat().st_size - size))
        return handle.read().decode("utf-8", "replace")


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""
