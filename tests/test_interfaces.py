"""Tests for compoenv.interfaces: semantic types, entity models, x-interface tags, constraints."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from compoenv import interfaces
from compoenv.interfaces import (
    ENTITY_MODELS, SEMANTIC_TYPES, STATABLE, Address, AirportCode, Contact, Date, DateTime, Entity,
    EmailAddress, Interface, Money, PersonName, Quantity, interface_of,
)
from compoenv.schema import compact_schema, interface_slots

ADDRESS = {"street": "1 Oak Street", "city": "Paris", "postal_code": "75001", "country": "FR"}
CONTACT = {"id": "C-0001", "name": "Ada Abbott", "email": "ada.abbott@acme.com",
           "phone": "+1 555-123-4567", "company": "Acme Labs", "title": "Engineer",
           "city": "Paris", "address": ADDRESS, "birthday": "1990-05-17"}


def validate(annotation: Any, value: Any) -> Any:
    return TypeAdapter(annotation).validate_python(value)


def test_there_are_at_least_25_semantic_types_and_8_entity_models():
    assert len(SEMANTIC_TYPES) >= 25
    assert len(ENTITY_MODELS) >= 8


def test_registries_hold_the_exported_names():
    for name in ("PersonName", "EmailAddress", "PhoneNumber", "Money", "Date", "City", "Url"):
        assert SEMANTIC_TYPES[name] is getattr(interfaces, name)
    for name in ("Contact", "Event", "Order", "Address"):
        assert ENTITY_MODELS[name] is getattr(interfaces, name)
    assert all(issubclass(cls, Entity) for cls in ENTITY_MODELS.values())


def test_interface_names_are_unique_across_types_and_entities():
    assert not set(SEMANTIC_TYPES) & set(ENTITY_MODELS)


@pytest.mark.parametrize("name", sorted(SEMANTIC_TYPES))
def test_every_semantic_type_tags_its_schema(name):
    schema = TypeAdapter(SEMANTIC_TYPES[name]).json_schema()
    assert schema["x-interface"] == name
    assert schema["type"] in ("string", "number", "integer")


@pytest.mark.parametrize("name", sorted(ENTITY_MODELS))
def test_every_entity_model_tags_its_schema(name):
    schema = TypeAdapter(ENTITY_MODELS[name]).json_schema()
    assert schema["x-interface"] == name
    assert schema["type"] == "object" and schema["additionalProperties"] is False


@pytest.mark.parametrize("name", sorted(ENTITY_MODELS))
def test_entity_fields_keep_their_tags_when_nested(name):
    schema = compact_schema(TypeAdapter(list[ENTITY_MODELS[name]]).json_schema())
    slots = interface_slots(schema)
    assert ("*",) in {s.path for s in slots if s.interface == name}
    assert any(len(s.path) == 2 for s in slots), "entity fields carry interfaces too"


def test_interface_of_finds_the_marker():
    assert interface_of(EmailAddress) == Interface("EmailAddress", statable=True)
    assert interface_of(Contact) == Interface("Contact")
    assert interface_of(str) is None
    assert interface_of(int) is None
    assert interface_of(dict) is None


def test_statable_holds_the_statable_semantic_types():
    assert {"PersonName", "EmailAddress", "City", "Date", "Money"} <= STATABLE


@pytest.mark.parametrize("name", ["ContactId", "MessageId", "EventId", "TransactionId",
                                  "BookingReference", "Temperature"])
def test_generated_identifiers_are_not_statable(name):
    assert name in SEMANTIC_TYPES and name not in STATABLE


def test_statable_matches_the_markers_and_takes_in_a_services_own_interface():
    builtin = {n for n, t in SEMANTIC_TYPES.items() if interface_of(t).statable}
    assert builtin <= STATABLE and not {n for n in SEMANTIC_TYPES if n not in builtin} & STATABLE
    assert "LockerCodeForTest" not in STATABLE
    LockerCode = Annotated[str, Interface("LockerCodeForTest", statable=True)]
    assert interface_of(LockerCode).statable and "LockerCodeForTest" in STATABLE
    assert "ParcelIdForTest" not in STATABLE
    Annotated[str, Interface("ParcelIdForTest")]  # an id: not statable
    assert "ParcelIdForTest" not in STATABLE


# --- constraints ----------------------------------------------------------------------------

VALID = [
    ("EmailAddress", "ada.abbott@acme.com"), ("EmailAddress", "a+b@x.co.uk"),
    ("Date", "2026-03-16"), ("DateTime", "2026-03-16T09:30"), ("DateTime", "2026-03-16T09:30:15"),
    ("AirportCode", "LHR"), ("CurrencyCode", "EUR"), ("CountryCode", "FR"),
    ("PhoneNumber", "+1 555-123-4567"), ("Url", "https://example.com/x"), ("ContactId", "C-0001"),
    ("FlightNumber", "BA123"), ("TimeOfDay", "09:30"), ("Quantity", 3), ("Percentage", 55.5),
    ("DurationMinutes", 90), ("TrackingNumber", "TRK12345678"), ("BookingReference", "AB12CD"),
]

INVALID = [
    ("EmailAddress", "not-an-email"), ("EmailAddress", "ada@acme"), ("EmailAddress", "@acme.com"),
    ("EmailAddress", "a b@acme.com"),
    ("Date", "2026/03/16"), ("Date", "16-03-2026"), ("Date", "2026-3-16"), ("Date", "tomorrow"),
    ("Date", "2026-13-01"), ("Date", "2026-02-30"),
    ("DateTime", "2026-03-16"), ("DateTime", "2026-03-16T25:00"),
    ("AirportCode", "lhr"), ("AirportCode", "LHRX"), ("AirportCode", "LH"), ("AirportCode", "L1R"),
    ("CurrencyCode", "eur"), ("CountryCode", "FRA"), ("PhoneNumber", "call me"),
    ("Url", "ftp://example.com"), ("Url", "example.com"), ("ContactId", "C-1"),
    ("ContactId", "X-0001"), ("PersonName", ""), ("PersonName", "   "), ("Quantity", 0),
    ("Quantity", 10_001), ("Percentage", 101), ("DurationMinutes", 0), ("Money", 1e10),
    ("Money", "lots"), ("Temperature", 100), ("TimeOfDay", "9:30"),
]


@pytest.mark.parametrize("name, value", VALID)
def test_valid_values_pass(name, value):
    assert validate(SEMANTIC_TYPES[name], value) == value


@pytest.mark.parametrize("name, value", INVALID)
def test_invalid_values_are_rejected(name, value):
    with pytest.raises(ValidationError):
        validate(SEMANTIC_TYPES[name], value)


def test_strings_are_stripped():
    assert validate(PersonName, "  Ada Abbott ") == "Ada Abbott"
    assert validate(AirportCode, " LHR ") == "LHR"


@pytest.mark.parametrize("value, cents", [(2.345678, 2.35), (19.999, 20.0), (10, 10.0),
                                          (-3.14159, -3.14), ("7.129", 7.13), (0.004, 0.0)])
def test_money_rounds_to_cents(value, cents):
    assert validate(Money, value) == pytest.approx(cents, abs=1e-9)


@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False))
def test_money_never_keeps_more_than_two_decimals(value):
    money = validate(Money, value)
    assert abs(money - value) <= 0.005 + 1e-9
    assert money == round(money, 2)


@given(st.dates())
def test_any_real_calendar_date_is_a_valid_date(day):
    assert validate(Date, day.isoformat()) == day.isoformat()
    assert validate(DateTime, f"{day.isoformat()}T08:15") == f"{day.isoformat()}T08:15"


def test_quantity_is_an_integer():
    assert validate(Quantity, "4") == 4
    with pytest.raises(ValidationError):
        validate(Quantity, 2.5)


# --- entities -------------------------------------------------------------------------------

def test_entity_validates_nested_fields():
    contact = Contact.model_validate(CONTACT)
    assert contact.address == Address(**ADDRESS)
    with pytest.raises(ValidationError) as exc:
        Contact.model_validate({**CONTACT, "email": "nope"})
    assert exc.value.errors()[0]["loc"] == ("email",)
    with pytest.raises(ValidationError) as exc:
        Contact.model_validate({**CONTACT, "address": {**ADDRESS, "country": "France"}})
    assert exc.value.errors()[0]["loc"] == ("address", "country")


def test_entities_forbid_unknown_fields():
    with pytest.raises(ValidationError, match="extra"):
        Contact.model_validate({**CONTACT, "nickname": "Addy"})


def test_entity_json_round_trip():
    contact = Contact.model_validate(CONTACT)
    assert Contact.model_validate_json(contact.model_dump_json()) == contact
