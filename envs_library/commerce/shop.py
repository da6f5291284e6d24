"""Shop: an online store where the user is the customer."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from compoenv import Service, State, ToolError, tool
from compoenv.crud import find_one, get_or_404, next_id, norm, search, update
from compoenv.interfaces import (
    Category, Order, OrderId, Product, ProductId, ProductName, Quantity,
)
from compoenv.service import did_you_mean
from compoenv.world import World

CURRENCY = "USD"
_ADJECTIVES = ("Classic", "Compact", "Deluxe", "Eco", "Essential", "Nordic", "Pro", "Rugged",
               "Smart", "Urban", "Vintage", "Studio")
# noun -> (category, typical price)
_NOUNS = {
    "Headphones": ("electronics", 89), "Speaker": ("electronics", 59),
    "Charger": ("electronics", 25), "Keyboard": ("electronics", 69),
    "Backpack": ("bags", 79), "Tote": ("bags", 35), "Water Bottle": ("kitchen", 22),
    "Coffee Grinder": ("kitchen", 49), "Teapot": ("kitchen", 32), "Skillet": ("kitchen", 45),
    "Desk Lamp": ("home", 39), "Throw Blanket": ("home", 55), "Candle": ("home", 18),
    "Yoga Mat": ("sports", 29), "Running Shoes": ("sports", 110), "Tent": ("outdoors", 189),
    "Hiking Poles": ("outdoors", 65), "Notebook": ("office", 12), "Fountain Pen": ("office", 42),
}
OrderStatus = Literal["placed", "shipped", "delivered", "cancelled"]


class Shop(Service):
    """Online store: browse products, place orders shipped to the user, track and cancel them."""

    name = "shop"
    display = "the online shop"
    domain = "commerce"
    related = ("helpdesk", "reviews", "invoices", "bank", "recipes", "analytics", "ads_manager")

    class State(State):
        products: dict[str, Product] = {}
        orders: dict[str, Order] = {}

    def seed(self, world: World) -> Shop.State:
        rng = world.rng(self.name)
        nouns = list(_NOUNS)
        products = {}
        for i, k in enumerate(rng.sample(range(len(_ADJECTIVES) * len(nouns)), 40), start=1):
            adjective, noun = _ADJECTIVES[k // len(nouns)], nouns[k % len(nouns)]
            category, base = _NOUNS[noun]
            pid = f"P-{i:04d}"
            products[pid] = Product(
                id=pid, name=f"{adjective} {noun}", category=category,
                price=round(base * rng.uniform(0.7, 1.5)) - 0.01, currency=CURRENCY,
                stock=0 if rng.random() < 0.1 else rng.randrange(1, 50),
                rating=round(rng.uniform(2.8, 5.0), 1))
        u = world.user
        orders = {}
        ages = sorted(rng.sample(range(1, 42), 12), reverse=True)
        for i, age in enumerate(ages, start=1):
            product = rng.choice(list(products.values()))
            quantity = rng.choice((1, 1, 1, 2, 3))
            status: OrderStatus = ("delivered" if age > 10 else "shipped" if age > 3 else "placed")
            if rng.random() < 0.15:
                status = "cancelled"
            oid = f"ORD-{i:04d}"
            orders[oid] = Order(
                id=oid, customer_email=u.email, product_id=product.id,
                product_name=product.name, quantity=quantity,
                total=round(product.price * quantity, 2), currency=CURRENCY,
                placed=world.date(-age), status=status, ship_to=world.user.address,
                tracking=(f"TRK{rng.randrange(10**7, 10**8):08d}"
                          if status in ("shipped", "delivered") else None))
        return self.State(products=products, orders=orders)

    @tool(read_only=True, phrase="search the shop for {query}")
    def search_products(
        self,
        query: Annotated[str, Field(min_length=1, max_length=200)],
    ) -> list[Product]:
        """Search products by name or category.

        Args:
            query: Words that must all appear in the product name or category.
        """
        return search(self.state.products.values(), query, lambda p: p.name, lambda p: p.category)

    @tool(read_only=True, phrase="look up product {product_id} in the shop")
    def get_product(self, product_id: ProductId) -> Product:
        """Get a product by id."""
        return get_or_404(self.state.products, product_id, "product id")

    @tool(read_only=True, phrase="find the product called {name} in the shop")
    def find_product(self, name: ProductName) -> Product:
        """Find a product by its exact name."""
        return find_one(self.state.products.values(), name, lambda p: p.name, "product name")

    @tool(read_only=True, phrase="find the cheapest in-stock product in the {category} category")
    def cheapest_in_category(self, category: Category) -> Product:
        """The cheapest product of a category that is in stock (ties: lowest id)."""
        products = [p for p in self.state.products.values() if norm(p.category) == norm(category)]
        if not products:
            categories = sorted({p.category for p in self.state.products.values()})
            raise ToolError(404, did_you_mean(category, categories, "category"))
        in_stock = [p for p in products if p.stock > 0]
        if not in_stock:
            raise ToolError(409, f"Every product in category {category!r} is out of stock")
        return min(in_stock, key=lambda p: (p.price, p.id))

    @tool(read_only=True, phrase="list my shop orders")
    def list_orders(self, status: OrderStatus | None = None) -> list[Order]:
        """List the user's orders, oldest first.

        Args:
            status: Only orders with this status.
        """
        return [o for o in self.state.orders.values() if status is None or o.status == status]

    @tool(read_only=True, phrase="look up order {order_id}")
    def get_order(self, order_id: OrderId) -> Order:
        """Get one of the user's orders by id."""
        return get_or_404(self.state.orders, order_id, "order id")

    @tool(phrase="order {quantity} of product {product_id}")
    def place_order(self, product_id: ProductId, quantity: Quantity) -> Order:
        """Buy a product; it ships to the user's home address."""
        product = get_or_404(self.state.products, product_id, "product id")
        if product.stock < quantity:
            raise ToolError(409, f"Only {product.stock} of {product.name!r} in stock, "
                                 f"cannot order {quantity}")
        u = self.world.user
        oid = next_id("ORD-", self.state.orders, salt=(self.world.seed, self.name, product_id,
                                                         quantity))
        order = Order(
            id=oid, customer_email=u.email, product_id=product.id, product_name=product.name,
            quantity=quantity, total=round(product.price * quantity, 2), currency=product.currency,
            placed=self.world.date(0), ship_to=self.world.user.address)
        update(self.state.products, product.id, stock=product.stock - quantity)
        self.state.orders[oid] = order
        return order

    @tool(phrase="cancel order {order_id}")
    def cancel_order(self, order_id: OrderId) -> Order:
        """Cancel an order that has not shipped yet; its items go back in stock."""
        order = get_or_404(self.state.orders, order_id, "order id")
        if order.status != "placed":
            raise ToolError(409, f"Order {order_id} is {order.status}; only placed orders "
                                 f"can be cancelled")
        order = update(self.state.orders, order_id, status="cancelled")
        if (product := self.state.products.get(order.product_id)) is not None:
            update(self.state.products, product.id, stock=product.stock + order.quantity)
        return order
