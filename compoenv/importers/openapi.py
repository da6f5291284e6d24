"""OpenAPI 3.0/3.1 documents as spec-only services: one tool per operation (parameters and the
flattened JSON request body -> parameters, the 2xx JSON response -> returns)."""

from __future__ import annotations

import re
from typing import Any

from compoenv.importers.convert import Converter
from compoenv.importers.infer import SKIP_HEADERS, object_hint
from compoenv.importers.naming import short_text, snake, unique
from compoenv.importers.tools import spec_tool
from compoenv.worldmodel.spec import SpecError, validate_spec

__all__ = ["openapi_spec", "from_openapi"]


def _media(content: Any) -> tuple[str | None, Any]:
    """The JSON (or form) media type of a content map, and its schema."""
    forms = ("*/*", "application/x-www-form-urlencoded", "multipart/form-data")
    media = next((m for m in content or {} if "json" in m or m in forms), None)
    return media, (content[media] or {}).get("schema") if media else None


def _operation(conv: Converter, path: str, method: str, op: dict[str, Any],
               item: dict[str, Any], name: str) -> dict[str, Any]:
    """The tool for one operation: parameters, flattened request body, 2xx JSON response."""
    where, warn = f"$.paths[{path!r}].{method}", conv.warnings.append
    hint = object_hint([name.split("_by_")[0].rsplit("_", 1)[-1]])  # create_owner: a person's name
    if op.get("callbacks"):
        warn(f"{where}: callbacks are not supported; skipped")
    entries, declared = [], {}
    for i, param in enumerate([*item.get("parameters", []), *op.get("parameters", [])]):
        param, _ = conv.deref(param, f"{where}.parameters[{i}]")
        declared[(param.get("name"), param.get("in"))] = (i, param)  # the operation's win
    for (pname, place), (i, param) in declared.items():
        raw = param.get("schema") or _media(param.get("content"))[1] or {"type": "string"}
        if place not in ("path", "query", "header"):
            warn(f"{where}: {place} parameter {pname!r} skipped")
        elif (place != "header" or snake(pname) not in SKIP_HEADERS) and (schema := conv.schema(
                raw, f"{where}.parameters[{i}].schema", pname, hint, "in")) is not None:
            schema.update({"description": param["description"]} if "description" not in schema
                          and param.get("description") else {})
            entries.append((pname, schema, place == "path" or bool(param.get("required")), place))
    body, _ = conv.deref(op.get("requestBody") or {}, f"{where}.requestBody")
    media, raw = _media(body.get("content"))
    if body.get("content") and media is None:
        warn(f"{where}.requestBody: {', '.join(body['content'])} is not supported; skipped")
    schema = conv.schema(raw or {}, f"{where}.requestBody.content[{media!r}].schema", "body",
                         hint, "in") if media else None
    if schema and schema.get("type") == "object" and (schema["properties"] or
                                                      not schema.get("additionalProperties")):
        entries += [(k, v, bool(body.get("required")) and k in schema.get("required", ()), "body")
                    for k, v in schema["properties"].items()]
    elif schema:
        entries.append(("body", schema, bool(body.get("required")), "body"))
    responses = {str(k): v for k, v in (op.get("responses") or {}).items()}
    code = next((c for c in ("200", "201", *sorted(responses)) if c in responses and
                 c.startswith("2")), None)
    media, raw = _media(conv.deref(responses[code], f"{where}.responses.{code}")[0].get(
        "content") if code else None)
    returns = raw and conv.schema(raw, f"{where}.responses.{code}.content[{media!r}].schema",
                                  "", hint)
    description = short_text(op.get("summary"), op.get("description"),
                             fallback=f"{method} {path}")
    return spec_tool(name, description, method in ("get", "head"), entries,
                     returns or {"type": "object"}, conv.warnings)


def openapi_spec(document: Any, name: str | None = None, domain: str = "imported",
                 max_tools: int = 60, origin: str = "<openapi>",
                 ) -> tuple[dict[str, Any], list[str]]:
    """The spec for an OpenAPI 3 ``document``, and the warnings (what was skipped)."""
    doc = document if isinstance(document, dict) else {}
    if not str(doc.get("openapi", "")).startswith("3."):
        seen = (f"Swagger {doc['swagger']}" if "swagger" in doc else f"openapi={doc['openapi']!r}"
                if "openapi" in doc else "no 'openapi' field")
        raise SpecError(f"{origin}: not an OpenAPI 3 document ({seen}); convert Swagger 2.0 "
                        f"documents to OpenAPI 3 first")
    conv, operations, tools, taken = Converter(doc, origin, []), [], [], set[str]()
    for path, item in (doc.get("paths") or {}).items():
        item, _ = conv.deref(item, f"$.paths[{path!r}]")
        operations += [(path, m, item[m], item) for m in ("get", "put", "post", "delete",
                       "patch", "head", "options", "trace") if isinstance(item.get(m), dict)]
    if not operations:
        raise SpecError(f"{origin}: $.paths: no operations to import")
    conv.warnings += ["webhooks are not supported; skipped"] if doc.get("webhooks") else []
    if len(operations) > max_tools:
        conv.warnings.append(f"{len(operations)} operations; only the first {max_tools} imported")
    for path, method, op, item in operations[:max_tools]:
        base = snake(op["operationId"], prefix="op") if op.get("operationId") else snake(
            method + " " + re.sub(r"{([^}]+)}", r"by \1", path))
        tools.append(_operation(conv, path, method, op, item, unique(base, taken)))
    info = doc.get("info") or {}
    title = str(info.get("title") or "imported api")
    about = f"{title} (imported from OpenAPI)"
    spec = {"name": snake(name or title, 40, prefix="api"), "domain": domain,
            "description": short_text(info.get("description"), about, fallback=about, low=10),
            "version": str(info.get("version") or "1"), "source": "openapi", "tools": tools}
    return validate_spec(spec, origin), conv.warnings


def from_openapi(document: dict[str, Any], name: str | None = None, domain: str = "imported",
                 max_tools: int = 60, origin: str = "<openapi>") -> dict[str, Any]:
    """A validated spec with one tool per operation of an OpenAPI 3.0/3.1 ``document``."""
    return openapi_spec(document, name, domain, max_tools, origin)[0]

