"""compoenv verify: a good service passes every check, each kind of broken one fails its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import pytest
from click.testing import CliRunner

from compoenv import ToolError, tool
from compoenv.checks import CHECKS, TargetError, VerifyReport, verify, verify_all
from compoenv.cli import main
from compoenv.crud import find_one, get_or_404
from compoenv.interfaces import Contact, ContactId, PersonName, PhoneNumber
from compoenv.roles import Role
from compoenv.world import World
from envs_library.productivity.contacts import Contacts

# Each broken service is the library's address book with one defect. They live at module level
# so that the seeding check's fresh processes can import them.


class ReadThatWrites(Contacts):
    """Personal address book whose lookup by name also edits the contact it finds."""

    @tool(read_only=True, phrase="look up {name} in my contacts")
    def find_contact(self, name: Annotated[PersonName, Role("contact")]) -> Contact:
        """Find a contact by full name."""
        found = find_one(self.state.contacts.values(), name, lambda c: c.name, "contact name")
        self.state.contacts[found.id] = found.model_copy(update={"title": "Viewed"})
        return found


class SeedBySetOrder(Contacts):
    """Personal address book that seeds its contacts in the order of a set of names."""

    def seed(self, world: World) -> Contacts.State:
        state = super().seed(world)
        names = list({c.name for c in state.contacts.values()})  # order depends on hashing
        by_name = {c.name: c for c in state.contacts.values()}
        kept = [by_name[n] for n in names[:30]]
        return self.State(contacts={c.id: c for c in kept})


class UnsavedPhone(Contacts):
    """Personal address book whose phone update answers with the change but never keeps it."""

    @tool(phrase="update the phone number of contact {contact_id} to {phone}")
    def update_phone(self, contact_id: ContactId,
                     phone: Annotated[PhoneNumber, Role("contact")]) -> Contact:
        """Change a contact's phone number."""
        contact = get_or_404(self.state.contacts, contact_id, "contact id")
        return contact.model_copy(update={"phone": phone})


class CrashOnOddNames(Contacts):
    """Personal address book whose lookup by name crashes on names of odd length."""

    @tool(read_only=True, phrase="look up {name} in my contacts")
    def find_contact(self, name: Annotated[PersonName, Role("contact")]) -> Contact:
        """Find a contact by full name."""
        found = find_one(self.state.contacts.values(), name, lambda c: c.name, "contact name")
        if len(found.name) % 2:
            raise KeyError(found.name)  # the bug: a 500 for half the contacts
        return found


class UnknownIdIs400(Contacts):
    """Personal address book that answers an unknown contact id as bad arguments."""

    @tool(read_only=True, phrase="look up contact {contact_id}")
    def get_contact(self, contact_id: ContactId) -> Contact:
        """Get a contact by id."""
        if contact_id not in self.state.contacts:
            raise ToolError(400, f"Bad contact id {contact_id!r}")
        return self.state.contacts[contact_id]


class UnknownIdIs403(Contacts):
    """Personal address book that answers an unknown contact id with a code agents never get."""

    @tool(read_only=True, phrase="look up contact {contact_id}")
    def get_contact(self, contact_id: ContactId) -> Contact:
        """Get a contact by id."""
        if contact_id not in self.state.contacts:
            raise ToolError(403, f"Contact {contact_id!r} is not yours")
        return self.state.contacts[contact_id]


class ContradictsItself(Contacts):
    """Personal address book whose lookup by id shows a contact unlike its search does."""

    @tool(read_only=True, phrase="look up contact {contact_id}")
    def get_contact(self, contact_id: ContactId) -> Contact:
        """Get a contact by id."""
        contact = get_or_404(self.state.contacts, contact_id, "contact id")
        return contact.model_copy(update={"city": "Atlantis"})  # the bug: another city


BROKEN = {ReadThatWrites: ("reads", "find_contact"),
          ContradictsItself: ("consistency", "'Atlantis'"),
          SeedBySetOrder: ("seeding", "two fresh processes seeded different states"),
          UnsavedPhone: ("writes", "update_phone"),
          CrashOnOddNames: ("fuzz", "-> 500"),
          UnknownIdIs400: ("errors", "expected 404"),
          UnknownIdIs403: ("errors", "code 403 (Contact 'C-99999' is not yours); allowed: "
                                     "[400, 404, 409, 422]")}


