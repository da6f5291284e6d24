"""``compoenv import``: spec-only services from OpenAPI documents and MCP ``tools/list`` results.

    compoenv import openapi petstore.yaml --name petstore -o envs_library/specs/petstore.json
    compoenv import mcp tools.json --name helpdesk

The spec goes to stdout (or ``-o``), warnings about skipped constructs to stderr; a document
that cannot be converted exits with status 1 and a message naming the file and the JSON path.
Registered in ``compoenv.cli`` with ``main.add_command(import_)``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from compoenv.importers import mcp_spec, openapi_spec
from compoenv.worldmodel.spec import SpecError

__all__ = ["import_", "read_document"]


def read_document(path: Path) -> Any:
    """JSON, or YAML when the file is ``.yaml``/``.yml`` or not JSON and PyYAML is installed."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: cannot read: {exc}") from None
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


def _convert(file: Path, output: Path | None,
             convert: Callable[[Any], tuple[dict[str, Any], list[str]]]) -> None:
    try:
        spec, warnings = convert(read_document(file))
    except SpecError as exc:
        raise click.ClickException(str(exc)) from None
    for warning in warnings:
        click.echo(f"warning: {file}: {warning}", err=True)
    text = json.dumps(spec, indent=2, ensure_ascii=False) + "\n"
    if output is None:
        click.echo(text, nl=False)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    click.echo(f"wrote {spec['name']} ({len(spec['tools'])} tools) to {output}", err=True)


_FILE = click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
_OUT = click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
                    help="Write the spec here (default: stdout).")
_DOMAIN = click.option("--domain", default="imported", show_default=True,
                       help="Domain of the service.")


@click.group("import")
def import_() -> None:
    """Turn an OpenAPI document or an MCP tools/list result into a spec-only service."""


@import_.command("openapi")
@_FILE
@click.option("--name", default=None, help="Service name (default: from info.title).")
@_DOMAIN
@click.option("--max-tools", default=60, show_default=True, help="Operations to import.")
@_OUT
def openapi(file: Path, name: str | None, domain: str, max_tools: int,
            output: Path | None) -> None:
    """One tool per operation of an OpenAPI 3.0/3.1 document (JSON or YAML)."""
    _convert(file, output, lambda doc: openapi_spec(doc, name, domain, max_tools, str(file)))


@import_.command("mcp")
@_FILE
@click.option("--name", required=True, help="Service name.")
@_DOMAIN
@_OUT
def mcp(file: Path, name: str, domain: str, output: Path | None) -> None:
    """One tool per tool of an MCP tools/list result ({"tools": [...]} or the bare list)."""
    _convert(file, output, lambda doc: mcp_spec(doc, name, domain, str(file)))
