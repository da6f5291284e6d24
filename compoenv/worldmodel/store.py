"""Real state for a spec's CRUD resources: seeded records that list, get, create, update and delete.

``recognise`` (``resources``) finds a spec's resources; here they run against records kept in
the service's simulated state (``SimState.records``, one collection per resource, the one the
offline world model uses for that noun, so its answers about the noun see them too):

* the records are seeded from the World by the offline world model (realistic, role-consistent
  values, the same for the same world seed), a handful per resource;
* a get answers the record or 404, a list filters by the record fields it is given (and a
  search text), a create adds a record with a new id in the API's own format (409 when the
  key it is given is taken), an update changes the record (404 when unknown), a cancel moves it
  to the cancelled status (409 when it is already), a delete removes it (then a get is 404).

A write replaces its collection (copy on write), so a checkpoint or fork that shares the old one
stays as it was, and the simulator's digest of the state follows. An answer that does not fit
the tool's return schema is not given: the world model answers that call instead.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from typing import Any, ClassVar, Mapping

from compoenv._cache import thawed
from compoenv.crud import get_or_404, next_id, norm, search
from compoenv.schema import free_text, is_valid
from compoenv.service import Service, ToolError, ToolResult, ToolSpec, ok
from compoenv.world import World
from compoenv.worldmodel.base import SimState, ToolAnswer, ToolRequest
from compoenv.worldmodel.coherence import record_plan, request_plan, settle, targets
from compoenv.worldmodel.consistency import identity, kind_of, refer, remembered, stamped
from compoenv.worldmodel.offline import OfflineWorldModel
from compoenv.worldmodel.simulator import recall
from compoenv.worldmodel.resources import (LIMIT_PARAMS, QUERY_PARAMS, Operation, Resource,
                                           recognise)

__all__ = ["ResourceStore", "StatefulResources", "SEED_RECORDS", "naming_a_record",
           "stateful_tools"]

SEED_RECORDS = 3  # records a resource starts with: as many as a list of the offline model holds
# (a walk fans out over two or three of them: "for each of my job openings")
_NUMBERED = re.compile(r"^(.*?)(\d+)$")
_OFFLINE = OfflineWorldModel()


def _seed_of(*parts: Any) -> int:
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


_GENERATED_SIZE = 4096  # answers kept: a few task's worth of replays, a few MB at most
_GENERATED: dict[tuple[Any, ...], tuple[ToolSpec, Any]] = {}


def _generated(request: ToolRequest) -> Any:
    """``_OFFLINE.answer(request).data`` for a request with no records: a function of the
    tool, the world (its seed and day), the arguments and the seed, so kept (bounded) for the
    replays of one task's calls that verification runs; each caller gets a copy of its own."""
    try:
        args = json.dumps(request.arguments, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return _OFFLINE.answer(request).data
    world = request.world
    key = (id(request.spec), world.seed, world.today, request.seed, args)
    hit = _GENERATED.get(key)
    if hit is not None and hit[0] is request.spec:
        return thawed(hit[1])
    data = _OFFLINE.answer(request).data
    if len(_GENERATED) >= _GENERATED_SIZE:
        _GENERATED.clear()
    _GENERATED[key] = (request.spec, thawed(data))
    return data


def _text(record: Mapping[str, Any]) -> str:
    """A record's text, where a search looks for its words."""
    return " ".join(v for v in record.values() if isinstance(v, str))


def _same(stored: Any, wanted: Any) -> bool:
    if isinstance(stored, str) and isinstance(wanted, str):
        return norm(stored) == norm(wanted)
    return bool(stored == wanted)


class _Unheld(Exception):
    """A key the store does not hold but the world model may answer: one an open resource's
    search found, or one a read the world model answers showed. The world model is asked."""


def _read_name(resource: Resource) -> str:
    """A read of the resource's own (a tool name that fits the service), else its first tool."""
    ops = list(resource.operations.values())
    return next((op.tool for op in ops if op.kind in ("list", "get")), ops[0].tool)


def _gone(resource: Resource) -> str:
    """The collection of an open resource's deleted keys (no world model reads it)."""
    return f"{resource.collection}#deleted"


def _gone_shown(resource: Resource, key: str) -> str:
    """Where a closed resource's deleted key is remembered: beside what the episode was shown
    (``SimState.shown``, no collection: the state's version sees the records alone)."""
    return f"gone\x1f{resource.collection}\x1f{key}"


def _deleted(state: SimState, resource: Resource, key: str) -> bool:
    """Whether the episode deleted the record of this key."""
    return key in state.records.get(_gone(resource), {}) \
        or _gone_shown(resource, key) in state.shown


def _was_shown(shown: Mapping[str, Any] | None, resource: Resource, key: Any) -> bool:
    """Whether the episode was shown the record of this key (``SimState.shown``)."""
    if not shown:
        return False
    keys = identity({resource.key: key}, kind_of(resource.name))
    return bool(keys) and remembered(shown, keys[:1]) is not None


def _shown(data: Any, op: Operation) -> Any:
    """What a view of records shows of them."""
    def view(record: Any) -> Any:
        return {k: record[k] for k in op.view or () if k in record} \
            if isinstance(record, dict) else record

    if op.items is not None and isinstance(data, dict):
        return {**data, op.items: [view(r) for r in data.get(op.items) or ()]}
    return [view(r) for r in data] if isinstance(data, list) else view(data)


class ResourceStore:
    """The CRUD resources of one spec service and how their tools are answered.

    Args:
        service: The service's name.
        tools: Its ToolSpecs by name.
    """

    def __init__(self, service: str, tools: Mapping[str, ToolSpec]) -> None:
        self.service = service
        self.resources = recognise(tools)
        self.by_tool: dict[str, tuple[Resource, Operation]] = {
            op.tool: (resource, op) for resource in self.resources.values()
            for op in resource.operations.values()}
        # the list a resource's records are seeded by, made once (the offline model caches
        # its plans per schema object), named as a read of the resource (the name is the noun
        # the offline model makes ids and statuses for)
        self._seeders = {noun: ToolSpec(
            service=service, name=_read_name(r), description=f"List {noun} records.",
            read_only=True, simulated=True, parameters={"type": "object", "properties": {}},
            returns={"type": "array", "items": r.record, "maxItems": SEED_RECORDS})
            for noun, r in self.resources.items()}

    def __bool__(self) -> bool:
        return bool(self.by_tool)

    # -- seeding ----------------------------------------------------------------------------
    def seed(self, world: World) -> dict[str, dict[str, Any]]:
        """Every resource's first records (collection -> key -> record) in ``world``."""
        out: dict[str, dict[str, Any]] = {}
        for noun, resource in self.resources.items():
            records: dict[str, Any] = {}
            for attempt in range(4):
                if len(records) >= SEED_RECORDS:
                    break
                request = ToolRequest(self._seeders[noun], {}, world, {},
                                      _seed_of(world.seed, self.service, noun, attempt))
                # once per world (a World keeps its services' seeded states): not kept here
                for record in _OFFLINE.answer(request).data:
                    key = record.get(resource.key) if isinstance(record, dict) else None
                    # the generator leaves some keywords (a key's pattern) to the checks
                    if key not in (None, "") and str(key) not in records \
                            and len(records) < SEED_RECORDS and is_valid(record, resource.record):
                        records[str(key)] = record
            if records:  # else the world model keeps answering this resource's tools
                out[resource.collection] = records
        return out

    # -- answers ----------------------------------------------------------------------------
    def answer(self, service: Service, spec: ToolSpec,
               arguments: dict[str, Any]) -> ToolAnswer | None:
        """The answer of a resource tool from the records (stored as it says), None for a
        tool of no resource or an answer that would not fit its schema (the world model
        answers those).

        Raises:
            ToolError: 404 for a record that is not there, 409 for a key taken or a record
                already cancelled.
        """
        found = self.by_tool.get(spec.name)
        state = service.state
        if found is None or not isinstance(state, SimState):
            return None
        resource, op = found
        if resource.collection not in state.records:
            return None  # no record fits the schema in this world: left to the world model
        try:
            return self._answer(service, spec, resource, op, arguments)
        except _Unheld:
            return None

    def _answer(self, service: Service, spec: ToolSpec, resource: Resource, op: Operation,
                arguments: dict[str, Any]) -> ToolAnswer | None:
        state = service.state
        assert isinstance(state, SimState)
        stored = state.records[resource.collection]
        gone = {str(k): True for k in arguments.values() if isinstance(k, (str, int))
                and _deleted(state, resource, str(k))}  # the keys it names that were deleted
        world, write = service.world, None
        if op.kind == "list":
            data = self._list(world, spec, op, resource, stored, arguments)
        elif op.kind == "get":
            data = self._get(resource, stored, arguments[op.param or ""], gone, state.shown)
        elif op.kind == "create":
            made = self._create(world, spec, resource, stored, arguments, state.shown)
            if made is None:
                return None
            write, data = made, made[1]
        elif op.kind == "delete":
            key = str(arguments[op.param or ""])
            record = data = self._get(resource, stored, key, gone, state.shown)
            write = (key, None)
            if not op.returns_record:  # a status of the deletion: what the world model says
                data = _generated(ToolRequest(spec, arguments, world, {}, _seed_of(
                    world.seed, spec.name, arguments)))
                if isinstance(data, dict) and isinstance(record, dict):
                    # of the record deleted, as it is: its id and the fields it shows
                    data = {**data, **{k: v for k, v in record.items() if k in data}}
        else:
            data = self._update(spec, op, resource, stored, arguments, gone, state.shown)
            write = (str(arguments[op.param or ""]), data)
        if op.view:  # a view of the records: the fields it shows
            data = _shown(data, op)
        if data is None or not is_valid(data, spec.returns):
            return None
        if write is not None:
            self._store(service, resource, *write)
        return ToolAnswer(data, source="state")

    def forget(self, service: Service, spec: ToolSpec, arguments: dict[str, Any]) -> None:
        """After the world model deleted a record the store did not hold: it stays gone."""
        found = self.by_tool.get(spec.name)
        if found is None or found[1].kind != "delete" or not isinstance(service.state, SimState):
            return
        resource, op = found
        key = str(arguments.get(op.param or ""))
        if resource.collection in service.state.records \
                and not _deleted(service.state, resource, key):
            self._store(service, resource, key, None)

    def _get(self, resource: Resource, stored: Mapping[str, Any], key: Any,
             gone: Mapping[str, Any] | None = None, shown: Mapping[str, Any] | None = None
             ) -> Any:
        if str(key) not in stored and str(key) not in (gone or {}) and (
                resource.open or _was_shown(shown, resource, key)):
            # one the world model may have shown (and not deleted), or did show (a read the
            # store does not answer: reviews by business): asked of it, it answers that one
            raise _Unheld
        return get_or_404(stored, str(key), resource.name.replace("_", " "))

    def _list(self, world: World, spec: ToolSpec, op: Operation, resource: Resource,
              stored: Mapping[str, Any], arguments: dict[str, Any]) -> Any:
        fields = resource.record.get("properties") or {}
        found, limit = list(stored.values()), None
        for param, value in arguments.items():
            if param in fields:
                found = [r for r in found if _same(r.get(param), value)]
            elif param.lower() in QUERY_PARAMS and isinstance(value, str):
                found = search(found, value, _text)
            elif param.lower() in LIMIT_PARAMS and isinstance(value, int) and value > 0:
                limit = value
        schema = spec.returns if op.items is None else spec.returns["properties"][op.items]
        most = min(x for x in (limit, schema.get("maxItems"), 100) if x is not None)
        found = found[-most:]  # the newest, as a page of them
        if op.items is None:
            return found
        page = _generated(ToolRequest(spec, arguments, world, {},
                                      _seed_of(world.seed, spec.name, arguments)))
        return {**page, op.items: found} if isinstance(page, dict) else found

    def _create(self, world: World, spec: ToolSpec, resource: Resource,
                stored: Mapping[str, Any], arguments: dict[str, Any],
                shown: Mapping[str, Any] | None = None) -> tuple[str, dict[str, Any]] | None:
        """(key, record) of a new record: the offline model's record for these arguments,
        under the key given or a new one in the format of those there; ``shown``: what the
        episode was shown of the service's records (``SimState.shown``)."""
        # what it invents follows what the create must be told, not the optional fields a
        # caller may spell out (at their defaults, or at values the record holds anyway): those
        # are laid over the record; an optional argument that is no field (a pickup day) still
        # shapes it
        fields = resource.record.get("properties") or {}
        required = spec.parameters.get("required", ())
        props = spec.parameters.get("properties") or {}
        told = {k: v for k, v in arguments.items() if k in required or k not in fields}
        # nor its wording: a task's title worded otherwise makes the same estimate
        made = _generated(ToolRequest(spec, told, world, {}, _seed_of(
            world.seed, spec.name, {k: v for k, v in told.items()
                                    if not free_text(props.get(k) or {})})))
        if not isinstance(made, dict):
            return None
        record = {**made, **{k: v for k, v in arguments.items() if k in fields}}
        given = arguments.get(resource.key)
        if given is not None:
            if str(given) in stored:
                raise ToolError(409, f"A {resource.name.replace('_', ' ')} with "
                                     f"{resource.key} {given!r} already exists")
            key: Any = given
        else:
            # what the call must say (an optional detail given or not makes the same id), but
            # not its wording (a ticket's subject): two agents wording one request their own
            # ways make the same record
            salt = (world.seed, world.today, self.service, resource.collection,
                    {k: v for k, v in arguments.items()
                     if k in required and not free_text(props.get(k) or {})})
            key = self._new_key(resource, stored, record.get(resource.key), salt)
            if key is None:
                return None
        record[resource.key] = key
        # a new record is made now, whatever day the generated one said, and says of the
        # records it refers to what the episode was shown of them (a ticket's event)
        record = stamped(record, resource.record, world.now)
        record = refer(record, fields, kind_of(resource.name), shown or {},
                       set(arguments)) or record
        return (str(key), record) if is_valid(record, resource.record) else None

    @staticmethod
    def _new_key(resource: Resource, stored: Mapping[str, Any], made: Any, salt: Any) -> Any:
        """A key not taken, in the format of those there (``TSK-4821`` beside ``TSK-8685``:
        digits drawn from ``salt``, the world and the call, so no other task tells it), else
        the one the offline model made for the record."""
        schema = (resource.record.get("properties") or {}).get(resource.key) or {}
        keys = [r.get(resource.key) for r in stored.values() if isinstance(r, dict)]
        if schema.get("type") == "integer":
            top = max([k for k in keys if isinstance(k, int)] or [0])
            return top + random.Random(_seed_of(salt, len(keys))).randint(1, 97)
        shapes = {(m.group(1), len(m.group(2))) for k in keys
                  if isinstance(k, str) and (m := _NUMBERED.match(k))}
        candidates = []
        if len(shapes) == 1 and len(keys) == len(stored):
            prefix, width = next(iter(shapes))
            candidates.append(next_id(prefix, {str(k) for k in keys}, width, salt=salt))
        candidates.append(made)
        for key in candidates:
            if isinstance(key, str) and key and key not in stored and is_valid(key, schema):
                return key
        return None

    def _update(self, spec: ToolSpec, op: Operation, resource: Resource, stored: Mapping[str, Any],
                arguments: dict[str, Any], gone: Mapping[str, Any] | None,
                shown: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
        key = arguments[op.param or ""]
        record = self._get(resource, stored, key, gone, shown)
        fields = resource.record.get("properties") or {}
        changes = {k: v for k, v in arguments.items()
                   if k in fields and k not in (op.param, resource.key)}
        if op.kind == "cancel":
            status = record.get("status")
            if status == resource.cancelled:
                raise ToolError(409, f"{resource.name.replace('_', ' ').capitalize()} {key} "
                                     f"is already {status}")
            changes["status"] = resource.cancelled
        new = {**record, **changes}
        # what follows from a change moves with it (a new date moves the start on that day);
        # the changed fields stay as given
        settle(new, record_plan(resource.record), targets(request_plan(spec), record_plan(
            resource.record)), arguments, set(changes), random.Random(_seed_of(key, changes)))
        return new if is_valid(new, resource.record) else None

    @staticmethod
    def _store(service: Service, resource: Resource, key: str,
               record: dict[str, Any] | None) -> None:
        """Write one record (None: remove it), replacing the collection (copy on write)."""
        state = service.writable_state()
        assert isinstance(state, SimState)
        records = state.records
        collection = dict(records.get(resource.collection) or {})
        if record is None:
            collection.pop(key, None)
            # the world model is not asked about it again (an open resource's, or one shown
            # by a read the world model answers): it is gone
            if resource.open:
                records[_gone(resource)] = {**records.get(_gone(resource), {}), key: {"id": key}}
            else:
                state.shown[_gone_shown(resource, key)] = ((), {})
        else:
            collection[key] = record
        records[resource.collection] = collection


class StatefulResources:
    """Mixed into a spec service whose spec has CRUD resources: seeds their records and answers
    their tools from them; every other tool goes to the world model as before."""

    _store: ClassVar[ResourceStore]

    def seed(self, world: World) -> SimState:
        return self.State(records=self._store.seed(world))  # type: ignore[attr-defined]

    def _simulated(self, spec: ToolSpec, arguments: dict[str, Any]) -> ToolResult:
        answer = self._store.answer(self, spec, arguments)  # type: ignore[arg-type]
        if answer is None:
            result = super()._simulated(spec, arguments)  # type: ignore[misc]
            self._store.forget(self, spec, arguments)  # type: ignore[arg-type]
            return result
        # the records are the truth: what they show is remembered, other answers agree
        return ok(recall(self, spec, arguments, answer, trust=True).data)  # type: ignore[arg-type]


def stateful_tools(service: type[Service] | Service) -> frozenset[str]:
    """The tools of a spec service that run against its records, not the world model."""
    cls = service if isinstance(service, type) else type(service)
    store = getattr(cls, "_store", None)
    return frozenset(store.by_tool) if isinstance(store, ResourceStore) else frozenset()


def naming_a_record(service: Service, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` with the parameter that names a record (a get, update, cancel or delete of
    a CRUD resource) set to a record ``service`` holds (one not cancelled yet, if any): an example
    call that finds something. Arguments of other tools come back as they are."""
    store = getattr(type(service), "_store", None)
    found = store.by_tool.get(tool) if isinstance(store, ResourceStore) else None
    if found is None or found[1].param is None or not isinstance(service.state, SimState):
        return arguments
    resource, op = found
    stored = service.state.records.get(resource.collection) or {}
    keys = [k for k, r in stored.items() if resource.cancelled is None
            or r.get("status") != resource.cancelled] or list(stored)
    if not keys:
        return arguments
    record = stored[keys[0]]  # the key as the record holds it: an integer id stays one
    value = record.get(resource.key, keys[0]) if isinstance(record, dict) else keys[0]
    return {**arguments, op.param: value}
