"""The trusted side of a sandboxed verification: workers that hold a model-written module in
processes of their own, and a mirror of its service that the checks run on in this process.

``compoenv.checks.verify`` runs here, in the caller's process, on a ``Service`` subclass
built from what the worker (``compoenv.synthesis.worker``) describes: the service's name,
docstring, tools (their JSON schemas) and the shape of its state. Every instance of the mirror
is an instance in the worker; each tool call goes over the pipe, one at a time, and comes
back as a result envelope and, when the call changed it, the state as JSON, which the mirror
validates into state models of its own. So everything the verdict depends on (results,
states, their digests, how long a call took, what it raised) is computed or judged here, from
data; a module that patches the checks, the report classes or builtins in its own process
changes nothing that runs here.

Each worker is bounded: a wall-clock deadline for the whole verification and a limit per
call, a largest message (``MAX_MESSAGE_BYTES``) and nesting depth, and it is killed, with
every process it started, when the verification ends. A worker that dies, hangs, or sends
what is not a message of the protocol stops the verification with ``WorkerFailed`` (a
``BaseException``, so the checks' own ``except Exception`` does not swallow it), which the
sandbox reports as the reason for rejection.
"""

from __future__ import annotations

import copy
import errno
import json
import os
import select
import signal
import subprocess
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Callable, ClassVar

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, create_model

from compoenv.schema import interface_slots
from compoenv.service import Service, State, ToolError, ToolResult, ToolSpec, error
from compoenv.synthesis import boundary
from compoenv.synthesis.jail import command, environment
from compoenv.synthesis.worker import MAX_MESSAGE_BYTES
from compoenv.untrusted import clip, too_deep
from compoenv.world import World

__all__ = ["WorkerFailed", "ModuleError", "Worker", "mirror", "MAX_MESSAGE_BYTES",
           "MAX_DEPTH"]

MAX_DEPTH = 64  # nesting of one message: a record's fields and their parts sit well inside


