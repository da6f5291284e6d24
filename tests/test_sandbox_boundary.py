"""The operating system's boundary around model-written code (bench/sandbox.py's payloads):
each payload first switches the in-process audit hook off, then tries the host; none
reaches it, a dormant payload never runs, and no patch in the module's own process (of the
checks, the report, builtins, the checker, or a verdict of its own) makes a module pass."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from chat_server import ChatServer
from click.testing import CliRunner

from bench.sandbox import (FORGERIES, NOT_DEFENDED, PAYLOADS, Outcome, _fill,
                           sandbox_processes, dormant_library, run_payload)
from compoenv.cli import main
from compoenv.synthesis import Limits, SandboxUnavailable, boundary, verify_sandboxed

WHY_NOT = boundary.available()
needs_boundary = pytest.mark.skipif(bool(WHY_NOT), reason=f"no OS sandbox here: {WHY_NOT}")
SPEC = Path(__file__).parent / "fixtures" / "synthesis" / "book_club.json"


@pytest.fixture(scope="module")
def outcomes() -> dict[str, Outcome]:
    """Every payload's outcome; the sandboxes run side by side (each is its own namespace)."""
    with ThreadPoolExecutor(4) as pool:
        done = pool.map(lambda name: run_payload(name, PAYLOADS[name], timeout_s=30,
                                                 alone=False), sorted(PAYLOADS))
        return {o.name: o for o in done}


@needs_boundary
def test_no_process_of_a_sandbox_outlives_it(outcomes: dict[str, Outcome]) -> None:
    assert sandbox_processes() == 0  # the fork bomb's 63 included


@needs_boundary
@pytest.mark.parametrize("name", sorted(PAYLOADS))
def test_a_payload_with_the_hook_switched_off_is_contained(name: str,
                                                           outcomes: dict[str, Outcome]) -> None:
    outcome = outcomes[name]
    assert outcome.contained, outcome.to_json()
    assert not outcome.verdict_ok
    if name not in ("forged_stdout", "report_patch", "memory_bomb"):
        assert outcome.saw, "the payload ran and reported what it saw"
    if name in FORGERIES:  # the checks ran, here, and the one it fails rejected it
        assert outcome.reasons and outcome.reasons[0].startswith("conventions: "), outcome
    if name == "write_outside":  # the hook was off: the kernel refused, not the hook
        assert all("PermissionError" in str(v) for v in outcome.saw.values()), outcome.saw
        assert "contained" not in str(outcome.saw)  # the hook's denials say "contained: ..."


def test_a_dormant_payload_in_a_library_never_runs() -> None:
    outcome = dormant_library()
    assert outcome.contained, outcome.to_json()


def test_no_payload_is_left_undefended() -> None:
    # forging acceptance in the module's own process: each is a payload that must be rejected
    assert not NOT_DEFENDED
    assert {"checks_patch", "builtins_patch", "checker_patch", "fake_verdict",
            "report_patch", "forged_stdout"} <= set(PAYLOADS)


