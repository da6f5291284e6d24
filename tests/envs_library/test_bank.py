"""Bank service: seeded accounts and history, lookups, transfers, and its tool contracts."""

from __future__ import annotations

import re

import pytest

from compoenv.testing import call_error, call_ok, check_service
from compoenv.world import World
from envs_library.finance.bank import Bank
from envs_library.productivity.contacts import Contacts

FREE_TEXT = ["list_transactions.limit", "transfer.memo"]


@pytest.fixture
def bank() -> Bank:
    return Bank(World(0))


def account(bank: Bank, kind: str) -> str:
    return next(a.id for a in bank.state.accounts.values() if a.kind == kind)


def test_seed_has_the_users_accounts_and_a_history_with_world_people(bank):
    world = bank.world
    accounts = list(bank.state.accounts.values())
    assert 2 <= len(accounts) <= 3 and {"checking", "savings"} <= {a.kind for a in accounts}
    assert all(a.owner == world.user.name for a in accounts)
    assert {a.currency for a in accounts} == {"USD"}
    assert all(re.fullmatch(r"ACC-\d{4}", a.id) for a in accounts)
    txs = list(bank.state.transactions.values())
    assert 40 <= len(txs) <= 60 and all(t.account_id in bank.state.accounts for t in txs)
    people = {p.email: p.name for p in world.people}
    assert all(people.get(t.counterparty_email) == t.counterparty for t in txs)
    assert all(t.date < world.date(0) for t in txs)


@pytest.mark.parametrize("seed", range(5))
def test_some_counterparties_are_contacts(seed):
    world = World(seed)
    contacts = Contacts(world)
    emails = {t.counterparty_email for t in Bank(world).state.transactions.values()}
    assert sum(contacts.call("find_contact_by_email", {"email": e})["success"]
               for e in emails) >= 2


def test_list_accounts_and_get_balance(bank):
    listed = call_ok(bank, "list_accounts")
    assert [a["id"] for a in listed] == list(bank.state.accounts)
    checking = account(bank, "checking")
    assert call_ok(bank, "get_balance", account_id=checking)["balance"] == \
        bank.state.accounts[checking].balance


def test_unknown_account_is_404_with_suggestion(bank):
    checking = account(bank, "checking")
    typo = checking[:-1] + ("0" if checking[-1] != "0" else "1")
    for tool in ("get_balance", "list_transactions", "largest_transaction"):
        err = call_error(bank, tool, account_id=typo)
        assert err["code"] == 404 and f"Did you mean {checking!r}" in err["message"], tool


def test_list_transactions_newest_first_with_limit(bank):
    checking = account(bank, "checking")
    txs = call_ok(bank, "list_transactions", account_id=checking, limit=100)
    assert txs and all(t["account_id"] == checking for t in txs)
    assert [t["date"] for t in txs] == sorted((t["date"] for t in txs), reverse=True)
    assert call_ok(bank, "list_transactions", account_id=checking, limit=5) == txs[:5]


def test_largest_transaction_is_largest_by_size_in_or_out(bank):
    checking = account(bank, "checking")
    top = call_ok(bank, "largest_transaction", account_id=checking)
    sizes = [abs(t.amount) for t in bank.state.transactions.values() if t.account_id == checking]
    assert abs(top["amount"]) == max(sizes)


def test_largest_transaction_of_an_account_without_history_is_404(bank):
    savings = account(bank, "savings")
    for tid in [t.id for t in bank.state.transactions.values() if t.account_id == savings]:
        del bank.state.transactions[tid]
    err = call_error(bank, "largest_transaction", account_id=savings)
    assert err["code"] == 404 and "no transactions" in err["message"]


def test_transactions_with_a_counterparty(bank):
    email = next(iter(bank.state.transactions.values())).counterparty_email
    txs = call_ok(bank, "transactions_with", counterparty_email=email.upper())
    assert txs and all(t["counterparty_email"] == email for t in txs)
    assert call_ok(bank, "transactions_with", counterparty_email="no@body.com") == []


