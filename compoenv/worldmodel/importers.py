"""Importers: spec-only services from an OpenAPI 3.0/3.1 document or an MCP ``tools/list`` result.

One tool per operation (parameters + flattened JSON request body -> parameters, 200/201 JSON
response -> returns) or per MCP tool (inputSchema, outputSchema). Local ``$ref``s are resolved,
fields are tagged with shared interfaces by name and format (``email`` -> EmailAddress, ``price``
-> Money, ...) so imported tools join the dependency graph, ``format``/``pattern`` are dropped (the
offline world model cannot satisfy them), every tool gets a phrase naming its required
parameters, and the result passed ``validate_spec``. ``openapi_spec``/``mcp_spec`` also return
warnings: what was skipped (callbacks, file uploads, oneOf of objects, recursion, ...).
"""

from __future__ import annotations

import re
from itertools import accumulate
from typing import Any
from urllib.parse import unquote

from compoenv.roles import infer_role
from compoenv.worldmodel.spec import SpecError, validate_spec

__all__ = ["from_openapi", "openapi_spec", "from_mcp", "mcp_spec", "snake", "infer_interface"]

_KEEP = ("description", "enum", "const", "default", "minLength", "maxLength", "minItems",
         "maxItems", "uniqueItems", "minimum", "maximum", "minProperties", "maxProperties")
_SKIP_HEADERS = {"authorization", "accept", "content_type", "cookie", "user_agent", "api_key"}
_PERSON = set("owner customer person user contact client patient vet employee member author "
              "assignee reporter requester passenger guest attendee agent staff doctor people "
              "recipient sender".split())
_ORG = set("company organization organisation org vendor supplier employer merchant business "
           "team".split())
_RULES = [(interface, kind, set(words.split()), set(formats.split())) for interface, kind, words,
          formats in (  # interface, JSON type, words of the field's name, formats
    ("DateTime", "string", "datetime timestamp", "date-time"), ("City", "string", "city", ""),
    ("Date", "string", "date birthday dob", "date"), ("EmailAddress", "string", "email", "email"),
    ("Url", "string", "url uri website homepage link", "uri url uri-reference"),
    ("PhoneNumber", "string", "phone mobile telephone tel", ""),
    ("Money", "number", "price amount cost total fee subtotal", ""),
    ("Quantity", "integer", "quantity qty count", ""), ("CurrencyCode", "string", "currency", ""),
    ("OrganizationName", "string", "company organization organisation employer", ""),
    ("CountryCode", "string", "country", ""), ("PostalCode", "string", "zip postcode postal", ""))]


def snake(text: str, limit: int = 48, prefix: str = "x") -> str:
    """``getPetById`` -> ``get_pet_by_id``: lowercase words joined by ``_`` (whole words, at most
    ``limit`` characters), starting with a letter (else ``prefix`` goes first)."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", text))
    words = [w for w in re.split(r"[^a-z0-9]+", text.lower()) if w]
    words = [prefix, *words] if not words or not words[0][0].isalpha() else words
    ends = accumulate(len(w) + 1 for w in words)  # the name's length up to each word, plus 1
    return "_".join(w for w, end in zip(words, ends) if end <= limit + 1) or words[0][:limit]


def _has(name: str | list[str], vocab: set[str]) -> bool:
    """Whether a word of ``name`` (or of a list of words) is in ``vocab``, plural or not."""
    words = snake(name, 200).split("_") if isinstance(name, str) else name
    return any(w in vocab or (w.endswith("s") and w[:-1] in vocab) for w in words)


def _hint(names: list[str], keys: Any = ()) -> str:
    """Whether an object is a "person", an "org" or neither (""), by its schema or property
    name, or by its own keys (first + last name, email, phone)."""
    own, names = {snake(k, 200) for k in keys}, [n for n in names if n]
    person = {"first_name", "last_name"} <= own or own & {"email", "email_address", "phone"}
    return "org" if any(_has(n, _ORG) for n in names) else "person" if person or any(
        _has(n, _PERSON) for n in names) else ""


def infer_interface(name: str, kind: Any, fmt: Any = None, hint: str = "") -> str | None:
    """The ``x-interface`` a field called ``name`` of JSON type ``kind`` most likely carries;
    ``hint`` tells whether the field's object is a "person" or an "org" (for a bare ``name``)."""
    not_dates = ("update", "candidate", "validate", "mandate", "liquidate")
    words = [("date" if w.endswith("date") and not w.endswith(not_dates) else
              "email" if "email" in w else w) for w in snake(name or "id", 200).split("_")]
    if words[-1] in ("id", "ids", "uuid"):
        return None
    for interface, json_type, vocab, formats in _RULES:
        if kind == json_type and (fmt in formats or _has(words, vocab)):
            return interface
    if kind != "string" or (words[-1] != "name" and len(words) > 1):
        return None
    head, alone = words[:-1], words == ["name"]
    if _has(head, _ORG) or (alone and hint == "org"):
        return "OrganizationName"
    people = _PERSON | {"full", "display"} if head else _PERSON - {"user", "agent"}
    return "PersonName" if _has(head or words, people) or (alone and hint == "person") else None


