"""Tests for compoenv.crud: ids, lookups with did-you-mean, search and pagination."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compoenv import ToolError, World
from compoenv.crud import cancel, find_one, get_or_404, next_id, norm, page, search
from compoenv.registry import Registry


@dataclass
class Rec:
    id: str
    name: str
    city: str = ""


RECORDS = [Rec("C-0001", "Ada Abbott", "Paris"), Rec("C-0002", "Ben Baker", "Rome"),
           Rec("C-0003", "Ada Brooks", "Paris"), Rec("C-0004", "ben baker", "Oslo")]
BY_ID = {r.id: r for r in RECORDS}


class _Raises:
    """``with _Raises(404) as err:`` expects a ToolError with that code; err.message after."""

    def __init__(self, code: int) -> None:
        self.code = code
        self.message = ""

    def __enter__(self) -> _Raises:
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        assert kind is ToolError, f"expected ToolError({self.code}), got {kind}"
        assert exc.code == self.code, exc.message
        self.message = exc.message
        return True


# --- norm / next_id -------------------------------------------------------------------------

def test_norm_folds_case_and_whitespace():
    assert norm("  Ada \t ABBOTT\n") == "ada abbott"
    assert norm(42) == "42"
    assert norm("Straße") == norm("STRASSE")


@pytest.mark.parametrize("existing, expected", [
    ([], "C-0001"),
    (["C-0001", "C-0007", "C-0003"], "C-0008"),
    (["C-0009"], "C-0010"),
    (["C-9999"], "C-10000"),
    (["X-0050", "C-0002"], "C-0003"),
    (["C-draft", "C-0004"], "C-0005"),
])
def test_next_id_follows_the_largest_suffix_of_the_prefix(existing, expected):
    assert next_id("C-", existing) == expected


def test_next_id_width_and_mapping_keys():
    assert next_id("TX-", {"TX-12": None}, width=6) == "TX-000013"
    assert next_id("EV-", BY_ID) == "EV-0001"


@given(st.sets(st.integers(min_value=0, max_value=10**7), max_size=30),
       st.sampled_from(["C-", "ORD-", "INV-2026-"]))
def test_next_id_is_always_greater_than_existing_ids(numbers, prefix):
    existing = [f"{prefix}{n:04d}" for n in numbers]
    new = next_id(prefix, existing)
    assert new.startswith(prefix) and new not in existing
    assert int(new[len(prefix):]) > max(numbers, default=0)


# --- get_or_404 / find_one ------------------------------------------------------------------

def test_get_or_404_returns_the_record():
    assert get_or_404(BY_ID, "C-0002", "contact id") is RECORDS[1]


def test_get_or_404_suggests_close_keys():
    with _Raises(404) as err:
        get_or_404(BY_ID, "C-0005", "contact id")
    assert err.message.startswith("Unknown contact id 'C-0005'. Did you mean ")
    assert "'C-0004'" in err.message


def test_get_or_404_without_close_keys_has_no_hint():
    with _Raises(404) as err:
        get_or_404(BY_ID, "zzz", "contact id")
    assert err.message == "Unknown contact id 'zzz'."


@pytest.mark.parametrize("query", ["Ada Abbott", "ada abbott", "  ADA   ABBOTT ", "Ada\tAbbott"])
def test_find_one_normalises_case_and_whitespace(query):
    assert find_one(RECORDS, query, lambda r: r.name, "contact name") is RECORDS[0]


def test_find_one_404_suggests_close_values():
    with _Raises(404) as err:
        find_one(RECORDS, "Ada Abot", lambda r: r.name, "contact name")
    assert "Unknown contact name 'Ada Abot'. Did you mean 'Ada Abbott'" in err.message


def test_find_one_409_on_ambiguity():
    with _Raises(409) as err:
        find_one(RECORDS, "Ben Baker", lambda r: r.name, "contact name")
    assert err.message == "2 records match contact name 'Ben Baker'; be more specific"


def test_find_one_accepts_any_iterable():
    assert find_one(iter(RECORDS), "C-0003", lambda r: r.id, "id") is RECORDS[2]


def test_find_one_finds_a_record_by_its_exact_key_even_with_odd_spacing():
    records = [Rec("C-0001", "Ada  Abbott"), Rec("C-0002", " Ben Baker")]
    assert find_one(records, "Ada  Abbott", lambda r: r.name, "contact name") is records[0]
    assert find_one(records, " Ben Baker", lambda r: r.name, "contact name") is records[1]


def test_find_one_on_real_contacts():
    contacts = Registry.default().get("contacts")(World(0))
    some = next(iter(contacts.state.contacts.values()))
    found = find_one(contacts.state.contacts.values(), some.name.upper(), lambda c: c.name,
                     "contact name")
    assert found is some


# --- search ---------------------------------------------------------------------------------

def test_search_requires_every_word_in_some_field():
    by_name_city = (lambda r: r.name, lambda r: r.city)
    assert search(RECORDS, "ada paris", *by_name_city) == [RECORDS[0], RECORDS[2]]
    assert search(RECORDS, "ADA  brooks", *by_name_city) == [RECORDS[2]]
    assert search(RECORDS, "ada rome", *by_name_city) == []
    assert search(RECORDS, "baker", *by_name_city) == [RECORDS[1], RECORDS[3]]


def test_search_with_an_empty_query_matches_everything():
    assert search(RECORDS, "   ", lambda r: r.name) == RECORDS


def test_search_preserves_record_order():
    assert search(reversed(RECORDS), "a", lambda r: r.name) == list(reversed(RECORDS))


# --- page -----------------------------------------------------------------------------------

def test_page_slices_with_limit_and_offset():
    items = list(range(50))
    assert page(items) == list(range(20))
    assert page(items, limit=5, offset=10) == [10, 11, 12, 13, 14]
    assert page(items, limit=10, offset=45) == [45, 46, 47, 48, 49]
    assert page(items, offset=100) == []


def test_page_caps_the_limit_at_100():
    assert len(page(list(range(500)), limit=1000)) == 100


@pytest.mark.parametrize("limit, offset", [(0, 0), (-1, 0), (5, -1), (-10, -10)])
def test_page_rejects_bad_limit_or_offset_with_400(limit, offset):
    with _Raises(400) as err:
        page(list(range(10)), limit=limit, offset=offset)
    assert f"limit={limit}" in err.message and f"offset={offset}" in err.message


@given(st.lists(st.integers(), max_size=300), st.integers(1, 500), st.integers(0, 400))
def test_page_is_a_bounded_window_of_the_items(items, limit, offset):
    out = page(items, limit, offset)
    assert len(out) <= min(limit, 100)
    assert out == items[offset: offset + len(out)]


def test_cancel_moves_a_confirmed_record_once_and_names_what_is_wrong():
    from pydantic import BaseModel, ConfigDict

    class Booking(BaseModel):
        model_config = ConfigDict(frozen=True)
        status: str

    records = {"B-1": Booking(status="confirmed")}
    assert cancel(records, "B-1", "booking reference", "Booking").status == "cancelled"
    assert records["B-1"].status == "cancelled"
    with pytest.raises(ToolError) as again:
        cancel(records, "B-1", "booking reference", "Booking")
    assert (again.value.code, again.value.message) == (409, "Booking B-1 is already cancelled")
    with pytest.raises(ToolError) as missing:
        cancel(records, "B-2", "booking reference", "Booking")
    assert missing.value.code == 404 and "B-1" in missing.value.message
