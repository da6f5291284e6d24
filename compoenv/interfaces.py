"""Shared typed interfaces: the semantic types and entity models that services have in common.

A semantic type is a plain Python type (``str``, ``float``, ``int``) annotated with an
:class:`Interface` marker and validation constraints. The marker shows up in every JSON schema as
``"x-interface": "<name>"``; the tool-dependency graph joins one tool's outputs to another tool's
inputs by it. Entity models (Contact, Event, Order, ...) are tagged the same way, so a tool that
returns a Contact feeds every tool that takes a Contact, or one of its fields.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from collections.abc import Iterator, Set as AbcSet
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from compoenv.roles import Role

__all__ = [
    "Interface", "interface_of", "SEMANTIC_TYPES", "ENTITY_MODELS", "STATABLE", "Entity",
    "declare_statable",
    # semantic types
    "PersonName", "EmailAddress", "PhoneNumber", "Url", "Date", "DateTime", "TimeOfDay",
    "DurationMinutes", "Money", "CurrencyCode", "City", "CountryCode", "StreetAddress",
    "PostalCode", "AirportCode", "OrganizationName", "JobTitle", "ContactId", "EventId",
    "MessageId", "AccountId", "TransactionId", "InvoiceId", "OrderId", "ProductId", "ProductName",
    "FlightNumber", "BookingReference", "Temperature", "Quantity", "EmailSubject", "Category",
    "Percentage", "TrackingNumber", "HotelId", "ReservationId", "Text",
    # entities
    "Address", "Contact", "Event", "EmailMessage", "Account", "Transaction", "Invoice",
    "Product", "Order", "Flight", "Booking", "WeatherReport", "Hotel", "HotelReservation",
]


_DECLARED_STATABLE: set[str] = set()


class _Statable(AbcSet[str]):
    """The names of statable interfaces: the built-in ones and any a service declares with
    ``Interface(name, statable=True)``, whenever it is declared."""

    def __contains__(self, name: object) -> bool:
        return name in _DECLARED_STATABLE

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(_DECLARED_STATABLE))

    def __len__(self) -> int:
        return len(_DECLARED_STATABLE)

    @classmethod
    def _from_iterable(cls, names: Any) -> frozenset[str]:  # what set operations return
        return frozenset(names)


def declare_statable(names: Any) -> None:
    """Count these interface names as statable (what a library index recorded of a module it
    has not imported yet)."""
    _DECLARED_STATABLE.update(n for n in names if isinstance(n, str))


@dataclass(frozen=True, slots=True)
class Interface:
    """Marks a type as a named shared interface; adds ``x-interface`` to its JSON schema.

    Args:
        name: Interface name, unique across the library (``EmailAddress``).
        statable: Whether a user could state such a value in a request (a name, a city, a
            date); composed tasks only ground their first step in statable values.
    """

    name: str
    statable: bool = False

    def __post_init__(self) -> None:
        if self.statable:  # a service's own statable interface counts as one everywhere
            _DECLARED_STATABLE.add(self.name)

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> dict[str, Any]:
        schema = handler(core_schema)
        schema["x-interface"] = self.name
        return schema


def _round_cents(value: float) -> float:
    return round(float(value), 2)


def _real_date(value: str) -> str:
    dt.date.fromisoformat(value[:10])  # "2026-02-30" matches the pattern but is no date
    if len(value) > 10:
        dt.time.fromisoformat(value[11:])
    return value


def _s(name: str, *, statable: bool = False, **constraints: Any) -> Any:
    return Annotated[str, StringConstraints(strip_whitespace=True, **constraints),
                     Interface(name, statable)]


# --- semantic types -------------------------------------------------------------------------
PersonName = _s("PersonName", statable=True, min_length=1, max_length=120)
EmailAddress = _s("EmailAddress", statable=True, max_length=254,
                  pattern=r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}$")
PhoneNumber = _s("PhoneNumber", statable=True, pattern=r"^\+?[0-9][0-9 ()-]{6,20}$")
Url = _s("Url", statable=True, max_length=2048, pattern=r"^https?://\S+$")
Date = Annotated[str, StringConstraints(strip_whitespace=True, pattern=r"^\d{4}-\d{2}-\d{2}$"),
                 AfterValidator(_real_date), Interface("Date", True)]
DateTime = Annotated[str, StringConstraints(strip_whitespace=True,
                                            pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$"),
                     AfterValidator(_real_date), Interface("DateTime", True)]
TimeOfDay = _s("TimeOfDay", statable=True, pattern=r"^\d{2}:\d{2}$")
DurationMinutes = Annotated[int, Field(ge=1, le=7 * 24 * 60), Interface("DurationMinutes", True)]
Money = Annotated[float, Field(ge=-1e9, le=1e9), AfterValidator(_round_cents),
                  Interface("Money", True)]
CurrencyCode = _s("CurrencyCode", statable=True, pattern=r"^[A-Z]{3}$")
City = _s("City", statable=True, min_length=1, max_length=80)
CountryCode = _s("CountryCode", statable=True, pattern=r"^[A-Z]{2}$")
StreetAddress = _s("StreetAddress", statable=True, min_length=1, max_length=200)
PostalCode = _s("PostalCode", statable=True, min_length=3, max_length=10)
AirportCode = _s("AirportCode", statable=True, pattern=r"^[A-Z]{3}$")
OrganizationName = _s("OrganizationName", statable=True, min_length=1, max_length=120)
JobTitle = _s("JobTitle", statable=True, min_length=1, max_length=80)
ContactId = _s("ContactId", pattern=r"^C-\d{4,}$")
EventId = _s("EventId", pattern=r"^EV-\d{4,}$")
MessageId = _s("MessageId", pattern=r"^M-\d{4,}$")
AccountId = _s("AccountId", statable=True, pattern=r"^ACC-\d{4,}$")
TransactionId = _s("TransactionId", pattern=r"^TX-\d{4,}$")
InvoiceId = _s("InvoiceId", statable=True, pattern=r"^INV-\d{4,}$")
OrderId = _s("OrderId", statable=True, pattern=r"^ORD-\d{4,}$")
ProductId = _s("ProductId", pattern=r"^P-\d{4,}$")
ProductName = _s("ProductName", statable=True, min_length=1, max_length=120)
FlightNumber = _s("FlightNumber", statable=True, pattern=r"^[A-Z]{2}\d{2,4}$")
BookingReference = _s("BookingReference", pattern=r"^[A-Z0-9]{6}$")
Temperature = Annotated[float, Field(ge=-90, le=60), Interface("Temperature")]
Quantity = Annotated[int, Field(ge=1, le=10_000), Interface("Quantity", True)]
EmailSubject = _s("EmailSubject", statable=True, min_length=1, max_length=200)
Category = _s("Category", statable=True, min_length=1, max_length=60)
Percentage = Annotated[float, Field(ge=0, le=100), Interface("Percentage", True)]
TrackingNumber = _s("TrackingNumber", pattern=r"^TRK\d{8}$")
HotelId = _s("HotelId", pattern=r"^H-\d{4,}$")
ReservationId = _s("ReservationId", pattern=r"^R-\d{4,}$")
Text = _s("Text", statable=True, max_length=20_000)

def interface_of(annotation: Any) -> Interface | None:
    """The Interface marker carried by an annotated type or entity model, if any."""
    for meta in getattr(annotation, "__metadata__", ()):
        if isinstance(meta, Interface):
            return meta
    if isinstance(annotation, type) and issubclass(annotation, Entity):
        return Interface(annotation.__name__)
    return None


# --- entities -------------------------------------------------------------------------------
class Entity(BaseModel):
    """Base of the shared entity models; the schema of each carries ``x-interface``.

    Entities are immutable: a tool changes a record by replacing it
    (``compoenv.crud.update``), which lets episodes share seeded records copy-on-write.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]:
        schema = handler(core_schema)
        schema = handler.resolve_ref_schema(schema)
        schema["x-interface"] = cls.__name__
        return schema


