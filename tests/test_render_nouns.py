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
