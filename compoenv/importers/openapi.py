"""OpenAPI 3.0/3.1 documents as spec-only services: one tool per operation (parameters and the
flattened JSON request body -> parameters, the 2xx JSON response -> returns)."""

from __future__ import annotations

import re
from functools import partial
from typing import Any

from compoenv.importers.convert import MAX_NODES, Converter, media
from compoenv.importers.infer import is_noise, object_hint
from compoenv.importers.resources import param_key, resource_of
from compoenv.importers.naming import short_text, snake, unique
from compoenv.importers.split import (TOOL_MAX, ApiName, NothingToImport, Operation, fit,
                                      group_operations)
from compoenv.importers.tools import spec_tool
from compoenv.worldmodel.spec import SPEC_SCHEMA, SpecError, validate_spec

__all__ = ["openapi_spec", "openapi_services", "from_openapi"]

_Op = tuple[str, str, dict[str, Any], dict[str, Any]]  # path, method, operation, path item


def _operation(conv: Converter, path: str, method: str, op: dict[str, Any],
               item: dict[str, Any], name: str) -> dict[str, Any]:
    """The tool for one operation: parameters (transport noise left out, path ids keyed),
    flattened request body, 2xx JSON response (its record's id keyed)."""
    where, warn = f"$.paths[{path!r}].{method}", conv.warnings.append
    hint = object_hint([name.split("_by_")[0].rsplit("_", 1)[-1]])  # create_owner: a person's name
    if op.get("callbacks"):
        warn(f"{where}: callbacks are not supported; skipped")
    entries, declared, op_id = [], {}, str(op.get("operationId") or "")
    for i, param in enumerate([*_list(item.get("parameters")), *_list(op.get("parameters"))]):
        param, _ = conv.deref(param, f"{where}.parameters[{i}]")
        if isinstance(param, dict) and isinstance(param.get("name"), str):
            declared[(param["name"], param.get("in"))] = (i, param)  # the operation's win
    for (pname, place), (i, param) in declared.items():
        raw = param.get("schema") or media(param.get("content"))[1] or {"type": "string"}
        about = str(param.get("description") or "")
        if place not in ("path", "query", "header"):
            warn(f"{where}: {place} parameter {pname!r} skipped")
        elif place != "path" and is_noise(pname, str(place), about):
            continue  # transport (auth, signing, paging): nothing a user states
        elif (schema := conv.schema(raw, f"{where}.parameters[{i}].schema", pname, hint,
                                    "in")) is not None:
            schema.update({"description": about} if "description" not in schema and about
                          else {})
            key = param_key(path, pname, str(place), op_id, conv.resources.collections)
            if key and schema.get("type") in ("string", "integer", None):
                schema = {k: v for k, v in schema.items() if k not in ("x-interface", "x-role")}
                schema["x-key"] = key
            entries.append((pname, schema, place == "path" or bool(param.get("required")), place))
    body, _ = conv.deref(op.get("requestBody") or {}, f"{where}.requestBody")
    kind, raw = media(body.get("content"))
    if body.get("content") and kind is None:
        warn(f"{where}.requestBody: {', '.join(body['content'])} is not supported; skipped")
    schema = conv.schema(raw or {}, f"{where}.requestBody.content[{kind!r}].schema", "body",
                         hint, "in", inline=True) if kind else None
    if schema and schema.get("type") == "object" and (schema["properties"] or
                                                      not schema.get("additionalProperties")):
        entries += [(k, v, bool(body.get("required")) and k in schema.get("required", ()), "body")
                    for k, v in schema["properties"].items()]
    elif schema:
        entries.append(("body", schema, bool(body.get("required")), "body"))
    code, kind, raw = conv.success(op, where)
    returns = raw and conv.schema(raw, f"{where}.responses.{code}.content[{kind!r}].schema",
                                  "", hint, inline=True)
    returns = returns and conv.unenvelope(returns)
    if returns and (resource := resource_of(path, op_id)):
        conv.key_record(returns, resource)
        if re.fullmatch(r"[a-z]+(_[a-z]+)*", resource) and not _NOT_NOUNS & set(
                resource.split("_")):  # what its result is called: "the attestor's name"
            returns = {**returns, "x-noun": resource.replace("_", " ")}
    description = short_text(op.get("summary"), op.get("description"),
                             fallback=f"{method} {path}")
    return spec_tool(name, description, _reads(method, path, name), entries,
                     returns or {"type": "object"}, conv.warnings)


