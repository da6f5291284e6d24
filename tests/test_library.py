"""Tests for libraries: folders of specs and modules, their index, lazy registries, clashes."""

from __future__ import annotations

import functools
import json
import os
import pickle
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

import compoenv.library as library_module
import compoenv.registry as registry_module
from compoenv import Service, tool
from compoenv.agents import OracleAgent
from compoenv.cli import main
from compoenv.compose import Composer, ComposerConfig
from compoenv.env import CompoWorldEnv
from compoenv.library import (INDEX_NAME, TRUST_ENV, LibraryError, UntrustedCode,
                              open_library, write_index)
from compoenv.registry import LIBRARY_ENV, Registry, RegistryError
from compoenv.service import MAX_QUALIFIED_NAME, qualified_name, split_qualified
from compoenv.signature import ToolSignature
from compoenv.task import Task, save_tasks
from compoenv.worldmodel.spec import SpecError


def spec(name: str, tools: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"name": name, "domain": "dev", "description": f"The {name} service of a test.",
            **extra, "tools": tools}


LIST_REPOS = {"name": "list_repos", "description": "List the repositories of a person.",
              "read_only": True,
              "parameters": {"type": "object", "required": ["owner"], "properties": {
                  "owner": {"type": "string", "x-interface": "PersonName"}}},
              "returns": {"type": "array", "items": {"type": "object", "properties": {
                  "id": {"type": "string", "x-key": "repo"}, "full_name": {"type": "string"}}}}}
OPEN_ISSUE = {"name": "open_issue", "description": "Open an issue in a repository.",
              "read_only": False, "phrase": "open an issue titled {title}",
              "parameters": {"type": "object", "required": ["repo_id", "title"], "properties": {
                  "repo_id": {"type": "string", "x-key": "repo"}, "title": {"type": "string"}}},
              "returns": {"$ref": "#/$defs/issue"}}
REPOS = spec("github.repos", [LIST_REPOS], api="github", related=["github.issues"])
# a shared schema, and an entity given by its interface alone (expanded when loaded)
ISSUES = spec("github.issues", [OPEN_ISSUE], api="github", related=["github.repos"], **{
    "$defs": {"issue": {"type": "object", "properties": {
        "number": {"type": "integer"}, "author": {"x-interface": "Contact"}}}}})
# two implemented services of the built-in library, under dotted names of a library's own
PEOPLE = '''"""Acme's address book and mail."""
from envs_library.productivity.contacts import Contacts
from envs_library.productivity.email import Email


class AcmeContacts(Contacts):
    """Acme's address book."""

    name = "acme.contacts"
    related = ("acme.mail",)


class AcmeMail(Email):
    """Acme's mail."""

    name = "acme.mail"
    related = ("*",)
'''


def make_library(root: Path, specs: dict[str, dict[str, Any]] | None = None,
                 modules: dict[str, str] | None = None) -> Path:
    """A library folder: spec files and Python modules at the relative paths given."""
    default = {"github/repos.json": REPOS, "issues.json": ISSUES}
    for rel, data in (default if specs is None else specs).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(json.dumps(data), encoding="utf-8")
    for rel, text in ({"people.py": PEOPLE} if modules is None else modules).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def lib(tmp_path: Path) -> Path:
    return make_library(tmp_path / "acme")


