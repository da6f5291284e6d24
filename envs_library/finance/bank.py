"""Bank: the user's accounts, their transactions, and transfers to other people."""

from __future__ import annotations

from typing import Annotated, Callable

from pydantic import Field

from compoenv import Service, State, ToolError, tool
from compoenv.crud import get_or_404, next_id, page, update
from compoenv.roles import Role
from compoenv.interfaces import (
    Account, AccountId, EmailAddress, Money, PersonName, Transaction,
)
from compoenv.world import World

CURRENCY = "USD"  # one currency library-wide, as in shop and travel

# memo, smallest and largest amount; the sign says which way the money went.
_INCOMING = (("Rent share", 300, 900), ("Dinner split", 15, 80), ("Refund", 10, 200),
             ("Concert tickets", 40, 160), ("Loan repayment", 100, 1000))
_OUTGOING = (("Birthday gift", 20, 150), ("Dinner split", 15, 80), ("Rent share", 300, 900),
             ("Holiday deposit", 150, 1200), ("Freelance work", 200, 2500),
             ("Car repair", 120, 900), ("Wedding gift", 50, 300))


class Bank(Service):
    """The user's bank: checking, savings and credit accounts, transactions and transfers.

    Amounts of transactions are signed: negative money left the account, positive came in.
    """

    name = "bank"
    display = "the bank"
    version = "2"
    domain = "finance"
    related = ("invoices", "payroll", "expense_reports", "tax_advisor", "crypto_wallet", "stock_market", "insurance", "real_estate", "shop")

    class State(State):
        accounts: dict[str, Account] = {}
        transactions: dict[str, Transaction] = {}

    def seed(self, world: World) -> Bank.State:
        rng = world.rng(self.name)
        me = world.user
        kinds = ["checking", "savings"] + (["credit"] if rng.random() < 0.75 else [])
        numbers = rng.sample(range(1000, 10000), len(kinds))
        # enough to settle a month of bills from checking; savings hold a reserve
        opening = {"checking": (9000, 24000), "savings": (15000, 60000), "credit": (-2000, -100)}
        accounts = {}
        for kind, number in zip(kinds, numbers):
            aid = f"ACC-{number}"
            accounts[aid] = Account(id=aid, owner=me.name, kind=kind, currency=CURRENCY,
                                    balance=round(rng.uniform(*opening[kind]), 2))
        by_kind = {a.kind: a.id for a in accounts.values()}
        people = rng.sample(world.people[1:], 18)
        drafts = []
        for _ in range(50):
            kind = rng.choices(kinds, weights=(7, 1, 2)[:len(kinds)])[0]
            incoming = kind != "credit" and rng.random() < 0.4
            memo, low, high = rng.choice(_INCOMING if incoming else _OUTGOING)
            amount = round(rng.uniform(low, high), 2) * (1 if incoming else -1)
            p = rng.choice(people)
            drafts.append((world.date(-rng.randrange(1, 61)), dict(
                account_id=by_kind[kind], counterparty=p.name,
                counterparty_email=p.email, amount=amount, currency=CURRENCY, memo=memo)))
        drafts.sort(key=lambda d: d[0])  # ids follow time: TX-0001 is the oldest
        transactions = {f"TX-{i:04d}": Transaction(id=f"TX-{i:04d}", date=day, **fields)
                        for i, (day, fields) in enumerate(drafts, start=1)}
        return self.State(accounts=accounts, transactions=transactions)

    def _history(self, keep: Callable[[Transaction], bool]) -> list[Transaction]:
        return sorted((t for t in self.state.transactions.values() if keep(t)),
                      key=lambda t: (t.date, t.id), reverse=True)

    @tool(read_only=True, phrase="list my bank accounts")
    def list_accounts(self) -> list[Account]:
        """List the user's accounts with their balances."""
        return list(self.state.accounts.values())

    @tool(read_only=True, phrase="check the balance of account {account_id}")
    def get_balance(self, account_id: AccountId) -> Account:
        """Get an account, with its current balance."""
        return get_or_404(self.state.accounts, account_id, "account id")

    @tool(read_only=True, phrase="list the recent transactions of account {account_id}")
    def list_transactions(self, account_id: AccountId,
                          limit: Annotated[int, Field(ge=1, le=100)] = 20) -> list[Transaction]:
        """List an account's transactions, newest first.

        Args:
            limit: Maximum number of transactions to return.
        """
        get_or_404(self.state.accounts, account_id, "account id")
        return page(self._history(lambda t: t.account_id == account_id), limit)

    @tool(read_only=True, phrase="find the largest transaction on account {account_id}")
    def largest_transaction(self, account_id: AccountId) -> Transaction:
        """Get an account's transaction with the largest amount, in or out."""
        get_or_404(self.state.accounts, account_id, "account id")
        history = self._history(lambda t: t.account_id == account_id)
        if not history:
            raise ToolError(404, f"Account {account_id} has no transactions")
        return max(history, key=lambda t: abs(t.amount))

    @tool(read_only=True, phrase="list my transactions with {counterparty_email}")
    def transactions_with(self, counterparty_email: Annotated[EmailAddress, Role("payee")]) -> list[Transaction]:
        """List transactions with one person across all accounts, newest first."""
        return self._history(lambda t: t.counterparty_email.lower() == counterparty_email.lower())

    @tool(phrase="transfer {amount} from account {account_id} to {recipient_email}")
    def transfer(self, account_id: AccountId, recipient_email: Annotated[EmailAddress, Role("payee")],
                 amount: Annotated[Money, Role("payment")],
                 recipient_name: Annotated[PersonName, Role("payee")] | None = None,
                 memo: Annotated[str, Field(max_length=200)] = "") -> Transaction:
        """Send money from a checking or savings account to another person.

        Args:
            amount: How much to send, in the account's currency; must be positive.
            recipient_name: The recipient's name (default: the email address).
            memo: A note the recipient sees.
        """
        account = get_or_404(self.state.accounts, account_id, "account id")
        if amount <= 0:
            raise ToolError(400, f"amount must be positive, got {amount}")
        if account.kind == "credit":
            raise ToolError(409, f"{account_id} is a credit account; transfer from checking "
                                 f"or savings")
        if account.balance < amount:
            raise ToolError(409, f"Insufficient funds: {account_id} holds {account.balance:.2f} "
                                 f"{account.currency}, the transfer needs {amount:.2f}")
        tx = Transaction(id=next_id("TX-", self.state.transactions, salt=(
                             self.world.seed, self.name, account_id, amount)), account_id=account_id,
                         counterparty=recipient_name or recipient_email,
                         counterparty_email=recipient_email,
                         amount=-amount, currency=account.currency, date=self.world.date(0),
                         memo=memo)
        update(self.state.accounts, account_id, balance=round(account.balance - amount, 2))
        self.state.transactions[tx.id] = tx
        return tx
