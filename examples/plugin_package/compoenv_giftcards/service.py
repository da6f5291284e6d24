"""GiftCards: gift cards sent to anyone by email, delivered on a chosen day."""

from __future__ import annotations

from typing import Annotated

from compoenv import Service, State, World, tool
from compoenv.crud import find_one, next_id
from compoenv.interfaces import City, Date, EmailAddress, Entity, Money, PersonName
from compoenv.roles import Role

# what each value is here (compoenv.roles): the graph joins only values whose roles fit
Recipient = Annotated[PersonName, Role("recipient")]
RecipientEmail = Annotated[EmailAddress, Role("recipient")]

__all__ = ["Gift", "GiftCards"]


class Gift(Entity):
    """A gift card sent to someone (an example entity; real ones live in interfaces.py)."""

    id: str
    recipient: Recipient
    recipient_email: RecipientEmail
    amount: Annotated[Money, Role("payment")]
    deliver_on: Annotated[Date, Role("date")]


class GiftCards(Service):
    """Gift cards: send a card to anyone by email, delivered on a chosen day."""

    name = "giftcards"
    domain = "commerce"

    class State(State):
        gifts: dict[str, Gift] = {}
        shops: dict[str, str] = {}  # city -> the partner shop there

    def seed(self, world: World) -> GiftCards.State:
        rng = world.rng(self.name)
        return self.State(shops={c.name: f"{rng.choice(['Corner', 'Main Street'])} Gifts"
                                 for c in world.cities})

    @tool(read_only=True, phrase="find the gift shop in {city}")
    def shop_in(self, city: Annotated[City, Role("location")]) -> str:
        """Name the partner gift shop in a city."""
        return self.state.shops[find_one(self.state.shops, city, str, "city")]  # 404: did you mean

    @tool(read_only=True, phrase="list the gift cards sent to {recipient_email}")
    def gifts_for(self, recipient_email: RecipientEmail) -> list[Gift]:
        """List the gift cards sent to an email address."""
        wanted = recipient_email.casefold()
        return [g for g in self.state.gifts.values() if g.recipient_email.casefold() == wanted]

    @tool(phrase="send a gift card worth {amount} to {recipient} ({recipient_email}) "
                 "for {deliver_on}")
    def send_gift(self, recipient: Recipient, recipient_email: RecipientEmail,
                  amount: Annotated[Money, Role("payment")],
                  deliver_on: Annotated[Date, Role("date")]) -> Gift:
        """Send a gift card by email."""
        gift = Gift(id=next_id("G-", self.state.gifts), recipient=recipient,
                    recipient_email=recipient_email, amount=amount, deliver_on=deliver_on)
        self.state.gifts[gift.id] = gift
        return gift
