"""Finance services: bank accounts and invoices."""