class _Converter:
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
            inner = _hint([r.rsplit("/", 1)[-1] for r in refs] + [name], props) or hint
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


def _text(*candidates: Any, fallback: str, low: int = 5, limit: int = 400) -> str:
    """The first candidate with at least ``low`` characters, whitespace collapsed, shortened."""
    text = next((t for c in candidates if len(t := " ".join(str(c or "").split())) >= low),
                fallback)
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _unique(name: str, taken: set[str], limit: int = 48) -> str:
    out, n = name, 2
    while out in taken:
        out, n = f"{name[: limit - len(str(n)) - 1].rstrip('_')}_{n}", n + 1
    taken.add(out)
    return out


def _tool(name: str, description: str, read_only: bool, entries: list[tuple[str, Any, bool, str]],
          returns: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    """One spec tool from (parameter, schema, required, location) entries; a name that clashes
    with an earlier parameter gets its location as prefix (``body_id``)."""
    props: dict[str, Any] = {}
    for raw, schema, _, place in entries:
        key = snake(raw, prefix="p")
        props[_unique(snake(f"{place} {raw}") if key in props else key, set(props))] = schema
    required = [key for key, entry in zip(props, entries) if entry[2]]
    labels = [f"{p.replace('_', ' ')} {{{p}}}" for p in required]
    if required and props[required[0]].get("x-interface"):
        labels[0] = f"{{{required[0]}}}"  # a tagged value names itself: "find owner for {email}"
    verb = (name.split("_by_")[0] if required else name).replace("_", " ")
    phrase = verb if not labels else f"{verb} for {labels[0]}" + ("" if len(labels) == 1 else (
        f" with {', '.join(labels[1:-1])}{' and ' if len(labels) > 2 else ''}{labels[-1]}"))
    if len(phrase) > 200:
        warnings.append(f"{name}: too many required parameters to phrase; no phrase written")
    return {"name": name, "description": description, "read_only": read_only,
            "parameters": {"type": "object", "properties": props, "additionalProperties": False,
                           **({"required": required} if required else {})},
            "returns": returns, **({"phrase": phrase} if len(phrase) <= 200 else {})}


def _media(content: Any) -> tuple[str | None, Any]:
    """The JSON (or form) media type of a content map, and its schema."""
    forms = ("*/*", "application/x-www-form-urlencoded", "multipart/form-data")
    media = next((m for m in content or {} if "json" in m or m in forms), None)
    return media, (content[media] or {}).get("schema") if media else None


def _operation(conv: _Converter, path: str, method: str, op: dict[str, Any],
               item: dict[str, Any], name: str) -> dict[str, Any]:
    """The tool for one operation: parameters, flattened request body, 2xx JSON response."""
    where, warn = f"$.paths[{path!r}].{method}", conv.warnings.append
    hint = _hint([name.split("_by_")[0].rsplit("_", 1)[-1]])  # create_owner: a person's name
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
        elif (place != "header" or snake(pname) not in _SKIP_HEADERS) and (schema := conv.schema(
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
    return _tool(name, _text(op.get("summary"), op.get("description"), fallback=f"{method} {path}"),
                 method in ("get", "head"), entries, returns or {"type": "object"}, conv.warnings)


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
    conv, operations, tools, taken = _Converter(doc, origin, []), [], [], set[str]()
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
        tools.append(_operation(conv, path, method, op, item, _unique(base, taken)))
    info = doc.get("info") or {}
    title = str(info.get("title") or "imported api")
    about = f"{title} (imported from OpenAPI)"
    spec = {"name": snake(name or title, 40, prefix="api"), "domain": domain,
            "description": _text(info.get("description"), about, fallback=about, low=10),
            "version": str(info.get("version") or "1"), "source": "openapi", "tools": tools}
    return validate_spec(spec, origin), conv.warnings


def from_openapi(document: dict[str, Any], name: str | None = None, domain: str = "imported",
                 max_tools: int = 60, origin: str = "<openapi>") -> dict[str, Any]:
    """A validated spec with one tool per operation of an OpenAPI 3.0/3.1 ``document``."""
    return openapi_spec(document, name, domain, max_tools, origin)[0]


def mcp_spec(tools_list: Any, name: str, domain: str = "imported",
             origin: str = "<mcp>") -> tuple[dict[str, Any], list[str]]:
    """The spec for an MCP ``tools/list`` result (or the bare list), and the warnings."""
    data = tools_list.get("result", tools_list) if isinstance(tools_list, dict) else tools_list
    items = data.get("tools") if isinstance(data, dict) else data
    if not isinstance(items, list) or not items:
        raise SpecError(f'{origin}: not an MCP tools/list result: expected {{"tools": [...]}} '
                        f"or a non-empty list of tools")
    warnings: list[str] = []
    tools, taken, reads = [], set[str](), ("get_", "list_", "search_", "read_", "find_")
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise SpecError(f"{origin}: $.tools[{i}]: a tool needs a string 'name'")
        where, notes = f"$.tools[{i}] ({item['name']})", item.get("annotations") or {}
        tool_name = _unique(snake(item["name"], prefix="tool"), taken)
        hint = _hint([tool_name.split("_by_")[0].rsplit("_", 1)[-1]])
        raw, raw_out = item.get("inputSchema") or {"type": "object"}, item.get("outputSchema")
        params = _Converter(raw, origin, warnings).schema(raw, f"{where}.inputSchema", "", hint,
                                                          "in")
        if params is None or params.get("type") != "object":
            raise SpecError(f"{origin}: {where}.inputSchema: must be an object schema")
        returns = raw_out and _Converter(raw_out, origin, warnings).schema(
            raw_out, f"{where}.outputSchema", "", hint)
        flag = notes.get("readOnlyHint")
        read_only = flag if isinstance(flag, bool) else tool_name.startswith(reads)
        entries = [(k, v, k in params.get("required", ()), "arg")
                   for k, v in params["properties"].items()]
        description = _text(item.get("description"), item.get("title"), notes.get("title"),
                            fallback=f"MCP tool {item['name']}")
        tools.append(_tool(tool_name, description, read_only, entries, returns or {
            "type": "object", "properties": {"result": {"type": "string"}},
            "required": ["result"]}, warnings))
    if len(tools) > 60:
        warnings.append(f"{len(tools)} tools; only the first 60 imported")
    service = snake(name, 40, prefix="mcp")
    about = f"{service} (imported from MCP): {', '.join(t['name'] for t in tools)}"
    spec = {"name": service, "domain": domain, "description": _text(about, fallback=about, low=10),
            "source": "mcp", "tools": tools[:60]}
    return validate_spec(spec, origin), warnings


def from_mcp(tools_list: dict[str, Any] | list[Any], name: str, domain: str = "imported",
             origin: str = "<mcp>") -> dict[str, Any]:
    """A validated spec with one tool per tool of an MCP ``tools/list`` result."""
    return mcp_spec(tools_list, name, domain, origin)[0]