class Address(Entity):
    street: StreetAddress
    city: Annotated[City, Role("location")]
    postal_code: PostalCode
    country: CountryCode


class Contact(Entity):
    id: ContactId
    name: Annotated[PersonName, Role("contact")]
    email: Annotated[EmailAddress, Role("contact")]
    phone: Annotated[PhoneNumber, Role("contact")]
    company: Annotated[OrganizationName, Role("employer")]
    title: Annotated[JobTitle, Role("job_title")]
    city: Annotated[City, Role("home_city")]
    address: Address
    birthday: Annotated[Date, Role("birthday")]
    notes: str = ""


class Event(Entity):
    id: EventId
    title: str
    start: Annotated[DateTime, Role("event_date")]
    duration_minutes: DurationMinutes
    location: Annotated[City, Role("venue_city")]
    attendees: tuple[Annotated[EmailAddress, Role("attendee")], ...] = ()


class EmailMessage(Entity):
    id: MessageId
    sender: Annotated[EmailAddress, Role("sender")]
    to: tuple[Annotated[EmailAddress, Role("recipient")], ...]
    subject: EmailSubject
    body: Text
    sent_at: Annotated[DateTime, Role("posted")]
    folder: Literal["inbox", "sent", "archive", "drafts"] = "inbox"
    read: bool = False


