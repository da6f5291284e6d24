"""Service base class, the @tool decorator, ToolSpec, and the result envelope."""

from __future__ import annotations

import copy
from contextlib import contextmanager
from contextvars import ContextVar
import hashlib
import inspect
import re
from dataclasses import dataclass, field
from typing import (
    Any, Callable, ClassVar, Iterator, Mapping, TypeVar, TypedDict, get_type_hints, overload,
)

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model

from compoenv.schema import Slot, brief, compact_schema, interface_slots, is_valid
from compoenv.world import World

__all__ = [
    "Service", "State", "tool", "ToolError", "ToolSpec", "ToolMeta", "ToolResult",
    "ok", "error", "qualified_name", "split_qualified", "did_you_mean", "without_hints",
    "check_service_name", "check_display", "check_qualified", "MAX_QUALIFIED_NAME",
]

SEP = "__"
MAX_QUALIFIED_NAME = 64  # OpenAI's limit on a function name
# segments of lowercase words joined by single underscores, segments joined by dots
# (``github.repos``); no segment ends in "_", so ``<service>__<tool>`` splits one way only
_SEGMENT = r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*"
_NAME = re.compile(rf"^{_SEGMENT}(?:\.{_SEGMENT})*$")
_DISPLAY = re.compile(r"^\S[^\n\r\t]{0,58}\S$")
F = TypeVar("F", bound=Callable[..., Any])


class ToolResult(TypedDict, total=False):
    """The envelope every tool call returns: ``success`` and either ``data`` or ``error``."""

    success: bool
    data: Any
    error: dict[str, Any]
    simulated: str  # who answered a simulated call: "offline", "endpoint:<model>", ...


def ok(data: Any) -> ToolResult:
    return {"success": True, "data": data}


def error(code: int, message: str) -> ToolResult:
    return {"success": False, "error": {"code": code, "message": message}}


class ToolError(Exception):
    """Raised by a tool to report an expected failure (404 not found, 409 conflict, ...).

    Args:
        code: 400 bad arguments, 404 unknown entity, 409 state conflict, 422 unprocessable.
        message: What went wrong, for the agent to read.
    """

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def qualified_name(service: str, tool_name: str) -> str:
    """The name an agent sees: ``<service>__<tool>``, a dotted service's dots as dashes
    (``github.repos`` -> ``github-repos__list_repos``: OpenAI function names allow no dots)."""
    return f"{service.replace('.', '-')}{SEP}{tool_name}" if service else tool_name


def split_qualified(name: str) -> tuple[str, str]:
    """``github-repos__list_repos`` -> ``("github.repos", "list_repos")``; a name without
    ``__`` is a bare tool name: ``("", name)``."""
    service, sep, tool_name = name.partition(SEP)
    return (service.replace("-", "."), tool_name) if sep else ("", name)


def check_qualified(service: str, tool_name: str) -> str:
    """The qualified name of a tool being defined, or TypeError naming the service and the
    tool when it is over the limit of ``MAX_QUALIFIED_NAME`` characters."""
    qualified = qualified_name(service, tool_name)
    if len(qualified) > MAX_QUALIFIED_NAME:
        raise TypeError(f"Tool {tool_name!r} of service {service!r}: its name as an agent "
                        f"calls it, {qualified!r}, is {len(qualified)} characters, over the "
                        f"limit of {MAX_QUALIFIED_NAME}; shorten the tool's or the service's "
                        f"name")
    return qualified


def check_display(display: str, owner: str = "") -> str:
    """``display`` if it is a valid display name (empty for none), else TypeError saying what
    one looks like: one line of at most 60 characters, as a person says it in a sentence
    ("the real-estate app", "my calendar").

    Args:
        display: The display name.
        owner: What declares it (a class or a file), for the message.
    """
    if not isinstance(display, str) or (display and not _DISPLAY.match(display)):
        where = f" of {owner}" if owner else ""
        raise TypeError(f"Display name {display!r}{where} must be one line of 2 to 60 "
                        f"characters without leading or trailing spaces, as a person says it "
                        f"in a sentence, e.g. 'the real-estate app' or 'my calendar'")
    return display


