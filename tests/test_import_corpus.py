"""Corpus import: a folder of real-world-shaped documents becomes a library of named services,
resumably, in parallel, within time and size limits, with a report line per document."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from compoenv.cli import main
from compoenv.importers.corpus import REPORT, STATE, Record, import_corpus
from compoenv.importers.document import Converted, convert_openapi
from compoenv.importers.mcp import mcp_services
from compoenv.importers.split import ApiName, Operation, group_operations, namespaces
from compoenv.importers.swagger import swagger_to_openapi
from compoenv.registry import Registry
from compoenv.worldmodel.spec import load_spec

CORPUS = Path(__file__).parent / "fixtures" / "corpus"
OPENAPI, MCP = CORPUS / "openapi", CORPUS / "mcp"
NAME = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*(\.[a-z][a-z0-9]*(_[a-z0-9]+)*)*$")
GITHUB_OPERATIONS = 69


def report(folder: Path) -> dict[str, dict[str, Any]]:
    lines = (folder / REPORT).read_text(encoding="utf-8").splitlines()
    return {Path(r["document"]).name: r for r in map(json.loads, lines)}


def specs(folder: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: load_spec(p) for p in sorted(folder.rglob("*.json"))
            if p.name != "index.json"}


def files(folder: Path) -> dict[str, str]:
    skip = (REPORT, "index.json")  # the index records file times
    return {str(p.relative_to(folder)): p.read_text(encoding="utf-8")
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name not in skip}


def cli(*args: Any) -> Any:
    result = CliRunner().invoke(main, ["import", *map(str, args)])
    assert "Traceback" not in result.output, result.output
    return result


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("library")
    import_corpus([OPENAPI], folder, workers=1, timeout=30)
    return folder


def test_every_document_has_a_report_line_with_its_status(library):
    lines = report(library)
    assert set(lines) == {p.name for p in OPENAPI.iterdir()}
    failed = {n: r["reason"] for n, r in lines.items() if r["status"] == "failed"}
    assert set(failed) == {"broken.json", "not_an_api.json"}
    assert "invalid JSON at line 2" in failed["broken.json"]
    assert "not an OpenAPI 3 or Swagger 2.0 document" in failed["not_an_api.json"]
    assert all("\n" not in reason for reason in failed.values())
    skipped = lines["webhooks_only.json"]
    assert skipped["status"] == "skipped" and "no operations to import" in skipped["reason"]
    for hard in ("allof_cycle.json", "ref_into_array.json", "empty_anyof.json",
                 "short_phrase.json", "ref_blowup.json"):  # the failure classes of issue 15
        assert lines[hard]["status"] == "imported", lines[hard]
    assert lines["github.json"]["tools"] == GITHUB_OPERATIONS


def test_names_are_readable_unique_and_fit_openai_limits(library):
    written = specs(library)
    assert set(written) >= {"github.issues", "github.pulls", "github.repos", "github.users",
                            "azure.sql_servers", "azure.sql_databases", "hotel_bookings",
                            "city_library", "weather", "weather_v2_0"}
    for name, spec in written.items():
        assert spec["name"] == name and NAME.match(name) and len(name) <= 30
        assert all(len(tool["name"]) <= 32 for tool in spec["tools"])
        qualified = [f"{name.replace('.', '-')}__{t['name']}" for t in spec["tools"]]
        assert all(len(q) <= 64 for q in qualified)
    lines = report(library)  # one API title twice: named by version, never dropped
    assert (lines["weather_v1.json"]["services"], lines["weather_v2.json"]["services"]) == (
        ["weather"], ["weather_v2_0"])


def test_a_large_api_is_split_by_tag_with_no_operation_lost(library):
    github = {n: s for n, s in specs(library).items() if n.startswith("github.")}
    assert all(s["api"] == "github" and len(s["tools"]) <= 50 for s in github.values())
    assert sum(len(s["tools"]) for s in github.values()) == GITHUB_OPERATIONS
    assert not any("related" in s for s in github.values())  # they may meet any service
    issues = {t["name"] for t in github["github.issues"]["tools"]}
    assert {"issues_create", "issues_list_for_repo", "issues_add_labels"} <= issues
    assert "Interact with GitHub Issues" in github["github.issues"]["description"]


def test_the_library_loads_through_the_registry(library):
    assert (library / "index.json").exists()
    registry = Registry.from_paths(library)
    assert {"github.repos", "hotel_bookings", "city_library"} <= set(registry.names())


def test_swagger_documents_convert_to_openapi_3():
    swagger = json.loads((OPENAPI / "hotel_swagger.json").read_text(encoding="utf-8"))
    doc = swagger_to_openapi(swagger)
    assert doc["openapi"].startswith("3.") and doc["servers"] == [
        {"url": "https://api.hotelbook.example/v2"}]
    assert set(doc["components"]["schemas"]) == {"Hotel", "BookingRequest", "Booking"}
    assert doc["components"]["schemas"]["Booking"]["allOf"][0] == {
        "$ref": "#/components/schemas/BookingRequest"}
    book = doc["paths"]["/hotels/{hotelId}/bookings"]["post"]
    assert book["parameters"] == [{"$ref": "#/components/parameters/hotelId"}]
    assert book["requestBody"] == {"required": True, "content": {"application/json": {
        "schema": {"$ref": "#/components/schemas/BookingRequest"}}}}
    assert book["responses"]["201"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Booking"}
    upload = doc["paths"]["/bookings/{bookingId}/documents"]["post"]["requestBody"]
    form = upload["content"]["multipart/form-data"]["schema"]
    assert form["required"] == ["kind"] and form["properties"]["file"]["format"] == "binary"
    assert doc["paths"]["/hotels"]["get"]["parameters"][0] == {
        "name": "city", "in": "query", "required": True, "schema": {"type": "string"}}
    assert swagger["definitions"]["Booking"]["allOf"][0]["$ref"].startswith("#/definitions/")


def test_swagger_and_yaml_documents_import(library):
    written = specs(library)
    hotel = {t["name"]: t for t in written["hotel_bookings"]["tools"]}
    assert list(hotel) == ["search_hotels", "get_hotel", "book_room", "get_booking",
                           "cancel_booking", "upload_guest_document"]
    booking = hotel["book_room"]["parameters"]
    assert {"hotel_id", "guest_name", "guest_email", "check_in", "nights"} <= set(
        booking["properties"])
    assert set(booking["required"]) >= {"hotel_id", "guest_email"}
    assert "file" not in hotel["upload_guest_document"]["parameters"]["properties"]
    library_api = {t["name"] for t in written["city_library"]["tools"]}
    assert library_api == {"search_books", "borrow_book", "return_book"}
    assert report(library)["library_api.yaml"]["warnings"] == [
        "$.paths['x-codegen-contextRoot']: not a path item; skipped"]


def test_a_rerun_skips_finished_documents_and_a_changed_one_keeps_its_name(tmp_path):
    corpus, folder = tmp_path / "corpus", tmp_path / "lib"
    shutil.copytree(OPENAPI, corpus)
    import_corpus([corpus], folder)
    before = files(folder)
    summary = import_corpus([corpus], folder)
    assert files(folder) == before
    imported = {n for n, r in report(folder).items() if "already imported" in r.get("reason", "")}
    assert "github.json" in imported and summary.by_status()["imported"] == 0
    doc = json.loads((corpus / "weather_v1.json").read_text(encoding="utf-8"))
    doc["paths"]["/alerts"] = {"get": {"operationId": "getAlerts", "summary": "Weather alerts",
                                       "responses": {"200": {"description": "OK"}}}}
    (corpus / "weather_v1.json").write_text(json.dumps(doc), encoding="utf-8")
    summary = import_corpus([corpus], folder)
    assert [r.document for r in summary.records if r.status == "imported"] == [
        str(corpus / "weather_v1.json")]
    assert [t["name"] for t in load_spec(folder / "weather" / "weather.json")["tools"]] == [
        "get_forecast", "get_alerts"]


def test_two_workers_write_the_same_library_as_one(library, tmp_path):
    import_corpus([OPENAPI], tmp_path, workers=2, timeout=30)
    assert files(tmp_path) == files(library)


def _slow_on_github(path: Path) -> Converted:
    if path.name == "github.json":
        time.sleep(60)
    return convert_openapi(path)


def _crash_on_github(path: Path) -> Converted:
    if path.name == "github.json":
        os._exit(3)  # a converter that takes its process down
    if path.name == "hotel_swagger.json":
        raise RecursionError("maximum recursion depth exceeded")
    return convert_openapi(path)


def test_a_document_over_time_is_failed_and_the_run_goes_on(tmp_path):
    start = time.monotonic()
    summary = import_corpus([OPENAPI], tmp_path, _slow_on_github, workers=2, timeout=2)
    assert time.monotonic() - start < 40
    lines = report(tmp_path)
    assert lines["github.json"] == {"document": str(OPENAPI / "github.json"),
                                    "status": "failed", "reason": "timed out after 2 s"}
    assert lines["hotel_swagger.json"]["status"] == "imported"
    assert summary.by_status()["imported"] == 11 and not multiprocessing.active_children()


def test_a_crashing_converter_is_a_failed_line(tmp_path):
    import_corpus([OPENAPI], tmp_path, _crash_on_github, workers=2)
    lines = report(tmp_path)
    assert lines["github.json"]["reason"] == "the worker process died (exit code 3)"
    assert lines["hotel_swagger.json"]["reason"] == \
        "RecursionError: maximum recursion depth exceeded"
    assert lines["library_api.yaml"]["status"] == "imported"


def test_an_interrupted_run_resumes(tmp_path):
    seen: list[Record] = []

    def interrupt(record: Record) -> None:
        seen.append(record)
        if len(seen) == 6:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        import_corpus([OPENAPI], tmp_path, workers=2, on_record=interrupt)
    assert not multiprocessing.active_children()
    done = [json.loads(line)["document"] for line in
            (tmp_path / STATE).read_text(encoding="utf-8").splitlines()]
    assert len(done) == sum(r.status == "imported" for r in seen) > 0
    summary = import_corpus([OPENAPI], tmp_path, workers=2)
    skipped = [r for r in summary.records if "already imported" in r.reason]
    assert len(skipped) == len(done) and summary.by_status()["imported"] == 12 - len(done)


def test_documents_over_max_bytes_are_skipped(tmp_path):
    result = cli("openapi", OPENAPI / "github.json", OPENAPI / "weather_v1.json", "-o",
                 tmp_path, "--max-bytes", 5000)
    assert result.exit_code == 0, result.output
    github = report(tmp_path)["github.json"]
    size = (OPENAPI / "github.json").stat().st_size
    assert github["status"] == "skipped" and github["reason"] == \
        f"larger than --max-bytes 5000 ({size} bytes)"
    assert "1 imported, 1 skipped, 0 failed of 2 documents" in result.output


def test_cli_imports_a_folder_with_a_summary(tmp_path):
    result = cli("openapi", OPENAPI, "-o", tmp_path / "lib", "--workers", 2)
    assert result.exit_code == 0, result.output
    assert "12 imported, 1 skipped, 2 failed of 15 documents" in result.output
    assert "failed 1: invalid JSON: Expecting" in result.output
    assert "line N" not in result.output and "'…' codec" not in result.output
    assert f"report: {tmp_path / 'lib' / REPORT}" in result.output


def test_mcp_tools_list_files_and_live_servers_import(tmp_path):
    result = cli("mcp", MCP / "calendar_tools.json", "-o", tmp_path)
    assert result.exit_code == 0, result.output
    from_file = load_spec(tmp_path / "calendar_tools" / "calendar_tools.json")
    result = cli("mcp", "--command", f"{sys.executable} {MCP / 'calendar_server.py'}",
                 "-o", tmp_path)
    assert result.exit_code == 0, result.output
    assert "imported 5 tools" in result.output and "team_calendar" in result.output
    live = load_spec(tmp_path / "team_calendar" / "team_calendar.json")
    assert live["tools"] == from_file["tools"]  # every page of tools/list
    assert {"calendar_tools", "team_calendar"} <= set(Registry.from_paths(tmp_path).names())
    result = cli("mcp", "--command", f"{sys.executable} {MCP / 'calendar_server.py'}",
                 "--name", "calendar")  # one spec to stdout
    assert result.exit_code == 0 and json.loads(result.stdout)["tools"] == from_file["tools"]


def test_a_live_server_that_never_answers_times_out(tmp_path):
    start = time.monotonic()
    result = cli("mcp", "--command", f"{sys.executable} -c 'import time; time.sleep(60)'",
                 "-o", tmp_path, "--timeout", 1)
    assert result.exit_code == 1 and time.monotonic() - start < 10
    assert "no answer to initialize within the time limit" in result.output
    result = cli("mcp", "--command", "no-such-program-here", "-o", tmp_path)
    assert result.exit_code == 1 and "cannot start" in result.output


@pytest.mark.parametrize("args, message", [
    (["openapi", "missing.json", "-o", "lib"], "'missing.json' does not exist"),
    (["openapi", OPENAPI], "importing a folder or several documents writes a library"),
    (["openapi", OPENAPI, "-o", OPENAPI / "github.json"], "is a file; importing several"),
    (["openapi", OPENAPI, "-o", "lib", "--workers", 0], "--workers"),
    (["openapi"], "name at least one document or folder"),
    (["mcp"], "name tools/list files or a --command"),
    (["mcp", MCP / "calendar_tools.json"], "one spec needs --name"),
])
def test_cli_usage_errors_exit_2_without_traceback(args, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = cli(*args)
    assert result.exit_code == 2 and message in result.output, result.output


def test_one_large_document_as_one_spec_says_how_to_split_it():
    result = cli("openapi", OPENAPI / "github.json")
    assert result.exit_code == 1
    assert "69 operations do not fit one service" in result.output and "-o LIBDIR" in \
        result.output


def test_operations_group_by_tag_else_by_path_prefix_none_lost():
    tagged = [Operation(f"/{t}/{i}", (t,)) for t in ("cats", "dogs") for i in range(30)]
    assert [(g, len(m)) for g, m in group_operations(tagged)] == [("cats", 30), ("dogs", 30)]
    untagged = [Operation(f"/v1/{p}/{{id}}/x{i}") for p in ("orders", "users")
                for i in range(40)] + [Operation("/v1/ping")]
    groups = group_operations(untagged)
    assert [g for g, _ in groups] == ["orders", "ping", "users"]
    assert sorted(i for _, m in groups for i in m) == list(range(81))
    big = [Operation(f"/shop/items/{k}/{i}") for k in ("a", "b", "c") for i in range(30)]
    parts = group_operations(big)
    assert all(len(m) <= 50 for _, m in parts) and sum(len(m) for _, m in parts) == 90
    same = [Operation("/rpc") for _ in range(120)]
    assert [len(m) for _, m in group_operations(same)] == [50, 50, 20]
    assert group_operations(tagged[:10]) == [("", list(range(10)))]


@pytest.mark.parametrize("name, split, first", [
    (ApiName("azure.com", "sql-managedInstanceKeys", "SqlManagementClient"), False,
     "azure.sql_managed_keys"),  # the first and last words tell sibling APIs apart
    (ApiName("azure.com", "sql-managedInstanceAdministrators"), False,
     "azure.sql_administrators"),
    (ApiName("", "", "SqlManagementClient"), False, "sql_management"),
    (ApiName("", "", "GitHub v3 REST API"), True, "github"),
    (ApiName("", "", "", "https://api.stripe.com/v1"), False, "stripe"),
    (ApiName("amazonaws.com", "alexaforbusiness"), True, "aws.alexaforbusiness"),
    (ApiName("github.com", "api.github.com"), True, "github"),  # nothing the provider said
    (ApiName("amadeus.com", "amadeus-flight-search"), False, "amadeus.flight_search"),
])
def test_api_namespaces_are_readable(name, split, first):
    candidates = namespaces(name, split)
    assert next(candidates) == first


def test_workers_end_when_the_import_is_killed(tmp_path):
    pids = tmp_path / "pids"
    pids.mkdir()
    script = f"""
