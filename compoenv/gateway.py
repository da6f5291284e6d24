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
    """list_services / list_tools / describe_tool / call_tool over a Session's services.

    Args:
        session: The episode's session (task services and distractors, in a shuffled order).
    """

    def __init__(self, session: Session) -> None:
        self.session = session

    @tool(read_only=True)
    def list_services(self) -> list[dict[str, Any]]:
        """List the services available, with their domain and description."""
        return [{"name": name, "domain": cls.domain, "description": cls.description(),
                 "tools": len(cls.tool_specs())}
                for name, cls in sorted(self.session.classes.items())]

    @tool(read_only=True)
    def list_tools(self, service: _Name) -> list[dict[str, str]]:
        """List the tools of one service (qualified names and descriptions).

        Args:
            service: A service name from list_services.
        """
        cls = self.session.classes.get(service)
        if cls is None:
            raise ToolError(404, did_you_mean(service, self.session.classes, "service"))
        return [{"name": s.qualified_name, "description": s.description}
                for s in cls.tool_specs().values()]

    @tool(read_only=True)
    def describe_tool(self, name: _Name) -> dict[str, Any]:
        """Show a tool's description and JSON-schema parameters.

        Args:
            name: A qualified tool name, ``<service>__<tool>``.
        """
        spec = self.session.spec(name)
        if spec is None:
            raise ToolError(404, did_you_mean(name, [s.qualified_name for s in
                                                     self.session.specs()], "tool"))
        return spec.to_openai()["function"]

    @tool
    def call_tool(self, name: _Name, arguments: dict[str, Any] | None = None) -> Any:
        """Call a service tool by qualified name with its arguments.

        Args:
            name: A qualified tool name, ``<service>__<tool>``.
            arguments: The tool's arguments as a JSON object.
        """
        raise AssertionError("call_tool is routed by Gateway.call")

    def call(self, name: str, arguments: Any) -> ToolResult:
        """Run a meta-tool; ``call_tool`` returns the inner tool's own envelope."""
        spec = GATEWAY_TOOLS.get(name) if isinstance(name, str) else None
        if spec is None:
            hint = (" In gateway mode, call service tools through call_tool."
                    if self.session.spec(str(name)) else "")
            return error(404, did_you_mean(name, GATEWAY_TOOLS, "tool") + hint)
        try:
            kwargs = spec.validate(arguments)
            if name == "call_tool":
                return self.session.call(kwargs["name"], kwargs["arguments"] or {})
            return ok(getattr(self, name)(**kwargs))
        except ToolError as exc:
            return error(exc.code, exc.message)


GATEWAY_TOOLS: dict[str, ToolSpec] = {
    fn.__name__: build_spec("", fn, fn.__compoenv_tool__)  # type: ignore[attr-defined]
    for fn in (Gateway.list_services, Gateway.list_tools, Gateway.describe_tool,
               Gateway.call_tool)
}
