"""Importers: spec-only services from OpenAPI 3 documents and MCP ``tools/list`` results.

Fields are tagged with shared interfaces and roles (``compoenv.importers.infer``) so imported
tools join the dependency graph; what cannot be offered is skipped with a warning; every result
passed ``validate_spec``.
"""

from __future__ import annotations

from compoenv.importers.infer import infer_interface
from compoenv.importers.mcp import from_mcp, mcp_spec
from compoenv.importers.naming import snake
from compoenv.importers.openapi import from_openapi, openapi_spec

__all__ = ["from_openapi", "openapi_spec", "from_mcp", "mcp_spec", "snake", "infer_interface"]
