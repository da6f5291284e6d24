"""Tests for compoenv.schema: compact schemas, interface slots, extraction, brief."""

from __future__ import annotations

import json
from typing import Any, Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter

from compoenv.interfaces import Address, City, Contact, EmailAddress, PersonName
from compoenv.schema import Slot, brief, compact_schema, extract, interface_slots


class Inner(BaseModel):
    email: EmailAddress
    note: str = ""


class Outer(BaseModel):
    name: PersonName
    inner: Inner
    maybe: Optional[Inner] = None
    many: list[Inner] = []
    by_city: dict[str, City] = {}
    title: str = "Mr"
    home: Optional[Address] = None


def schema_of(annotation: Any) -> dict[str, Any]:
    return compact_schema(TypeAdapter(annotation).json_schema())


def slots_of(annotation: Any) -> dict[tuple[str, ...], Slot]:
    return {s.path: s for s in interface_slots(schema_of(annotation))}


# --- compact_schema -------------------------------------------------------------------------

def test_compact_schema_inlines_refs_and_drops_defs():
    raw = TypeAdapter(Outer).json_schema()
    assert "$defs" in raw
    compact = compact_schema(raw)
    text = json.dumps(compact)
    assert "$ref" not in text and "$defs" not in text
    assert compact["properties"]["inner"]["properties"]["email"]["x-interface"] == "EmailAddress"
    assert compact["properties"]["many"]["items"]["required"] == ["email"]


def test_compact_schema_drops_titles_but_keeps_properties_named_title():
    compact = compact_schema(TypeAdapter(Outer).json_schema())
    assert "title" not in compact
    assert "title" not in compact["properties"]["name"]
    assert compact["properties"]["title"] == {"default": "Mr", "type": "string"}


def test_compact_schema_keeps_sibling_keywords_of_a_ref():
    schema = {"$defs": {"A": {"type": "string", "title": "A"}},
              "properties": {"a": {"$ref": "#/$defs/A", "description": "an a"}},
              "type": "object"}
    assert compact_schema(schema) == {
        "properties": {"a": {"type": "string", "description": "an a"}}, "type": "object"}


def test_compact_schema_does_not_modify_its_input():
    raw = TypeAdapter(Outer).json_schema()
    before = json.dumps(raw, sort_keys=True)
    compact_schema(raw)
    assert json.dumps(raw, sort_keys=True) == before


def test_compact_schema_rejects_recursive_models():
    class Node(BaseModel):
        children: list[Node] = []

    with pytest.raises(ValueError, match="deeper than 32"):
        compact_schema(TypeAdapter(Node).json_schema())


def test_compact_schema_leaves_default_values_alone():
    schema = {"type": "object", "properties": {
        "opts": {"type": "object", "default": {"title": "Draft", "size": 2}}}}
    assert compact_schema(schema)["properties"]["opts"]["default"] == {"title": "Draft", "size": 2}


# --- interface_slots ------------------------------------------------------------------------

def test_slots_cover_nested_entities_with_paths():
    slots = slots_of(Contact)
    assert slots[()].interface == "Contact" and slots[()].kind == "object"
    assert slots[("email",)] == Slot("EmailAddress", ("email",), True, "string", "contact")
    assert slots[("address",)].interface == "Address"
    assert slots[("address", "city")].interface == "City"
    assert ("notes",) not in slots


def test_slots_use_star_for_list_items():
    slots = slots_of(list[Contact])
    assert slots[("*",)].interface == "Contact" and slots[("*",)].many
    assert slots[("*", "address", "country")].interface == "CountryCode"
    assert not Slot("City", ("city",)).many


def test_slots_use_star_for_mapping_values():
    slots = slots_of(dict[str, Address])
    assert slots[("*",)].interface == "Address"
    assert slots[("*", "postal_code")].interface == "PostalCode"


def test_slots_look_through_optional():
    slots = slots_of(Outer)
    assert slots[("home",)] == Slot("Address", ("home",), False, "object")
    assert slots[("home", "city")] == Slot("City", ("home", "city"), False, "string", "location")
    assert slots[("maybe", "email")].interface == "EmailAddress"
    assert slots[("maybe", "email")].required is False


