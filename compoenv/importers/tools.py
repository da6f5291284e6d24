"""One spec tool from converted parameters: snake_case parameter names, a phrase naming the
required ones, a closed parameter object."""

from __future__ import annotations

from typing import Any

from compoenv.importers.naming import snake, unique

__all__ = ["spec_tool"]


def spec_tool(name: str, description: str, read_only: bool,
              entries: list[tuple[str, Any, bool, str]],
              returns: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    """One spec tool from (parameter, schema, required, location) entries; a name that clashes
    with an earlier parameter gets its location as prefix (``body_id``)."""
    props: dict[str, Any] = {}
    for raw, schema, _, place in entries:
        key = snake(raw, prefix="p")
        props[unique(snake(f"{place} {raw}") if key in props else key, set(props))] = schema
    required = [key for key, entry in zip(props, entries) if entry[2]]
    labels = [f"{p.replace('_', ' ')} {{{p}}}" for p in required]
    if required and props[required[0]].get("x-interface"):
        labels[0] = f"{{{required[0]}}}"  # a tagged value names itself: "find owner for {email}"
    verb = (name.split("_by_")[0] if required else name).replace("_", " ")
    phrase = verb if not labels else f"{verb} for {labels[0]}" + ("" if len(labels) == 1 else (
        f" with {', '.join(labels[1:-1])}{' and ' if len(labels) > 2 else ''}{labels[-1]}"))
    fits = 3 <= len(phrase) <= 200  # what a spec's phrase may be: a bad one is dropped
    if not fits:
        warnings.append(f"{name}: " + ("too many required parameters to phrase" if len(
            phrase) > 200 else f"phrase {phrase!r} too short") + "; no phrase written")
    return {"name": name, "description": description, "read_only": read_only,
            "parameters": {"type": "object", "properties": props, "additionalProperties": False,
                           **({"required": required} if required else {})},
            "returns": returns, **({"phrase": phrase} if fits else {})}

