"""Compiled JSON-schema checks: a schema turned once into a plain-Python predicate.

jsonschema walks a schema on every call (about 60 µs for a small tool schema); composition and
the offline world model ask "is this value valid?" tens of thousands of times per second. A
schema that uses only the common keywords compiles into nested closures that answer the same
question exactly as Draft 2020-12 does, in a few microseconds. Schemas with any other keyword
are not compiled (``compile_check`` returns None) and callers fall back to jsonschema, so the
answer never differs; messages for invalid values always come from jsonschema.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Callable

from compoenv._cache import ByIdentity

__all__ = ["compile_check", "check_for"]

Check = Callable[[Any], bool]

# Keywords that can make a value invalid; every other key (title, description, x-interface,
# OpenAPI's nullable, ...) is ignored by Draft 2020-12 and so here. "format" is asserted only
# with a format checker, which validator_for does not use. (jsonschema is imported at the first
# compile: a process that only plays implemented services may never need it.)
@lru_cache(maxsize=1)
def _asserting() -> frozenset[str]:
    from jsonschema import Draft202012Validator

    return frozenset(Draft202012Validator.VALIDATORS) - {"format"}


_SCALARS = {"string": (str,), "boolean": (bool,), "null": (type(None),), "object": (dict,),
            "array": (list,)}


class _Unsupported(Exception):
    """The schema uses a keyword this compiler does not handle exactly."""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_integer(value: Any) -> bool:
    # as jsonschema: 1.0 is an integer, True is not
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _type_check(kind: Any) -> Check:
    kinds = [kind] if isinstance(kind, str) else kind
    if not isinstance(kinds, list) or not kinds:
        raise _Unsupported("type")
    checks: list[Check] = []
    for name in kinds:
        if name == "number":
            checks.append(_is_number)
        elif name == "integer":
            checks.append(_is_integer)
        elif name in _SCALARS:
            types = _SCALARS[name]
            if name == "boolean":
                checks.append(lambda v: v is True or v is False)
            else:
                checks.append(lambda v, t=types: isinstance(v, t))
        else:
            raise _Unsupported(f"type {name!r}")
    return checks[0] if len(checks) == 1 else (lambda v: any(c(v) for c in checks))


def _enum_check(values: Any) -> Check:
    # strings only: equality across JSON types (1 vs True vs 1.0) is where shortcuts go wrong
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise _Unsupported("enum")
    allowed = frozenset(values)
    return lambda v: isinstance(v, str) and v in allowed


def _compile(schema: Any) -> Check:
    if schema is True or schema == {}:
        return lambda v: True
    if schema is False:
        return lambda v: False
    if not isinstance(schema, dict):
        raise _Unsupported("schema")
    checks: list[Check] = []
    for key, arg in schema.items():
        if key not in _asserting():
            continue
        checks.append(_keyword(key, arg, schema))
    if not checks:
        return lambda v: True
    if len(checks) == 1:
        return checks[0]

    def every(v: Any) -> bool:
        for check in checks:
            if not check(v):
                return False
        return True
    return every


def _number_bound(key: str, bound: Any) -> Check:
    if not _is_number(bound):
        raise _Unsupported(key)
    compare = {"minimum": lambda v: v >= bound, "maximum": lambda v: v <= bound,
               "exclusiveMinimum": lambda v: v > bound,
               "exclusiveMaximum": lambda v: v < bound}[key]
    return lambda v: not _is_number(v) or compare(v)


def _keyword(key: str, arg: Any, schema: dict[str, Any]) -> Check:
    if key == "type":
        return _type_check(arg)
    if key == "enum":
        return _enum_check(arg)
    if key == "const" and isinstance(arg, str):
        return lambda v: isinstance(v, str) and v == arg
    if key == "const" and (arg is None or isinstance(arg, bool)):
        return lambda v: v is arg  # false is not 0, null is only null
    if key == "uniqueItems" and arg is False:
        return lambda v: True
    items = schema.get("items")
    if key == "uniqueItems" and arg is True and isinstance(items, dict) \
            and items.get("type") == "string":
        # items that are not all strings fail "items" anyway; strings are equal when == says so
        return lambda v: (not isinstance(v, list) or not all(isinstance(x, str) for x in v)
                          or len(set(v)) == len(v))
    if key == "propertyNames":
        name = _compile(arg)
        return lambda v: not isinstance(v, dict) or all(name(k) for k in v)
    if key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return _number_bound(key, arg)
    if key in ("minLength", "maxLength", "minItems", "maxItems", "minProperties",
               "maxProperties") and isinstance(arg, int) and not isinstance(arg, bool):
        kind = {"Length": str, "Items": list, "Properties": dict}[key[3:]]
        if key.startswith("min"):
            return lambda v: not isinstance(v, kind) or len(v) >= arg
        return lambda v: not isinstance(v, kind) or len(v) <= arg
    if key == "pattern" and isinstance(arg, str):
        search = re.compile(arg).search
        return lambda v: not isinstance(v, str) or search(v) is not None
    if key == "required" and isinstance(arg, list):
        names = tuple(arg)
        return lambda v: not isinstance(v, dict) or all(n in v for n in names)
    if key == "properties" and isinstance(arg, dict):
        props = [(name, _compile(sub)) for name, sub in arg.items()]

        def properties(v: Any) -> bool:
            if isinstance(v, dict):
                for name, check in props:
                    if name in v and not check(v[name]):
                        return False
            return True
        return properties
    if key == "additionalProperties":
        if "patternProperties" in schema:
            raise _Unsupported("patternProperties")
        known = frozenset(schema.get("properties") or ())
        extra = _compile(arg)
        return lambda v: not isinstance(v, dict) or all(
            extra(value) for name, value in v.items() if name not in known)
    if key == "items" and "prefixItems" not in schema:
        item = _compile(arg)
        return lambda v: not isinstance(v, list) or all(item(x) for x in v)
    if key in ("anyOf", "oneOf", "allOf") and isinstance(arg, list) and arg:
        subs = [_compile(sub) for sub in arg]
        if key == "anyOf":
            return lambda v: any(s(v) for s in subs)
        if key == "allOf":
            return lambda v: all(s(v) for s in subs)
        return lambda v: sum(1 for s in subs if s(v)) == 1
    raise _Unsupported(key)


def compile_check(schema: Any) -> Check | None:
    """A predicate equal to Draft 2020-12 validity for ``schema``, or None when the schema
    uses a keyword this compiler does not handle exactly (``$ref``, ``multipleOf``, ...)."""
    try:
        return _compile(schema)
    except (_Unsupported, re.error):
        return None


# ``compile_check`` once per schema object
check_for: Callable[[Any], Check | None] = ByIdentity(compile_check)