def test_synthesize_refuses_without_a_boundary_unless_unsafe(monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    monkeypatch.setattr(boundary, "available", lambda: "bubblewrap (bwrap) is not installed")
    with ChatServer(responder=lambda request: "```python\nx = 1\n```") as server:
        args = ["synthesize", str(SPEC), "--base-url", server.url, "--model", "coder",
                "--rounds", "1", "--check", "conventions", "-o", str(tmp_path / "out")]
        refused = CliRunner().invoke(main, args)
        asked = len(server.bodies)
        unsafe = CliRunner().invoke(main, [*args, "--unsafe"])
    assert refused.exit_code == 1 and asked == 0, refused.output
    assert "no sandbox for model-written code" in refused.output
    assert "--unsafe" in refused.output and "Traceback" not in refused.output
    # with --unsafe the round runs (behind the in-process jail) and is judged as usual
    assert unsafe.exit_code == 1 and "round 1: rejected" in unsafe.output, unsafe.output


_TOOL = '''
import os, stat
from compoenv import Service, tool


def garble():  # garbage on every pipe the process holds: the worker's answers among them
    for fd in range(3, 64):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                os.write(fd, b"garbage\\n")
        except OSError:
            pass


class BookClub(Service):
    """A book club."""

    name = "book_club"

    @tool(read_only=True, phrase="find the book titled {title}")
    def find(self, title: str) -> str:
        """Find a book by its title."""
        {body}
        return title
'''


@needs_boundary
@pytest.mark.parametrize("body, reason", [
    ("while True: pass", "contained: a call ran past the limit of 2 s per call"),
    ("os._exit(3)", "the module's process ended (exit status 3) in the middle of a request"),
    ("garble()", "the module's process sent what is not a message: 'garbage'"),
    ("return 'x' * (40 << 20)", "the module's process sent a message over 33,554,432 bytes"),
])
def test_a_worker_that_hangs_dies_or_breaks_the_protocol_is_rejected(body: str,
                                                                     reason: str) -> None:
    per_call = 2 if body.startswith("while") else 20
    result = verify_sandboxed(_TOOL.replace("{body}", body), "book_club.py", checks=("fuzz",),
                              limits=Limits(timeout_s=30, call_timeout_s=per_call,
                                            memory_mb=512))
    assert not result.ok and result.report is None
    assert reason in result.reasons(), result.reasons()
    assert sandbox_processes() == 0


@needs_boundary
def test_a_worker_past_its_cpu_time_is_contained() -> None:
    result = verify_sandboxed(_TOOL.replace("{body}", "while True: pass"), "book_club.py",
                              checks=("fuzz",), limits=Limits(timeout_s=60, cpu_s=3,
                                                              memory_mb=512))
    assert result.reasons() == ["contained: ran past the CPU time limit of 3 s"], result


def test_without_the_boundary_the_worker_is_still_another_process(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """--unsafe: no bubblewrap, but the module still runs in a worker of its own, so a patch
    of the checks there does not pass it, and a good module passes."""
    monkeypatch.setattr(boundary, "available", lambda: "bubblewrap (bwrap) is not installed")
    unsafe = Limits(timeout_s=30, memory_mb=512, unsafe=True)
    forged = verify_sandboxed(_fill(PAYLOADS["checks_patch"], marker="/nonexistent/x",
                                    shell="true", port=1, repo="/nonexistent"),
                              "book_club.py", checks=("conventions",), limits=unsafe)
    assert not forged.ok and forged.reasons()[0].startswith("conventions: "), forged.reasons()
    good = verify_sandboxed(_TOOL.replace("{body}", "pass"), "book_club.py",
                            checks=("conventions", "reads", "fuzz"), limits=unsafe)
    assert good.ok, good.reasons()
    with pytest.raises(SandboxUnavailable):
        verify_sandboxed("x = 1\n", "book_club.py", limits=Limits(timeout_s=30))


@needs_boundary
def test_the_checks_see_the_worker_s_module_as_they_see_it_in_their_own_process(
        tmp_path: Path) -> None:
    """The mirror is faithful: each check's findings on a good module in the worker are those
    of the same checks on the module imported here (a bug of the mirror would show)."""
    from compoenv.checks import verify
    from compoenv.synthesis import extract_code

    fixtures = Path(__file__).parent / "fixtures" / "synthesis"
    code = extract_code((fixtures / "good.md").read_text(encoding="utf-8"))
    (tmp_path / "book_club.py").write_text(code, encoding="utf-8")
    checks = ("conventions", "schemas", "reads", "writes", "errors", "fuzz", "worldmodel",
              "consistency")
    here = verify(str(tmp_path / "book_club.py"), checks=checks, spec=SPEC).to_json()
    there = verify_sandboxed(code, "book_club.py", checks=checks, spec=SPEC,
                             limits=Limits(timeout_s=60))
    assert there.ok, there.reasons()
    assert [(c["name"], c["ok"], c["details"]) for c in there.report["checks"]] == \
        [(c["name"], c["ok"], c["details"]) for c in here["checks"]]