# RPC-style APIs read with POST (AWS's JSON protocol, "/#X-Amz-Target=Svc.ListSkills", a
# Google "/v1/{parent}:search", a "/jobs/list"): there an operation named for reading reads
# an RPC-style path names its action: AWS's JSON target or REST-JSON operation path
# (``/ListRooms``), a Google custom method, a ``/jobs/list``
_RPC_PATH = re.compile(r"X-Amz-Target=|:[A-Za-z]\w*$|/(list|search|query|describe|lookup)$"
                       r"|/[A-Z][a-z]+[A-Z]\w*$")
_READ_NAME = re.compile(r"^(list|describe|get|search|query|lookup|batch_get|fetch|retrieve|scan)"
                        r"(_|$)")


def _reads(method: str, path: str, name: str) -> bool:
    """Whether an operation only reads: a GET or HEAD, or an RPC-style POST named for reading
    (``ListBuilds``, ``DescribeDirectories``, ``BatchGetProjects``, ``POST /ListRooms``)."""
    if method in ("get", "head"):
        return True
    verb = re.search(r":([A-Za-z]\w*)$", path)  # Google's custom method names the action
    return method == "post" and bool(_RPC_PATH.search(path)) and bool(
        _READ_NAME.match(snake(verb.group(1)) if verb else name))


# words a resource read off a path or an operation may be that name no thing
_NOT_NOUNS = frozenset({"other", "default", "all", "info", "details", "data", "result",
                        "response", "list", "item", "items", "action", "operation"})


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _operations(doc: Any, origin: str, max_nodes: int = MAX_NODES,
                ) -> tuple[Converter, list[_Op]]:
    """The converter for ``doc`` and its operations in document order."""
    if not str((doc if isinstance(doc, dict) else {}).get("openapi", "")).startswith("3."):
        seen = (f"Swagger {doc['swagger']}" if "swagger" in doc else f"openapi={doc['openapi']!r}"
                if "openapi" in doc else "no 'openapi' field") if isinstance(doc, dict) \
            else "no 'openapi' field"
        raise SpecError(f"{origin}: not an OpenAPI 3 document ({seen}); convert Swagger 2.0 "
                        f"documents to OpenAPI 3 first")
    conv, operations = Converter.openapi(doc, origin, max_nodes), []
    for path, item in (doc.get("paths") or {}).items():
        item, _ = conv.deref(item, f"$.paths[{path!r}]")
        if not isinstance(item, dict):  # an extension (x-...) or a malformed path item
            conv.warnings.append(f"$.paths[{path!r}]: not a path item; skipped")
            continue
        operations += [(path, m, item[m], item) for m in ("get", "put", "post", "delete",
                       "patch", "head", "options", "trace") if isinstance(item.get(m), dict)]
    if not operations:
        raise NothingToImport(f"{origin}: $.paths: no operations to import")
    conv.warnings += ["webhooks are not supported; skipped"] if doc.get("webhooks") else []
    return conv, operations


