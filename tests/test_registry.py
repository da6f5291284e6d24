"""Tests for compoenv.registry: built-in discovery, @register, entry points, lookups."""

from __future__ import annotations

import sys
import types
from typing import Any, Iterator

import pytest

import compoenv
import compoenv.registry as registry_module
from compoenv import Service, State, World, tool
from compoenv.registry import ENTRY_POINT_GROUP, Registry, RegistryError, register


class Notes(Service):
    """A user service."""

    name = "notes"
    domain = "testing"

    class State(State):
        notes: list[str] = []

    @tool
    def add_note(self, text: str) -> int:
        """Add a note."""
        self.state.notes.append(text)
        return len(self.state.notes)

    @tool(read_only=True)
    def count_notes(self) -> int:
        """Count notes."""
        return len(self.state.notes)


class OtherNotes(Service):
    """Same name, different class."""

    name = "notes"


class Pager(Service):
    """A third-party service shipped through an entry point."""

    name = "pager"
    domain = "thirdparty"

    @tool(read_only=True)
    def page_someone(self, who: str) -> str:
        """Page someone."""
        return f"paged {who}"


class FakeEntryPoint:
    """What importlib.metadata.entry_points(group=...) yields: name, value, load()."""

    def __init__(self, name: str, target: Any) -> None:
        self.name, self.value, self.group = name, f"fake:{name}", ENTRY_POINT_GROUP
        self._target = target

    def load(self) -> Any:
        return self._target


