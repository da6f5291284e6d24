"""compoenv synthesize: a scripted coding model's modules are accepted, repaired, rejected or
contained by the sandbox, and only verified code is written."""

from __future__ import annotations

import hashlib
import json
import socket
from pathlib import Path
from typing import Any, Callable

import pytest
from chat_server import ChatServer
from click.testing import CliRunner

from compoenv.cli import main
from compoenv.llm import ChatClient, EndpointConfig
from compoenv.synthesis import Limits, extract_code, synthesize, verify_sandboxed, write_accepted
from compoenv.synthesis import boundary

FIXTURES = Path(__file__).parent / "fixtures" / "synthesis"
_WHY_NOT = boundary.available()
pytestmark = pytest.mark.skipif(bool(_WHY_NOT), reason=f"no OS sandbox here: {_WHY_NOT}")
SPEC = FIXTURES / "book_club.json"
ESCAPE = Path("/tmp/compoenv_synthesis_escape.txt")  # what the hostile modules try to create
FAST = ("conventions", "reads", "writes", "fuzz")  # checks quick enough for a loop test


def reply(name: str) -> str:
    return (FIXTURES / f"{name}.md").read_text(encoding="utf-8")


def scripted(*replies: str) -> Callable[[dict[str, Any]], str]:
    """A coding model that gives these replies in turn (the last one again after them)."""
    seen: list[int] = []

    def respond(request: dict[str, Any]) -> str:
        seen.append(1)
        return replies[min(len(seen), len(replies)) - 1]
    return respond


def client_for(server: ChatServer) -> ChatClient:
    return ChatClient(EndpointConfig(base_url=server.url, model="coder", max_retries=0,
                                     timeout_s=10, total_timeout_s=10))


def test_a_good_module_is_accepted_in_round_one_with_its_provenance(tmp_path: Path) -> None:
    with ChatServer(responder=scripted(reply("good"))) as server:
        result = CliRunner().invoke(main, ["synthesize", str(SPEC), "--base-url", server.url,
                                           "--model", "coder", "-o", str(tmp_path), "--json"])
        prompt = server.bodies[0]["messages"]
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    code = (tmp_path / "book_club.py").read_text()
    record = json.loads((tmp_path / "book_club.provenance.json").read_text())
    assert code == extract_code(reply("good"))
    assert record["model"] == "coder" and record["base_url"] == server.url
    assert record["rounds"] == 1 and record["accepted"] and data["written"]
    assert record["code_sha256"] == hashlib.sha256(code.encode()).hexdigest()
    checks = {c["name"]: c["ok"] for c in record["verify"]["checks"]}
    assert checks["seeding"] and checks["composer"] and all(checks.values()), checks
    # the prompt carries the SDK's rules, the spec's vocabulary, an example service, the spec
    system, user = prompt[0]["content"], prompt[1]["content"]
    assert "ToolError(404" in system and "world.rng(self.name)" in system
    assert "class Contacts(Service)" in user and '"name": "book_club"' in user
    assert "EmailAddress" in user and "member (person)" in user


def test_a_failed_check_is_fed_back_and_the_fix_accepted_in_round_two(tmp_path: Path) -> None:
    with ChatServer(responder=scripted(reply("mutating_read"), reply("good"))) as server:
        result = synthesize(SPEC, client_for(server), rounds=3, checks=("conventions", "reads"))
        second = server.bodies[1]["messages"]
    assert result.accepted and len(result.rounds) == 2
    first = result.rounds[0].reasons
    assert any(r.startswith("reads:") and "find_member" in r for r in first), first
    assert second[-2]["role"] == "assistant" and "remember when each member" in second[-2][
        "content"]
    assert second[-1]["role"] == "user" and first[0] in second[-1]["content"]
    written = write_accepted(result, tmp_path)
    assert [p.name for p in written] == ["book_club.py", "book_club.provenance.json"]


def test_a_module_that_never_passes_is_rejected_with_reasons(tmp_path: Path) -> None:
    with ChatServer(responder=scripted(reply("never_passes"))) as server:
        result = CliRunner().invoke(main, ["synthesize", str(SPEC), "--base-url", server.url,
                                           "--model", "coder", "--rounds", "2", "-o",
                                           str(tmp_path / "lib"), "--check", "fuzz",
                                           "--check", "reads"])
        requests = len(server.bodies)
    assert result.exit_code == 1 and requests == 2, result.output
    assert "round 2: rejected" in result.output and "AttributeError" in result.output
    assert "rejected after 2 round(s); nothing written" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "lib").exists()


