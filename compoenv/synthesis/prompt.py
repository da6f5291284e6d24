"""The prompt that asks a coding model to implement a spec as a compoenv Service."""

from __future__ import annotations

import json
from typing import Any, Iterator

__all__ = ["RULES", "system_prompt", "task_prompt", "feedback_prompt", "example_service"]

RULES = """\
Rules for the module you write:
1. One Python module defining exactly one subclass of compoenv.Service, with `name` equal to
   the spec's name and `domain` equal to its domain. Import only the standard library,
   pydantic and compoenv. No file, network or process access: the module runs in a sandbox.
2. Typed state: a nested `class State(State)` whose fields are dicts of frozen pydantic
   records (`model_config = ConfigDict(extra="forbid", frozen=True)`), keyed by id.
3. `seed(self, world)` builds the records deterministically from the World: draw only from
   `world.rng(self.name)` and the World's people, businesses, cities and dates; never the
   global `random`, the clock, or set iteration order.
4. One method per spec tool, decorated `@tool(read_only=..., phrase=...)` with the spec's
   name, read_only flag and phrase; parameters and the return value typed so that their JSON
   schemas match the spec (interfaces from compoenv.interfaces with `Role(...)` where the
   spec has `x-interface` / `x-role`); a one-line docstring that describes the tool.
5. Reads never change state. A write changes `self.state` and its effect is visible to the
   service's reads. Replace records (`compoenv.crud.update`), never mutate them.
6. Errors: `raise ToolError(404, ...)` for an unknown id or name (use
   `compoenv.crud.get_or_404` / `find_one`, which suggest close matches), 409 for a state
   conflict (a duplicate, a record in the wrong status), 422 for a value the service cannot
   process. Never let an exception escape (that is a 500, a bug).
7. Reply with the whole module in one ```python block."""

_API = """\
The compoenv SDK, in brief:
- `from compoenv import Service, State, ToolError, tool`
- `class X(Service)`: class attributes `name`, `domain`; nested `class State(State)` (a
  pydantic model, extra fields forbidden); `def seed(self, world) -> X.State`; tools are
  methods marked `@tool` that read and write `self.state` and may use `self.world`.
- `@tool(read_only=True, phrase="look up {name}")`: parameter and return JSON schemas come
  from the type hints (pydantic); arguments are validated before the method runs.
- `ToolError(code, message)`: an expected failure the agent reads (400/404/409/422).
- `compoenv.crud`: next_id(prefix, existing) -> "C-0008"; get_or_404(records, key, kind);
  update(records, key, **changes) -> new record; find_one(records, value, key_fn, kind);
  search(records, query, *field_fns); page(items, limit, offset); norm(text).
- World (`self.world`, the same people and places in every service): rng(stream) ->
  random.Random; people (tuple of Person: name, email, phone, employer, title, city,
  birthday, address; people[0] is the user); person(name); city(name);
  businesses_in(kind, city=None); date(days) -> "YYYY-MM-DD" relative to today; at(days,
  hour, minute) -> an ISO date-time; today (a datetime.date).
- `compoenv.interfaces`: semantic types (Annotated str/int/float) whose schemas carry
  `x-interface`; `compoenv.roles.Role("customer")` adds `x-role`:
  `email: Annotated[EmailAddress, Role("customer")]`."""


def example_service() -> str:
    """The source of a complete library service the model can imitate (contacts)."""
    import inspect

    from compoenv.registry import Registry

    return inspect.getsource(inspect.getmodule(Registry.default().get("contacts")))


def _tags(node: Any, key: str) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get(key), str):
            yield node[key]
        for value in node.values():
            yield from _tags(value, key)
    elif isinstance(node, list):
        for value in node:
            yield from _tags(value, key)


def _vocabulary(spec: dict[str, Any]) -> str:
    """The interfaces and roles the spec uses, with what each interface is in Python."""
    from compoenv.interfaces import ENTITY_MODELS, SEMANTIC_TYPES
    from compoenv.roles import KIND_OF

    tools = spec.get("tools", [])
    interfaces = sorted(set(_tags(tools, "x-interface")))
    roles = sorted(set(_tags(tools, "x-role")))
    lines = [f"Interfaces this spec uses (import them from compoenv.interfaces): "
             f"{', '.join(interfaces) or 'none'}."]
    entities = [name for name in interfaces if name in ENTITY_MODELS]
    if entities:
        lines.append(f"Of these, entity models (pydantic, frozen): {', '.join(entities)}.")
    unknown = [name for name in interfaces if name not in ENTITY_MODELS
               and name not in SEMANTIC_TYPES]
    if unknown:
        lines.append(f"Not in compoenv.interfaces (model them as plain constrained types): "
                     f"{', '.join(unknown)}.")
    if roles:
        lines.append("Roles this spec uses (compoenv.roles.Role): "
                     + ", ".join(f"{r} ({KIND_OF.get(r, 'unknown kind')})" for r in roles)
                     + ".")
    return "\n".join(lines)


def system_prompt() -> str:
    """Who the model is and what it must produce."""
    return ("You implement tool specifications as compoenv services: Python modules with "
            "typed state, a deterministic seed and one method per tool. Your code is verified "
            "automatically (conventions, schemas against the spec, deterministic seeding, "
            "reads that change nothing, writes read back, error codes, random valid calls, "
            "use by the task composer).\n\n" + _API + "\n\n" + RULES)


def task_prompt(spec: dict[str, Any], example: str) -> str:
    """The first request: the example service, the vocabulary and the spec."""
    return (f"An example of a complete service from the library:\n\n```python\n{example}```"
            f"\n\n{_vocabulary(spec)}\n\nImplement this spec as a compoenv service named "
            f"{spec.get('name')!r}:\n\n```json\n{json.dumps(spec, indent=1)}\n```")


def feedback_prompt(reasons: list[str], round_number: int, rounds: int) -> str:
    """A later round: what verification found wrong with the previous reply."""
    listed = "\n".join(f"- {line}" for line in reasons)
    return (f"Verification of your module failed (round {round_number} of {rounds}):\n"
            f"{listed}\n\nFix every failure and reply with the whole corrected module in one "
            f"```python block.")