@pytest.fixture(autouse=True)
def fresh_default(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test starts and ends with no cached default registry and no user services."""
    registry_module._DEFAULT.clear()
    monkeypatch.setattr(registry_module, "_USER", {})
    yield
    registry_module._DEFAULT.clear()


def fake_entry_points(monkeypatch: pytest.MonkeyPatch, *eps: FakeEntryPoint) -> list[str]:
    groups: list[str] = []

    def entry_points(*, group: str) -> list[FakeEntryPoint]:
        groups.append(group)
        return list(eps) if group == ENTRY_POINT_GROUP else []

    monkeypatch.setattr(registry_module, "entry_points", entry_points)
    return groups


def test_default_loads_the_builtin_library():
    reg = Registry.default()
    assert len(reg) >= 8
    assert len(reg.domains()) >= 4
    assert {"contacts", "email", "calendar", "bank"} <= set(reg.names())
    assert reg.names() == sorted(reg.names())
    assert all(issubclass(cls, Service) for cls in reg)


def test_default_is_cached():
    assert Registry.default() is Registry.default()


def test_domains_group_service_names():
    domains = Registry.default().domains()
    assert "contacts" in domains["productivity"]
    assert sum(len(v) for v in domains.values()) == len(Registry.default())


def test_get_returns_the_class_and_contains_knows_names():
    reg = Registry.default()
    contacts = reg.get("contacts")
    assert contacts.name == "contacts" and "contacts" in reg and "nope" not in reg
    assert isinstance(contacts(World(0)), Service)


def test_unknown_service_suggests_close_names():
    with pytest.raises(RegistryError, match=r"Unknown service 'contcts'\. Did you mean 'contacts'"):
        Registry.default().get("contcts")
    with pytest.raises(LookupError):  # RegistryError is a LookupError
        Registry.default().get("zzzzzzzz")


def test_spec_finds_a_tool_by_qualified_name():
    spec = Registry.default().spec("contacts__find_contact")
    assert spec.qualified_name == "contacts__find_contact" and spec.service == "contacts"


@pytest.mark.parametrize("name, hint", [
    ("contacts__find_contct", "Did you mean 'contacts__find_contact'"),
    ("contcts__find_contact", "Did you mean 'contacts'"),
])
def test_spec_of_an_unknown_tool_or_service_suggests_close_matches(name, hint):
    with pytest.raises(RegistryError, match=hint):
        Registry.default().spec(name)


def test_tools_lists_specs_in_a_stable_order():
    reg = Registry.default()
    names = [s.qualified_name for s in reg.tools()]
    assert names == [s.qualified_name for s in reg.tools()] and len(set(names)) == len(names)
    assert {s.service for s in reg.tools(["contacts"])} == {"contacts"}


def test_fingerprint_records_versions():
    assert Registry.default().fingerprint(["email", "contacts"]) == {
        "contacts": Registry.default().get("contacts").version,
        "email": Registry.default().get("email").version}


def test_register_adds_a_user_service_to_the_default_registry():
    before = Registry.default()
    assert "notes" not in before
    assert register(Notes) is Notes
    reg = Registry.default()
    assert reg is not before, "register drops the cached default"
    assert reg.get("notes") is Notes
    assert reg.spec("notes__add_note").name == "add_note"
    assert "contacts" in reg


def test_lazy_package_attributes_expose_register():
    assert compoenv.Registry is Registry and compoenv.register is register


def test_register_is_idempotent_for_the_same_class():
    register(Notes)
    register(Notes)
    assert Registry.default().get("notes") is Notes


def test_register_rejects_a_second_class_with_the_same_name_naming_both():
    register(Notes)
    with pytest.raises(RegistryError) as exc:
        register(OtherNotes)
    message = str(exc.value)
    assert "Duplicate service name 'notes'" in message
    assert "OtherNotes" in message and "test_registry.Notes" in message


def test_registry_add_rejects_duplicates_naming_both_classes():
    reg = Registry([Notes])
    with pytest.raises(RegistryError, match=r"OtherNotes.*Notes|Notes.*OtherNotes"):
        reg.add(OtherNotes)
    assert reg.get("notes") is Notes


def test_user_service_clashing_with_a_builtin_is_rejected_naming_both():
    clash = type("MyContacts", (Service,), {"name": "contacts", "__module__": "mypkg"})
    register(clash)
    with pytest.raises(RegistryError) as exc:
        Registry.default()
    assert "'contacts'" in str(exc.value)
    assert "mypkg.MyContacts" in str(exc.value) and "envs_library" in str(exc.value)


@pytest.mark.parametrize("bad", [object, int, "notes", type("Nameless", (Service,), {})])
def test_register_rejects_non_services_and_nameless_services(bad):
    with pytest.raises(TypeError):
        register(bad)


def test_entry_point_service_class_is_loaded(monkeypatch):
    groups = fake_entry_points(monkeypatch, FakeEntryPoint("pager", Pager))
    reg = Registry.default()
    assert ENTRY_POINT_GROUP == "compoenv.services" and ENTRY_POINT_GROUP in groups
    assert reg.get("pager") is Pager
    assert "thirdparty" in reg.domains()
    assert "contacts" in reg


@pytest.mark.parametrize("name,package", [("fake_compoenv_plugin", True),
                                           ("fake_compoenv_module", False)])
def test_entry_point_package_or_plain_module_is_scanned_for_services(monkeypatch, name,
                                                                    package):
    module = types.ModuleType(name)
    if package:
        module.__path__ = []  # a package with no submodules
    Pager.__module__, original = name, Pager.__module__
    module.Pager = Pager  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, name, module)
    try:
        fake_entry_points(monkeypatch, FakeEntryPoint("plugin", module))
        assert Registry.default().get("pager") is Pager
    finally:
        Pager.__module__ = original


def test_entry_point_clashing_with_a_builtin_is_rejected(monkeypatch):
    clash = type("Contacts2", (Service,), {"name": "contacts"})
    fake_entry_points(monkeypatch, FakeEntryPoint("clash", clash))
    with pytest.raises(RegistryError, match="Duplicate service name 'contacts'"):
        Registry.default()


def test_registry_from_explicit_classes():
    reg = Registry([Notes, Pager])
    assert reg.names() == ["notes", "pager"] and len(reg) == 2
    assert list(reg) == [Notes, Pager]