@pytest.mark.parametrize("name, contained", [
    ("read_passwd", "contained: tried to read /etc/passwd"),
    ("read_repo", "contained: tried to read /"),  # the repository's setup.cfg
    ("open_socket", "contained: tried to use the network"),
    ("spawn_process", "contained: tried to start a process: touch"),
    ("huge_memory", "contained: exceeded the memory limit of 512 MB"),
    ("endless_loop", "contained: ran past the"),  # the wall-clock or the CPU limit of 4 s
])
def test_hostile_code_is_contained(name: str, contained: str) -> None:
    ESCAPE.unlink(missing_ok=True)
    code = extract_code(reply(name))
    # read_repo seeds in the seeding check's helper processes too: they are jailed as well
    checks, timeout = (("seeding",), 60) if name == "read_repo" else (("reads",), 30)
    timeout = 4 if name == "endless_loop" else timeout
    result = verify_sandboxed(code, "book_club.py", checks=checks,
                              limits=Limits(timeout_s=timeout, memory_mb=512))
    assert not result.ok
    assert any(line.startswith(contained) for line in result.contained), result.reasons()
    assert not ESCAPE.exists()  # nothing written outside the temp dir
    if name == "read_repo":  # a denial the code swallowed is still reported
        assert any("setup.cfg" in line for line in result.contained)
        assert any("tried to write /tmp/compoenv_synthesis_escape" in line
                   for line in result.contained)


@pytest.mark.parametrize("code, contained", [
    # a directory's descriptor outside the temp dir would anchor a write there
    ("import os, sys\nfd = os.open(sys.prefix, os.O_RDONLY)\n"
     "os.open('escape', os.O_WRONLY | os.O_CREAT, dir_fd=fd)\n",
     "contained: tried to open the directory"),
    ("import gc\njail = [o for o in gc.get_objects() if type(o).__name__ == '_Jail']\n",
     "contained: tried gc.get_objects"),
    ("import ctypes\nctypes.CDLL(None).system(b'true')\n", "contained: tried ctypes."),
])
def test_ways_around_the_hook_are_contained(code: str, contained: str) -> None:
    result = verify_sandboxed(code, "book_club.py", limits=Limits(timeout_s=30))
    assert any(line.startswith(contained) for line in result.contained), result.reasons()


def test_contained_code_is_rejected_by_the_loop() -> None:
    with ChatServer(responder=scripted(reply("read_passwd"))) as server:
        result = synthesize(SPEC, client_for(server), rounds=1, checks=FAST)
    assert not result.accepted
    assert result.reasons()[0] == "contained: tried to read /etc/passwd"


def test_a_forged_verdict_on_stdout_does_not_pass() -> None:
    result = verify_sandboxed(extract_code(reply("forge_result")), "book_club.py")
    assert not result.ok and result.report is not None
    assert "this module never loads" in result.summary


@pytest.mark.parametrize("text, message", [
    ("Sure, I will write it now.", "no ```python code block"),
    ("", "no ```python code block"),
])
def test_extract_code_needs_a_code_block(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        extract_code(text)


def test_extract_code_takes_the_module_from_the_reply() -> None:
    text = "Use it like:\n```python\nx = 1\n```\nThe module:\n```python\nimport os\ny = 2\n```"
    assert extract_code(text) == "import os\ny = 2\n"
    assert extract_code("```\nz = 3\n```") == "z = 3\n"


def test_a_reply_without_code_is_a_failed_round_told_to_the_model() -> None:
    with ChatServer(responder=scripted("I cannot do that.")) as server:
        result = synthesize(SPEC, client_for(server), rounds=2, checks=FAST)
        feedback = server.bodies[1]["messages"][-1]["content"]
    assert not result.accepted and len(result.rounds) == 2
    assert "no ```python code block" in result.reasons()[0] and "no ```python" in feedback


@pytest.mark.parametrize("mode, exit_code, message", [
    ("down", 1, "failed (unreachable)"),
    ("non_json", 1, "the reply was empty or not a chat completion"),
])
def test_endpoint_failures_are_one_line_errors(mode: str, exit_code: int, message: str,
                                               tmp_path: Path) -> None:
    with ChatServer(mode=mode) as server:
        result = CliRunner().invoke(main, ["synthesize", str(SPEC), "--base-url", server.url,
                                           "--model", "coder", "--rounds", "1",
                                           "--request-timeout", "5", "-o", str(tmp_path)])
    assert result.exit_code == exit_code, result.output
    assert message in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("args, message", [
    (["missing.json"], "does not exist"),
    ([str(FIXTURES / "good.md")], "good.md"),
    ([str(SPEC), "--check", "speling"], "Unknown check 'speling'"),
    ([str(SPEC), "--rounds", "0"], "--rounds"),
])
def test_usage_errors_exit_2_without_a_traceback(args: list[str], message: str) -> None:
    with socket.socket() as unused:  # an address nothing answers: no request is ever made
        unused.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{unused.getsockname()[1]}/v1"
        result = CliRunner().invoke(main, ["synthesize", *args, "--base-url", url,
                                           "--model", "coder"])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
