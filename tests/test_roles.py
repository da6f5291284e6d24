"""Roles: one vocabulary, a compatibility table that keeps value flows real, and inference."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter

from compoenv.interfaces import Invoice
from compoenv.roles import (
    AGNOSTIC, FEEDS, KIND_OF, ROLE_INTERFACES, ROLES, Role, compatible, infer_role, label,
)


def test_every_role_in_the_table_is_in_the_vocabulary():
    assert len(KIND_OF) == sum(len(v) for v in ROLES.values())  # no role in two kinds
    for target, sources in FEEDS.items():
        assert target in KIND_OF, target
        assert all(KIND_OF[s] == KIND_OF[target] for s in sources), target
    assert AGNOSTIC <= set(KIND_OF)


@pytest.mark.parametrize("interface, out_role, in_role, fits", [
    ("EmailAddress", "customer", "customer", True),      # invoice a customer
    ("EmailAddress", "candidate", "candidate", True),    # interview a candidate
    ("EmailAddress", "lead", "candidate", False),        # a sales lead is no candidate
    ("EmailAddress", "candidate", "recipient", True),    # anyone may be emailed
    ("Money", "estimate", "salary", False),              # a lead's value is no salary
    ("Money", "salary", "salary", True),
    ("Money", "amount_due", "payment", True),            # pay what is due
    ("Money", "balance", "salary", False),
    ("OrganizationName", "employer", "gym", False),      # an employer is not a gym
    ("OrganizationName", "gym", "gym", True),
    ("City", "home_city", "origin", True),               # travel from home
    ("City", "venue_city", "destination", True),
    ("City", "destination", "location", True),           # weather where the trip goes
    ("City", "home_city", "location", False),            # not where a contact lives
    ("Date", "posted", "date", False),                   # not the day a post went up
    ("Date", "due_date", "due_date", True),
    ("Date", "birthday", "check_in", False),
    ("FlightNumber", None, None, True),                  # ids join by interface alone
    ("EmailAddress", None, "recipient", True),           # untagged: only agnostic sinks
    ("EmailAddress", None, "customer", False),
    ("EmailAddress", "customer", None, False),           # an untagged input takes nothing
    ("JobTitle", "position", "position", True),          # an offer for the role applied for
    ("JobTitle", "job_title", "position", False),        # not for the title held now
    ("JobTitle", "job_title", "job", True),              # a salary benchmark for any title
])
def test_compatibility(interface, out_role, in_role, fits):
    assert compatible(interface, out_role, in_role) is fits


@pytest.mark.parametrize("interface, name, context, role", [
    ("EmailAddress", "customer_email", None, "customer"),
    ("PersonName", "candidate_name", None, "candidate"),
    ("EmailAddress", "hiring_manager_email", None, "hiring_manager"),
    ("EmailAddress", "email", "patient", "patient"),
    ("EmailAddress", "email", None, None),
    ("OrganizationName", "gym_name", None, "gym"),
    ("OrganizationName", "current_employer", None, "employer"),
    ("Money", "expected_salary", None, "salary"),
    ("Money", "net_pay", None, "pay"),
    ("Money", "amount_due", None, "amount_due"),
    ("City", "destination_city", None, "destination"),
    ("City", "city", None, "location"),
    ("Date", "due_date", None, "due_date"),
    ("Date", "applied_on", None, "application_date"),
    ("Url", "website", None, "website"),
    ("Url", "landing_page", None, "page"),
    ("PostalCode", "postal_code", None, None),
    ("JobTitle", "position", None, "position"),
    ("JobTitle", "current_title", None, "job_title"),
])
def test_roles_are_inferred_from_names(interface, name, context, role):
    assert infer_role(interface, name, context) == role


def test_role_markers_tag_schemas_and_reject_unknown_roles():
    schema = TypeAdapter(Invoice).json_schema()["properties"]
    assert schema["vendor"]["x-role"] == "vendor" and schema["due"]["x-role"] == "due_date"
    with pytest.raises(ValueError, match="Did you mean 'customer'"):
        Role("custmer")


def test_roles_read_as_english():
    assert label("hiring_manager") == "hiring manager" and label("check_in") == "check-in date"
    assert label("candidate") == "candidate"


def test_role_interfaces_are_real_interfaces():
    from compoenv.interfaces import SEMANTIC_TYPES

    assert set(ROLE_INTERFACES) <= set(SEMANTIC_TYPES)