@pytest.fixture(scope="module")
def reports() -> dict[Any, VerifyReport]:
    """The library's implemented services (by name) and the broken ones (by class), verified
    once, together: one pair of fresh processes seeds them all."""
    from compoenv.cli.verify import implemented

    services = [*implemented(), Contacts, *BROKEN]
    return dict(zip(services, verify_all(services)))


def test_every_implemented_service_of_the_library_passes_every_check(reports):
    library = [r for key, r in reports.items() if isinstance(key, str)]
    assert len(library) >= 9
    failed = [r.summary() for r in library if not r.ok]
    assert not failed, "\n".join(failed)


def test_a_library_service_passes_every_check(reports):
    report = reports[Contacts]
    assert report.ok, report.summary()
    assert [c.name for c in report.checks] == list(CHECKS)
    assert report.summary() == f"contacts: all {len(CHECKS)} checks pass"


@pytest.mark.parametrize("broken", list(BROKEN), ids=lambda c: c.__name__)
def test_each_broken_service_fails_exactly_its_own_check_with_a_useful_detail(broken, reports):
    check, detail = BROKEN[broken]
    report = reports[broken]
    assert [c.name for c in report.failed] == [check], report.summary()
    assert detail in report.failed[0].details[0]
    assert report.summary().startswith(f"{check}: ")


def test_a_read_that_writes_is_named_with_its_arguments_and_what_changed(reports):
    detail = reports[ReadThatWrites].failed[0].details[0]
    assert detail.startswith("find_contact(name=") and "changed the state (contacts)" in detail


def test_a_write_not_read_back_names_the_read_that_misses_it(reports):
    detail = reports[UnsavedPhone].failed[0].details[0]
    assert "get_contact(contact_id=" in detail and "shows" in detail and "nowhere" in detail


def test_the_report_as_json_has_one_entry_per_check(reports):
    doc = json.loads(json.dumps(reports[UnknownIdIs400].to_json()))
    assert doc["service"] == "contacts" and doc["ok"] is False
    assert [c["name"] for c in doc["checks"]] == list(CHECKS)
    assert all(set(c) == {"name", "ok", "details", "seconds"} for c in doc["checks"])


def _spec_of(cls: type, tmp_path: Path, change: Any = None) -> Path:
    """``cls`` written out as a spec file (what a spec for it to implement looks like)."""
    tools = [{"name": s.name, "description": s.description, "read_only": s.read_only,
              "phrase": s.phrase, "parameters": s.parameters, "returns": s.returns}
             for s in cls.tool_specs().values()]
    spec = json.loads(json.dumps({"name": cls.name, "domain": cls.domain,  # a copy to change
                                  "description": cls.description(), "tools": tools}))
    if change:
        change(spec)
    path = tmp_path / f"{cls.name}.json"
    path.write_text(json.dumps(spec))
    return path


def test_the_schemas_check_compares_the_tools_with_a_spec(tmp_path):
    assert verify(Contacts, spec=_spec_of(Contacts, tmp_path), checks=["schemas"]).ok

    def drift(spec: dict[str, Any]) -> None:
        tools = {t["name"]: t for t in spec["tools"]}
        tools["update_phone"]["parameters"]["required"] = ["contact_id"]
        tools["get_contact"]["read_only"] = False
        spec["tools"].append({**tools["get_contact"], "name": "delete_contact"})

    report = verify(Contacts, spec=_spec_of(Contacts, tmp_path, drift), checks=["schemas"])
    details = report.checks[0].details
    assert "delete_contact: in the spec" in details[0]
    assert any(d.startswith("update_phone: required parameters ['contact_id', 'phone'], the "
                            "spec requires ['contact_id']") for d in details)
    assert any(d.startswith("get_contact: read_only=True") for d in details)


def test_a_spec_file_verifies_the_spec_service_against_itself():
    report = verify("envs_library/specs/web_search.json", checks=["schemas", "errors"])
    assert report.ok and report.service == "web_search"
    assert "note: the service is the spec" in report.checks[0].details[0]


