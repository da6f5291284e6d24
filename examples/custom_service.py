"""Write a service with the decorators, register it, and compose tasks that cross into it.

Run: python examples/custom_service.py
"""

from __future__ import annotations

from compoenv import Service, State, World, tool
from compoenv.compose import Composer, ComposerConfig
from compoenv.crud import find_one, next_id
from compoenv.interfaces import City, Date, EmailAddress, Entity, Money, PersonName
from compoenv.registry import Registry
from compoenv.testing import check_service


class Gift(Entity):
    """A gift card sent to someone (an example entity; real ones live in interfaces.py)."""

    id: str
    recipient: PersonName
    recipient_email: EmailAddress
    amount: Money
    deliver_on: Date


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
    def shop_in(self, city: City) -> str:
        """Name the partner gift shop in a city."""
        return find_one(self.state.shops, city, str, "city")  # 404 with "did you mean"

    @tool(phrase="send a gift card worth {amount} to {recipient} ({recipient_email}) for {deliver_on}")
    def send_gift(self, recipient: PersonName, recipient_email: EmailAddress, amount: Money,
                  deliver_on: Date) -> Gift:
        """Send a gift card by email."""
        gift = Gift(id=next_id("G-", self.state.gifts), recipient=recipient,
                    recipient_email=recipient_email, amount=amount, deliver_on=deliver_on)
        self.state.gifts[gift.id] = gift
        return gift


def main() -> None:
    check_service(GiftCards)  # the library's conventions: phrases, interfaces, seeding
    registry = Registry([*Registry.default(), GiftCards])
    composer = Composer(registry, ComposerConfig(services=("contacts", "giftcards", "bank")))
    for task in composer.generate(3, seed=1):
        print(f"[{', '.join(task.services)}] {task.instruction}")


if __name__ == "__main__":
    main()