def test_required_flags_follow_the_required_lists():
    slots = slots_of(Outer)
    assert slots[("name",)].required is True
    assert slots[("inner", "email")].required is True
    assert slots[("many", "*", "email")].required is False
    assert slots[("by_city", "*")].required is False
    assert slots[("by_city", "*")].interface == "City"


def test_slot_kind_is_the_json_type():
    class Mixed(BaseModel):
        city: City
        tags: list[EmailAddress]

    slots = slots_of(Mixed)
    assert slots[("city",)].kind == "string"
    assert slots[("tags", "*")].kind == "string"


def test_slots_are_listed_outermost_first():
    paths = [s.path for s in interface_slots(schema_of(Contact))]
    assert paths.index(("address",)) < paths.index(("address", "city"))
    assert paths[0] == ()


def test_untagged_schema_has_no_slots():
    assert interface_slots(schema_of(dict[str, list[int]])) == []


# --- extract --------------------------------------------------------------------------------

DATA = {"name": "Ada", "inner": {"email": "a@x.io"},
        "many": [{"email": "b@x.io"}, {"email": "c@x.io"}, {"note": "no email"}],
        "by_city": {"home": "Paris", "work": "Rome"}, "empty": []}


@pytest.mark.parametrize("path, found", [
    ((), [DATA]),
    (("name",), ["Ada"]),
    (("inner", "email"), ["a@x.io"]),
    (("many", "*", "email"), ["b@x.io", "c@x.io"]),
    (("by_city", "*"), ["Paris", "Rome"]),
    (("empty", "*"), []),
    (("missing",), []),
    (("name", "x"), []),
    (("many", "email"), []),
])
def test_extract_follows_paths_with_star_fanning_out(path, found):
    assert extract(DATA, path) == found


def test_extract_on_a_top_level_list():
    assert extract([{"id": 1}, {"id": 2}], ("*", "id")) == [1, 2]


def test_extract_finds_every_slot_of_a_dumped_entity():
    contact = {"id": "C-0001", "name": "Ada Abbott", "email": "ada@acme.com",
               "phone": "+1 555-123-4567", "company": "Acme", "title": "Engineer",
               "city": "Paris", "birthday": "1990-01-01",
               "address": {"street": "1 Oak", "city": "Paris", "postal_code": "75001",
                           "country": "FR"}}
    for slot in interface_slots(schema_of(list[Contact])):
        assert len(extract([contact, contact], slot.path)) == 2, slot


# --- brief ----------------------------------------------------------------------------------

def test_brief_keeps_short_values():
    assert brief("abc") == "'abc'"
    assert brief([1, 2]) == "[1, 2]"


def test_brief_truncates_long_values():
    text = brief("x" * 500)
    assert len(text) == 80 and text.endswith("...")
    assert len(brief(list(range(1000)), 30)) == 30


@given(st.text(), st.integers(min_value=4, max_value=200))
def test_brief_never_exceeds_its_limit(value, limit):
    out = brief(value, limit)
    assert len(out) <= limit
    assert out == repr(value) or out.endswith("...")


def test_identity_fields_take_the_role_of_their_object():
    schema = {"type": "object", "x-role": "candidate", "properties": {
        "name": {"type": "string", "x-interface": "PersonName"},
        "email": {"type": "string", "x-interface": "EmailAddress", "x-role": "recipient"},
        "city": {"type": "string", "x-interface": "City"},
        "referees": {"type": "array", "items": {"type": "string",
                                                "x-interface": "EmailAddress"}}}}
    roles = {s.path: s.role for s in interface_slots(schema)}
    assert roles[("name",)] == "candidate"            # identity: the object's role
    assert roles[("email",)] == "recipient"           # its own role wins
    assert roles[("city",)] is None                   # not identity: no inherited role
    assert roles[("referees", "*")] == "candidate"
