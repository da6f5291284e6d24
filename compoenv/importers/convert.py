"""Schemas of imported documents (OpenAPI, Swagger, MCP) as plain JSON Schema with ``x-interface``
and ``x-role`` tags: references followed, ``allOf`` merged, alternatives simplified, and what
cannot be offered to an agent (file uploads, ``oneOf`` of objects in inputs) left out.

A component schema the document uses in more than one place (or inside itself) is converted
once into ``defs`` and referenced as ``{"$ref": "#/$defs/<name>"}`` (``share=True``), so a
document whose schemas are shared stays its own size; ``with_defs`` gives a spec the
definitions its tools reach.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any, Callable, TypeVar
from urllib.parse import unquote

from compoenv.importers.infer import envelope_field, field_key, object_hint, tag_field
from compoenv.importers.nodes import (
    Reads, annotated as _annotated, brief as _brief, kind as _kind,
    list_of as _list, one_ref, parts as _parts, pointer as _pointer, props as _props,
    ref_counts as _ref_counts)
from compoenv.importers.resources import Resources, find_record, record_field, records_of
from compoenv.schema import inline_refs, ref_names
from compoenv.worldmodel.spec import SpecError

__all__ = ["Converter", "MAX_NODES", "TooLarge", "media", "one_ref"]

_KEEP = ("description", "enum", "const", "default", "minLength", "maxLength", "minItems",
         "maxItems", "uniqueItems", "minimum", "maximum", "minProperties", "maxProperties")
MAX_NODES = 200_000  # schema nodes one service may convert to (``Converter.bounded``)
MAX_DEPTH = 16  # schemas nested in one converted schema: deeper ones are cut to plain objects
_DEFER_AT = 48  # nested conversions (shared ones included) past which a new shared one waits
_NESTS = ("properties", "items", "additionalProperties", "allOf", "anyOf", "oneOf")
T = TypeVar("T")


class TooLarge(SpecError):
    """Converting passed the node budget: the schemas are too large for one service."""


class Converter:
    """Turns OpenAPI / MCP schemas into plain JSON Schema, resolving refs within ``root``.

    Args:
        root: The document references point into.
        origin: Where it came from, for messages.
        warnings: Where what was skipped is reported.
        share: Keep component schemas used more than once as ``$defs`` references.
        resources: The API's collections (``compoenv.importers.resources``): a field named
            after one (``repo_id``) holds its key; without them any ``<thing>_id`` does.
        max_nodes: The schema nodes converted between two ``new_budget`` calls (one
            service's), at most: past it, ``TooLarge``.

    Attributes:
        defs: The shared schemas converted so far, by name.
        records: Component refs whose records are a collection's, with the field that is the
            record's key: ``{"#/components/schemas/Repo": ("repo", "id")}``.
    """

    def __init__(self, root: Any, origin: str, warnings: list[str], share: bool = False,
                 resources: Resources | None = None, max_nodes: int = MAX_NODES) -> None:
        self.root, self.origin, self.warnings, self.max_nodes = root, origin, warnings, max_nodes
        self.defs: dict[str, dict[str, Any]] = {}
        self.records: dict[str, tuple[str, str]] = {}
        self.resources = resources or Resources()
        self.keys: Callable[[str], str | None] = resources.key if resources else field_key
        self._names: dict[tuple[str, str, str], str] = {}
        self.share, self._uses = share, _ref_counts(root) if share else Counter()
        self._nodes = self._depth = self._calls = 0
        self._pending: list[tuple[str, str, str, str, str]] = []
        self._labels: dict[str, str] = {}  # a converted definition (as JSON) -> its label

    @classmethod
    def openapi(cls, document: dict[str, Any], origin: str,
                max_nodes: int = MAX_NODES) -> Converter:
        """A converter for an OpenAPI document: components shared, resource ids keyed."""
        conv = cls(document, origin, [], share=True, resources=Resources.of(
            document.get("paths")), max_nodes=max_nodes)
        conv.records = records_of(document.get("paths"), conv.resources, conv._resolve,
                                  lambda op: conv.success(op, "", lenient=True)[2])
        return conv

    def success(self, op: dict[str, Any], where: str, lenient: bool = False,
                ) -> tuple[str | None, str | None, Any]:
        """An operation's success response: its code (200, 201, else the first 2xx), JSON
        media type and schema (unconverted); ``lenient``: no error for a broken reference."""
        responses = {str(k): v for k, v in (op.get("responses") or {}).items()} if isinstance(
            op.get("responses"), dict) else {}
        code = next((c for c in ("200", "201", *sorted(responses)) if c in responses and
                     c.startswith("2")), None)
        if code is None:
            return None, None, None
        try:
            response = self.deref(responses[code], f"{where}.responses.{code}")[0]
        except SpecError:
            if not lenient:
                raise
            return code, None, None
        return (code, *media(response.get("content") if isinstance(response, dict) else None))

    def _resolve(self, node: Any) -> tuple[Any, str | None]:
        """``node`` with references followed and ``allOf`` parts' properties merged (one
        level), and the component it came from; nothing for a reference that fails."""
        try:
            node, refs = self.deref(node, "")
        except SpecError:
            return {}, None
        if isinstance(node, dict) and _parts(node):
            props = dict(_props(node))
            for part in _parts(node):
                props.update(_props(self._resolve(part)[0]))
            node = {**node, "properties": props}
        return node, refs[-1] if refs else None

    def deref(self, node: Any, where: str) -> tuple[Any, list[str]]:
        """``node`` with ``$ref`` chains followed (a ref's siblings override it), and the refs."""
        refs: list[str] = []
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            why = " (circular)" if ref in refs else "" if str(ref).startswith("#/") else \
                " (only references within the document are supported)"
            target = None if why else _pointer(self.root, str(ref))
            if target is True or target == {}:  # a schema that allows anything
                target = {}
            if why or not isinstance(target, dict):
                what = "" if why or target is None else f" (it points at a {_kind(target)})"
                raise SpecError(f"{self.origin}: {where}: cannot resolve $ref {ref!r}"
                                f"{why}{what}")
            refs.append(ref)
            node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return node, refs

    def schema(self, node: Any, where: str, name: str = "", hint: str = "", mode: str = "out",
               stack: tuple[str, ...] = (), inline: bool = False) -> dict[str, Any] | None:
        """The converted schema, or None to leave the node out (``mode``: "in" or "out";
        ``inline``: convert the node itself even when it is a shared component)."""
        self._count(where)
        if self._depth >= MAX_DEPTH and any(isinstance(self.deref(node, where)[0].get(
                k) if isinstance(node, dict) else None, (dict, list)) for k in _NESTS):
            return self._skip(f"{where}: nests deeper than {MAX_DEPTH} schemas; cut to a plain "
                              f"object", {"type": "object"})
        self._depth, self._calls = self._depth + 1, self._calls + 1
        try:
            return self._schema(node, where, name, hint, mode, stack, inline)
        finally:
            self._depth, self._calls = self._depth - 1, self._calls - 1
            if not self._calls:
                self._drain()

    def _schema(self, node: Any, where: str, name: str, hint: str, mode: str,
                stack: tuple[str, ...], inline: bool) -> dict[str, Any] | None:
        node = one_ref(node)
        ref = node.get("$ref") if isinstance(node, dict) else None
        if self.share and not inline and isinstance(ref, str) and _annotated(node) \
                and (self._uses[ref] > 1 or ref in stack):
            shared = self._shared(ref, where, name, hint, mode, stack)
            if shared is not None:
                return {**shared, **({"description": _brief(node["description"])} if
                                     isinstance(node.get("description"), str) else {})}
        return self._convert(node, where, name, hint, mode, stack)

    def _convert(self, node: Any, where: str, name: str, hint: str, mode: str,
                 stack: tuple[str, ...]) -> dict[str, Any] | None:
        node, refs = self.deref(node, where)
        if not isinstance(node, dict):
            return {}
        if set(refs) & set(stack):
            return self._skip(f"{where}: recursive schema {refs[-1]} cut to a plain object",
                              {"type": "object"})
        stack, parts = (*stack, *refs), _parts(node)
        while parts:  # allOf: every part (and the parts' parts) merged into one object
            part, more = self.deref(parts.pop(0), f"{where}.allOf")
            if set(more) & set(stack):  # a part that contains the object itself
                self.warnings.append(f"{where}: recursive allOf {more[-1]} left out")
                continue
            refs, stack = refs + more, (*stack, *more)
            if not isinstance(part, dict):
                continue
            parts = [*_parts(part), *parts]
            node = {**{k: v for k, v in part.items() if k != "allOf"}, **node,
                    "properties": {**_props(node), **_props(part)},
                    "required": [*_list(node.get("required")), *_list(part.get("required"))]}
        # merged: an allOf left in the node would be merged again by every later pass over it
        # (``_alternatives`` converts the node once more), without end
        node = {k: v for k, v in node.items() if k != "allOf"}
        if node.get("readOnly" if mode == "in" else "writeOnly") is True:
            return None
        sub, key = (name, hint, mode, stack), "oneOf" if node.get("oneOf") else "anyOf"
        if node.get(key):
            return self._alternatives(node, key, where, sub)
        kind = node.get("type")
        kind = next((k for k in kind if k != "null"), None) if isinstance(kind, list) else kind
        kind = kind or ("object" if "properties" in node else "array" if "items" in node else None)
        kind = kind if isinstance(kind, str) else None
        if kind == "string" and node.get("format") in ("binary", "byte") and mode == "in":
            return self._skip(f"{where}: file upload {name!r} is not supported; skipped")
        out: dict[str, Any] = {"type": kind} if kind else {}
        out.update({k: node[k] for k in _KEEP if k in node})
        if isinstance(out.get("description"), str):
            out["description"] = _brief(out["description"])
        if isinstance(out.get("enum"), list):  # OpenAPI 3.0 lists null among nullable enums
            out["enum"] = [v for v in out["enum"] if v is not None] or None
            out = {k: v for k, v in out.items() if v is not None}
        for bound, step in (("minimum", 1), ("maximum", -1)):  # exclusive bounds -> inclusive
            exclusive = node.get("exclusive" + bound.title())  # a 3.0 flag or a 3.1 number
            value = node.get(bound) if exclusive is True else exclusive
            if type(value) in (int, float):
                out[bound] = value + step if kind == "integer" else value
        if kind == "object":
            self._object(node, out, refs, where, sub)
        elif kind == "array":
            items = node.get("items") if isinstance(node.get("items"), dict) else {}
            out["items"] = self.schema(items, f"{where}.items", *sub)
            return out if out["items"] is not None else None
        elif "enum" not in out and "const" not in out:
            parents = tuple(re.findall(r"\.properties\.([^.\[]+)", where)[:-1])
            out.update(tag_field(name, kind, node.get("format"), hint,
                                 str(node.get("description") or ""), self.keys,
                                 "body" if mode == "in" else "response", parents))
        return out

    def key_record(self, returns: dict[str, Any], resource: str) -> None:
        """Mark the key field of the record a converted response holds (inline records; shared
        ones were marked as their component was converted)."""
        def resolve(node: Any) -> tuple[Any, str | None]:
            ref = node.get("$ref") if isinstance(node, dict) else None
            return (self.defs.get(ref.removeprefix("#/$defs/")), ref) if isinstance(
                ref, str) else (node, None)

        found = find_record(returns, resolve, resource)
        if found is not None and found[1] is None:
            key = record_field(list(found[0].get("properties") or {}), resource,
                               self.resources.items.get(resource))
            if key and isinstance(found[0]["properties"][key], dict):
                _mark(found[0]["properties"][key], resource)

    def unenvelope(self, returns: dict[str, Any]) -> dict[str, Any]:
        """A list response as its list when the rest of it is only the list's envelope
        (``{"value": [...], "nextLink": ...}``, ``{"items": [...], "kind": ..., "total": 3}``):
        a simulated service answers a whole list at once, so paging links, tokens and counts
        carry nothing, and the records are what a task picks from, counts or fans out over.
        A response with any other field of its own is kept whole."""
        node = self._resolved(returns)
        props = node.get("properties") if isinstance(node, dict) else None
        if not isinstance(props, dict) or node.get("additionalProperties"):
            return returns
        lists = [k for k, v in props.items() if self._lists_records(v, node)]
        if len(lists) != 1 or not all(envelope_field(k) for k in props if k != lists[0]):
            return returns
        out = dict(self._resolved(props[lists[0]]))
        about = node.get("description")
        if isinstance(about, str) and about and not out.get("description"):
            out["description"] = about
        return out

    def _resolved(self, node: Any) -> Any:
        """``node`` with the references to shared definitions it is followed."""
        for _ in range(8):
            ref = node.get("$ref") if isinstance(node, dict) else None
            if not isinstance(ref, str) or not ref.startswith("#/$defs/"):
                return node
            node = self.defs.get(ref.removeprefix("#/$defs/"))
        return node

    def _lists_records(self, node: Any, parent: dict[str, Any]) -> bool:
        """Whether a converted schema is a list of objects with fields, other than ``parent``
        (a tree node's list of its children is no envelope)."""
        node = self._resolved(node)
        if not isinstance(node, dict) or node.get("type") != "array":
            return False
        items = self._resolved(node.get("items"))
        return isinstance(items, dict) and bool(items.get("properties")) and items != parent

    def with_defs(self, spec: dict[str, Any]) -> dict[str, Any]:
        """``spec`` with the shared definitions its tools reach, as ``"$defs"``: those loading
        it reads, the others left out (their references load as plain objects either way)."""
        # only what loading the spec reads: it inlines references to a bounded depth and size
        # (``compoenv.schema.inline_refs``), so definitions past them are never read; an API
        # whose components all reach each other (Microsoft Graph) would give every service all
        reads = Reads(self.defs)
        for tool in spec["tools"]:
            for key in ("parameters", "returns"):
                reads.read.update(n for n in ref_names(tool[key]) if n in self.defs)
                inline_refs(tool[key], reads)
        found = {name: self.defs[name] for name in sorted(reads.read)}
        return {**spec, "$defs": found} if found else spec

    def _shared(self, ref: str, where: str, name: str, hint: str, mode: str,
                stack: tuple[str, ...]) -> dict[str, Any] | None:
        """A reference to the converted component (converted on first use), or None when the
        component is no object worth sharing (a scalar takes its tags from the field name)."""
        target, refs = self.deref({"$ref": ref}, where)
        if not (target.get("properties") or target.get("allOf")) or target.get(
                "readOnly" if mode == "in" else "writeOnly") is True:
            return None
        own = object_hint([r.rsplit("/", 1)[-1] for r in refs], target.get("properties") or {})
        inner = own or object_hint([name]) or hint
        key = (ref, mode, inner)
        if key not in self._names:
            base = re.sub(r"[^A-Za-z0-9_.-]", "_", unquote(ref.rsplit("/", 1)[-1]))[:80] or "def"
            label = base + ("" if mode == "out" else "_in") + (
                "" if inner == own or not inner else "_" + inner.replace(":", "_"))
            while label in self.defs:
                label += "_"
            self._names[key], self.defs[label] = label, {"type": "object"}  # recursion lands here
            # a chain of components each first used inside the last would nest Python calls as
            # deep as the chain: past a bound the component waits for the outermost call
            self._pending.append((label, ref, where, inner, mode))
            if self._calls <= _DEFER_AT:
                self._drain(len(self._pending) - 1)
        return {"$ref": f"#/$defs/{self._names[key]}"}

    def _drain(self, start: int = 0) -> None:
        """Convert the shared components waiting from ``start`` on, each from depth 0 (the same
        definition wherever it was first used)."""
        depth, self._calls = self._depth, self._calls + 1  # no drain within a drain
        try:
            while len(self._pending) > start:
                label, ref, where, inner, mode = self._pending.pop(start)
                self._depth = 0
                converted = self._convert({"$ref": ref}, where, "", inner, mode, ())
                converted = converted if converted is not None else {"type": "object"}
                # a component that converts alike for inputs and outputs is written once
                same = self._labels.setdefault(json.dumps(converted, sort_keys=True), label)
                self.defs[label] = converted if same == label else {"$ref": f"#/$defs/{same}"}
        finally:
            self._depth, self._calls = depth, self._calls - 1

    def _object(self, node: dict[str, Any], out: dict[str, Any], refs: list[str], where: str,
                sub: tuple[str, str, str, tuple[str, ...]]) -> None:
        name, hint, mode, stack = sub
        props, extra = _props(node), node.get("additionalProperties")
        inner = object_hint([r.rsplit("/", 1)[-1] for r in refs] + [name], props) or hint
        out["properties"] = {k: s for k, v in props.items() if (s := self.schema(
            v, f"{where}.properties.{k}", k, inner, mode, stack)) is not None}
        required = [k for k in dict.fromkeys(_list(node.get("required"))) if isinstance(
            k, str) and k in out["properties"]]
        extra = self.schema(extra, f"{where}.additionalProperties", *sub) if isinstance(
            extra, dict) and extra else extra
        out.update({"required": required} if required else {})
        out.update({"additionalProperties": extra} if extra is False or extra else {})
        record = next((self.records[r] for r in refs if r in self.records), None)
        owner = self.resources.owner([name]) if name else None  # "campaigns": [{"id": ...}]
        record = record or ((owner, "id") if owner else None)
        if record and isinstance(out["properties"].get(record[1]), dict):
            _mark(out["properties"][record[1]], record[0])

    def _alternatives(self, node: dict[str, Any], key: str, where: str,
                      sub: tuple[str, str, str, tuple[str, ...]]) -> dict[str, Any] | None:
        """``anyOf`` / ``oneOf``: scalars stay alternatives, objects take the first (outputs) or
        are left out (inputs); an empty list is dropped."""
        # each branch as written (its $ref kept) and followed: the written one is converted, so
        # a branch that leads back to the node is seen as recursive (cut or shared)
        pairs = [(b, *self.deref(b, where)) for b in _list(node[key])]
        pairs = [p for p in pairs if isinstance(p[1], dict) and p[1].get("type") != "null"]
        real = [p[1] for p in pairs]
        objects = len(real) > 1 and any("properties" in b or b.get("type") == "object"
                                        for b in real)
        if len(real) > 1 and not objects:  # alternative scalars stay alternatives
            options = [s for b, _, _ in pairs if (s := self.schema(b, where, *sub))]
            return {"anyOf": options} if len(options) > 1 else options[0] if options else {}
        if objects and sub[2] == "in":
            return self._skip(f"{where}: {key} of objects is not supported; skipped")
        if objects:
            self.warnings.append(f"{where}: {key} of objects: the first alternative is used")
        rest = {k: v for k, v in node.items() if k not in ("anyOf", "oneOf")}
        name, hint, mode, stack = sub
        if pairs and isinstance(pairs[0][0].get("$ref"), str) and _annotated(rest):
            # a reference or null (``anyOf: [{$ref}, {nullable}]``) stays a reference: shared
            # components stay shared, not copied into every place that may leave them out
            return self.schema({**rest, **pairs[0][0]}, where, name, hint, mode, stack)
        stack = (*stack, *pairs[0][2]) if pairs else stack  # the branch's refs, as followed
        return self.schema({**rest, **(real[0] if real else {})}, where, name, hint, mode, stack)

    def new_budget(self) -> None:
        """Count converted nodes afresh: a new service begins."""
        self._nodes = 0

    def bounded(self, convert: Callable[[], T]) -> T | None:
        """``convert()`` (one operation's conversion), or None when it passes what is left of
        the node budget; then what it converted and warned about is undone, so shared
        definitions stay whole and the next operation starts clean."""
        defs, names, count = set(self.defs), set(self._names), len(self.warnings)
        try:
            return convert()
        except TooLarge:
            for label in set(self.defs) - defs:
                del self.defs[label]
            for key in set(self._names) - names:
                del self._names[key]
            self._labels = {k: v for k, v in self._labels.items() if v in self.defs}
            self._pending.clear()
            self._depth = self._calls = 0
            del self.warnings[count:]
            return None

    def _count(self, where: str) -> None:
        self._nodes += 1
        if self._nodes > self.max_nodes:
            raise TooLarge(f"{self.origin}: {where}: too large: the converted schemas pass "
                           f"{self.max_nodes:,} nodes")

    def _skip(self, warning: str, result: Any = None) -> Any:
        self.warnings.append(warning)
        return result


def _mark(field: dict[str, Any], resource: str) -> None:
    """A record's key field: the resource's id, no other tag."""
    if field.get("type") in ("string", "integer"):
        for tag in ("x-interface", "x-role"):
            field.pop(tag, None)
        field["x-key"] = resource


def media(content: Any) -> tuple[str | None, Any]:
    """The JSON (or form) media type of a content map, and its schema."""
    forms = ("*/*", "application/x-www-form-urlencoded", "multipart/form-data")
    found = next((m for m in content or {} if "json" in m or m in forms), None) if isinstance(
        content, dict) else None
    return found, (content[found] or {}).get("schema") if found and isinstance(
        content[found], dict) else None