class Account(Entity):
    id: AccountId
    owner: Annotated[PersonName, Role("self")]
    kind: Literal["checking", "savings", "credit"]
    balance: Annotated[Money, Role("balance")]
    currency: CurrencyCode


class Transaction(Entity):
    id: TransactionId
    account_id: AccountId
    counterparty: Annotated[PersonName, Role("payee")]
    counterparty_email: Annotated[EmailAddress, Role("payee")]
    amount: Annotated[Money, Role("payment")]
    currency: CurrencyCode
    date: Annotated[Date, Role("posted")]
    memo: str = ""


class Invoice(Entity):
    id: InvoiceId
    vendor: Annotated[OrganizationName, Role("vendor")]
    billing_email: Annotated[EmailAddress, Role("payee")]
    amount: Annotated[Money, Role("amount_due")]
    currency: CurrencyCode
    due: Annotated[Date, Role("due_date")]
    status: Literal["open", "paid", "void"] = "open"


class Product(Entity):
    id: ProductId
    name: ProductName
    category: Category
    price: Annotated[Money, Role("price")]
    currency: CurrencyCode
    stock: int
    rating: float


class Order(Entity):
    id: OrderId
    customer_email: Annotated[EmailAddress, Role("customer")]
    product_id: ProductId
    product_name: ProductName
    quantity: Quantity
    total: Annotated[Money, Role("total")]
    currency: CurrencyCode
    placed: Annotated[Date, Role("created")]
    status: Literal["placed", "shipped", "delivered", "cancelled"] = "placed"
    tracking: TrackingNumber | None = None
    ship_to: Address


class Flight(Entity):
    number: FlightNumber
    origin: AirportCode
    destination: AirportCode
    origin_city: Annotated[City, Role("origin")]
    destination_city: Annotated[City, Role("destination")]
    departure: Annotated[DateTime, Role("departure")]
    duration_minutes: DurationMinutes
    price: Annotated[Money, Role("fare")]
    currency: CurrencyCode
    seats_left: int


class Booking(Entity):
    reference: BookingReference
    flight_number: FlightNumber
    passenger: Annotated[PersonName, Role("passenger")]
    passenger_email: Annotated[EmailAddress, Role("passenger")]
    departure: Annotated[DateTime, Role("departure")]
    price: Annotated[Money, Role("fare")]
    currency: CurrencyCode
    status: Literal["confirmed", "cancelled"] = "confirmed"


class WeatherReport(Entity):
    city: Annotated[City, Role("location")]
    date: Annotated[Date, Role("date")]
    condition: Literal["sunny", "cloudy", "rain", "snow", "storm", "fog"]
    high: Temperature
    low: Temperature
    precipitation_chance: Percentage


class Hotel(Entity):
    id: HotelId
    name: str
    city: Annotated[City, Role("hotel_city")]
    address: Address
    stars: int
    nightly_rate: Annotated[Money, Role("rate")]
    currency: CurrencyCode
    rooms_left: int


class HotelReservation(Entity):
    id: ReservationId
    hotel_id: HotelId
    hotel_name: str
    city: Annotated[City, Role("hotel_city")]
    guest: Annotated[PersonName, Role("guest")]
    guest_email: Annotated[EmailAddress, Role("guest")]
    check_in: Annotated[Date, Role("check_in")]
    nights: int
    total: Annotated[Money, Role("total")]
    currency: CurrencyCode
    status: Literal["confirmed", "cancelled"] = "confirmed"


ENTITY_MODELS: dict[str, type[Entity]] = {
    cls.__name__: cls for cls in Entity.__subclasses__()
}
SEMANTIC_TYPES = {
    marker.name: value
    for value in list(globals().values())
    if (marker := interface_of(value)) is not None and not isinstance(value, type)
}
STATABLE: AbcSet[str] = _Statable()
