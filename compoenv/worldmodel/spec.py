"""Spec-only services: JSON declarations of tools, validated, turned into Service classes.

A spec file (``envs_library/specs/<name>.json``) declares a service by its tools' schemas only;
its calls are answered by a world model. The format is ``spec.schema.json`` beside this file:

    {"name": "web_search", "domain": "research", "description": "...", "version": "1",
     "tools": [{"name": "search", "description": "...", "read_only": true,
                "phrase": "search the web for {query}",
                "parameters": {"type": "object", "properties": {...}, "required": [...]},
                "returns": {...}}]}

Parameter and return schemas are JSON Schema; a node may carry ``"x-interface"`` with a name
from ``compoenv.interfaces`` (a semantic type such as ``EmailAddress`` or an entity such as
``Contact``). A node that is only ``{"x-interface": "<Entity>"}`` expands to that entity's
schema, so spec tools join the implemented services in the dependency graph. A node marked
``"x-key": "<resource>"`` is a resource id that joins within the spec's ``api`` (its name by
default): the services split from one imported API share their ids.

The tools of a CRUD resource (list / get / create / update / cancel / delete of one kind of
record, ``worldmodel.resources``) run against records kept in the service's state
(``worldmodel.store``); ``"state": "world_model"`` leaves every tool to the world model.

Schemas the tools share live once in the spec's ``"$defs"`` and are referenced as
``{"$ref": "#/$defs/<name>"}``; they are inlined when the spec is loaded, to a bounded depth
(``compoenv.schema.inline_refs``: a recursive schema is cut to a plain object).

Every string a tool accepts is bounded: a parameter string without ``maxLength`` (nor ``enum``
or ``const``) gets ``maxLength: DEFAULT_MAX_LENGTH`` (2,000 characters, room for free text),
so an agent's megabyte is a 400 envelope, not a record kept and echoed.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

import jsonschema
from pydantic import TypeAdapter

from compoenv.interfaces import ENTITY_MODELS, SEMANTIC_TYPES, declare_statable
from compoenv.schema import (
    Slot, compact_schema, inline_refs, interface_slots, key_slots, ref_names, scope_interfaces)
from compoenv.schema_check import compile_check
from compoenv.service import Service, ToolSpec, check_qualified
from compoenv.signature import ToolSignature
from compoenv.untrusted import clip
from compoenv.worldmodel.store import ResourceStore, StatefulResources

__all__ = ["SpecError", "load_spec", "validate_spec", "spec_tools", "spec_signatures",
           "SPEC_SCHEMA", "DEFAULT_MAX_LENGTH", "bounded_strings"]

DEFAULT_MAX_LENGTH = 2_000
# where strings a value may hold are declared ("not" and "if" are left alone: a bound there
# would widen what the schema accepts)
_SUBSCHEMAS = ("items", "additionalProperties", "contains", "then", "else", "propertyNames",
               "unevaluatedItems", "unevaluatedProperties")

SPEC_SCHEMA: dict[str, Any] = json.loads(
    (Path(__file__).with_name("spec.schema.json")).read_text(encoding="utf-8"))
_META = jsonschema.Draft202012Validator(SPEC_SCHEMA)
# a valid spec is recognised in microseconds; jsonschema says what is wrong with another one
_META_CHECK = compile_check(SPEC_SCHEMA)


class SpecError(ValueError):
    """A spec file that is not valid; the message names the file and the JSON path."""


def _where(path: Iterable[Any]) -> str:
    parts = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
    return "$" + parts


@lru_cache(maxsize=None)
def _interface_schema(name: str) -> dict[str, Any]:
    """The JSON schema of a named interface (entity or semantic type)."""
    target = ENTITY_MODELS.get(name) or SEMANTIC_TYPES[name]
    return compact_schema(TypeAdapter(target).json_schema(mode="serialization"))


# keys that annotate a node without constraining it: a node with only these is "bare"
_ANNOTATIONS = frozenset({"x-interface", "description", "x-role", "x-label", "x-enum-labels"})


def _expand(node: Any, origin: str, path: list[Any]) -> Any:
    """Check interface names and expand bare ``{"x-interface": "<Entity>"}`` nodes."""
    if isinstance(node, list):
        return [_expand(item, origin, path + [i]) for i, item in enumerate(node)]
    if not isinstance(node, dict):
        return node
    name = node.get("x-interface")
    if name is not None:
        if name not in ENTITY_MODELS and name not in SEMANTIC_TYPES:
            known = sorted(ENTITY_MODELS) + sorted(SEMANTIC_TYPES)
            from compoenv.service import did_you_mean

            raise SpecError(f"{origin}: {_where(path)}: " + did_you_mean(name, known,
                                                                          "interface"))
        if set(node) <= _ANNOTATIONS:  # a bare tag: the interface's own schema, annotated
            return {**_interface_schema(name), **node}
    return {k: _expand(v, origin, path + [k]) for k, v in node.items()}


def validate_spec(data: Any, origin: str = "<spec>", strict: bool = True) -> dict[str, Any]:
    """The spec with entities expanded, or SpecError naming ``origin`` and the JSON path.

    Args:
        data: The parsed spec.
        origin: Where it came from (a file name), for error messages.
        strict: Also check every tool's schemas against the JSON Schema meta-schema (slow:
            tens of milliseconds a tool; the library's own specs are checked in its tests).
    """
    valid = _META_CHECK is not None and _META_CHECK(data)
    errors = [] if valid else sorted(_META.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise SpecError(f"{origin}: {_where(first.absolute_path)}: {clip(first.message)}{more}")
    names = [t["name"] for t in data["tools"]]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SpecError(f"{origin}: $.tools: duplicate tool names {dupes}")
    for i, tool in enumerate(data["tools"]):
        where = ["tools", i]
        params = tool["parameters"]
        missing = set(params.get("required", ())) - set(params["properties"])
        if missing:
            raise SpecError(f"{origin}: {_where(where + ['parameters', 'required'])}: "
                            f"{sorted(missing)} are required but not in properties")
        for key in ("parameters", "returns") if strict else ():
            try:
                jsonschema.Draft202012Validator.check_schema(tool[key])
            except jsonschema.SchemaError as exc:
                raise SpecError(f"{origin}: {_where(where + [key] + list(exc.absolute_path))}: "
                                f"not a valid JSON schema: {clip(exc.message)}") from None
        for key in ("parameters", "returns"):
            missing = sorted(ref_names(tool[key]) - set(data.get("$defs", {})))
            if missing:
                raise SpecError(f"{origin}: {_where(where + [key])}: references {missing} "
                                f"are not in $defs (write them as \"#/$defs/<name>\")")
        if tool.get("phrase"):
            unknown = {f for f in _fields(tool["phrase"])} - set(params["properties"])
            if unknown:
                raise SpecError(f"{origin}: {_where(where + ['phrase'])}: placeholders "
                                f"{sorted(unknown)} are not parameters")
    return _expand(data, origin, [])


def _fields(phrase: str) -> set[str]:
    import string

    return {f for _, f, _, _ in string.Formatter().parse(phrase) if f}


def load_spec(path: str | Path, strict: bool = True) -> dict[str, Any]:
    """Read and validate one spec file (``strict``: see validate_spec)."""
    from compoenv.untrusted import UntrustedFileError, load_json_file

    path = Path(path)
    try:
        data = load_json_file(path)
    except UntrustedFileError as exc:
        raise SpecError(str(exc)) from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot read: {exc.strerror}") from None
    return validate_spec(data, str(path), strict)


def bounded_strings(node: Any, limit: int = DEFAULT_MAX_LENGTH) -> Any:
    """A copy of a parameter schema in which every string has a ``maxLength`` (``limit`` where
    it gave none; a node without a type bounds the strings it allows too)."""
    if isinstance(node, list):
        return [bounded_strings(item, limit) for item in node]
    if not isinstance(node, dict):
        return node
    out = dict(node)
    for key in ("properties", "patternProperties", "$defs", "dependentSchemas"):
        if isinstance(node.get(key), dict):
            out[key] = {k: bounded_strings(v, limit) for k, v in node[key].items()}
    for key in ("anyOf", "oneOf", "allOf", "prefixItems", *_SUBSCHEMAS):
        if isinstance(node.get(key), (dict, list)):
            out[key] = bounded_strings(node[key], limit)
    kind = node.get("type")
    strings = kind == "string" or (isinstance(kind, list) and "string" in kind) or (
        kind is None and not any(k in node for k in ("properties", "items", "anyOf", "oneOf",
                                                     "allOf", "$ref", "not")))
    if strings and not any(k in node for k in ("maxLength", "enum", "const")):
        out["maxLength"] = limit
    return out


def spec_tools(spec: dict[str, Any]) -> dict[str, ToolSpec]:
    """ToolSpecs of a validated spec: shared ``$defs`` inlined to a bounded depth, simulated,
    validated with jsonschema, every parameter string bounded (``bounded_strings``)."""
    out, defs = {}, spec.get("$defs", {})
    for tool in spec["tools"]:
        parameters = {"additionalProperties": False, **bounded_strings(compact_schema(
            inline_refs(tool["parameters"], defs)))}
        returns = compact_schema(inline_refs(tool["returns"], defs))
        out[tool["name"]] = ToolSpec(
            service=spec["name"], name=tool["name"], description=tool["description"],
            read_only=tool["read_only"], simulated=True, parameters=parameters,
            returns=returns, phrase=tool.get("phrase"),
            validator=jsonschema.Draft202012Validator(parameters),
            **_slots(spec, parameters, returns),
        )
    return out


def spec_signatures(spec: dict[str, Any]) -> list[ToolSignature]:
    """The tools of a validated spec as the graph sees them (what a library index records):
    the slots ``spec_tools`` finds, without validators or bounded copies of the schemas."""
    out, defs = [], spec.get("$defs", {})
    for tool in spec["tools"]:
        # without $defs a valid spec has no $ref to inline: the copy is skipped
        parameters = compact_schema(inline_refs(tool["parameters"], defs) if defs
                                    else tool["parameters"])
        returns = compact_schema(inline_refs(tool["returns"], defs) if defs else tool["returns"])
        slots = _slots(spec, parameters, returns)
        out.append(ToolSignature(
            spec["name"], tool["name"], check_qualified(spec["name"], tool["name"]),
            tool["read_only"], True, tuple(parameters.get("required", ())), slots["inputs"],
            slots["outputs"], returns.get("type") == "array"))
    return out


def _slots(spec: dict[str, Any], parameters: dict[str, Any],
           returns: dict[str, Any]) -> dict[str, tuple[Slot, ...]]:
    """The interface-tagged places of a tool's compact schemas (resource ids keyed by the
    spec's api, its name by default)."""
    name, api = spec["name"], spec.get("api")
    declare_statable(scope_interfaces(parameters, name, api))
    return {"inputs": tuple(s for s in interface_slots(parameters)
                            + key_slots(parameters, name, api=api) if s.path),
            "outputs": tuple(interface_slots(returns) + key_slots(returns, name, api=api))}


def service_from_spec(spec: dict[str, Any], base: type[Service]) -> type[Service]:
    """A Service subclass (of ``base``, the simulated-service base) for a validated spec; the
    tools of its CRUD resources run against records in its state (``worldmodel.store``)."""
    tools = spec_tools(spec)
    store = ResourceStore(spec["name"], tools if spec.get("state") != "world_model" else {})
    bases: tuple[type, ...] = (StatefulResources, base) if store else (base,)
    cls = type(f"Spec_{spec['name']}", bases, {
        "__doc__": spec["description"], "name": spec["name"], "domain": spec["domain"],
        "related": tuple(spec.get("related", ())), "version": spec.get("version", "1"),
        "display": spec.get("display", ""), "jobs": tuple(spec.get("jobs", ())),
        "__module__": f"compoenv.specs.{spec['name']}",
    })
    cls._spec_tools = tools  # type: ignore[attr-defined]
    if store:
        cls._store = store  # type: ignore[attr-defined]
    return cls
