"""Contacts: the user's address book."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from compoenv import Service, State, ToolError, tool
from compoenv.crud import find_one, get_or_404, next_id, search, update
from compoenv.roles import Role
from compoenv.interfaces import (
    Address, City, Contact, ContactId, EmailAddress, JobTitle, OrganizationName, PersonName,
    PhoneNumber,
)
from compoenv.world import World


class Contacts(Service):
    """Personal address book: people the user knows, with their email, phone and employer."""

    name = "contacts"
    display = "my contacts"
    domain = "productivity"
    related = ("*",)

    class State(State):
        contacts: dict[str, Contact] = {}

    def seed(self, world: World) -> Contacts.State:
        rng = world.rng(self.name)
        people = rng.sample(world.people[1:], 60)
        contacts = {}
        for i, p in enumerate(people, start=1):
            cid = f"C-{i:04d}"
            contacts[cid] = Contact(
                id=cid, name=p.name, email=p.email, phone=p.phone, company=p.employer,
                title=p.title, city=p.city, birthday=p.birthday.isoformat(),
                address=p.address)
        return self.State(contacts=contacts)

    @tool(read_only=True, phrase="look up {name} in my contacts")
    def find_contact(self, name: Annotated[PersonName, Role("contact")]) -> Contact:
        """Find a contact by full name."""
        return find_one(self.state.contacts.values(), name, lambda c: c.name, "contact name")

    @tool(read_only=True, phrase="find the contact whose email is {email}")
    def find_contact_by_email(self, email: Annotated[EmailAddress, Role("contact")]) -> Contact:
        """Find the contact with this email address."""
        return find_one(self.state.contacts.values(), email, lambda c: c.email, "contact email")

    @tool(read_only=True, phrase="look up contact {contact_id}")
    def get_contact(self, contact_id: ContactId) -> Contact:
        """Get a contact by id."""
        return get_or_404(self.state.contacts, contact_id, "contact id")

    @tool(read_only=True, phrase="search my contacts for {query}")
    def search_contacts(
        self,
        query: Annotated[str, Field(min_length=1, max_length=200)],
    ) -> list[Contact]:
        """Search contacts by name, company, title or city.

        Args:
            query: Words that must all appear in one of the searched fields.
        """
        return search(self.state.contacts.values(), query,
                      lambda c: c.name, lambda c: c.company, lambda c: c.title, lambda c: c.city)

    @tool(read_only=True, phrase="list my contacts who work at {company}")
    def list_contacts_at_company(self, company: Annotated[OrganizationName, Role("employer")]) -> list[Contact]:
        """List contacts employed by an organisation."""
        return [c for c in self.state.contacts.values() if c.company.lower() == company.lower()]

    @tool(phrase="update the phone number of contact {contact_id} to {phone}")
    def update_phone(self, contact_id: ContactId, phone: Annotated[PhoneNumber, Role("contact")]) -> Contact:
        """Change a contact's phone number."""
        get_or_404(self.state.contacts, contact_id, "contact id")
        return update(self.state.contacts, contact_id, phone=phone)

    @tool(phrase="add {name} ({email}, {title} at {company}, based in {city}) to my contacts")
    def add_contact(self, name: Annotated[PersonName, Role("contact")],
                    email: Annotated[EmailAddress, Role("contact")],
                    company: Annotated[OrganizationName, Role("employer")],
                    title: Annotated[JobTitle, Role("job_title")],
                    city: Annotated[City, Role("home_city")],
                    phone: Annotated[PhoneNumber, Role("contact")] = "+1 555-000-0000") -> Contact:
        """Add a new contact to the address book."""
        if any(c.email.lower() == email.lower() for c in self.state.contacts.values()):
            raise ToolError(409, f"A contact with email {email!r} already exists")
        cid = next_id("C-", self.state.contacts, salt=(self.world.seed, self.name, email))
        person = self.world.person(name)
        contact = Contact(
            id=cid, name=name, email=email, phone=phone, company=company, title=title, city=city,
            birthday=person.birthday.isoformat() if person else "1990-01-01",
            address=Address(street="unknown", city=city, postal_code="00000", country="US"))
        self.state.contacts[cid] = contact
        return contact
