"""Invoices service: seeded bills from world orgs, lookups, totals, paying and voiding."""

from __future__ import annotations

import pytest

from compoenv.testing import call_error, call_ok, check_service
from compoenv.world import World
from envs_library.finance.bank import Bank
from envs_library.finance.invoices import Invoices

FREE_TEXT = ["list_invoices.status", "invoices_from.status", "void_invoice.reason"]


@pytest.fixture
def inv() -> Invoices:
    return Invoices(World(0))


def first(inv: Invoices, status: str) -> str:
    return next(i.id for i in inv.state.invoices.values() if i.status == status)


def test_seed_has_mostly_open_invoices_from_world_orgs(inv):
    world = inv.world
    invoices = list(inv.state.invoices.values())
    assert 20 <= len(invoices) <= 30
    statuses = [i.status for i in invoices]
    assert statuses.count("open") > len(invoices) / 2 and "paid" in statuses
    orgs = {o.name: o.domain for o in world.orgs}
    assert all(i.billing_email == f"billing@{orgs[i.vendor]}" for i in invoices)
    assert min(i.due for i in invoices) < world.date(0) < max(i.due for i in invoices)
    assert all(i.status == "open" for i in invoices if i.due >= world.date(0) and
               i.id not in inv.state.settlements)
    assert {k for k, i in inv.state.invoices.items() if i.status == "void"} == \
        set(inv.state.settlements)


def test_list_invoices_by_due_date_and_status(inv):
    everything = call_ok(inv, "list_invoices")
    assert len(everything) == len(inv.state.invoices)
    assert [i["due"] for i in everything] == sorted(i["due"] for i in everything)
    for status in ("open", "paid", "void"):
        assert all(i["status"] == status for i in call_ok(inv, "list_invoices", status=status))
    assert call_error(inv, "list_invoices", status="overdue")["code"] == 400


def test_get_invoice_and_404_with_suggestion(inv):
    assert call_ok(inv, "get_invoice", invoice_id="INV-0004")["id"] == "INV-0004"
    err = call_error(inv, "get_invoice", invoice_id="INV-00040")
    assert err["code"] == 404 and "Did you mean" in err["message"]


def test_invoices_from_a_vendor_ignores_case(inv):
    vendor = inv.state.invoices["INV-0001"].vendor
    listed = call_ok(inv, "invoices_from", vendor=vendor.upper())
    assert listed and all(i["vendor"] == vendor for i in listed)
    assert len(listed) == sum(i.vendor == vendor for i in inv.state.invoices.values())


def test_unknown_vendor_is_404_with_suggestion(inv):
    vendor = inv.state.invoices["INV-0001"].vendor
    for tool in ("invoices_from", "total_due"):
        err = call_error(inv, tool, vendor=vendor + "s")
        assert err["code"] == 404 and f"Did you mean {vendor!r}" in err["message"], tool


def test_total_due_sums_open_invoices(inv):
    open_ = [i for i in inv.state.invoices.values() if i.status == "open"]
    assert call_ok(inv, "total_due") == pytest.approx(sum(i.amount for i in open_))
    vendor = open_[0].vendor
    expected = sum(i.amount for i in open_ if i.vendor == vendor)
    assert call_ok(inv, "total_due", vendor=vendor) == pytest.approx(expected)


def test_pay_an_invoice_through_the_bank(inv):
    bank = Bank(inv.world)
    checking = next(a for a in bank.state.accounts.values() if a.kind == "checking")
    invoice = min((i for i in inv.state.invoices.values() if i.status == "open"),
                  key=lambda i: i.amount)
    details = call_ok(inv, "get_invoice", invoice_id=invoice.id)
    tx = call_ok(bank, "transfer", account_id=checking.id,
                 recipient_email=details["billing_email"], recipient_name="Accounts Receivable",
                 amount=details["amount"], memo=details["id"])
    paid = call_ok(inv, "mark_paid", invoice_id=invoice.id, transaction_id=tx["id"])
    assert paid["status"] == "paid" and inv.state.settlements[invoice.id].transaction_id == tx["id"]
    assert call_ok(inv, "total_due", vendor=invoice.vendor) == pytest.approx(sum(
        i.amount for i in inv.state.invoices.values()
        if i.vendor == invoice.vendor and i.status == "open"))


def test_mark_paid_conflicts(inv):
    open_ids = [i.id for i in inv.state.invoices.values() if i.status == "open"]
    call_ok(inv, "mark_paid", invoice_id=open_ids[0], transaction_id="TX-0100")
    before = inv.state.digest()
    err = call_error(inv, "mark_paid", invoice_id=open_ids[0], transaction_id="TX-0101")
    assert err["code"] == 409 and "paid" in err["message"]
    err = call_error(inv, "mark_paid", invoice_id=open_ids[1], transaction_id="TX-0100")
    assert err["code"] == 409 and open_ids[0] in err["message"]
    assert call_error(inv, "mark_paid", invoice_id="INV-9999",
                      transaction_id="TX-0102")["code"] == 404
    assert inv.state.digest() == before


def test_void_invoice_records_the_reason_and_refuses_settled_ones(inv):
    open_id = first(inv, "open")
    voided = call_ok(inv, "void_invoice", invoice_id=open_id, reason="Billed twice")
    assert voided["status"] == "void" and inv.state.settlements[open_id].void_reason == "Billed twice"
    assert call_error(inv, "void_invoice", invoice_id=open_id, reason="again")["code"] == 409
    assert call_error(inv, "void_invoice", invoice_id=first(inv, "paid"),
                      reason="too late")["code"] == 409
    assert call_error(inv, "mark_paid", invoice_id=open_id,
                      transaction_id="TX-0001")["code"] == 409


@pytest.mark.parametrize("tool, args", [
    ("get_invoice", {"invoice_id": "0001"}),
    ("invoices_from", {"vendor": ""}),
    ("total_due", {"vendor": 42}),
    ("mark_paid", {"invoice_id": "INV-0001", "transaction_id": "T-1"}),
    ("mark_paid", {"invoice_id": "INV-0001"}),
    ("void_invoice", {"invoice_id": "INV-0001", "reason": ""}),
])
def test_bad_arguments_are_400(inv, tool, args):
    before = inv.state.digest()
    assert call_error(inv, tool, **args)["code"] == 400
    assert inv.state.digest() == before


def test_reads_do_not_change_state_and_writes_do(inv):
    vendor, before = inv.state.invoices["INV-0001"].vendor, inv.state.digest()
    for tool, args in [("list_invoices", {}), ("list_invoices", {"status": "open"}),
                       ("get_invoice", {"invoice_id": "INV-0001"}),
                       ("invoices_from", {"vendor": vendor}), ("total_due", {}),
                       ("total_due", {"vendor": vendor})]:
        assert Invoices.tool_specs()[tool].read_only
        call_ok(inv, tool, **args)
    assert inv.state.digest() == before
    call_ok(inv, "void_invoice", invoice_id=first(inv, "open"), reason="Wrong address")
    assert inv.state.digest() != before


def test_invoices_passes_the_service_checker():
    check_service(Invoices, free_text=FREE_TEXT)


def test_invoices_from_one_vendor_by_status(inv):
    vendor = next(iter(inv.state.invoices.values())).vendor
    every = call_ok(inv, "invoices_from", vendor=vendor)
    open_ = call_ok(inv, "invoices_from", vendor=vendor, status="open")
    assert [i for i in every if i["status"] == "open"] == open_