@pytest.fixture(autouse=True)
def fresh_default(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A fresh default registry, and the Python modules of these tests' libraries trusted
    (the tests of untrusted code take the trust away)."""
    monkeypatch.setenv(TRUST_ENV, "1")
    registry_module._DEFAULT.clear()
    yield
    registry_module._DEFAULT.clear()


NAMES = ["acme.contacts", "acme.mail", "github.issues", "github.repos"]


# -- a library folder and its index ----------------------------------------------------------
def test_a_library_holds_specs_at_any_depth_and_python_services(lib: Path) -> None:
    registry = Registry.from_paths(lib)
    assert registry.names() == NAMES and len(registry) == 4
    index = json.loads((lib / INDEX_NAME).read_text())
    assert set(index["files"]) == {"github/repos.json", "issues.json", "people.py"}
    assert all(len(v) == 2 for v in index["files"].values())  # size, mtime
    entry = next(s for s in index["services"] if s["name"] == "github.repos")
    assert entry["file"] == "github/repos.json" and entry["kind"] == "spec"
    assert entry["api"] == "github" and entry["related"] == ["github.issues"]
    assert entry["domain"] == "dev" and entry["version"] == "1" and entry["description"]
    assert [t["name"] for t in entry["tools"]] == ["list_repos"]
    kinds = {s["name"]: s["kind"] for s in index["services"]}
    assert kinds["acme.contacts"] == "python" and kinds["github.issues"] == "spec"


def test_index_signatures_are_those_of_the_built_services(lib: Path) -> None:
    from_index = Registry.from_paths(lib)
    built = Registry.from_paths(lib)
    for name in NAMES:
        signatures = from_index.signatures([name])
        assert not from_index.loaded(name)
        assert signatures == [ToolSignature.of(s) for s in built.get(name).tool_specs().values()]
    joins = {s.qualified_name: s for s in from_index.signatures()}
    assert joins["github-repos__list_repos"].outputs[0].interface == \
        joins["github-issues__open_issue"].inputs[0].interface  # resource ids of one api
    assert {"Contact", "EmailAddress"} <= {
        s.interface for s in joins["github-issues__open_issue"].outputs}


def test_a_fresh_index_is_read_without_parsing_a_file(lib: Path, monkeypatch) -> None:
    write_index(lib)

    def parse(*args: Any) -> Any:
        raise AssertionError("a fresh index was not used")

    monkeypatch.setattr(library_module, "_parse", parse)
    opened = open_library(lib)
    assert opened.rebuilt is None and sorted(s.name for s in opened.services) == NAMES
    assert Registry.from_paths(lib).names() == NAMES


def test_a_stale_index_is_rebuilt_parsing_only_what_changed(lib: Path, monkeypatch) -> None:
    write_index(lib)
    parsed: list[str] = []
    real = library_module._parse
    monkeypatch.setattr(library_module, "_parse",
                        lambda root, rel, *trust: parsed.append(rel) or real(root, rel, *trust))
    (lib / "issues.json").write_text(json.dumps({**ISSUES, "tools": [OPEN_ISSUE, {
        **OPEN_ISSUE, "name": "close_issue", "description": "Close an issue."}]}))
    (lib / "github" / "repos.json").unlink()
    make_library(lib / "more", {"pulls.json": spec("github.pulls", [LIST_REPOS])}, {})
    opened = open_library(lib)
    assert opened.rebuilt == "stale: 1 added, 1 removed, 1 changed"
    assert sorted(parsed) == ["issues.json", "more/pulls.json"]
    assert sorted(s.name for s in opened.services) == [
        "acme.contacts", "acme.mail", "github.issues", "github.pulls"]
    assert open_library(lib).rebuilt is None  # the rebuilt index was written
    assert [t.name for t in Registry.from_paths(lib).info("github.issues").tools] == [
        "open_issue", "close_issue"]


@pytest.mark.parametrize("index, why", [
    ("{not json", "corrupt"),
    ('{"format": 1}', "corrupt"),
    ('{"format": 99, "files": {}, "services": []}', "corrupt"),
    ('{"format": 1, "files": {}, "services": [{"name": "x", "file": "gone.json", "kind": '
     '"spec", "domain": "d", "description": "d", "version": "1", "related": [], "tools": []}]}',
     "corrupt"),
])
def test_a_corrupt_index_is_rebuilt(lib: Path, index: str, why: str) -> None:
    (lib / INDEX_NAME).write_text(index)
    opened = open_library(lib)
    assert opened.rebuilt is not None and opened.rebuilt.startswith(why)
    assert str(lib / INDEX_NAME) in opened.rebuilt
    assert sorted(s.name for s in opened.services) == NAMES
    assert open_library(lib).rebuilt is None


def test_a_library_that_cannot_be_written_opens_from_an_index_built_in_memory(
        lib: Path, monkeypatch) -> None:
    def read_only(*args: Any) -> Any:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(library_module, "_write", read_only)
    opened = open_library(lib)
    assert opened.rebuilt == "missing; not written: Permission denied"
    assert Registry.from_paths(lib).names() == NAMES and not (lib / INDEX_NAME).exists()


def test_a_file_that_changed_under_its_index_fails_naming_the_file(lib: Path) -> None:
    registry = Registry.from_paths(lib)
    (lib / "issues.json").write_text(json.dumps({**ISSUES, "name": "gitlab.issues"}))
    with pytest.raises(LibraryError, match=r"issues\.json: does not declare service "
                                           r"'github\.issues'.*compoenv library index"):
        registry.get("github.issues")


def test_a_bad_file_fails_naming_it(tmp_path: Path) -> None:
    bad = make_library(tmp_path / "bad", {"broken.json": {"name": "x"}}, {})
    with pytest.raises(SpecError, match=r"broken\.json"):
        Registry.from_paths(bad)
    failing = make_library(tmp_path / "failing", {}, {"svc.py": "raise RuntimeError('boom')"})
    with pytest.raises(LibraryError, match=r"svc\.py: importing it failed: RuntimeError: boom"):
        Registry.from_paths(failing)
    with pytest.raises(LibraryError, match="no such library"):
        Registry.from_paths(tmp_path / "nowhere")


def test_files_and_folders_starting_with_a_dot_or_underscore_are_not_read(lib: Path) -> None:
    make_library(lib, {"_drafts/x.json": {"name": "x"}, ".hidden.json": {}},
                 {"_helpers.py": "raise RuntimeError"})
    assert Registry.from_paths(lib).names() == NAMES


def test_a_single_spec_or_module_file_is_a_library(lib: Path) -> None:
    registry = Registry.from_paths(lib / "issues.json", lib / "people.py")
    assert registry.names() == ["acme.contacts", "acme.mail", "github.issues"]


# -- laziness ---------------------------------------------------------------------------------
def test_services_are_built_only_when_used(lib: Path) -> None:
    write_index(lib)
    for name in [m for m in sys.modules if m.startswith("compoenv_library_people_")]:
        del sys.modules[name]  # the module was imported to index it
    registry = Registry.from_paths(lib)
    registry.names(), registry.domains(), registry.signatures(), len(registry)
    registry.fingerprint(NAMES), registry.related("github.repos", "acme.mail")
    assert not any(registry.loaded(n) for n in NAMES)
    assert not any(m.startswith("compoenv_library_people_") for m in sys.modules)
    assert registry.spec("github-repos__list_repos").name == "list_repos"
    assert [n for n in NAMES if registry.loaded(n)] == ["github.repos"]
    assert registry.get("acme.mail").name == "acme.mail"
    assert [n for n in NAMES if registry.loaded(n)] == ["acme.mail", "github.repos"]


# -- clashes ----------------------------------------------------------------------------------
def test_clashing_names_are_namespaced_never_dropped(tmp_path: Path, lib: Path) -> None:
    other = make_library(tmp_path / "Other APIs")
    third = make_library(tmp_path / "more" / "other_apis", modules={})
    registry = Registry.from_paths(lib, other, third)
    assert len(registry) == 10
    assert {n for n in registry.names() if n.startswith("other_apis.")} == {
        f"other_apis.{n}" for n in NAMES}
    assert {n for n in registry.names() if n.startswith("other_apis_2.")} == {
        "other_apis_2.github.issues", "other_apis_2.github.repos"}
    renamed = registry.renamed["other_apis.github.issues"]
    assert renamed.original == "github.issues"
    assert renamed.file == str(other / "issues.json")
    # a renamed library's services follow each other, not the first library's
    assert registry.info("other_apis.github.issues").related == ("other_apis.github.repos",)
    assert registry.get("other_apis.acme.contacts").related == ("other_apis.acme.mail",)
    assert registry.info("github.issues").related == ("github.repos",)
    spec_ = registry.spec("other_apis_2-github-issues__open_issue")
    assert spec_.service == "other_apis_2.github.issues"
    assert spec_.inputs == registry.spec("github-issues__open_issue").inputs  # same api keys
    contacts = registry.get("other_apis.acme.contacts")
    assert "other_apis-acme-contacts__find_contact" in {
        s.qualified_name for s in contacts.tool_specs().values()}


def test_duplicates_within_one_library_are_namespaced(tmp_path: Path) -> None:
    root = make_library(tmp_path / "corpus", {"a/issues.json": ISSUES, "b/issues.json": ISSUES,
                                              "c/issues.json": ISSUES}, {})
    assert Registry.from_paths(root).names() == [
        "corpus.github.issues", "corpus_2.github.issues", "github.issues"]


def test_a_namespaced_name_is_cut_to_fit_the_length_limit(tmp_path: Path) -> None:
    long_tool = {**LIST_REPOS, "name": "list_repositories_of_an_owner_xy"}  # 32 characters
    name = "sql_management_client_services"  # 30 characters
    first = make_library(tmp_path / "first", {"s.json": spec(name, [long_tool])}, {})
    second = make_library(tmp_path / "second_library", {"s.json": spec(name, [long_tool])}, {})
    registry = Registry.from_paths(first, second)
    (renamed,) = registry.renamed
    qualified = registry.spec(qualified_name(renamed, long_tool["name"])).qualified_name
    assert renamed.startswith("second_library.") and len(qualified) <= MAX_QUALIFIED_NAME


def test_a_class_clashing_with_a_library_service_is_an_error(lib: Path) -> None:
    registry = Registry.from_paths(lib)
    clash = type("Repos", (Service,), {"name": "github.repos", "__module__": "mine"})
    with pytest.raises(RegistryError, match=r"Duplicate service name 'github\.repos'.*repos"):
        registry.add(clash)


def test_a_registered_module_of_a_library_is_one_service_whichever_loads_first(
        tmp_path: Path, monkeypatch) -> None:
    """A module written as the README shows (``@register``) and loaded with ``--library``: the
    class ``@register`` added when the module was imported and the library's own entry are one
    service, under its own name, never also ``<library>.<name>`` beside itself."""
    monkeypatch.setattr(registry_module, "_USER", dict(registry_module._USER))
    root = make_library(tmp_path / "kennel_lib", {}, {"kennel.py": (
        "from compoenv import Service, State, tool\n"
        "from compoenv.registry import register\n\n\n"
        "@register\nclass Kennel(Service):\n"
        "    \"\"\"Boarding for pets.\"\"\"\n\n"
        "    name = \"kennel_board\"\n    domain = \"pets\"\n\n"
        "    class State(State):\n        nights: int = 0\n\n"
        "    def seed(self, world):\n        return self.State()\n\n"
        "    @tool(read_only=True)\n    def nights(self) -> int:\n"
        "        \"\"\"Nights booked.\"\"\"\n        return self.state.nights\n")})
    first = Registry.default([root])  # the library first: its module imported as it is built
    first.get("kennel_board")
    assert "kennel_board" in registry_module._USER
    registry_module._DEFAULT.clear()
    again = Registry.default([root])  # now @register has run: the class comes first
    names = [n for n in again.names() if "kennel" in n]
    assert names == ["kennel_board"] and again.get("kennel_board") is first.get("kennel_board")


# -- default registry, COMPOENV_LIBRARY, pickling ---------------------------------------------
def test_compoenv_library_adds_libraries_to_the_default_registry(lib: Path, tmp_path: Path,
                                                                  monkeypatch) -> None:
    builtin = set(Registry.default().names())
    kinds = {n: Registry.default().info(n).kind for n in ("contacts", "ads_manager")}
    assert kinds == {"contacts": "class", "ads_manager": "spec"}
    other = make_library(tmp_path / "other", {"x.json": spec("tracker", [LIST_REPOS])}, {})
    monkeypatch.setenv(LIBRARY_ENV, os.pathsep.join([str(lib), str(other)]))
    registry = Registry.default()
    assert set(registry.names()) == builtin | set(NAMES) | {"tracker"}
    assert Registry.default() is registry
    monkeypatch.delenv(LIBRARY_ENV)
    assert set(Registry.default().names()) == builtin


def test_registries_pickle_by_their_libraries(lib: Path) -> None:
    registry = Registry.from_paths(lib)
    registry.get("github.repos")  # a class made from a spec file: not picklable itself
    assert pickle.loads(pickle.dumps(registry)).names() == NAMES
    default = Registry.default([lib])
    copy = pickle.loads(pickle.dumps(default))
    assert copy is default  # the same process: the cached default
    factory = pickle.loads(pickle.dumps(functools.partial(Registry.default, (str(lib),))))
    assert factory() is default


# -- the CLI ----------------------------------------------------------------------------------
def test_library_option_selects_libraries_for_one_command(lib: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["services", "--library", str(lib), "--json"])
    assert result.exit_code == 0, result.output
    assert {"github.repos", "acme.contacts", "contacts"} <= {
        s["name"] for s in json.loads(result.output)}
    assert LIBRARY_ENV not in os.environ  # only for the command
    other = make_library(tmp_path / "other")
    result = runner.invoke(main, ["services", "--library", str(lib), "--library", str(other)],
                           terminal_width=200)
    assert result.exit_code == 0 and "other.github.repos" in result.output
    bad = make_library(tmp_path / "bad", {"broken.json": {"name": "x"}}, {})
    result = runner.invoke(main, ["graph", "--library", str(bad)])
    assert result.exit_code == 2 and "Invalid value for '--library'" in result.output
    assert "broken.json" in result.output and "Traceback" not in result.output
    assert LIBRARY_ENV not in os.environ


def test_library_index_command_writes_the_index(lib: Path) -> None:
    result = CliRunner().invoke(main, ["library", "index", str(lib)])
    assert result.exit_code == 0, result.output
    assert "4 services" in result.output and (lib / INDEX_NAME).is_file()
    assert open_library(lib).rebuilt is None


# -- dotted names, end to end -----------------------------------------------------------------
@given(st.from_regex(r"[a-z][a-z0-9]{0,6}(_[a-z0-9]{1,4}){0,2}(\.[a-z][a-z0-9]{0,6}){0,2}",
                     fullmatch=True),
       st.from_regex(r"[a-z][a-z0-9_]{0,20}", fullmatch=True))
def test_qualified_names_split_back_into_service_and_tool(service: str, tool_name: str) -> None:
    qualified = qualified_name(service, tool_name)
    assert "." not in qualified and split_qualified(qualified) == (service, tool_name)


def test_a_tool_name_over_the_limit_is_an_error_naming_service_and_tool() -> None:
    class Long(Service):
        name = "a_rather_long_service.name"

        @tool
        def a_tool_whose_name_is_far_too_long_for_any_agent(self) -> int:
            """Return one."""
            return 1

    with pytest.raises(TypeError, match=r"'a_tool_whose_name_is_far_too_long_for_any_agent' "
                                        r"of service 'a_rather_long_service\.name'.*64"):
        Long.tool_specs()


@pytest.fixture
def dotted_tasks(lib: Path) -> list[Task]:
    """Tasks composed over a library of dotted services only."""
    registry = Registry.from_paths(lib)
    tasks = list(Composer(registry, ComposerConfig(scenarios=())).generate(3, seed=1))
    assert all(set(t.services) <= set(NAMES) for t in tasks)
    assert any(c.name.startswith("acme-") for t in tasks for c in t.solution)
    return tasks


@pytest.mark.parametrize("mode", ["direct", "gateway"])
def test_dotted_services_compose_and_play(lib: Path, dotted_tasks: list[Task], mode: str,
                                          tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    save_tasks(dotted_tasks, path)
    env = CompoWorldEnv(str(path), mode=mode, library=lib)
    for i in range(len(dotted_tasks)):
        obs, info = env.reset(options={"index": i})
        agent = OracleAgent()
        agent.reset(obs, info)
        done, reward = False, 0.0
        while not done:
            obs, reward, term, trunc, info = env.step(agent.act(obs, info))
            done = term or trunc
        assert reward == 1.0, info.get("rubric")


def test_gateway_lists_dotted_services_and_takes_their_dashed_form(lib: Path) -> None:
    env = CompoWorldEnv([{"id": "t", "instruction": "Open an issue.", "services":
                          ["github.issues", "github.repos"], "seed": 0, "date": "2026-03-16",
                          "solution": [], "rubric": [], "domain": "dev", "hops": 0}],
                        mode="gateway", distractors=0, registry=Registry.from_paths(lib))
    env.reset()

    def call(name: str, **arguments: Any) -> dict[str, Any]:
        obs = env.step(json.dumps({"name": name, "arguments": arguments}))[0]
        return json.loads(obs.split("<tool_response>\n", 1)[1].rsplit("\n</tool_response>")[0])

    assert call("list_services")["data"]["services"] == ["github.issues", "github.repos"]
    listed = call("list_tools", service="github-repos")["data"]
    assert listed["service"] == "github.repos"
    assert listed["tools"][0]["name"] == "github-repos__list_repos"
    result = call("call_tool", tool_name="github-repos__list_repos",
                  arguments={"owner": "Ada Lovelace"})
    assert result["success"] is True and result.get("simulated")


def test_a_task_set_stays_playable_with_the_same_libraries(lib: Path, tmp_path: Path) -> None:
    other = make_library(tmp_path / "other", {}, None)
    registry = Registry.from_paths(lib, other)
    tasks = list(Composer(registry, ComposerConfig(
        scenarios=(), services=("other.acme.contacts", "other.acme.mail"))).generate(2, seed=3))
    path = tmp_path / "tasks.jsonl"
    save_tasks(tasks, path)
    assert all(c.name.startswith("other-acme-") for t in tasks for c in t.solution)
    result = CliRunner().invoke(main, ["demo", "--tasks", str(path), "--library", str(lib),
                                       "--library", str(other), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["oracle_mean"] == 1.0
    result = CliRunner().invoke(main, ["demo", "--tasks", str(path), "--library", str(other)])
    assert result.exit_code == 1  # the first service the tasks need and the library lacks:
    assert re.search(r"Unknown .*'other\.acme\.(contacts|mail)'", result.output), result.output


# -- Python modules are code: imported only when trusted ------------------------------------

DORMANT = '''from pathlib import Path
Path(__file__).with_name("ran.txt").write_text("the module ran")
'''


def test_an_untrusted_library_with_modules_is_refused_before_any_code_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TRUST_ENV)
    root = make_library(tmp_path / "acme", modules={"people.py": PEOPLE, "dormant.py": DORMANT})
    with pytest.raises(UntrustedCode, match="holds Python modules .*--trust-code"):
        Registry.from_paths(root)
    with pytest.raises(UntrustedCode):
        open_library(root / "dormant.py")
    result = CliRunner().invoke(main, ["services", "--library", str(root)])
    assert result.exit_code == 1 and "--trust-code" in result.output, result.output
    assert "Traceback" not in result.output
    result = CliRunner().invoke(main, ["library", "index", str(root)])
    assert result.exit_code == 1 and "--trust-code" in result.output, result.output
    assert not (root / "ran.txt").exists() and not (root / INDEX_NAME).exists()
    # a library of specs alone needs no trust
    specs = make_library(tmp_path / "specs", modules={})
    assert Registry.from_paths(specs).names() == ["github.issues", "github.repos"]


def test_trusted_code_loads_by_flag_argument_or_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TRUST_ENV)
    root = make_library(tmp_path / "acme")
    assert Registry.from_paths(root, trust_code=True).names() == NAMES
    for args in (["services", "--trust-code", "--library", str(root), "--json"],
                 ["services", "--library", str(root), "--trust-code", "--json"]):
        registry_module._DEFAULT.clear()
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        assert {"acme.contacts", "acme.mail"} <= {s["name"] for s in json.loads(result.output)}
    assert TRUST_ENV not in os.environ  # the trust ends with the command
    result = CliRunner().invoke(main, ["library", "index", "--trust-code", str(root)])
    assert result.exit_code == 0 and "4 services" in result.output, result.output


def test_a_synthesized_modules_provenance_record_is_not_read_as_a_spec(lib: Path) -> None:
    (lib / "people.provenance.json").write_text(json.dumps(
        {"service": "acme.contacts", "model": "coder", "rounds": 1, "accepted": True}))
    assert Registry.from_paths(lib).names() == NAMES