import os, time
from pathlib import Path
from compoenv.importers.corpus import import_corpus

def stuck(path):
    (Path({str(pids)!r}) / str(os.getpid())).touch()
    time.sleep(120)

import_corpus([Path({str(OPENAPI)!r})], Path({str(tmp_path / 'lib')!r}), stuck, workers=2,
              timeout=120)
"""
    parent = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 30
        while len(list(pids.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        workers = [int(p.name) for p in pids.iterdir()]
        assert len(workers) == 2
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 10
    while any(_running(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_running(pid) for pid in workers)


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def test_a_large_mcp_server_is_split_by_the_object_its_tools_act_on():
    kinds = "open closed urgent old new shared archived draft paid unpaid late vip".split()
    tools = [{"name": f"{verb}_{kind}_{noun}s", "description": f"{verb} {kind} {noun}s.",
              "inputSchema": {"type": "object", "properties": {}}}
             for noun in ("ticket", "customer") for verb in ("get", "list", "close")
             for kind in kinds]
    api, services, _ = mcp_services({"tools": tools}, "helpdesk")
    assert api.title == "helpdesk"
    assert [(group, len(spec["tools"])) for group, spec in services] == [
        ("customer", 36), ("ticket", 36)]
    assert sorted(t["name"] for _, s in services for t in s["tools"]) == sorted(
        t["name"] for t in tools)


def _too_deep_weather(path: Path) -> Converted:
    converted = convert_openapi(path)
    if path.name != "weather_v1.json":
        return converted
    deep: dict[str, Any] = {"type": "object", "properties": {"leaf": {"type": "string"}}}
    for _ in range(40):
        deep = {"type": "object", "properties": {"inner": deep}}
    spec = converted.services[0][1]
    spec = {**spec, "tools": [{**spec["tools"][0], "returns": deep}]}
    return Converted(converted.api, (("", spec),), converted.warnings)


def test_a_service_the_library_could_not_load_is_a_failed_line(tmp_path):
    import_corpus([OPENAPI / "weather_v1.json", OPENAPI / "weather_v2.json"], tmp_path,
                  _too_deep_weather)
    lines = report(tmp_path)
    assert lines["weather_v1.json"]["status"] == "failed"
    assert "cannot be loaded: schema nests deeper than 32 levels" in lines[
        "weather_v1.json"]["reason"]
    assert lines["weather_v2.json"]["services"] == ["weather"]  # the name is free again
    assert set(Registry.from_paths(tmp_path).names()) == {"weather"}


def test_an_import_where_every_document_failed_exits_non_zero(tmp_path):
    (tmp_path / "a.json").write_text('{"openapi": "3.0.0",', encoding="utf-8")
    (tmp_path / "b.json").write_bytes(b'{"openapi": "3.0.0", "info": "\xff\xfe"}')
    result = cli("openapi", tmp_path / "a.json", tmp_path / "b.json", "-o", tmp_path / "lib")
    assert result.exit_code == 1, result.output
    assert "0 imported, 0 skipped, 2 failed of 2 documents" in result.output
    assert "none of the 2 documents could be imported" in result.output
    assert "failed 1: cannot read: not UTF-8 text" in result.output
    assert "codec" not in result.output and "line N" not in result.output


def test_one_spec_without_o_on_a_terminal_is_summed_up_not_printed(monkeypatch):
    import compoenv.cli.importing as importing

    monkeypatch.setattr(importing, "_terminal", lambda: True)
    result = cli("openapi", OPENAPI / "weather_v1.json", "--name", "weather")
    assert result.exit_code == 0, result.output
    assert len(result.stdout.splitlines()) == 1 and "tools (" in result.stdout
    assert "-o FILE.json" in result.stdout
