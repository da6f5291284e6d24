"""Reading OpenAPI schema nodes: local JSON pointers, ``allOf`` parts, described references
and the counts and cuts the converter (``compoenv.importers.convert``) decides by."""

from __future__ import annotations

from collections import Counter
from typing import Any
from urllib.parse import unquote

__all__ = ["ANNOTATIONS", "MAX_DESCRIPTION", "Reads", "annotated", "brief", "kind", "list_of",
           "one_ref", "parts", "pointer", "props", "ref_counts"]

ANNOTATIONS = frozenset({"$ref", "description", "title", "summary", "example", "examples",
                         "xml"})
# a field's description past this is cut at a sentence: AWS documents write whole manual pages
# into every field, most of a spec's size and little of what a world model needs
MAX_DESCRIPTION = 300


def pointer(root: Any, ref: str) -> Any:
    """What a local JSON pointer (``#/components/schemas/List/items``, ``#/x/0``) points at."""
    target = root
    for part in ref.split("/")[1:]:
        part = unquote(part).replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict):
            target = target.get(part)
        elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
            target = target[int(part)]
        else:
            return None
    return target


def kind(value: Any) -> str:
    """What a JSON value is, in a message's words."""
    return {list: "list", str: "string", bool: "boolean"}.get(type(value), type(value).__name__)


def one_ref(node: Any) -> Any:
    """``{"allOf": [{"$ref": R}, {"description": D}]}`` (a described reference, as AWS writes
    them) as ``{"$ref": R, "description": D}``, so it can stay shared; anything else as is."""
    written = node.get("allOf") if isinstance(node, dict) else None
    if not isinstance(written, list) or not set(node) <= ANNOTATIONS | {"allOf"}:
        return node
    refs = [p for p in written if isinstance(p, dict) and "$ref" in p and set(p) <= ANNOTATIONS]
    notes = [p for p in written if isinstance(p, dict) and "$ref" not in p and set(
        p) <= ANNOTATIONS]
    if len(refs) != 1 or len(refs) + len(notes) != len(written):
        return node
    merged = {k: v for k, v in node.items() if k != "allOf"}
    for part in notes + refs:
        merged.update(part)
    return merged


def props(node: dict[str, Any]) -> dict[str, Any]:
    """A node's ``properties``, or none when they are no mapping."""
    found = node.get("properties")
    return found if isinstance(found, dict) else {}


def brief(text: str) -> str:
    """``text`` cut to ``MAX_DESCRIPTION`` characters, at the last sentence end that fits."""
    if len(text) <= MAX_DESCRIPTION:
        return text
    cut = text[:MAX_DESCRIPTION]
    end = max(cut.rfind(". "), cut.rfind(".\n"))
    return cut[:end + 1] if end > MAX_DESCRIPTION // 3 else cut.rstrip() + "…"


def parts(node: dict[str, Any]) -> list[Any]:
    """The parts of an ``allOf``: a list, or a mapping of indices as some YAML tools write one
    (``{"3": {...}}``); anything else has none."""
    written = node.get("allOf")
    if isinstance(written, dict):
        return [written[k] for k in sorted((k for k in written if str(k).isdigit()), key=int)
                if isinstance(written[k], dict)]
    return list(list_of(written))  # a copy: the caller pops from it


def list_of(value: Any) -> list[Any]:
    """``value`` if it is a list, else an empty one."""
    return value if isinstance(value, list) else []


def ref_counts(root: Any) -> Counter[str]:
    """How often each ``$ref`` occurs in a document."""
    counts: Counter[str] = Counter()
    todo = [root]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                counts[ref] += 1
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return counts


def annotated(node: dict[str, Any]) -> bool:
    """Whether a node holds nothing but a reference's annotations (a description, a title,
    vendor extensions such as ``x-ms-navigationProperty``), so the reference may stay shared."""
    return all(k in ANNOTATIONS or k.startswith("x-") for k in node)


class Reads(dict[str, Any]):
    """Definitions that note which of them a reader looked up."""

    def __init__(self, defs: dict[str, Any]) -> None:
        super().__init__(defs)
        self.read: set[str] = set()

    def __getitem__(self, name: str) -> Any:
        self.read.add(name)
        return super().__getitem__(name)
