"""Swagger 2.0 documents as OpenAPI 3 documents, so one importer reads both."""

from __future__ import annotations

from typing import Any

__all__ = ["swagger_to_openapi"]

_JSON = "application/json"
_FORM = "application/x-www-form-urlencoded"
_PLACES = {"definitions": "schemas", "parameters": "parameters", "responses": "responses"}
_SCHEMA_KEYS = ("type", "format", "items", "enum", "default", "minimum", "maximum",
                "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern",
                "minItems", "maxItems", "uniqueItems")


def _refs(node: Any) -> Any:
    """``node`` with ``#/definitions/X`` (and parameter, response) refs moved to components."""
    if isinstance(node, list):
        return [_refs(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _refs(v) for k, v in node.items()}
    ref = out.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        head, _, rest = ref[2:].partition("/")
        if head in _PLACES:
            out["$ref"] = f"#/components/{_PLACES[head]}/{rest}"
    return out


def _schema_of(param: dict[str, Any]) -> dict[str, Any]:
    """The JSON schema of a non-body Swagger parameter (its type keys moved under ``schema``)."""
    schema = {k: param[k] for k in _SCHEMA_KEYS if k in param}
    if schema.get("type") == "file":
        schema = {"type": "string", "format": "binary"}
    return schema or {"type": "string"}


def _parameter(param: dict[str, Any]) -> dict[str, Any]:
    """A path, query or header parameter in OpenAPI 3 form."""
    if "$ref" in param or "schema" in param:
        return param
    keep = {k: v for k, v in param.items() if k in ("name", "in", "description", "required")}
    return {**keep, "schema": _schema_of(param)}


def _operation(op: dict[str, Any], consumes: list[str], produces: list[str],
               shared: dict[str, Any]) -> dict[str, Any]:
    """One operation: body and formData parameters become a requestBody, response schemas
    go under ``content`` of the media types the operation produces."""
    consumes, produces = op.get("consumes") or consumes, op.get("produces") or produces
    params, body, form, form_required = [], None, {}, []
    for param in op.get("parameters") or ():
        real = shared.get(param.get("$ref", "").rsplit("/", 1)[-1], param) \
            if isinstance(param, dict) and "$ref" in param else param
        place = real.get("in") if isinstance(real, dict) else None
        if place == "body":
            body = {"required": bool(real.get("required")), "content": {
                m: {"schema": real.get("schema") or {}} for m in consumes or [_JSON]}}
            body.update({"description": real["description"]} if real.get("description") else {})
        elif place == "formData":
            form[real.get("name", "field")] = {**_schema_of(real), **(
                {"description": real["description"]} if real.get("description") else {})}
            form_required += [real.get("name")] if real.get("required") else []
        else:
            params.append(_parameter(param) if isinstance(param, dict) else param)
    out = {k: v for k, v in op.items() if k not in ("parameters", "consumes", "produces",
                                                     "responses", "schemes")}
    out.update({"parameters": params} if params else {})
    if form:
        media = next((m for m in consumes if "form" in m), _FORM)
        schema = {"type": "object", "properties": form,
                  **({"required": form_required} if form_required else {})}
        body = {"content": {media: {"schema": schema}}, "required": bool(form_required)}
    out.update({"requestBody": body} if body else {})
    responses = {}
    for code, response in (op.get("responses") or {}).items():
        if isinstance(response, dict) and "schema" in response:
            rest = {k: v for k, v in response.items() if k not in ("schema", "examples")}
            response = {**rest, "content": {m: {"schema": response["schema"]}
                                            for m in produces or [_JSON]}}
        responses[str(code)] = response
    return {**out, "responses": responses}


def swagger_to_openapi(document: dict[str, Any]) -> dict[str, Any]:
    """An OpenAPI 3.0 document equivalent to a Swagger 2.0 ``document``, as far as importing
    needs: servers from host/basePath, components from definitions, parameters and responses,
    requestBody from body and formData parameters, response content from produces.

    Args:
        document: A parsed Swagger 2.0 document (``"swagger": "2.0"``).

    Returns:
        A new OpenAPI 3.0.3 document; the input is not changed.
    """
    doc = _refs(document)
    consumes, produces = doc.get("consumes") or [], doc.get("produces") or []
    shared = doc.get("parameters") or {}
    paths: dict[str, Any] = {}
    for path, item in (doc.get("paths") or {}).items():
        if not isinstance(item, dict):
            continue
        paths[path] = {m: (_operation(op, consumes, produces, shared) if isinstance(op, dict)
                           and m not in ("parameters", "$ref") else op)
                       for m, op in item.items()}
        if isinstance(item.get("parameters"), list):
            paths[path]["parameters"] = [_parameter(p) for p in item["parameters"]
                                         if isinstance(p, dict) and p.get("in") not in
                                         ("body", "formData")]
    host = doc.get("host")
    scheme = (doc.get("schemes") or ["https"])[0]
    servers = [{"url": f"{scheme}://{host}{doc.get('basePath', '')}"}] if host else []
    components = {"schemas": doc.get("definitions") or {},
                  "parameters": {k: _parameter(v) for k, v in shared.items()
                                 if isinstance(v, dict) and v.get("in") not in ("body",
                                                                                "formData")},
                  "responses": {k: _operation({"responses": {"r": v}}, consumes, produces,
                                              shared)["responses"]["r"]
                                for k, v in (doc.get("responses") or {}).items()}}
    rest = {k: v for k, v in doc.items() if k in ("info", "tags", "externalDocs")}
    return {"openapi": "3.0.3", **rest, **({"servers": servers} if servers else {}),
            "paths": paths, "components": components}
