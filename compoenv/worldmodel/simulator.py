"""Simulator: consistent world-model answers for one episode (cache, recording, patches, faults)."""

from __future__ import annotations

import hashlib
import json
import threading
import weakref
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable

from compoenv._cache import ByIdentity, thawed
from compoenv.schema import is_valid, validator_for
from compoenv.service import Service, ToolError, ToolSpec
from compoenv.world import DEFAULT_TODAY, World
from compoenv.worldmodel.base import SimState, ToolAnswer, ToolRequest, WorldModel, WorldModelError
from compoenv.worldmodel.consistency import (identity, key_param, kind_of, makes_new, named,
                                             reconcile, stamped)
from compoenv.worldmodel.offline import collection_of

__all__ = ["Simulator", "default_simulator", "recall", "request_key", "CACHE_BYTES"]

# The most bytes (as JSON: keys and answers) one Simulator's answer cache holds. An env gives
# each episode a Simulator of its own, so this bounds what agent arguments one episode keeps
# cached, and they go with it; the process-wide default_simulator (the library's sessions:
# composition, verification) is bounded the same way.
CACHE_BYTES = 1 << 22
_LEGACY_MAX_CHARS = 1 << 16  # states up to this size also find answers recorded under old keys
_MASK = (1 << 128) - 1

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)
_RECORD = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                           default=str)
_SIZE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str)


def request_key(spec: ToolSpec, arguments: dict[str, Any], version: str) -> str:
    """``<tool>|<canonical arguments>|<world/state version>``: the cache and recording key
    (the world is part of it: one process composes in many worlds)."""
    canonical = _CANONICAL.encode(arguments)
    return f"{spec.qualified_name}|{canonical}|{version}"