def test_a_file_that_does_not_import_is_a_failed_load_not_a_usage_error(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("import compoenv_no_such_module\n")
    report = verify(broken)
    assert not report.ok and report.checks[0].name == "load"
    assert "ModuleNotFoundError" in report.summary()
    two = tmp_path / "two.py"
    two.write_text("from envs_library.finance.bank import Bank\n"
                   "from envs_library.productivity.contacts import Contacts\n\n\n"
                   "class A(Bank):\n    name = 'bank_a'\n\n\n"
                   "class B(Contacts):\n    name = 'contacts_b'\n")
    assert "exactly one Service subclass with a name, found 2 (A, B)" in verify(two).summary()


def test_unknown_services_and_checks_are_target_errors():
    with pytest.raises(TargetError, match="Unknown service 'contactz'"):
        verify("contactz")
    with pytest.raises(TargetError, match="Did you mean 'fuzz'"):
        verify("contacts", checks=["fuz"])


def _cli(*args: str) -> Any:
    return CliRunner().invoke(main, ["verify", *args])


def test_cli_exits_0_when_every_check_passes_and_prints_json():
    result = _cli("weather", "--check", "reads", "--check", "errors", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["ok"] and [c["name"] for c in doc["checks"]] == ["reads", "errors"]


def test_cli_exits_1_when_a_check_fails(tmp_path):
    module = tmp_path / "unknown_id_400.py"
    module.write_text(
        "from compoenv import ToolError, tool\n"
        "from compoenv.interfaces import Contact, ContactId\n"
        "from envs_library.productivity.contacts import Contacts\n\n\n"
        "class Strict(Contacts):\n"
        "    @tool(read_only=True, phrase='look up contact {contact_id}')\n"
        "    def get_contact(self, contact_id: ContactId) -> Contact:\n"
        "        '''Get a contact by id.'''\n"
        "        if contact_id not in self.state.contacts:\n"
        "            raise ToolError(409, 'no such contact')\n"
        "        return self.state.contacts[contact_id]\n")
    result = _cli(str(module), "--check", "errors")
    assert result.exit_code == 1, result.output
    assert "FAIL contacts" in result.output and "expected 404" in result.output
    both = _cli(str(module), "weather", "--check", "errors", "--json")
    doc = json.loads(both.output)
    assert both.exit_code == 1 and doc["ok"] is False
    assert [r["ok"] for r in doc["reports"]] == [False, True]


@pytest.mark.parametrize("args, message", [
    (("contactz",), "Unknown service 'contactz'"),
    (("missing_file.py",), "missing_file.py: no such file"),
    (("contacts", "--check", "speed"), "Unknown check 'speed'"),
    ((), "name a service or file to verify, or give --all"),
])
def test_cli_usage_errors_exit_2_without_a_traceback(args, message):
    result = _cli(*args)
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_a_task_file_is_verified_task_by_task_not_taken_for_a_service_name(tmp_path, tasks50):
    from compoenv.task import save_tasks

    good = [t for t in tasks50 if t.answer][:2]
    leaked = good[1].model_copy(update={"instruction": f"{good[1].instruction} "
                                                         f"({good[1].answer[0]})"})
    save_tasks(good, tmp_path / "good.jsonl")
    save_tasks([good[0], leaked], tmp_path / "bad.jsonl")
    (tmp_path / "broken.jsonl").write_text('{"id": "x"}\n', encoding="utf-8")
    ok = CliRunner().invoke(main, ["verify", str(tmp_path / "good.jsonl")])
    assert ok.exit_code == 0 and "2 of 2 tasks pass" in ok.output, ok.output
    bad = CliRunner().invoke(main, ["verify", str(tmp_path / "bad.jsonl"), "--json"])
    report = json.loads(bad.output)
    assert bad.exit_code == 1 and report["tasks"] == 2
    assert [(f["task"], f["reason"]) for f in report["failed"]] == [(leaked.id, "leak")]
    broken = CliRunner().invoke(main, ["verify", str(tmp_path / "broken.jsonl")])
    assert broken.exit_code == 1 and "cannot be played" in broken.output
    assert "broken.jsonl:1" in broken.output and "Unknown service" not in broken.output
    mixed = CliRunner().invoke(main, ["verify", "bank", str(tmp_path / "good.jsonl")])
    assert mixed.exit_code == 2 and "task files" in mixed.output
