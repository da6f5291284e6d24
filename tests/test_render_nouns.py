"""Nouns in composed instructions read as English: one item is singular, a count is plural."""

from __future__ import annotations

import pytest

from compoenv.compose.render import plural, singular


@pytest.mark.parametrize("many,one", [
    ("real estate agents", "real estate agent"), ("companies", "company"),
    ("classes", "class"), ("boxes", "box"), ("status", "status"), ("analysis", "analysis"),
    ("company news", "company news"), ("invoice", "invoice"), ("days", "day"),
])
def test_singular_then_plural_round_trips(many, one):
    assert singular(many) == one
    expected = {"status": "statuses", "analysis": "analyses", "invoice": "invoices",
                "company news": "company news"}.get(many, many)
    assert plural(one) == expected


def test_values_from_the_record_that_named_someone_are_said_once():
    from compoenv.compose.records import Binding, Step, Walk
    from compoenv.compose.render import phrase
    from compoenv.registry import Registry

    registry = Registry.default()
    found = Step(registry.spec("social_media__get_profile"), [Binding("name", "Sara Kim")])
    walk = Walk(steps=[found])
    add = registry.spec("contacts__add_contact")
    carried = [Binding(p, f"v-{p}", 0, (p,), None) for p in ("email", "title", "company")]
    text = phrase(add, walk, [Binding("name", "Sara Kim", 0, ("name",), "PersonName"),
                              *carried, Binding("city", "Oslo", interface="City")])
    assert "with their" not in text  # the city is stated, not the profile's: all are said
    text = phrase(add, walk, [Binding("name", "Sara Kim", 0, ("name",), "PersonName"), *carried,
                              Binding("city", "v-city", 0, ("city",), "City")])
    assert text == ("add the profile's name (with their email, title, company and city from "
                    "that profile) to my contacts")