def _without_defaults(spec: ToolSpec, arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` without the optional ones given at their schema defaults."""
    props, required = spec.parameters.get("properties", {}), spec.parameters.get("required", ())
    return {k: v for k, v in arguments.items() if k in required
            or not isinstance(props.get(k), dict) or "default" not in props[k]
            or props[k]["default"] != v}


def _world_key(world: World) -> str:
    """The world in request keys: its seed, and its date when not the default one (worlds of
    one seed on other dates answer differently)."""
    return str(world.seed) if world.today == DEFAULT_TODAY else \
        f"{world.seed}@{world.today.isoformat()}"


def _record_digest(collection: str, key: str, record: Any) -> tuple[int, int]:
    """A stored record's 128-bit digest and its size in characters: the only place a record
    is serialised for the state version, once when stored and once when replaced."""
    text = _RECORD.encode([collection, key, record])
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    return int.from_bytes(digest, "big"), len(text)


@dataclass(frozen=True, slots=True)
class _Digest:
    """A collection's digest: the sum of its records' digests (so a write adds and removes
    one record's, whatever the collection's size), for the collection object it describes."""

    collection: dict[str, Any]
    total: int
    chars: int


class _Book:
    """What a Simulator keeps about one live service's records: each collection's digest,
    and the last version with the collection objects it was made from."""

    __slots__ = ("digests", "last")

    def __init__(self) -> None:
        self.digests: dict[str, _Digest] = {}
        self.last: tuple[dict[str, Any], tuple[tuple[str, Any], ...], str] | None = None


def _collection_digest(name: str, collection: dict[str, Any]) -> _Digest:
    total = chars = 0
    for key, record in collection.items():
        digest, size = _record_digest(name, key, record)
        total, chars = total + digest, chars + size
    return _Digest(collection, total & _MASK, chars)


def _legacy_version(records: dict[str, dict[str, Any]]) -> str:
    """The state version of keys recorded before versions were kept write by write: the
    digest of json.dumps(records, sort_keys=True). Costs a pass over every record."""
    blob = "{" + ", ".join(f"{json.dumps(name)}: "
                           f"{json.dumps(records[name], sort_keys=True, default=str)}"
                           for name in sorted(records)) + "}"
    return hashlib.blake2b(blob.encode(), digest_size=8).hexdigest()


def _patch_problem(patch: Any) -> str | None:
    if not isinstance(patch, Mapping):
        return "a patch must map collections to changes"
    for collection, changes in patch.items():
        if not isinstance(collection, str) or not isinstance(changes, Mapping) or not all(
                isinstance(k, str) and (v is None or isinstance(v, Mapping))
                for k, v in changes.items()):
            return f"collection {collection!r} must map keys to records or null"
    return None


class Simulator:
    """The world model as an episode sees it.

    Answers are looked up in order: the task's recorded answers (so every agent and the oracle
    see the same ones), this simulator's cache, then the model. A model failure falls back to
    ``fallback`` (the offline model) or becomes a 500 envelope, as ``on_error`` says. Writes'
    patches are validated and applied to the service's own simulated records; a read never
    changes state (a recorded read that carries a patch is answered without it).

    Keys carry a version of the service's records: a digest of their content, kept up to date
    by each patch (the cost of a write is the size of the records it touches, not of the
    state), so the same records give the same keys in any process.

    Args:
        model: The backend.
        recorded: Answers recorded in the task: request key -> {"data", "patch", "source"}.
        fallback: Backend used when ``model`` fails (None: no fallback).
        on_error: "fallback" or "error".
        cache_bytes: Size bound of the answer cache (keys and answers as JSON); 0: no cache.
    """

    def __init__(self, model: WorldModel, recorded: dict[str, Any] | None = None,
                 fallback: WorldModel | None = None, on_error: str = "fallback",
                 cache_bytes: int = CACHE_BYTES) -> None:
        self.model, self.fallback, self.on_error = model, fallback, on_error
        self.recorded = recorded or {}
        self.recording: dict[str, Any] = {}   # answers from models other than offline
        self.events: list[dict[str, Any]] = []  # what happened: fallbacks, errors, repairs
        self.cache_bytes = cache_bytes
        self.cached_bytes = 0
        self._lock = threading.Lock()
        # made on first use, as most episodes never call a simulated tool
        self._cache: OrderedDict[str, tuple[ToolAnswer, int]] | None = None
        # per live service (gone with it): its collections' digests and its last version
        self._books: weakref.WeakKeyDictionary[Service, _Book] | None = None
        self._stems: tuple[Any, frozenset[str]] = (None, frozenset())

    def answer(self, service: Service, spec: ToolSpec, arguments: dict[str, Any]) -> ToolAnswer:
        """The answer (its patch applied); raises ToolError when nothing valid came. Its
        ``source`` says who answered: the model, "recorded", or a fallback and why."""
        version = f"{_world_key(service.world)}/{self.version(service)}"
        key = request_key(spec, arguments, version)
        answer = self._recorded(key, service, spec)
        if answer is None:
            answer = self._cached(key)
        if answer is None:
            answer = self._ask(service, spec, arguments, key)
        answer = recall(service, spec, arguments, answer)
        self._apply(service, spec, answer)
        return answer

    def version(self, service: Service) -> str:
        """The version of ``service``'s state in request keys: a digest of its simulated
        records' content (typed services: the count of write calls)."""
        state = service.state
        if not isinstance(state, SimState):
            return f"w{service.writes}"
        book, records = self._book(service), state.records
        last = book.last
        if last is not None and last[0] is records and len(last[1]) == len(records) and all(
                records.get(name) is collection for name, collection in last[1]):
            return last[2]  # not a collection changed since
        parts = []
        for name in sorted(records):
            digest = _current(book.digests, name, records[name])
            if digest.total:  # an empty collection is no collection
                parts.append(f"{json.dumps(name)}:{digest.total:032x}")
        version = hashlib.blake2b(",".join(parts).encode(), digest_size=8).hexdigest()
        book.last = (records, tuple(records.items()), version)
        return version

    def _book(self, service: Service) -> _Book:
        if self._books is None:
            self._books = weakref.WeakKeyDictionary()
        book = self._books.get(service)
        if book is None:
            book = self._books[service] = _Book()
        return book

    def _recorded(self, key: str, service: Service, spec: ToolSpec) -> ToolAnswer | None:
        saved = self.recorded.get(key)
        if saved is None and self.recorded:
            saved = self._recorded_before(key, service)
        if saved is None:
            return None
        if not isinstance(saved, Mapping) or "data" not in saved:
            self._event(spec, "recorded_invalid", "a recorded answer must hold 'data'")
            return None
        patch = saved.get("patch") or {}
        if patch and spec.read_only:  # a read changes nothing, and a seeded state is shared
            self._event(spec, "recorded_patch_ignored", "a read-only tool's recorded answer "
                                                        "carries a state change")
            patch = {}
        elif patch and (problem := _patch_problem(patch)) is not None:
            self._event(spec, "recorded_patch_ignored", problem)
            patch = {}
        # copies: the task's recorded answers are shared by every env that plays it
        return ToolAnswer(thawed(saved["data"]), thawed(patch), "recorded")

    def _recorded_before(self, key: str, service: Service) -> Any:
        """An answer recorded under the old state version (a digest of every record), looked
        for only when the task recorded this very call and the state is small."""
        stem, _, version = key.rpartition("|")
        if self._stems[0] is not self.recorded:
            self._stems = (self.recorded, frozenset(k.rpartition("|")[0] for k in self.recorded))
        state = service.state
        if stem not in self._stems[1] or not isinstance(state, SimState):
            return None
        table = self._book(service).digests
        if sum(_current(table, n, c).chars for n, c in state.records.items()) \
                > _LEGACY_MAX_CHARS:
            return None
        world = version.partition("/")[0]
        return self.recorded.get(f"{stem}|{world}/{_legacy_version(state.records)}")

    def _event(self, spec: ToolSpec, event: str, reason: str) -> None:
        self.events.append({"tool": spec.qualified_name, "event": event, "reason": reason})

    def _cached(self, key: str) -> ToolAnswer | None:
        if self._cache is None:
            return None
        with self._lock:
            hit = self._cache.get(key)
            if hit is None:
                return None
            self._cache.move_to_end(key)
            return hit[0]

    def _store(self, key: str, answer: ToolAnswer) -> None:
        """Cache ``answer``, dropping the oldest answers while over ``cache_bytes``."""
        if not self.cache_bytes:
            return
        size = len(key) + len(_SIZE.encode(answer.data))
        if answer.patch:
            size += len(_SIZE.encode(answer.patch))
        if size > self.cache_bytes // 8:
            return  # one huge answer would push out every other
        with self._lock:
            if self._cache is None:
                self._cache = OrderedDict()
            old = self._cache.pop(key, None)
            if old is not None:
                self.cached_bytes -= old[1]
            self._cache[key] = (answer, size)
            self.cached_bytes += size
            while self.cached_bytes > self.cache_bytes:
                self.cached_bytes -= self._cache.popitem(last=False)[1][1]

    def _ask(self, service: Service, spec: ToolSpec, arguments: dict[str, Any],
             key: str) -> ToolAnswer:
        records = service.state.records if isinstance(service.state, SimState) else {}
        # the seed leaves the state out: what a read finds besides stored records is the same
        # before and after a write, so earlier answers stay true
        stable = key.rsplit("|", 1)[0]
        if spec.read_only and (said := _without_defaults(spec, arguments)) != arguments:
            # an optional argument spelled out at its default asks what leaving it out asks
            arguments = said
            stable = request_key(spec, arguments, "").rsplit("|", 1)[0]
        if not spec.read_only:
            # what a write invents (a new record's other fields) follows what it must be told,
            # not the optional arguments a caller may spell out at their defaults or at the
            # values the record holds anyway
            required = spec.parameters.get("required", ())
            stable = request_key(spec, {k: v for k, v in arguments.items() if k in required},
                                 "").rsplit("|", 1)[0]
        seed = int.from_bytes(hashlib.blake2b(f"{service.world.seed}|{stable}".encode(),
                                              digest_size=8).digest(), "big")
        request = ToolRequest(spec, arguments, service.world, records, seed)
        try:
            answer = self._checked(self.model, request)
        except WorldModelError as exc:
            self.events.append({"tool": spec.qualified_name, "event": "model_failed",
                                "reason": exc.reason, "detail": exc.detail[:200]})
            if self.on_error != "fallback" or self.fallback is None:
                raise ToolError(500, f"The world model could not answer {spec.qualified_name}: "
                                     f"{exc.reason}") from None
            answer = self._checked(self.fallback, request)
            answer = ToolAnswer(answer.data, answer.patch,
                                f"{self.fallback.name} (fallback: {self.model.name} {exc.reason})")
            self.events.append({"tool": spec.qualified_name, "event": "fallback",
                                "model": self.fallback.name})
        self._store(key, answer)
        if answer.source == self.model.name and answer.source != "offline":
            self.recording[key] = {"data": answer.data, "patch": answer.patch,
                                   "source": answer.source}
        return answer

    @staticmethod
    def _checked(model: WorldModel, request: ToolRequest) -> ToolAnswer:
        """The model's answer, or WorldModelError if its data or patch is not valid."""
        try:
            answer = model.answer(request)
        except WorldModelError:
            raise
        except Exception as exc:  # a backend bug is a failed answer, not a crashed episode
            raise WorldModelError("backend_error", f"{type(exc).__name__}: {exc}") from None
        # the offline model builds answers from the schema, checking each value as it goes
        # (and tests check every spec tool): only other models' answers are checked here
        returns = request.spec.returns
        if ((not getattr(model, "valid_by_construction", False) or _risky(returns))
                and not is_valid(answer.data, returns)):
            problem = next(iter(validator_for(returns).iter_errors(answer.data)), None)
            raise WorldModelError("invalid_output", problem.message[:200] if problem else
                                  "the answer does not match the return schema")
        if request.spec.read_only and answer.patch:
            raise WorldModelError("invalid_patch", "a read-only tool proposed a state change")
        problem = _patch_problem(answer.patch) if answer.patch else None
        if problem is not None:
            raise WorldModelError("invalid_patch", problem)
        return answer

    def _apply(self, service: Service, spec: ToolSpec, answer: ToolAnswer) -> None:
        """Store a write's records in the service's own state, keeping the digests current."""
        if not answer.patch or spec.read_only or not isinstance(service.state, SimState):
            return  # typed services keep their typed state; simulated answers are reads there
        records = service.writable_state().records  # never the shared seeded state
        table = self._book(service).digests
        for collection, changes in answer.patch.items():
            old = records.get(collection) or {}
            digest = _current(table, collection, old)
            total, chars = digest.total, digest.chars
            # copy on write: a snapshot or fork that shares the old collection stays as it was
            target = records[collection] = dict(old)
            for key, record in changes.items():
                if key in target:
                    removed, size = _record_digest(collection, key, target[key])
                    total, chars = total - removed, chars - size
                if record is None:
                    target.pop(key, None)
                else:
                    target[key] = record
                    added, size = _record_digest(collection, key, record)
                    total, chars = total + added, chars + size
            table[collection] = _Digest(target, total & _MASK, chars)


def recall(service: Service, spec: ToolSpec, arguments: dict[str, Any], answer: ToolAnswer,
           trust: bool = False) -> ToolAnswer:
    """``answer`` agreeing with what the episode was shown of ``service``'s records
    (``consistency.reconcile``), whoever answered: fields shown before win over fresh draws,
    except those a write decides (its arguments, the status it leaves); what it shows is
    remembered from now on. A write's new record is made now (the World's ``now``); a
    patch stores the records as the answer shows them. ``trust``: the answer is the truth (a
    store's records), only remembered. Typed services' answers come back as they are."""
    state = service.state
    if not isinstance(state, SimState):
        return answer
    kind = kind_of(_noun_of(spec))
    shown = service.writable_state().shown  # type: ignore[attr-defined]
    write = not spec.read_only
    data = answer.data
    if not trust:
        data = _as_named(spec, arguments, kind, data)
    drawn = answer.data if data is not answer.data else None  # a record under another id
    if write and not trust and makes_new(spec.name) and isinstance(data, dict) \
            and not any(k in shown for k in identity(data, kind)):
        data = stamped(data, spec.returns, service.world.now)
    data, moved = reconcile(data, spec.returns, kind, shown, set(arguments) if write else (),
                            top_write=write, trust=trust)
    moved = moved or data is not answer.data
    patch = answer.patch
    if patch and write and not trust:
        if drawn is not None:  # the named record is stored under its key, not a drawn one
            patch = {collection: {_rekeyed(key, record, drawn, data, kind): (
                {**record, **{k: v for k, v in data.items() if k in record}}
                if isinstance(record, dict) and _same_id(record, drawn, kind) else record)
                for key, record in changes.items()} for collection, changes in patch.items()}
        patch = {collection: {key: _as_shown(record, data, kind, shown)
                              for key, record in changes.items()}
                 for collection, changes in patch.items()}
    if not moved and patch is answer.patch:
        return answer
    return ToolAnswer(data, patch, answer.source)


def _same_id(record: Any, other: Any, kind: str) -> bool:
    ids = identity(other, kind) if isinstance(other, dict) else ()
    return bool(ids) and isinstance(record, dict) and identity(record, kind)[:1] == ids[:1]


def _rekeyed(key: str, record: Any, drawn: Any, data: Any, kind: str) -> str:
    """A patch's key for ``record``: the named record's key where the model drew another."""
    if not _same_id(record, drawn, kind):
        return key
    field = "id" if "id" in data else f"{kind}_id"
    return str(data.get(field, key))


def _as_named(spec: ToolSpec, arguments: dict[str, Any], kind: str, data: Any) -> Any:
    """A tool that names one record by its key (``get_ticket(ticket_id)``) answers that
    record: its own id is the key asked for (then ``reconcile`` finds what was shown of
    it), whatever id a model drew."""
    param = key_param(spec.name, spec.parameters, kind)
    if param is None or not isinstance(data, dict) or param not in arguments \
            or named(data, kind, arguments[param], param):
        return data
    key = arguments[param]
    props = (spec.returns.get("properties") or {}) if isinstance(spec.returns, dict) else {}
    # the field of the key's name (a cookbook entry's recipe_id: the entry has an id of its
    # own), else the record's own id
    for field in (param, "id", f"{kind}_id"):
        if field in data and not isinstance(data[field], (dict, list, bool)):
            value = key if is_valid(key, props.get(field) or {}) else str(key)
            if is_valid(value, props.get(field) or {}):
                return {**data, field: value}
            return data
    return data


def _as_shown(record: Any, data: Any, kind: str, shown: dict[str, Any]) -> Any:
    """A patch's record as the write's answer shows it (the same record: the answer's
    fields), else agreeing with what was shown of it."""
    if not isinstance(record, dict):
        return record
    if isinstance(data, dict) and set(identity(record, kind)) & set(identity(data, kind)):
        return {**record, **{k: v for k, v in data.items() if k in record}}
    return reconcile(record, None, kind, shown)[0] if identity(record, kind) else record


_noun_of: Callable[[ToolSpec], str] = ByIdentity(
    lambda spec: collection_of(spec.name, spec.returns))


def _current(table: dict[str, _Digest], name: str, collection: dict[str, Any]) -> _Digest:
    """The digest of ``collection``: the one kept, if it is of this very object, else made
    (once, after a rollback or the first use of a seeded state)."""
    digest = table.get(name)
    if digest is None or digest.collection is not collection:
        digest = table[name] = _collection_digest(name, collection)
    return digest


_RISKY_KEYS = frozenset({"pattern", "format", "multipleOf", "uniqueItems", "oneOf", "not",
                         "dependentRequired", "if", "patternProperties"})


def _uses_risky(node: Any) -> bool:
    """Whether a return schema uses keywords the offline model does not build for: then its
    answers are checked too."""
    if isinstance(node, list):
        return any(_uses_risky(item) for item in node)
    if not isinstance(node, dict):
        return False
    if "x-interface" in node and node.get("type") != "object":
        return False  # an interface's value comes from its own generator, pattern and all
    if any(k in _RISKY_KEYS for k in node):
        return True
    children = [v for k, v in node.items() if k not in ("properties", "enum", "const",
                                                         "default", "examples")]
    children += list((node.get("properties") or {}).values())  # names are not keywords
    return any(_uses_risky(child) for child in children)


_risky: Callable[[dict[str, Any]], bool] = ByIdentity(_uses_risky)  # once per schema

_DEFAULT: list[Simulator] = []


def default_simulator() -> Simulator:
    """The process-wide offline simulator, for the library's own sessions (composition and
    verification ask the same calls again and again) and services outside a session. Agent
    calls never come here: an env gives each episode a Simulator of its own."""
    if not _DEFAULT:
        from compoenv.worldmodel.offline import OfflineWorldModel

        _DEFAULT.append(Simulator(OfflineWorldModel()))
    return _DEFAULT[0]
