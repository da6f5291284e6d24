"""``compoenv import``: spec-only services from OpenAPI / Swagger documents and MCP tools.

    compoenv import openapi petstore.yaml --name petstore -o petstore.json   # one spec
    compoenv import openapi corpus/ more.json -o LIBDIR --workers 4        # a library
    compoenv import mcp tools.json --name helpdesk                         # one spec, stdout
    compoenv import mcp --command "python server.py" -o LIBDIR             # a live server

One document without ``-o`` (or with ``-o FILE.json``) gives one spec; folders, several
documents or ``-o`` a folder import a library (docs/importing.md): resumable, parallel, with a
progress bar, ``LIBDIR/import-report.jsonl`` and a summary. Nothing prints a traceback: a
document that cannot be converted is a failed report line, or exit status 1 for one spec.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from compoenv.importers import mcp_spec, openapi_spec
from compoenv.importers.corpus import (
    MAX_BYTES, REPORT, Library, Summary, import_corpus, write_library_index)
from compoenv.importers.document import (
    convert_mcp, convert_openapi, mcp_converted, openapi_document, read_document)
from compoenv.importers.mcp_live import list_tools
from compoenv.worldmodel.spec import SpecError

__all__ = ["import_", "read_document"]


def _write(spec: dict[str, Any], warnings: list[str], origin: str, output: Path | None) -> None:
    for warning in warnings:
        click.echo(f"warning: {origin}: {warning}", err=True)
    text = json.dumps(spec, indent=2, ensure_ascii=False) + "\n"
    if output is None and _terminal():  # a spec is thousands of lines: say what it holds
        tools = [t["name"] for t in spec["tools"]]
        shown = ", ".join(tools[:8]) + (f", ... ({len(tools) - 8} more)" if len(tools) > 8
                                        else "")
        click.echo(f"{spec['name']}: {len(tools)} tools ({shown}); {text.count(chr(10))} "
                   f"lines of spec JSON. Write it with -o FILE.json, or pipe it: "
                   f"compoenv import ... | less")
        return
    if output is None:
        click.echo(text, nl=False)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    click.echo(f"wrote {spec['name']} ({len(spec['tools'])} tools) to {output}", err=True)


def _terminal() -> bool:
    """Whether standard output is a terminal (a person reading), not a pipe or file."""
    return sys.stdout.isatty()


def _one(convert: Callable[[], tuple[dict[str, Any], list[str]]], origin: str,
         output: Path | None) -> None:
    try:
        spec, warnings = convert()
    except (SpecError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    _write(spec, warnings, origin, output)


def _is_library(paths: tuple[Path, ...], output: Path | None) -> bool:
    """Whether the command writes a library folder rather than one spec."""
    if output is not None and output.exists() and not output.is_dir() and (
            len(paths) > 1 or any(p.is_dir() for p in paths) or output.suffix != ".json"):
        raise click.UsageError(f"-o {output} is a file; importing several documents writes a "
                               f"library, which is a folder")
    library = len(paths) > 1 or any(p.is_dir() for p in paths) or (
        output is not None and (output.is_dir() or output.suffix.lower() != ".json"))
    if library and output is None:
        raise click.UsageError("importing a folder or several documents writes a library: "
                               "pass -o LIBDIR")
    return library


def _summary(summary: Summary, folder: Path) -> None:
    """What the run did, by status and reason."""
    counts = summary.by_status()
    click.echo(f"{counts['imported']} imported, {counts['skipped']} skipped, "
               f"{counts['failed']} failed of {len(summary.records)} documents: "
               f"{summary.services} services, {summary.tools} tools in {folder}")
    for (status, reason), n in sorted(summary.by_reason().items(), key=lambda x: -x[1])[:12]:
        click.echo(f"  {status} {n}: {reason}")
    if summary.renamed:
        click.echo(f"  {summary.renamed} APIs named with their version or a number: another "
                   f"API held their name")
    if summary.index_error:
        click.echo(f"  note: {summary.index_error}")
    click.echo(f"report: {folder / REPORT}")


def _library(paths: tuple[Path, ...], folder: Path, convert: Callable[[Path], Any],
             workers: int, timeout: float, max_bytes: int) -> None:
    """Import ``paths`` into ``folder`` with a progress bar on stderr, then the summary."""
    progress = Progress(TextColumn("importing"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[last]}"), TimeElapsedColumn(),
                        console=Console(stderr=True), auto_refresh=False, transient=True)
    task = progress.add_task("import", total=None, last="")

    def advance(record: Any) -> None:
        progress.update(task, advance=1, last=f"{record.status} {Path(record.document).name}"
                        [:50])
        progress.refresh()

    try:
        with progress:
            summary = import_corpus(
                list(paths), folder, convert, workers, timeout, max_bytes,
                on_start=lambda n: progress.update(task, total=n), on_record=advance)
    except KeyboardInterrupt:
        click.echo(f"interrupted: finished documents are recorded in {folder}; run the same "
                   f"command again to resume", err=True)
        raise SystemExit(130) from None
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise click.UsageError(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(str(exc)) from None
    _summary(summary, folder)
    counts = summary.by_status()
    if counts["failed"] and not counts["imported"] and not counts["skipped"]:
        raise click.ClickException(f"none of the {counts['failed']} documents could be "
                                   f"imported (the reasons are above and in "
                                   f"{folder / REPORT})")


_PATHS = click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
_OUT = click.option("-o", "--output", type=click.Path(path_type=Path),
                    help="A spec file (.json) for one document, or a library folder.")
_DOMAIN = click.option("--domain", default="imported", show_default=True,
                       help="Domain of the services.")
_WORKERS = click.option("--workers", default=1, show_default=True,
                        type=click.IntRange(1, 256), help="Worker processes (library).")
_TIMEOUT = click.option("--timeout", default=60.0, show_default=True,
                        type=click.FloatRange(0.1), help="Seconds per document.")
_BYTES = click.option("--max-bytes", default=MAX_BYTES, show_default=True,
                      type=click.IntRange(1), help="Larger documents are skipped.")


@click.group("import")
def import_() -> None:
    """Turn OpenAPI / Swagger documents or MCP tools into spec-only services or a library."""


@import_.command("openapi")
@_PATHS
@click.option("--name", default=None, help="Service name, one spec only (default: the title).")
@_DOMAIN
@click.option("--max-tools", default=None, type=click.IntRange(1),
              help="One spec only: keep the first N operations (a library splits instead).")
@_OUT
@_WORKERS
@_TIMEOUT
@_BYTES
def openapi(paths: tuple[Path, ...], name: str | None, domain: str, max_tools: int | None,
            output: Path | None, workers: int, timeout: float, max_bytes: int) -> None:
    """OpenAPI 3.x or Swagger 2.0 documents (JSON or YAML): one tool per operation."""
    if not paths:
        raise click.UsageError("name at least one document or folder")
    if _is_library(paths, output):
        assert output is not None
        _library(paths, output, partial(convert_openapi, domain=domain), workers, timeout,
                 max_bytes)
        return
    file = paths[0]
    _one(lambda: openapi_spec(openapi_document(read_document(file), str(file)), name, domain,
                              max_tools, str(file)), str(file), output)


@import_.command("mcp")
@_PATHS
@click.option("--command", "server", default=None,
              help='A live MCP server over stdio, e.g. "python server.py".')
@click.option("--name", default=None, help="Service name (default: file name or server name).")
@_DOMAIN
@_OUT
@_WORKERS
@_TIMEOUT
@_BYTES
def mcp(paths: tuple[Path, ...], server: str | None, name: str | None, domain: str,
        output: Path | None, workers: int, timeout: float, max_bytes: int) -> None:
    """MCP tools: tools/list results ({"tools": [...]} or the bare list) or a live server."""
    if bool(paths) == bool(server):
        raise click.UsageError("name tools/list files or a --command, not both or neither")
    if server:
        _live(server, name, domain, output, timeout)
    elif _is_library(paths, output):
        assert output is not None
        _library(paths, output, partial(convert_mcp, domain=domain), workers, timeout,
                 max_bytes)
    elif name is None:
        raise click.UsageError("one spec needs --name (or -o LIBDIR to name it after the file)")
    else:
        _one(lambda: mcp_spec(read_document(paths[0]), name, domain, str(paths[0])),
             str(paths[0]), output)


def _live(command: str, name: str | None, domain: str, output: Path | None,
          timeout: float) -> None:
    """The tools of a live server: one spec, or services added to a library folder."""
    try:
        info, tools = list_tools(command, timeout)
    except SpecError as exc:
        raise click.ClickException(str(exc)) from None
    label = name or str(info.get("name") or command.split()[-1].rsplit("/", 1)[-1])
    if output is None or output.suffix.lower() == ".json" and not output.is_dir():
        _one(lambda: mcp_spec(tools, label, domain, command), command, output)
        return
    try:
        library = Library(output)
    except NotADirectoryError as exc:
        raise click.UsageError(str(exc)) from None
    try:
        converted = mcp_converted(tools, label, domain, command)
        digest = hashlib.sha256(json.dumps(tools, sort_keys=True).encode()).hexdigest()
        library.record(record := library.add(f"mcp:{command}", digest, converted))
    except (SpecError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        library.close()
    click.echo(f"imported {record.tools} tools of {command!r} as {', '.join(record.services)} "
               f"in {output}")
    if note := write_library_index(output):
        click.echo(f"note: {note}")