class WorkerFailed(BaseException):
    """The worker cannot go on: it ended, ran past its time, or broke the protocol. The
    ``reason`` is one line; ``contained`` says whether a limit of the sandbox stopped it."""

    def __init__(self, reason: str, contained: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.contained = contained


class ModuleError(Exception):
    """The module raised where the checks would have seen it raise in their own process
    (seeding an instance, taking a state); the message is its exception, as text."""


class Worker:
    """One worker process (behind bubblewrap when ``config["isolated"]``) and its pipes.

    Args:
        config: The jail's configuration (``compoenv.synthesis.jail.main``).
        deadline: ``time.monotonic()`` past which every request fails (the run's limit).
        call_timeout_s: The longest one request may take.
        stderr: Where the worker's stderr goes (a file outside the sandbox).
        denied: Where denials are collected (shared by the run's workers).
    """

    def __init__(self, config: dict[str, Any], *, deadline: float, call_timeout_s: float,
                 stderr: Path, denied: list[str]) -> None:
        self.deadline = deadline
        self.call_timeout_s = call_timeout_s
        self.denied = denied
        self.timeout_note = f"{max(0.0, deadline - time.monotonic()):.0f} s"
        self._dropped: list[int] = []
        self._lock = threading.Lock()
        self._buffer = bytearray()
        self._dead: WorkerFailed | None = None
        self._closed = False
        self.cpu_s = config["cpu_s"]
        argv, info = command(config), None
        if config["isolated"]:
            info = os.pipe()
            argv = boundary.wrap(argv, writable=config["root"], readable=config["readable"],
                                 user=config.get("user"), env=environment(config["root"]),
                                 info_fd=info[1])
        with open(stderr, "wb") as err:
            self.process = subprocess.Popen(
                argv, cwd="/" if config["isolated"] else config["root"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, bufsize=0,
                env=environment(config["root"]), start_new_session=True,
                pass_fds=(info[1],) if info else ())
        self._info = info
        self.namespace = None
        if info:
            os.close(info[1])
            self.namespace = boundary.namespace_of(info[0])
        assert self.process.stdin is not None and self.process.stdout is not None
        self._in, self._out = self.process.stdin.fileno(), self.process.stdout.fileno()
        os.set_blocking(self._in, False)
        os.set_blocking(self._out, False)

    # -- the protocol ------------------------------------------------------------------------

    def drop(self, handle: int) -> None:
        """Forget an instance (sent with the next request): called as a mirror is collected."""
        self._dropped.append(handle)

    def send(self, request: dict[str, Any]) -> None:
        """Send one request (answers are read with ``receive``)."""
        if self._dead is not None:
            raise self._dead
        if self._dropped:
            request = {**request, "drop": self._dropped[:]}
            del self._dropped[:]
        try:
            data = (json.dumps(request) + "\n").encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise ValueError(f"a request that is not JSON: {exc}") from None
        if len(data) > MAX_MESSAGE_BYTES:
            raise ValueError(f"a request of {len(data):,} bytes, over {MAX_MESSAGE_BYTES:,}")
        limit = min(self.deadline, time.monotonic() + self.call_timeout_s)
        while data:
            self._wait(self._in, limit, writing=True)
            try:
                data = data[os.write(self._in, data):]
            except BlockingIOError:
                continue
            except OSError as exc:  # the pipe is closed: the worker ended
                if exc.errno != errno.EPIPE:
                    raise
                self._fail(self._ended())

    def receive(self) -> dict[str, Any]:
        """The answer to the last request (denials before it are collected on the way)."""
        limit = min(self.deadline, time.monotonic() + self.call_timeout_s)
        while True:
            line = self._line(limit)
            if too_deep(line, MAX_DEPTH):
                self._fail(WorkerFailed(f"the module's process sent a message nested more "
                                        f"than {MAX_DEPTH} levels deep"))
            try:
                message = json.loads(line)
            except (ValueError, RecursionError):
                self._fail(WorkerFailed(f"the module's process sent what is not a message: "
                                        f"{clip(line, 120)!r}"))
            if not isinstance(message, dict):
                self._fail(WorkerFailed(f"the module's process sent what is not a message: "
                                        f"{clip(line, 120)!r}"))
            if set(message) == {"denied"}:
                self.denied.append(f"contained: {clip(str(message['denied']), 300)}")
                continue
            return message

    def request(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send ``request`` and return its answer, one request at a time."""
        with self._lock:
            self.send(request)
            return self.receive()

    def _line(self, limit: float) -> str:
        at = self._buffer.find(b"\n")
        while at < 0:
            if len(self._buffer) > MAX_MESSAGE_BYTES:
                self._fail(WorkerFailed(f"the module's process sent a message over "
                                        f"{MAX_MESSAGE_BYTES:,} bytes"))
            self._wait(self._out, limit)
            try:
                chunk = os.read(self._out, 1 << 20)
            except BlockingIOError:
                continue
            if not chunk:
                self._fail(self._ended())
            at = chunk.find(b"\n")
            if at >= 0:
                at += len(self._buffer)
            self._buffer += chunk
        line, self._buffer = self._buffer[:at], self._buffer[at + 1:]
        if len(line) > MAX_MESSAGE_BYTES:
            self._fail(WorkerFailed(f"the module's process sent a message over "
                                    f"{MAX_MESSAGE_BYTES:,} bytes"))
        return line.decode("utf-8", "replace")

    def _wait(self, fd: int, limit: float, writing: bool = False) -> None:
        left = limit - time.monotonic()
        if left <= 0:
            self._timed_out()
        ready = select.select([], [fd], [], left) if writing else select.select([fd], [], [],
                                                                                 left)
        if not any(ready):
            self._timed_out()

    def _timed_out(self) -> None:
        if time.monotonic() >= self.deadline:
            self._fail(WorkerFailed(f"contained: ran past the time limit of "
                                    f"{self.timeout_note}", contained=True))
        self._fail(WorkerFailed(f"contained: a call ran past the limit of "
                                f"{self.call_timeout_s:g} s per call", contained=True))

    def _ended(self) -> WorkerFailed:
        try:
            code = self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        # killed by a limit: as a signal, or (behind bubblewrap, whose init reports its
        # child's death) as the shell's 128 + the signal's number
        if code in (-signal.SIGXCPU, 128 + signal.SIGXCPU):
            return WorkerFailed(f"contained: ran past the CPU time limit of {self.cpu_s} s",
                                contained=True)
        if code in (-signal.SIGKILL, 128 + signal.SIGKILL):
            return WorkerFailed("contained: the module's process was killed by the kernel (a "
                                "limit of the sandbox)", contained=True)
        return WorkerFailed(f"the module's process ended (exit status {code}) in the middle "
                            f"of a request")

    def _fail(self, failure: WorkerFailed) -> Any:
        self._dead = failure
        self.close()
        raise failure

    def close(self) -> int | None:
        """Kill the worker and every process it started; return once none is left."""
        if self._closed:
            return self.process.returncode
        self._closed = True
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        code = self.process.wait()
        boundary.wait_until_empty(self.namespace)
        for stream in (self.process.stdin, self.process.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        if self._info:
            os.close(self._info[0])
            self._info = None
        return code


# -- the mirror ------------------------------------------------------------------------------

class MirrorState(State):
    """A worker's state, validated here from its JSON: collections of records keep each
    record's fields as the JSON gave them (on a model whose JSON schema is the record's own,
    so its interfaces are found), every other field as its JSON value."""

    _seeded: Any = PrivateAttr(default=None)  # (seed, today) of a state seeded by the worker


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    record_schema: ClassVar[dict[str, Any]] = {}

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]:
        return copy.deepcopy(cls.record_schema)


def _name(value: Any, what: str) -> str:
    if not (isinstance(value, str) and value.isidentifier() and not value.startswith("_")
            and not value.startswith("model_") and len(value) <= 100):
        raise ValueError(f"{what} {clip(str(value), 60)!r} is not a plain name")
    return value


def _state_model(fields: Any) -> type[MirrorState]:
    if not isinstance(fields, dict) or len(fields) > 200:
        raise ValueError("the state's fields are not a mapping of at most 200 names")
    made: dict[str, Any] = {}
    for name, record in fields.items():
        _name(name, "a state field")
        if record is None:
            made[name] = (Any, None)
            continue
        title = record.get("title") if isinstance(record, dict) else None
        schema = record.get("schema") if isinstance(record, dict) else None
        if not isinstance(schema, dict):
            raise ValueError(f"the records of {name!r} have no schema")
        model = type(title if isinstance(title, str) and title.isidentifier() else "Record",
                     (_Record,), {"record_schema": schema, "__module__": __name__})
        made[name] = (dict[str, model], Field(default_factory=dict))  # type: ignore[valid-type]
    return create_model("State", __base__=MirrorState, **made)


def _tool_specs(service: str, tools: Any) -> dict[str, ToolSpec]:
    if not isinstance(tools, list) or len(tools) > 500:
        raise ValueError("the tools are not a list of at most 500")
    specs: dict[str, ToolSpec] = {}
    for tool in tools:
        parameters, returns = tool["parameters"], tool["returns"]
        if not isinstance(parameters, dict) or not isinstance(returns, dict):
            raise ValueError(f"tool {clip(str(tool.get('name')), 60)!r} has no schemas")
        phrase = tool.get("phrase")
        spec = ToolSpec(
            service=service, name=str(tool["name"]), description=str(tool["description"]),
            read_only=tool["read_only"] is True, simulated=tool["simulated"] is True,
            parameters=parameters, returns=returns,
            phrase=phrase if isinstance(phrase, str) else None,
            validator=jsonschema.Draft202012Validator(parameters),
            inputs=tuple(s for s in interface_slots(parameters) if s.path),
            outputs=tuple(interface_slots(returns)))
        specs[spec.name] = spec
    return specs


def _envelope(result: Any, spec: ToolSpec) -> ToolResult:
    """The worker's result as an envelope of this process (anything else: a 500)."""
    if isinstance(result, dict) and result.get("success") is True:
        out: ToolResult = {"success": True, "data": result.get("data")}
        if isinstance(result.get("simulated"), str):
            out["simulated"] = result["simulated"]
        return out
    if isinstance(result, dict) and result.get("success") is False:
        found = result.get("error")
        if (isinstance(found, dict) and type(found.get("code")) is int
                and isinstance(found.get("message"), str)):
            return error(found["code"], found["message"])
    return error(500, f"Internal error in {spec.qualified_name}: the module's process sent a "
                      f"malformed result: {clip(str(result), 120)}")


class _Mirror(Service):
    # An instance in the worker, seen through its results and states (see the module).

    worker: ClassVar[Worker]
    tools: ClassVar[dict[str, ToolSpec]] = {}
    tools_error: ClassVar[str] = ""
    fresh_seedings: ClassVar[Callable[[], list[dict[str, Any] | str]]]

    def __init__(self, world: World, state: State | None = None) -> None:
        self.world = world
        self._shared = False
        self.simulator: Any = None
        self.writes = 0
        today = world.today.isoformat()
        request: dict[str, Any] = {"op": "new", "seed": world.seed, "today": today}
        if state is not None and getattr(state, "_seeded", None) == (world.seed, today):
            request["shared"] = True
        elif state is not None:
            request["state"] = state.model_dump(mode="json")
        answer = self.worker.request(request)
        if "error" in answer:
            raise ModuleError(clip(str(answer["error"]), 400))
        if type(answer.get("handle")) is not int:
            raise WorkerFailed(f"the module's process answered a new instance without its "
                               f"handle: {clip(str(answer), 120)}")
        self._handle = answer["handle"]
        weakref.finalize(self, self.worker.drop, self._handle)
        if state is not None and answer.get("state") is None:
            self._state = self._synced = state
        else:
            self._adopt(answer.get("state"))
            if state is None:
                self._state._seeded = (world.seed, today)

    @property  # type: ignore[override]
    def state(self) -> State:
        return self._state

    @state.setter
    def state(self, value: State) -> None:  # a rollback: the worker gets it with the next call
        self._state = value

    @classmethod
    def tool_specs(cls) -> dict[str, ToolSpec]:
        if cls.tools_error:
            raise TypeError(cls.tools_error)
        return cls.tools

    def _adopt(self, data: Any) -> None:
        try:
            self._state = self._synced = self.State.model_validate(data)
        except ValidationError as exc:
            raise WorkerFailed(f"the module's process sent a state that does not fit its "
                               f"own fields: {clip(str(exc), 200)}") from None

    def call(self, tool_name: str, arguments: Any) -> ToolResult:
        spec = self.tool_specs().get(tool_name) if isinstance(tool_name, str) else None
        if spec is None or spec.simulated:
            return super().call(tool_name, arguments)  # the 404, or the world model's answer
        if not spec.read_only:
            self.writes += 1
            self._shared = False
        request: dict[str, Any] = {"op": "call", "handle": self._handle, "tool": tool_name,
                                   "arguments": arguments}
        if self._state is not self._synced:
            request["state"] = self._state.model_dump(mode="json")
        try:
            answer = self.worker.request(request)
        except ValueError as exc:  # arguments that are no JSON
            return error(400, f"Invalid arguments for {spec.qualified_name}: {exc}")
        if answer.get("state") is not None:
            self._adopt(answer["state"])
        elif "state" in request:
            self._synced = self._state
        if answer.get("simulate") is True:
            try:
                return self._simulated(spec, spec.validate(arguments))
            except ToolError as exc:
                return error(exc.code, exc.message)
        if "error" in answer:
            return error(500, f"Internal error in {spec.qualified_name}: "
                              f"{clip(str(answer['error']), 300)}")
        return _envelope(answer.get("result"), spec)


def mirror(worker: Worker, described: dict[str, Any],
           fresh_seedings: Callable[[], list[dict[str, Any] | str]]) -> type[Service]:
    """The Service subclass the checks run on, for the module the worker loaded.

    Args:
        worker: The worker that loaded it.
        described: The worker's answer to ``load``.
        fresh_seedings: The seeding check's two fresh processes (see ``seeding``).

    Raises:
        ValueError: the description is not one of a service.
    """
    name = _name(described.get("name"), "the service's name")
    qualname = str(described.get("qualname") or name)[:200]
    doc = described.get("doc")
    related = described.get("related") or []
    attrs: dict[str, Any] = {
        "__doc__": doc if isinstance(doc, str) else None, "__module__": __name__,
        "__qualname__": qualname, "name": name, "domain": str(described.get("domain")),
        "version": str(described.get("version")),
        "related": tuple(str(r) for r in related) if isinstance(related, list) else (),
        "worker": worker, "fresh_seedings": staticmethod(fresh_seedings)}
    if "tools_error" in described:
        attrs["tools_error"] = clip(str(described["tools_error"]), 400)
    else:
        attrs["tools"] = _tool_specs(name, described.get("tools"))
    if "state_error" in described:
        raise ValueError(f"its state cannot be described: "
                         f"{clip(str(described['state_error']), 300)}")
    attrs["State"] = _state_model(described.get("state"))
    return type(qualname.rpartition(".")[2] or name, (_Mirror,), attrs)


def seeded_states(model: type[State], answer: dict[str, Any]) -> list[State]:
    """The states of a ``seed`` answer, validated into ``model``."""
    if "error" in answer:
        raise ModuleError(clip(str(answer["error"]), 400))
    states = answer.get("states")
    if not isinstance(states, list):
        raise WorkerFailed("the module's process answered a seeding without states")
    try:
        return [model.model_validate(s) for s in states]
    except ValidationError as exc:
        raise WorkerFailed(f"the module's process sent a state that does not fit its own "
                           f"fields: {clip(str(exc), 200)}") from None