def check_service_name(name: str, owner: str = "") -> str:
    """``name`` if it is a valid service name, else TypeError saying what one looks like.

    Args:
        name: The service name: lowercase words joined by single underscores, optionally
            several such segments joined by dots (``contacts``, ``github.repos``).
        owner: What declares it (a class or a file), for the message.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        where = f" of {owner}" if owner else ""
        raise TypeError(f"Service name {name!r}{where} must be lowercase letters, digits and "
                        f"single underscores, optionally in segments joined by dots, e.g. "
                        f"'contacts' or 'github.repos'")
    return name


def did_you_mean(name: str, choices: Any, kind: str = "name") -> str:
    """``Unknown tool 'x'. Did you mean 'y'?``: the standard 404 message. Its cost is bounded
    (difflib over at most 24 candidates, a few times), as agents send unknown names by the
    dozen; inside ``without_hints()`` (the composer, whose failed calls nobody reads) the hint
    is left out."""
    if not _HINTS.get():
        return f"Unknown {kind} {brief(name)}."
    text = str(name)[:200]
    pool = sorted({str(c) for c in choices})  # sorted: the same hint in every process
    close = _close_names(text, pool)
    hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return f"Unknown {kind} {brief(name)}.{hint}"


_HINTS: ContextVar[bool] = ContextVar("compoenv_hints", default=True)


@contextmanager
def without_hints() -> Iterator[None]:
    """Leave "Did you mean" hints out of 404 messages in this context: the composer tries
    thousands of calls that fail and reads only that they failed."""
    token = _HINTS.set(False)
    try:
        yield
    finally:
        _HINTS.reset(token)


def _nearest(text: str, pool: list[str]) -> list[str]:
    import difflib

    if len(pool) > 24 and text:
        # long lists: typos rarely hit the first letter or change the length much, and
        # difflib's cost grows with every candidate
        first, size = text[0].casefold(), len(text)
        near = [c for c in pool if c[:1].casefold() == first
                and abs(len(c) - size) <= max(3, size // 3)]
        pool = near[:24] if near else pool[:24]
    return difflib.get_close_matches(text, pool, n=3, cutoff=0.6)


def _close_names(text: str, pool: list[str]) -> list[str]:
    service, sep, rest = text.partition(SEP)
    if sep and service:  # a known service: the typo is in the tool's part
        mine = {c[len(service) + 2:]: c for c in pool if c.startswith(service + SEP)}
        close = [mine[t] for t in _nearest(rest, sorted(mine))] if mine else []
        if close:
            return close
    close = _nearest(text, pool)
    if not close:  # a bare tool name: match it against the part after "<service>__"
        tails: dict[str, str] = {}
        for choice in pool:
            if SEP in choice:
                tails.setdefault(choice.partition(SEP)[2], choice)
        close = [tails[t] for t in _nearest(text, sorted(tails))]
    return close


class State(BaseModel):
    """Base of a service's typed state. Subclass it as ``Service.State``."""

    model_config = ConfigDict(extra="forbid")

    def digest(self) -> str:
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()

    def collections(self) -> dict[str, dict[str, Any]]:
        """The state's record collections by name (its dict-valued fields); rubrics grade
        writes per collection. Read-only: the mapping may be the state's own."""
        return {k: v for k, v in self.__dict__.items() if isinstance(v, dict)}

    def fork(self) -> State:
        """A copy safe to write: containers are new, frozen records (entities) are shared, and
        anything mutable is copied deeply."""
        fields = {k: _fork(v) for k, v in self.__dict__.items()}
        return self.model_construct(_fields_set=self.model_fields_set, **fields)


_IMMUTABLE = (str, int, float, bool, type(None), bytes)
# exact types whose values a fork shares: the immutable ones, and frozen models once seen
_SHARED: set[type] = set(_IMMUTABLE)


