"""The worker: the one process that imports a model-written module, and runs its tools one
call at a time for checks that run in another process (``compoenv.synthesis.remote``).

It starts inside the jail (``compoenv.synthesis.jail``, behind bubblewrap) and answers
requests read from its stdin, one JSON object a line, on its stdout; what the module prints
goes to stderr (file descriptor 1 is pointed there before the module is imported). Nothing
it answers is trusted: the caller validates every message, rebuilds states and results in
its own types, and judges them there. Requests (``op``):

- ``load`` (``path``): import the module; its service's name, docstring, tools (their JSON
  schemas) and the shape of its state, or ``load_error``;
- ``new`` (``seed``, ``today``, and ``state`` or ``shared``): an instance on that World
  (seeded, made from the given state, or ``Service.create``'s copy-on-write seeded one); its
  ``handle`` and its ``state`` as JSON (null for a shared one that the caller already has);
- ``call`` (``handle``, ``tool``, ``arguments``, optional ``state`` to install first): the
  tool's result envelope (``Service.call``), and the state when the call changed it;
  ``simulate`` when the world model answers instead (the caller asks its own);
- ``seed`` (``seeds``): the states seeded from those World seeds (the seeding check's fresh
  processes);
- any request may carry ``drop``: handles of instances the caller no longer holds.

Failures are data: ``{"error": "..."}``; the memory limit is also reported as a denial.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter

from compoenv.checks.target import LoadFailure, TargetError, load_file
from compoenv.schema import compact_schema
from compoenv.service import Service
from compoenv.world import World

__all__ = ["Channel", "serve", "MAX_MESSAGE_BYTES"]

MAX_MESSAGE_BYTES = 32 << 20  # one request or answer; the caller holds the worker to it too


class Channel:
    """The worker's two pipes to the caller, on descriptors of their own."""

    def __init__(self, reader: Any, write_fd: int) -> None:
        self._reader = reader
        self._write_fd = write_fd

    @classmethod
    def take_standard_streams(cls) -> Channel:
        """The pipes the caller gave as stdin and stdout, moved off descriptors 0 and 1: what
        the module prints or writes to descriptor 1 goes to stderr, and it reads nothing."""
        read_fd, write_fd = os.dup(0), os.dup(1)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        return cls(os.fdopen(read_fd, "rb", buffering=1 << 16), write_fd)

    def receive(self) -> Any:
        """The next request, or None when the caller closed the pipe."""
        line = self._reader.readline(MAX_MESSAGE_BYTES + 1)
        return json.loads(line) if line.strip() else None

    def send_text(self, text: str) -> None:
        data = (text + "\n").encode("utf-8")
        while data:
            data = data[os.write(self._write_fd, data):]

    def denied(self, what: str) -> None:
        """Tell the caller what the jail stopped (before the denial is raised)."""
        self.send_text(json.dumps({"denied": what}))


class _Simulate(BaseException):
    """Raised where ``Service.call`` would ask the world model: the caller asks its own."""


def _ask_caller(self: Service, spec: Any, arguments: dict[str, Any]) -> Any:
    raise _Simulate()


def _text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:300]}"


