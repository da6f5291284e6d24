"""One document of a corpus read (JSON or YAML) and converted into services: OpenAPI 3,
Swagger 2.0 or an MCP ``tools/list`` result."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compoenv.importers.convert import MAX_NODES
from compoenv.importers.mcp import mcp_services
from compoenv.importers.openapi import openapi_services
from compoenv.importers.split import ApiName
from compoenv.importers.swagger import swagger_to_openapi
from compoenv.worldmodel.spec import SpecError

__all__ = ["Converted", "read_document", "openapi_document", "convert_openapi", "convert_mcp",
           "mcp_converted"]


@dataclass(frozen=True)
class Converted:
    """A converted document, before the importer names its services.

    Attributes:
        api: What the API may be named after.
        services: ``(group, spec)`` pairs; group ``""`` when the API is one service.
        warnings: What was skipped or simplified.
    """

    api: ApiName
    services: tuple[tuple[str, dict[str, Any]], ...]
    warnings: tuple[str, ...] = ()


def read_document(path: Path) -> Any:
    """JSON, or YAML when the file is ``.yaml``/``.yml`` or not JSON and PyYAML is installed."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: cannot read: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot read: {exc.strerror or exc}") from None
    error = None
    if path.suffix.lower() not in (".yaml", ".yml"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            error = SpecError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: "
                              f"{exc.msg}")
            if text.lstrip().startswith(("{", "[")):
                raise error from None
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError:
        raise error or SpecError(f"{path}: reading YAML needs PyYAML (pip install pyyaml)") \
            from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise error or SpecError(f"{path}: invalid YAML: {exc}") from None


def openapi_document(document: Any, origin: str) -> dict[str, Any]:
    """``document`` as OpenAPI 3 (Swagger 2.0 converted), or SpecError saying what it is."""
    if isinstance(document, dict) and str(document.get("swagger", "")).startswith("2."):
        return swagger_to_openapi(document)
    if isinstance(document, dict) and str(document.get("openapi", "")).startswith("3."):
        return document
    seen = "not a JSON object" if not isinstance(document, dict) else (
        f"openapi={document['openapi']!r}" if "openapi" in document else
        f"swagger={document['swagger']!r}" if "swagger" in document else
        "no 'openapi' or 'swagger' field")
    raise SpecError(f"{origin}: not an OpenAPI 3 or Swagger 2.0 document ({seen})")


def convert_openapi(path: Path, domain: str = "imported", max_nodes: int = MAX_NODES,
                    ) -> Converted:
    """The services of an OpenAPI 3 or Swagger 2.0 document, JSON or YAML, each converting at
    most ``max_nodes`` schema nodes."""
    document = openapi_document(read_document(path), str(path))
    api, services, warnings = openapi_services(document, domain, str(path), max_nodes)
    return Converted(api, tuple(services), tuple(warnings))


def mcp_converted(tools_list: Any, name: str, domain: str = "imported",
                  origin: str = "<mcp>") -> Converted:
    """The services of an MCP ``tools/list`` result named ``name``."""
    api, services, warnings = mcp_services(tools_list, name, domain, origin)
    return Converted(api, tuple(services), tuple(warnings))


def convert_mcp(path: Path, domain: str = "imported") -> Converted:
    """The services of an MCP ``tools/list`` JSON file, named after the file."""
    return mcp_converted(read_document(path), path.stem, domain, str(path))
