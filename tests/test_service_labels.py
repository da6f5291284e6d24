"""Services' display names: set on a class or in a spec, kept by a library's index, made from the
name when unset, and what house rules name a service by."""

from __future__ import annotations

import json
import re

import pytest

from compoenv import Service
from compoenv.compose import Composer, ComposerConfig
from compoenv.compose.labels import default_service_label, service_label
from compoenv.registry import Registry
from compoenv.scenarios import resolve
from compoenv.session import Session
from compoenv.worldmodel.spec import SpecError, load_spec
from compoenv.world import World

REGISTRY = Registry.default()
SPEC = {"name": "billing_api", "domain": "dev", "description": "Invoices of a test service.",
        "tools": [{"name": "list_bills", "description": "List the bills.", "read_only": True,
                   "parameters": {"type": "object", "properties": {}},
                   "returns": {"type": "array", "items": {"type": "object"}}}]}


def test_every_built_in_service_has_its_own_display_name():
    labels = {name: service_label(REGISTRY, name) for name in REGISTRY.names()}
    assert all(REGISTRY.info(name).display == label for name, label in labels.items())
    assert len(set(labels.values())) == len(labels)
    assert labels["real_estate"] == "the real-estate app" and labels["crm"] == "the CRM"
    assert labels["calendar"] == "my calendar" and labels["email"] == "my email"
    assert not any("_" in label for label in labels.values())


def test_a_service_is_found_in_a_registry_a_session_a_class_an_info_or_a_spec():
    session = Session([REGISTRY.get(n) for n in ("bank", "crm")], World.get(0))
    assert service_label(session.classes, "crm") == "the CRM"
    assert service_label(REGISTRY.get("bank")) == "the bank"
    assert service_label(REGISTRY.get("bank")(World.get(0))) == "the bank"
    assert service_label(REGISTRY.info("bank")) == "the bank"
    assert service_label({**SPEC, "display": "the billing desk"}) == "the billing desk"
    assert service_label(SPEC) == "the billing service"
    assert service_label(None, "real_estate") == "the real estate app"
    assert service_label(REGISTRY, "old_notes") == "the old notes app"  # an old task


@pytest.mark.parametrize("name,label", [
    ("real_estate", "the real estate app"), ("crm", "the CRM app"),
    ("project_tracker", "the project tracker"), ("billing_api", "the billing service"),
    ("github.repos", "the repos app"), ("HelpDesk", "the help desk"),
])
def test_a_service_without_a_display_name_gets_one_from_its_name(name, label):
    assert default_service_label(name) == label


def test_a_registry_or_mapping_without_a_name_is_a_clear_error():
    with pytest.raises(ValueError, match="a registry needs the service's name"):
        service_label(REGISTRY)
    with pytest.raises(ValueError, match="a mapping of services needs the service's name"):
        service_label({"bank": REGISTRY.get("bank")})


def test_a_display_name_must_be_one_short_line():
    with pytest.raises(TypeError, match="Display name 'the\\\\nbank' of Bad must be one line"):
        type("Bad", (Service,), {"name": "bad_bank", "display": "the\nbank"})
    with pytest.raises(TypeError, match="Display name 7"):
        type("Bad", (Service,), {"name": "bad_bank", "display": 7})


def test_a_spec_sets_its_display_name_which_is_validated_and_survives_a_library_index(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**SPEC, "display": " the billing desk"}))
    with pytest.raises(SpecError, match="display"):
        load_spec(bad)
    folder = tmp_path / "lib"
    folder.mkdir()
    (folder / "billing.json").write_text(json.dumps({**SPEC, "display": "the billing desk"}))
    for _ in range(2):  # the index is written, then read
        registry = Registry.from_paths(folder)
        assert registry.info("billing_api").display == "the billing desk"
        assert service_label(registry, "billing_api") == "the billing desk"
    assert registry.get("billing_api").display == "the billing desk"


def test_house_rules_name_services_as_a_person_does():
    tasks = Composer(config=ComposerConfig(scenarios=resolve("all"))).generate(8, seed=3)
    said = [rule.text for t in tasks for rule in t.rules
            if re.search(r"looks like a match|on record in|Nothing changes in", rule.text)]
    assert len(said) >= 3
    labels = {service_label(REGISTRY, n) for n in REGISTRY.names()}
    for rule in said:
        assert not re.search(r"\b[a-z]+_[a-z_]+\b", rule), rule
        assert any(f" in {label}" in rule for label in labels), rule
