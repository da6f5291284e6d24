"""One spec tool from converted parameters: snake_case parameter names, a phrase naming the
required ones, a closed parameter object."""

from __future__ import annotations

import re
from typing import Any

from compoenv.importers.naming import snake, unique

__all__ = ["spec_tool", "imperative"]


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
    verb = _summary_verb(description, bool(required)) or (
        name.split("_by_")[0] if required else name).replace("_", " ")
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



# a summary in the third person reads as a request in the second ("Lists the hooks" -> "list")
_VERBS = {"get", "list", "create", "update", "delete", "add", "remove", "search", "find",
          "retrieve", "fetch", "send", "cancel", "set", "start", "stop", "check", "return",
          "show", "read", "post", "publish", "approve", "reject", "archive", "restore",
          "enable", "disable", "assign", "invite", "register", "book", "schedule", "submit",
          "verify", "validate", "count", "look", "replace", "edit", "rename", "move", "copy",
          "upload", "download", "export", "import", "close", "open", "reopen", "lock",
          "unlock", "join", "leave", "follow", "unfollow", "star", "unstar", "mark", "pay",
          "refund", "charge", "transfer", "renew", "subscribe", "unsubscribe", "attach",
          "detach", "generate", "calculate", "estimate", "translate", "convert", "query"}
_THIRD = {"returns": "get", "gets": "get", "retrieves": "retrieve", "lists": "list",
          "fetches": "fetch", "searches": "search", "sends": "send", "shows": "show"}
_SUMMARY = re.compile(r"^[A-Za-z][A-Za-z0-9 '\-]*$")


def imperative(description: str) -> str | None:
    """A description's first sentence as a request ("Updates an attestor. Returns NOT_FOUND
    ..." -> "update an attestor"), when it is a short imperative or third-person one."""
    return _summary_verb(description, keyed=False)


def _summary_verb(description: str, keyed: bool) -> str | None:
    """The operation's summary as the start of a request ("Create an inbox recipient" ->
    "create an inbox recipient"), when it is a short imperative (or third-person) sentence;
    None when it is not (then the operation's name is used). A ``keyed`` request names its
    required values after it ("for {email}"), so the summary's own "by ID" or "registered
    with an email address" goes."""
    # its first sentence's first clause ("Creates an attestor, and returns a copy of it")
    first = description.split(". ")[0].split(", ")[0].strip().rstrip(".")
    if keyed:
        first = re.split(r" (?:by|for|with|using|given|via|matching) ", first)[0]
        first = re.sub(r" \w+ed$", "", first)  # "the owner registered" -> "the owner"
        # "Creates a repo in the given project": no "in the" left hanging
        first = re.sub(r"(?: (?:in|on|at|of|to|from|into|under|within))?(?: (?:the|a|an))?$",
                       "", first)
    words = first.split()
    if not 2 <= len(words) <= 9 or not _SUMMARY.match(first):
        return None
    head = _THIRD.get(words[0].lower(), words[0].lower())
    if head not in _VERBS and not (head.endswith("s") and head[:-1] in _VERBS):
        return None
    head = head if head in _VERBS else head[:-1]
    rest = [w.lower() if w[:1].isupper() and w[1:].islower() else w for w in words[1:]]
    return " ".join([head, *rest])