def test_transfer_debits_the_account_and_records_a_transaction(bank):
    checking = account(bank, "checking")
    before = bank.state.accounts[checking].balance
    tx = call_ok(bank, "transfer", account_id=checking, recipient_email="ada@example.com",
                 recipient_name="Ada Lovelace", amount=12.5, memo="Books")
    assert tx["amount"] == -12.5 and tx["date"] == bank.world.date(0) and tx["memo"] == "Books"
    # a new id in the bank's format, drawn (not the next number: no other task tells it)
    assert re.fullmatch(r"TX-\d{4}", tx["id"]) and tx["id"] in bank.state.transactions
    assert tx["id"] != f"TX-{len(bank.state.transactions):04d}"
    assert bank.state.transactions[tx["id"]].counterparty_email == "ada@example.com"
    assert bank.state.accounts[checking].balance == round(before - 12.5, 2)
    assert call_ok(bank, "transactions_with", counterparty_email="ada@example.com")[0] == tx


def test_transfer_recipient_name_is_optional_and_defaults_to_the_email(bank):
    checking = account(bank, "checking")
    assert "recipient_name" not in Bank.tool_specs()["transfer"].parameters["required"]
    tx = call_ok(bank, "transfer", account_id=checking, recipient_email="ada@example.com",
                 amount=3)
    assert tx["counterparty"] == "ada@example.com" and tx["amount"] == -3
    assert tx["memo"] == ""


def test_transfer_conflicts_leave_state_unchanged(bank):
    checking, before = account(bank, "checking"), bank.state.digest()
    too_much = bank.state.accounts[checking].balance + 0.01
    args = dict(account_id=checking, recipient_email="a@b.com", recipient_name="A B")
    err = call_error(bank, "transfer", **args, amount=too_much)
    assert err["code"] == 409 and "Insufficient funds" in err["message"]
    assert call_error(bank, "transfer", **args, amount=0)["code"] == 400
    assert call_error(bank, "transfer", **args, amount=-5)["code"] == 400
    if "credit" in {a.kind for a in bank.state.accounts.values()}:
        err = call_error(bank, "transfer", **{**args, "account_id": account(bank, "credit")},
                         amount=1)
        assert err["code"] == 409
    assert bank.state.digest() == before


@pytest.mark.parametrize("tool, args", [
    ("get_balance", {"account_id": "1234"}),
    ("list_transactions", {"account_id": "ACC-1234", "limit": 0}),
    ("transactions_with", {"counterparty_email": "not an email"}),
    ("transfer", {"account_id": "ACC-1234", "recipient_email": "a@b.com",
                  "recipient_name": "A", "amount": "lots"}),
    ("transfer", {"account_id": "ACC-1234", "recipient_email": "a@b.com"}),
    ("transfer", {"account_id": "ACC-1234", "recipient_email": "a@b.com",
                  "recipient_name": "", "amount": 5}),
])
def test_bad_arguments_are_400(bank, tool, args):
    before = bank.state.digest()
    assert call_error(bank, tool, **args)["code"] == 400
    assert bank.state.digest() == before


def test_reads_do_not_change_state_and_writes_do(bank):
    checking, before = account(bank, "checking"), bank.state.digest()
    email = next(iter(bank.state.transactions.values())).counterparty_email
    for tool, args in [("list_accounts", {}), ("get_balance", {"account_id": checking}),
                       ("list_transactions", {"account_id": checking}),
                       ("largest_transaction", {"account_id": checking}),
                       ("transactions_with", {"counterparty_email": email})]:
        assert Bank.tool_specs()[tool].read_only
        call_ok(bank, tool, **args)
    assert bank.state.digest() == before
    call_ok(bank, "transfer", account_id=checking, recipient_email="a@b.com",
            recipient_name="A B", amount=1)
    assert bank.state.digest() != before


def test_bank_passes_the_service_checker():
    check_service(Bank, free_text=FREE_TEXT)