def _fork(value: Any) -> Any:
    kind = type(value)
    if kind in _SHARED:
        return value
    if kind is dict:  # the common container: a collection of frozen records, copied shallowly
        out = dict(value)
        for key, item in value.items():
            if type(item) not in _SHARED:
                out[key] = _fork(item)
        return out
    if isinstance(value, _IMMUTABLE):
        return value
    if isinstance(value, BaseModel):
        if value.model_config.get("frozen"):
            _SHARED.add(kind)
            return value
        return value.model_copy(deep=True)
    if isinstance(value, dict):
        return {k: _fork(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fork(v) for v in value]
    return copy.deepcopy(value)


@dataclass(frozen=True, slots=True)
class ToolMeta:
    """What ``@tool`` attaches to a method; the method itself is returned unchanged."""

    read_only: bool = False
    simulated: bool = False
    name: str | None = None
    phrase: str | None = None


@overload
def tool(fn: F) -> F: ...
@overload
def tool(*, read_only: bool = ..., simulated: bool = ..., name: str | None = ...,
         phrase: str | None = ...) -> Callable[[F], F]: ...
def tool(fn: Any = None, **options: Any) -> Any:
    """Mark a Service method as a tool.

    Args:
        read_only: The tool never changes state (drives replay, rubric and composition).
        simulated: Always answered by the world model, even though the method exists.
        name: Tool name if not the method name.
        phrase: Instruction template for composed tasks, with ``{param}`` placeholders
            (``"send an email to {to} with subject {subject}"``).
    """
    meta = ToolMeta(**options)

    def mark(func: F) -> F:
        func.__compoenv_tool__ = meta  # type: ignore[attr-defined]
        return func

    return mark(fn) if fn is not None else mark


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool parsed once: names, description, schemas, interface slots and validators."""

    service: str
    name: str
    description: str
    read_only: bool
    simulated: bool
    parameters: dict[str, Any]
    returns: dict[str, Any]
    phrase: str | None = None
    method: str | None = None
    args_model: type[BaseModel] | None = field(default=None, repr=False, compare=False)
    return_adapter: TypeAdapter[Any] | None = field(default=None, repr=False, compare=False)
    inputs: tuple[Slot, ...] = field(default=(), compare=False)
    outputs: tuple[Slot, ...] = field(default=(), compare=False)
    validator: Any = field(default=None, repr=False, compare=False)  # jsonschema, spec tools
    _qualified: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_qualified", check_qualified(self.service, self.name))

    @property
    def qualified_name(self) -> str:
        return self._qualified

    def to_openai(self) -> dict[str, Any]:
        """The tool in OpenAI function-calling format."""
        return {"type": "function", "function": {
            "name": self.qualified_name, "description": self.description,
            "parameters": self.parameters}}

    def validate(self, arguments: Any) -> dict[str, Any]:
        """Validated keyword arguments; raises ToolError(400) naming each bad field."""
        if type(arguments) is not dict and not isinstance(arguments, Mapping):
            raise ToolError(400, f"Arguments of {self.qualified_name} must be a JSON object, "
                                 f"got {type(arguments).__name__}: {brief(arguments)}")
        if self.args_model is None:
            return self._validate_json(arguments)
        try:
            return self.args_model.model_validate(arguments).__dict__
        except ValidationError as exc:
            raise ToolError(400, self._explain(exc)) from None

    def _validate_json(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validation by JSON schema (spec-only tools), with the same kind of messages."""
        if is_valid(arguments, self.parameters):
            return dict(arguments)
        problems = []
        for err in sorted(self.validator.iter_errors(arguments), key=lambda e: list(e.path))[:8]:
            where = ".".join(str(p) for p in err.path)
            if err.validator == "required":
                problems.append(f"missing required argument {err.message.split(chr(39))[1]!r}")
            elif err.validator == "additionalProperties" and isinstance(err.instance, dict):
                known = self.parameters.get("properties", {})
                allowed = ", ".join(known) or "none"
                problems += [f"unexpected argument {extra!r} (expected: {allowed})"
                             for extra in err.instance if extra not in known]
            elif err.validator == "maxLength" and isinstance(err.instance, str):
                problems.append(f"argument {where or 'arguments'!r}: is too long: "
                                f"{len(err.instance):,} characters, over maxLength "
                                f"{err.validator_value:,}, got {brief(err.instance, 40)}")
            else:
                message = err.message.replace(repr(err.instance), brief(err.instance, 60)) \
                    if len(err.message) > 160 else err.message
                message = message if len(message) <= 160 else message[:157] + "..."
                problems.append(f"argument {where or 'arguments'!r}: {message}")
        if problems:
            raise ToolError(400, f"Invalid arguments for {self.qualified_name}: "
                                 + "; ".join(problems))
        return dict(arguments)

    def _explain(self, exc: ValidationError) -> str:
        problems = []
        for err in exc.errors(include_url=False)[:8]:
            where = ".".join(str(part) for part in err["loc"]) or "arguments"
            if err["type"] == "missing":
                problems.append(f"missing required argument {where!r}")
            elif err["type"] == "extra_forbidden":
                allowed = ", ".join(self.parameters.get("properties", {})) or "none"
                problems.append(f"unexpected argument {where!r} (expected: {allowed})")
            else:
                problems.append(f"argument {where!r}: {err['msg']}, got {brief(err['input'], 60)}")
        return f"Invalid arguments for {self.qualified_name}: " + "; ".join(problems)

    def dump(self, result: Any) -> Any:
        """The tool's return value as JSON-able data."""
        if self.return_adapter is None:
            return result
        return self.return_adapter.dump_python(result, mode="json")


def _doc_parts(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """Summary paragraph and per-argument descriptions of a Google-style docstring."""
    doc = inspect.getdoc(fn) or ""
    summary, _, rest = doc.partition("\n\n")
    args: dict[str, str] = {}
    match = re.search(r"^Args:\s*\n((?:[ \t]+.*\n?)+)", rest, re.M)
    if match:
        current, indent = None, None
        for line in match.group(1).splitlines():
            depth = len(line) - len(line.lstrip())
            head = re.match(r"^\s+(\w+)(?:\s*\(.*?\))?:\s*(.*)$", line)
            if head and (indent is None or depth <= indent):
                current, indent = head.group(1), depth
                args[current] = head.group(2).strip()
            elif current:
                args[current] += " " + line.strip()
    return " ".join(summary.split()), args


def build_spec(service: str, fn: Callable[..., Any], meta: ToolMeta) -> ToolSpec:
    """Parse a tool method into its ToolSpec (schemas from type hints, via pydantic)."""
    name = meta.name or fn.__name__
    where = f"{service}.{fn.__name__}"
    hints = get_type_hints(fn, include_extras=True)
    summary, arg_docs = _doc_parts(fn)
    fields: dict[str, Any] = {}
    for param in list(inspect.signature(fn).parameters.values())[1:]:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"Tool {where} takes *{param.name}: tools need named parameters")
        if param.name not in hints:
            raise TypeError(f"Tool {where}: parameter {param.name!r} has no type hint")
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (hints[param.name],
                              Field(default, description=arg_docs[param.name])
                              if param.name in arg_docs else Field(default))
    if "return" not in hints:
        raise TypeError(f"Tool {where} has no return type hint")
    args_model = create_model(f"{service}{SEP}{name}", __config__=ConfigDict(extra="forbid"),
                              **fields)
    parameters = compact_schema(args_model.model_json_schema())
    adapter = TypeAdapter(hints["return"])
    returns = compact_schema(adapter.json_schema(mode="serialization"))
    return ToolSpec(
        service=service, name=name, description=summary or name.replace("_", " "),
        read_only=meta.read_only, simulated=meta.simulated, parameters=parameters,
        returns=returns, phrase=meta.phrase, method=fn.__name__, args_model=args_model,
        return_adapter=adapter,
        inputs=tuple(s for s in interface_slots(parameters) if s.path),
        outputs=tuple(interface_slots(returns)),
    )


class Service:
    """Base class of every service: typed state, a seed from the World, and @tool methods.

    Subclasses set ``name`` and ``domain``, define a nested ``State`` model, implement
    ``seed(world)`` and decorate tools with ``@tool``. Tools read and write ``self.state``.

    Args:
        world: The shared World of the episode.
        state: Start from this state instead of ``seed(world)``.
    """

    name: ClassVar[str] = ""
    domain: ClassVar[str] = "general"
    version: ClassVar[str] = "1"
    # services a request that uses this one plausibly continues into ("*": every one, as for
    # email or a calendar); see Registry.related
    related: ClassVar[tuple[str, ...]] = ()
    # how a person names it in a request ("the real-estate app", "my calendar"); empty: one is
    # made from its name (compoenv.compose.labels.service_label)
    display: ClassVar[str] = ""
    # jobs long tasks may be about, declared next to the service: scenario objects as in a
    # scenario file (compoenv.scenarios.Scenario, docs/scenarios.md), checked when composing
    jobs: ClassVar[tuple[dict[str, Any], ...]] = ()

    class State(State):
        pass

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.name:
            check_service_name(cls.name, cls.__qualname__)
        check_display(cls.display, cls.__qualname__)

    def __init__(self, world: World, state: State | None = None) -> None:
        self.world = world
        self.state = state if state is not None else self.seed(world)
        self._shared = False
        self.simulator: Any = None  # the episode's world model access (Session sets it)
        self.writes = 0             # write calls so far: a cheap version of the state

    def seed(self, world: World) -> State:
        """The initial state, built deterministically from ``world`` (default: empty)."""
        return self.State()

    @classmethod
    def description(cls) -> str:
        return " ".join((inspect.getdoc(cls) or cls.name).split("\n\n")[0].split())

    @classmethod
    def tool_specs(cls) -> dict[str, ToolSpec]:
        """This service's tools by (unqualified) name, parsed once per class."""
        specs = _SPECS.get(cls) or cls.__dict__.get("_spec_tools")
        if specs is None:
            specs = {}
            seen: set[str] = set()
            for klass in cls.__mro__:
                for attr, value in vars(klass).items():
                    meta = getattr(value, "__compoenv_tool__", None)
                    if attr in seen or not isinstance(meta, ToolMeta):
                        continue
                    seen.add(attr)
                    spec = build_spec(cls.name, value, meta)
                    specs[spec.name] = spec
            _SPECS[cls] = specs
        return specs

    @classmethod
    def create(cls, world: World) -> Service:
        """An instance whose seeded state is shared (copy-on-write) with other episodes."""
        state = world.seeded.get(cls)
        if state is None:  # seeded once per world: the states live and go with their world
            state = world.seeded.setdefault(cls, cls(world).state)
        service = cls(world, state)
        service._shared = True
        return service

    def writable_state(self) -> State:
        """The state, made this instance's own first if it is still the shared seeded one
        (copy on write: other episodes keep seeing the seeded state)."""
        if self._shared:
            self.state = self.state.fork()
            self._shared = False
        return self.state

    def _simulated(self, spec: ToolSpec, arguments: dict[str, Any]) -> ToolResult:
        """Ask the episode's world model (offline by default). The envelope's ``simulated``
        names who answered ("offline", "endpoint:<model>", "recorded", or a fallback)."""
        from compoenv.worldmodel.simulator import default_simulator

        answer = (self.simulator or default_simulator()).answer(self, spec, arguments)
        return {"success": True, "data": answer.data, "simulated": answer.source}

    def call(self, tool_name: str, arguments: Any) -> ToolResult:
        """Validate, run and wrap one tool call. Never raises on bad input."""
        spec = self.tool_specs().get(tool_name) if isinstance(tool_name, str) else None
        if spec is None:
            return error(404, did_you_mean(qualified_name(self.name, tool_name),
                                           [s.qualified_name for s in self.tool_specs().values()],
                                           "tool"))
        try:
            kwargs = spec.validate(arguments)
            if not spec.read_only:
                self.writes += 1
                self.writable_state()
            if spec.simulated:
                return self._simulated(spec, kwargs)
            try:
                return ok(spec.dump(getattr(self, spec.method or spec.name)(**kwargs)))
            except NotImplementedError:
                return self._simulated(spec, kwargs)  # the world model answers instead
        except ToolError as exc:
            return error(exc.code, exc.message)
        except Exception as exc:  # a bug in the tool: reported to the agent, never raised
            return error(500, f"Internal error in {spec.qualified_name}: "
                              f"{type(exc).__name__}: {brief(str(exc), 200)}")


_SPECS: dict[type[Service], dict[str, ToolSpec]] = {}
