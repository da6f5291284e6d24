"""Schemas of imported documents (OpenAPI, Swagger, MCP) as plain JSON Schema with ``x-interface``
and ``x-role`` tags: references followed, ``allOf`` merged, alternatives simplified, and what
cannot be offered to an agent (file uploads, ``oneOf`` of objects in inputs) left out."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from compoenv.importers.infer import infer_interface, object_hint
from compoenv.roles import infer_role
from compoenv.worldmodel.spec import SpecError

__all__ = ["Converter"]

_KEEP = ("description", "enum", "const", "default", "minLength", "maxLength", "minItems",
         "maxItems", "uniqueItems", "minimum", "maximum", "minProperties", "maxProperties")


class Converter:
    """Turns OpenAPI / MCP schemas into plain JSON Schema, resolving refs within ``root``."""

    def __init__(self, root: Any, origin: str, warnings: list[str]) -> None:
        self.root, self.origin, self.warnings = root, origin, warnings

    def deref(self, node: Any, where: str) -> tuple[Any, list[str]]:
        """``node`` with ``$ref`` chains followed (a ref's siblings override it), and the refs."""
        refs: list[str] = []
        while isinstance(node, dict) and "$ref" in node:
            ref, target = node["$ref"], self.root
            why = " (circular)" if ref in refs else "" if str(ref).startswith("#/") else \
                " (only references within the document are supported)"
            for part in str(ref).split("/")[1:] if not why else ():
                part = unquote(part).replace("~1", "/").replace("~0", "~")
                target = target.get(part) if isinstance(target, dict) else None
            if why or not isinstance(target, dict):
                raise SpecError(f"{self.origin}: {where}: cannot resolve $ref {ref!r}{why}")
            refs.append(ref)
            node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return node, refs

    def schema(self, node: Any, where: str, name: str = "", hint: str = "", mode: str = "out",
               stack: tuple[str, ...] = ()) -> dict[str, Any] | None:
        """The converted schema, or None to leave the node out (``mode``: "in" or "out")."""
        node, refs = self.deref(node, where)
        if not isinstance(node, dict):
            return {}
        if set(refs) & set(stack):
            return self._skip(f"{where}: recursive schema {refs[-1]} cut to a plain object",
                              {"type": "object"})
        stack, parts = (*stack, *refs), list(node.get("allOf") or ())
        while parts:  # allOf: every part (and the parts' parts) merged into one object
            part, more = self.deref(parts.pop(0), f"{where}.allOf")
            refs, parts = refs + more, [*part.get("allOf", ()), *parts]
            node = {**{k: v for k, v in part.items() if k != "allOf"}, **node,
                    "properties": {**node.get("properties", {}), **part.get("properties", {})},
                    "required": [*node.get("required", ()), *part.get("required", ())]}
        if node.get("readOnly" if mode == "in" else "writeOnly") is True:
            return None
        sub, key = (name, hint, mode, stack), "oneOf" if "oneOf" in node else "anyOf"
        if key in node:
            real = [b for b in (self.deref(b, where)[0] for b in node[key])
                    if isinstance(b, dict) and b.get("type") != "null"]
            objects = len(real) > 1 and any("properties" in b or b.get("type") == "object"
                                            for b in real)
            if len(real) > 1 and not objects:  # alternative scalars stay alternatives
                return {"anyOf": [s for b in real if (s := self.schema(b, where, *sub))]}
            if objects and mode == "in":
                return self._skip(f"{where}: {key} of objects is not supported; skipped")
            if objects:
                self.warnings.append(f"{where}: {key} of objects: the first alternative is used")
            rest = {k: v for k, v in node.items() if k != key}
            return self.schema({**rest, **(real[0] if real else {})}, where, *sub)
        kind = node.get("type")
        kind = next((k for k in kind if k != "null"), None) if isinstance(kind, list) else kind
        kind = kind or ("object" if "properties" in node else "array" if "items" in node else None)
        if kind == "string" and node.get("format") in ("binary", "byte") and mode == "in":
            return self._skip(f"{where}: file upload {name!r} is not supported; skipped")
        out: dict[str, Any] = {"type": kind} if kind else {}
        out.update({k: node[k] for k in _KEEP if k in node})
        if isinstance(out.get("enum"), list):  # OpenAPI 3.0 lists null among nullable enums
            out["enum"] = [v for v in out["enum"] if v is not None]
        for bound, step in (("minimum", 1), ("maximum", -1)):  # exclusive bounds -> inclusive
            exclusive = node.get("exclusive" + bound.title())  # a 3.0 flag or a 3.1 number
            value = node.get(bound) if exclusive is True else exclusive
            if type(value) in (int, float):
                out[bound] = value + step if kind == "integer" else value
        if kind == "object":
            props, extra = node.get("properties") or {}, node.get("additionalProperties")
            inner = object_hint([r.rsplit("/", 1)[-1] for r in refs] + [name], props) or hint
            out["properties"] = {k: s for k, v in props.items() if (s := self.schema(
                v, f"{where}.properties.{k}", k, inner, mode, stack)) is not None}
            required = [k for k in dict.fromkeys(node.get("required", ())) if k in
                        out["properties"]]
            extra = self.schema(extra, f"{where}.additionalProperties", *sub) if isinstance(
                extra, dict) and extra else extra
            out.update({"required": required} if required else {})
            out.update({"additionalProperties": extra} if extra is False or extra else {})
        elif kind == "array":
            out["items"] = self.schema(node.get("items", {}), f"{where}.items", *sub)
            return out if out["items"] is not None else None
        elif "enum" not in out and "const" not in out:
            interface = infer_interface(name, kind, node.get("format"), hint)
            out.update({"x-interface": interface} if interface else {})
            role = infer_role(interface, name, None) if interface else None
            out.update({"x-role": role} if role else {})  # a guess from the name's words
        return out

    def _skip(self, warning: str, result: Any = None) -> Any:
        self.warnings.append(warning)
        return result

