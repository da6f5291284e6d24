"""MCP ``tools/list`` results as spec-only services: one tool per MCP tool (inputSchema,
outputSchema, annotations)."""

from __future__ import annotations

from typing import Any

from compoenv.importers.convert import Converter
from compoenv.importers.infer import object_hint
from compoenv.importers.naming import short_text, snake, unique
from compoenv.importers.split import TOOL_MAX, ApiName, Operation, group_operations
from compoenv.importers.tools import spec_tool
from compoenv.worldmodel.spec import SPEC_SCHEMA, SpecError, validate_spec

__all__ = ["mcp_spec", "mcp_services", "from_mcp"]


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
        tool_name = unique(snake(item["name"], TOOL_MAX, prefix="tool"), taken, TOOL_MAX)
        hint = object_hint([tool_name.split("_by_")[0].rsplit("_", 1)[-1]])
        raw, raw_out = item.get("inputSchema") or {"type": "object"}, item.get("outputSchema")
        params = Converter(raw, origin, warnings).schema(raw, f"{where}.inputSchema", "", hint,
                                                          "in")
        if params is None or params.get("type") != "object":
            raise SpecError(f"{origin}: {where}.inputSchema: must be an object schema")
        returns = raw_out and Converter(raw_out, origin, warnings).schema(
            raw_out, f"{where}.outputSchema", "", hint)
        flag = notes.get("readOnlyHint")
        read_only = flag if isinstance(flag, bool) else tool_name.startswith(reads)
        entries = [(k, v, k in params.get("required", ()), "arg")
                   for k, v in params["properties"].items()]
        description = short_text(item.get("description"), item.get("title"), notes.get("title"),
                            fallback=f"MCP tool {item['name']}")
        tools.append(spec_tool(tool_name, description, read_only, entries, returns or {
            "type": "object", "properties": {"result": {"type": "string"}},
            "required": ["result"]}, warnings))
    most = SPEC_SCHEMA["properties"]["tools"]["maxItems"]
    if len(tools) > most:
        raise SpecError(f"{origin}: {len(tools)} tools do not fit one service (at most {most}); "
                        f"import it into a library folder to split it into services "
                        f"(compoenv import mcp FILE -o LIBDIR)")
    service = snake(name, 40, prefix="mcp")
    about = f"{service} (imported from MCP): {', '.join(t['name'] for t in tools)}"
    spec = {"name": service, "domain": domain,
            "description": short_text(about, fallback=about, low=10), "source": "mcp",
            "tools": tools}
    return validate_spec(spec, origin), warnings


def mcp_services(tools_list: Any, name: str, domain: str = "imported", origin: str = "<mcp>",
                 ) -> tuple[ApiName, list[tuple[str, dict[str, Any]]], list[str]]:
    """An MCP ``tools/list`` result as services of at most ``split.LIMIT`` tools, grouped by
    the object a tool acts on (``create_issue``, ``list_issues`` -> ``issue``); none dropped.

    Returns:
        What the server may be named after (``name``), ``[(group, spec)]`` (group ``""`` when
        the server is one service), and the warnings.
    """
    data = tools_list.get("result", tools_list) if isinstance(tools_list, dict) else tools_list
    items = data.get("tools") if isinstance(data, dict) else data
    items = items if isinstance(items, list) else []
    words = [snake(str(t.get("name", "")) if isinstance(t, dict) else "", prefix="tool").split(
        "_") for t in items]
    groups = group_operations([Operation(f"/{w[-1].rstrip('s') or w[-1]}/{'_'.join(w)}")
                               for w in words])
    services, warnings = [], []
    for group, members in groups:
        spec, more = mcp_spec([items[i] for i in members], group or name, domain, origin)
        services.append((group, spec))
        warnings += more
    return ApiName(title=name), services, warnings


def from_mcp(tools_list: dict[str, Any] | list[Any], name: str, domain: str = "imported",
             origin: str = "<mcp>") -> dict[str, Any]:
    """A validated spec with one tool per tool of an MCP ``tools/list`` result."""
    return mcp_spec(tools_list, name, domain, origin)[0]