def _tools(conv: Converter, operations: list[_Op],
           skipped: list[str] | None = None) -> list[list[dict[str, Any]]]:
    """One tool per operation, names unique within the list and at most 32 characters, in
    services each within the converter's node budget: an operation that passes what is left
    of it starts the next service; one that passes a whole budget alone is skipped (a line in
    ``skipped``, else in the warnings, says so), never the document."""
    services: list[list[dict[str, Any]]] = [[]]
    taken = set[str]()
    conv.new_budget()
    for path, method, op, item in operations:
        base = snake(op["operationId"], TOOL_MAX, prefix="op") if op.get("operationId") else \
            snake(method + " " + re.sub(r"{([^}]+)}", r"by \1", path), TOOL_MAX)
        name = unique(base, taken, TOOL_MAX)
        convert = partial(_operation, conv, path, method, op, item, name)
        tool = conv.bounded(convert)
        if tool is None and services[-1]:  # the service is full: the next one takes it
            services.append([])
            conv.new_budget()
            tool = conv.bounded(convert)
        if tool is None:
            (conv.warnings if skipped is None else skipped).append(
                f"$.paths[{path!r}].{method}: too large: its schemas pass {conv.max_nodes:,} "
                f"nodes; operation skipped")
            conv.new_budget()
            taken.discard(name)
        else:
            services[-1].append(tool)
    return [tools for tools in services if tools]


def _service(doc: dict[str, Any], name: str, domain: str, tools: list[dict[str, Any]],
             about: str = "") -> dict[str, Any]:
    info = doc.get("info") or {}
    title = str(info.get("title") or "imported api")
    fallback = f"{title}{': ' + about if about else ''} (imported from OpenAPI)"
    described = f"{title}: {about}" if about else info.get("description")
    shown = display_name(title, str(info.get("x-providerName") or ""))
    return {"name": name, "domain": domain, **({"display": shown} if shown else {}),
            "description": short_text(described, fallback, fallback=fallback, low=10),
            "version": str(info.get("version") or "1"), "source": "openapi", "tools": tools}


# words of an API's title that name no product ("PandaScore REST API", "DataShareManagementClient")
_TITLE_NOISE = frozenset("api apis rest restful openapi swagger client sdk http json management "
                         "admin unofficial unoffical the reference documentation docs spec "
                         "specification interface".split())
# providers whose products people name with the provider's name first
_PROVIDERS = {"azure.com": "Azure", "amazonaws.com": "AWS", "googleapis.com": "Google",
              "microsoft.com": "Microsoft"}


def display_name(title: str, provider: str = "") -> str:
    """How a person names an API in a request: its title without generic words, versions or
    what follows "for" ("PandaScore REST API for All Videogames" -> "PandaScore",
    "DataShareManagementClient" -> "Azure Data Share"); "" when nothing is left."""
    text = re.split(r"\s[|(\[]|\s+-\s+(?=\S+\s+\S)|:\s", title.strip())[0]
    text = re.split(r"\s+(?:API|api|REST API)\s+(?:for|of)\s", text)[0]
    if not re.search(r"\s", title.strip()):  # "DataShareManagementClient": its words
        text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", text)
    every = [w for w in re.split(r"[\s_]+", text) if w and re.search(r"\w", w)
             and not re.fullmatch(r"v?\d+(\.\d+)*", w, re.I)]
    words = [w for w in every if w.casefold() not in _TITLE_NOISE]
    if not words and provider and not provider.casefold() in _PROVIDERS:
        # "API Reference" of zuora.com: the provider's name
        words = [provider.split(".")[0].capitalize()] if len(provider.split(".")) == 2 else []
    words = words or [w for w in every if w.casefold() != "client"]  # "API Management"
    while words and words[-1].casefold() in ("service", "services", "and", "for", "of"):
        words.pop()
    while words and words[0].casefold() in ("for", "of", "and", "to"):
        words.pop(0)
    lead = _PROVIDERS.get(provider.casefold())
    if lead and words and not any(w.casefold() in (lead.casefold(), "amazon", "aws", "firebase")
                                  for w in words):
        words.insert(0, lead)
    out = ""
    for word in words:  # at most 60 characters, cut at a word
        if len(out) + len(word) + 1 > 60:
            break
        out = f"{out} {word}".strip()
    return out if len(out) >= 2 else ""


