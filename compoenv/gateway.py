"""Gateway mode: four meta-tools that discover and call the mounted services' tools."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from compoenv.service import ToolError, ToolResult, ToolSpec, build_spec, did_you_mean, error, \
    ok, tool
from compoenv.session import Session

__all__ = ["Gateway", "GATEWAY_TOOLS"]

_Name = Annotated[str, Field(min_length=1, max_length=200)]


class Gateway:
    """list_services / list_tools / describe_tool / call_tool over a Session's services, in
    the format of the published CompoWorld data (docs/architecture.md, "Gateway format").

    Args:
        session: The episode's session (task services and distractors, in a shuffled order).
    """

    def __init__(self, session: Session) -> None:
        self.session = session

    @tool(read_only=True)
    def list_services(self) -> dict[str, list[str]]:
        """List the names of the services available."""
        return {"services": sorted(self.session.classes)}

    @tool(read_only=True)
    def list_tools(self, service: _Name) -> dict[str, Any]:
        """List the tools of one service, with their descriptions.

        Args:
            service: A service name from list_services.
        """
        # a dotted service's name as it appears in its tools' names (github-repos) is accepted
        cls = self.session.classes.get(service) or self.session.classes.get(
            service.replace("-", "."))
        if cls is None:
            raise ToolError(404, did_you_mean(service, self.session.classes, "service"))
        return {"service": cls.name,
                "tools": [{"name": s.qualified_name, "description": s.description}
                          for s in cls.tool_specs().values()]}

    @tool(read_only=True)
    def describe_tool(self, tool: _Name) -> dict[str, Any]:
        """Show a tool's description and the JSON schema of its parameters.

        Args:
            tool: A tool name from list_tools, such as flights__search_flights.
        """
        spec = self.session.spec(tool)
        if spec is None:
            raise ToolError(404, did_you_mean(tool, [s.qualified_name for s in
                                                     self.session.specs()], "tool"))
        return spec.to_openai()["function"]

    @tool
    def call_tool(self, tool_name: _Name, arguments: dict[str, Any] | None = None) -> Any:
        """Call a tool with its arguments.

        Args:
            tool_name: A tool name from list_tools, such as flights__search_flights.
            arguments: The tool's arguments as a JSON object.
        """
        raise AssertionError("call_tool is routed by Gateway.call")

    def call(self, name: str, arguments: Any) -> ToolResult:
        """Run a meta-tool; ``call_tool`` returns the inner tool's own envelope. The argument
        names of earlier compoenv releases (``name`` for the tool) are accepted too."""
        spec = GATEWAY_TOOLS.get(name) if isinstance(name, str) else None
        if spec is None:
            hint = (" In gateway mode, call service tools through call_tool."
                    if self.session.spec(str(name)) else "")
            return error(404, did_you_mean(name, GATEWAY_TOOLS, "tool") + hint)
        try:
            kwargs = spec.validate(_renamed(name, arguments))
            if name == "call_tool":
                return self.session.call(kwargs["tool_name"], kwargs["arguments"] or {})
            return ok(getattr(self, name)(**kwargs))
        except ToolError as exc:
            return error(exc.code, exc.message)


# the tool argument's earlier name, per meta-tool
_FORMER = {"describe_tool": ("name", "tool"), "call_tool": ("name", "tool_name")}


def _renamed(meta: str, arguments: Any) -> Any:
    """``{"name": ...}`` as ``{"tool": ...}`` / ``{"tool_name": ...}`` when only the earlier
    name is given (anything else is validated as it is)."""
    if meta not in _FORMER or not isinstance(arguments, dict):
        return arguments
    old, new = _FORMER[meta]
    if old in arguments and new not in arguments:
        arguments = {(new if k == old else k): v for k, v in arguments.items()}
    return arguments


GATEWAY_TOOLS: dict[str, ToolSpec] = {
    fn.__name__: build_spec("", fn, fn.__compoenv_tool__)  # type: ignore[attr-defined]
    for fn in (Gateway.list_services, Gateway.list_tools, Gateway.describe_tool,
               Gateway.call_tool)
}