class _Worker:
    """The module's service class and its live instances, by handle."""

    def __init__(self, memory_mb: int) -> None:
        self.memory_mb = memory_mb
        self.cls: type[Service] | None = None
        self.instances: dict[int, Service] = {}
        self.shown: dict[int, str | None] = {}  # the state the caller last got, as JSON
        self.seeded: dict[tuple[int, str], str] = {}  # World -> the seeded state sent
        self.next = 0

    def handle(self, request: dict[str, Any]) -> str:
        for handle in request.get("drop", ()):
            self.instances.pop(handle, None)
            self.shown.pop(handle, None)
        op = request.get("op")
        if op == "load":
            return self.load(str(request["path"]))
        if self.cls is None:
            return json.dumps({"error": "no module is loaded"})
        if op == "new":
            return self.new(request)
        if op == "call":
            return self.call(request)
        if op == "seed":
            states = [self.cls(World(int(seed))).state.model_dump_json()
                      for seed in request["seeds"]]
            return '{"states": [' + ", ".join(states) + "]}"
        return json.dumps({"error": f"unknown request {str(op)[:40]!r}"})

    def load(self, path: str) -> str:
        try:
            cls = load_file(Path(path))
        except (LoadFailure, TargetError) as exc:
            return json.dumps({"load_error": str(exc)})
        cls._simulated = _ask_caller  # type: ignore[method-assign]
        self.cls = cls
        described: dict[str, Any] = {
            "name": str(cls.name), "qualname": str(cls.__qualname__), "doc": cls.__doc__
            if isinstance(cls.__doc__, str) else None, "domain": str(cls.domain),
            "version": str(cls.version), "related": [str(r) for r in cls.related]}
        try:
            described["tools"] = [
                {"name": s.name, "description": s.description, "read_only": s.read_only,
                 "simulated": s.simulated, "parameters": s.parameters, "returns": s.returns,
                 "phrase": s.phrase} for s in cls.tool_specs().values()]
        except Exception as exc:  # noqa: BLE001 - the checks report it as they would here
            described["tools_error"] = _text(exc)
        try:
            described["state"] = _state_fields(cls.State)
        except Exception as exc:  # noqa: BLE001
            described["state_error"] = _text(exc)
        return json.dumps(described)

    def new(self, request: dict[str, Any]) -> str:
        assert self.cls is not None
        world = World.get(int(request["seed"]), dt.date.fromisoformat(request["today"]))
        key = (world.seed, world.today.isoformat())
        if request.get("state") is not None:
            service = self.cls(world, self.cls.State.model_validate(request["state"]))
        elif request.get("shared"):
            service = self.cls.create(world)
        else:
            service = self.cls(world)
        self.next += 1
        self.instances[self.next] = service
        state = service.state.model_dump_json()
        if request.get("shared") and self.seeded.get(key) == state:
            self.shown[self.next] = state  # the caller has it: the seeded state it was sent
            return json.dumps({"handle": self.next, "state": None})
        if not request.get("shared") and request.get("state") is None:
            self.seeded[key] = state
        self.shown[self.next] = state
        return f'{{"handle": {self.next}, "state": {state}}}'

    def call(self, request: dict[str, Any]) -> str:
        assert self.cls is not None
        handle = int(request["handle"])
        service = self.instances[handle]
        if request.get("state") is not None:
            service.state = self.cls.State.model_validate(request["state"])
            service._shared = False
            self.shown[handle] = None  # send it back as this side holds it
        tool = request.get("tool")
        try:
            result: Any = service.call(tool, request.get("arguments"))
        except _Simulate:
            result = None
        except MemoryError:
            raise
        except BaseException as exc:  # noqa: BLE001 - SystemExit from a tool is its failure
            result = {"success": False, "error": {"code": 500, "message": (
                f"Internal error in {self.cls.name}.{str(tool)[:80]}: {_text(exc)}")}}
        try:
            text = json.dumps(result)
        except (TypeError, ValueError) as exc:
            text = json.dumps({"success": False, "error": {"code": 500, "message": (
                f"{self.cls.name}.{str(tool)[:80]} returned data that is not JSON: "
                f"{_text(exc)}")}})
        state = service.state.model_dump_json()
        changed = state != self.shown.get(handle)
        self.shown[handle] = state
        answer = '{"simulate": true' if result is None else f'{{"result": {text}'
        return answer + f', "state": {state if changed else "null"}}}'


def _state_fields(model: type[BaseModel]) -> dict[str, Any]:
    """The state's fields: for a collection of records (``dict[str, Record]``) the record's
    name and compact JSON schema (where its interfaces are), else None."""
    fields: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        annotation, record = field.annotation, None
        args = typing.get_args(annotation)
        if (typing.get_origin(annotation) is dict and len(args) == 2
                and isinstance(args[1], type) and issubclass(args[1], BaseModel)):
            record = {"title": args[1].__name__, "schema": compact_schema(
                TypeAdapter(args[1]).json_schema(mode="serialization"))}
        fields[name] = record
    return fields


def serve(channel: Channel, config: dict[str, Any]) -> int:
    """Answer requests until the caller closes the pipe."""
    worker = _Worker(int(config["memory_mb"]))
    while True:
        try:
            request = channel.receive()
        except ValueError:
            channel.send_text(json.dumps({"error": "a request that is not JSON"}))
            continue
        if request is None:
            os._exit(0)  # no atexit handler or thread of the module runs after the caller
        try:
            answer = worker.handle(request)
        except MemoryError:
            answer = ""
        except BaseException as exc:  # noqa: BLE001 - any failure is an answer
            answer = json.dumps({"error": _text(exc)})
        if not answer:  # the memory freed by unwinding lets the report go out
            channel.denied(f"exceeded the memory limit of {worker.memory_mb} MB")
            answer = json.dumps({"error": f"contained: exceeded the memory limit of "
                                          f"{worker.memory_mb} MB"})
        channel.send_text(answer)
