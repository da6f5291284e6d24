"""Invoices: the bills the user's household owes to organisations (accounts payable)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from compoenv import Service, State, ToolError, tool
from compoenv.crud import get_or_404, norm, update
from compoenv.roles import Role
from compoenv.interfaces import Invoice, InvoiceId, Money, OrganizationName, TransactionId
from compoenv.service import did_you_mean
from compoenv.world import World

CURRENCY = "USD"  # one currency library-wide, as in shop and travel


class Settlement(BaseModel):
    """How an invoice stopped being open: the transaction that paid it, or why it was voided."""

    model_config = ConfigDict(extra="forbid")

    invoice_id: InvoiceId
    transaction_id: TransactionId | None = None
    void_reason: str = ""


class Invoices(Service):
    """Accounts payable: invoices from organisations, what is due, and what has been paid."""

    name = "invoices"
    display = "accounts payable"
    version = "2"
    domain = "finance"
    related = ("bank", "crm", "expense_reports", "tax_advisor", "helpdesk", "shop")

    class State(State):
        invoices: dict[str, Invoice] = {}
        settlements: dict[str, Settlement] = {}  # by invoice id; none for seeded paid ones

    def seed(self, world: World) -> Invoices.State:
        rng = world.rng(self.name)
        vendors = rng.sample(world.orgs, 12)
        drafts = []
        for _ in range(25):
            org = rng.choice(vendors)
            days = rng.randrange(-30, 31)
            settled, voided = rng.random() < 0.5, rng.random() < 0.05
            status = "void" if voided else "paid" if days < 0 and settled else "open"
            drafts.append(dict(vendor=org.name, billing_email=f"billing@{org.domain}",
                               amount=round(rng.uniform(40, 2500), 2), currency=CURRENCY,
                               due=world.date(days), status=status))
        drafts.sort(key=lambda d: d["due"])  # ids follow due dates: INV-0001 falls due first
        invoices = {f"INV-{i:04d}": Invoice(id=f"INV-{i:04d}", **fields)
                    for i, fields in enumerate(drafts, start=1)}
        void = {i: Settlement(invoice_id=i, void_reason="Duplicate of an earlier invoice")
                for i, v in invoices.items() if v.status == "void"}
        return self.State(invoices=invoices, settlements=void)

    def _from(self, vendor: str) -> list[Invoice]:
        hits = [i for i in self.state.invoices.values() if norm(i.vendor) == norm(vendor)]
        if not hits:
            raise ToolError(404, did_you_mean(
                vendor, {i.vendor for i in self.state.invoices.values()}, "vendor"))
        return hits

    @tool(read_only=True, phrase="list my invoices")
    def list_invoices(
        self, status: Literal["open", "paid", "void"] | None = None,
    ) -> list[Invoice]:
        """List invoices by due date, optionally only those with one status.

        Args:
            status: Only invoices with this status; all of them if omitted.
        """
        return sorted((i for i in self.state.invoices.values()
                       if status is None or i.status == status), key=lambda i: (i.due, i.id))

    @tool(read_only=True, phrase="look up invoice {invoice_id}")
    def get_invoice(self, invoice_id: InvoiceId) -> Invoice:
        """Get an invoice by id."""
        return get_or_404(self.state.invoices, invoice_id, "invoice id")

    @tool(read_only=True, phrase="list the invoices from {vendor}")
    def invoices_from(self, vendor: Annotated[OrganizationName, Role("vendor")],
                      status: Literal["open", "paid", "void"] | None = None) -> list[Invoice]:
        """List the invoices from one vendor by due date, optionally only those with one status.

        Args:
            vendor: The vendor's name.
            status: Only invoices with this status; all of them if omitted.
        """
        return sorted((i for i in self._from(vendor) if status is None or i.status == status),
                      key=lambda i: (i.due, i.id))

    @tool(read_only=True, phrase="work out how much I owe on open invoices")
    def total_due(self, vendor: Annotated[OrganizationName, Role("vendor")] | None = None
                  ) -> Annotated[Money, Role("amount_due")]:
        """Sum the amounts of open invoices, for one vendor or all of them.

        Args:
            vendor: Only invoices from this vendor; every vendor if omitted.
        """
        invoices = self._from(vendor) if vendor is not None else self.state.invoices.values()
        return round(sum(i.amount for i in invoices if i.status == "open"), 2)

    @tool(phrase="mark invoice {invoice_id} as paid by transaction {transaction_id}")
    def mark_paid(self, invoice_id: InvoiceId, transaction_id: TransactionId) -> Invoice:
        """Record that a bank transaction paid an open invoice.

        Args:
            transaction_id: The bank transaction that paid it.
        """
        invoice = get_or_404(self.state.invoices, invoice_id, "invoice id")
        if invoice.status != "open":
            raise ToolError(409, f"Invoice {invoice_id} is {invoice.status}, not open")
        for other in self.state.settlements.values():
            if other.transaction_id == transaction_id:
                raise ToolError(409, f"Transaction {transaction_id} already paid "
                                     f"{other.invoice_id}")
        invoice = update(self.state.invoices, invoice_id, status="paid")
        self.state.settlements[invoice_id] = Settlement(invoice_id=invoice_id,
                                                        transaction_id=transaction_id)
        return invoice

    @tool(phrase="void invoice {invoice_id} because {reason}")
    def void_invoice(self, invoice_id: InvoiceId,
                     reason: Annotated[str, Field(min_length=1, max_length=200)]) -> Invoice:
        """Cancel an open invoice that should not be paid.

        Args:
            reason: Why the invoice is void.
        """
        invoice = get_or_404(self.state.invoices, invoice_id, "invoice id")
        if invoice.status != "open":
            raise ToolError(409, f"Invoice {invoice_id} is {invoice.status}, not open")
        invoice = update(self.state.invoices, invoice_id, status="void")
        self.state.settlements[invoice_id] = Settlement(invoice_id=invoice_id, void_reason=reason)
        return invoice