def openapi_spec(document: Any, name: str | None = None, domain: str = "imported",
                 max_tools: int | None = None, origin: str = "<openapi>",
                 max_nodes: int = MAX_NODES) -> tuple[dict[str, Any], list[str]]:
    """The spec for an OpenAPI 3 ``document`` as one service, and the warnings (what was
    skipped). A document with more operations than one service holds raises SpecError unless
    ``max_tools`` keeps only the first ones (with a warning); so does one whose schemas pass
    ``max_nodes``; ``openapi_services`` splits both."""
    conv, operations = _operations(document, origin, max_nodes)
    most = SPEC_SCHEMA["properties"]["tools"]["maxItems"]
    if max_tools is None and len(operations) > most:
        raise SpecError(f"{origin}: {len(operations)} operations do not fit one service (at "
                        f"most {most} tools); import it into a library folder to split it "
                        f"into services (compoenv import openapi FILE -o LIBDIR)")
    if max_tools is not None and len(operations) > max_tools:
        conv.warnings.append(f"{len(operations)} operations; only the first {max_tools} imported")
    title = str((document.get("info") or {}).get("title") or "imported api")
    parts = _tools(conv, operations[:max_tools])
    if len(parts) != 1:
        raise SpecError(f"{origin}: too large for one service: its schemas pass "
                        f"{conv.max_nodes:,} nodes; import it into a library folder to split "
                        f"it into services (compoenv import openapi FILE -o LIBDIR)")
    spec = conv.with_defs(_service(document, snake(name or title, 40, prefix="api"), domain,
                                   parts[0]))
    return validate_spec(spec, origin), conv.warnings


def openapi_services(document: Any, domain: str = "imported", origin: str = "<openapi>",
                     max_nodes: int = MAX_NODES,
                     ) -> tuple[ApiName, list[tuple[str, dict[str, Any]]], list[str]]:
    """An OpenAPI 3 ``document`` as services of at most ``split.LIMIT`` tools each, grouped by
    tag or path prefix (``compoenv.importers.split``), no operation dropped but one whose
    schemas alone pass ``max_nodes`` (a warning says which). A group whose schemas together
    pass ``max_nodes`` continues in a service of its own (``users``, ``users_2``).

    Returns:
        What the API may be named after, ``[(group, spec)]`` (group ``""`` when the API is one
        service; each spec named ``group`` or ``"api"`` until the importer names it), and the
        warnings.
    """
    conv, operations = _operations(document, origin, max_nodes)
    info, servers = document.get("info") or {}, document.get("servers") or [{}]
    api = ApiName(*(str(info.get(k) or "") for k in ("x-providerName", "x-serviceName",
                                                     "title")),
                  str((servers[0] if isinstance(servers[0], dict) else {}).get("url") or ""),
                  str(info.get("version") or ""))
    tags = {str(t.get("name")): t.get("description") or "" for t in document.get("tags") or ()
            if isinstance(t, dict)}
    groups = group_operations([Operation(path, tuple(str(t) for t in op.get("tags") or ()))
                               for path, _, op, _ in operations])
    services, named, skipped = [], {group for group, _ in groups}, list[str]()
    for group, members in groups:
        chosen = [operations[i] for i in members]
        tag = str(chosen[0][2].get("tags", [""])[0] or "") if group else ""
        about = (f"{group.replace('_', ' ')} - {tags.get(tag) or ''}".strip(" -")) if group else ""
        parts = _tools(conv, chosen, skipped)
        for n, tools in enumerate(parts):
            part = group if n == 0 and (group or len(parts) == 1) else unique(
                fit(group or "part", 20), named, 20)
            spec = conv.with_defs(_service(document, part or "api", domain, tools, about))
            services.append((part, validate_spec(spec, origin)))
    if not services:
        raise SpecError(f"{origin}: too large: every operation's schemas pass "
                        f"{conv.max_nodes:,} nodes")
    return api, services, skipped + conv.warnings  # skipped operations first: a report keeps
    # the first warnings of a document


def from_openapi(document: dict[str, Any], name: str | None = None, domain: str = "imported",
                 max_tools: int | None = None, origin: str = "<openapi>") -> dict[str, Any]:
    """A validated spec with one tool per operation of an OpenAPI 3.0/3.1 ``document``."""
    return openapi_spec(document, name, domain, max_tools, origin)[0]
