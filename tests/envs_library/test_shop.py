"""Shop: seeding, every tool through the envelope path, errors, and the interface contract."""

from __future__ import annotations

import re

import pytest

from compoenv import World
from compoenv.crud import update
from compoenv.testing import call_error, call_ok, check_service
from envs_library.commerce.shop import Shop

READS = {"search_products", "get_product", "find_product", "cheapest_in_category",
         "list_orders", "get_order"}
WRITES = {"place_order", "cancel_order"}
FREE_TEXT = ["search_products.query", "list_orders.status"]


@pytest.fixture
def shop() -> Shop:
    return Shop(World(0))


def in_stock(shop: Shop):
    return next(p for p in shop.state.products.values() if p.stock > 0)


# --- seed ---------------------------------------------------------------------------------
def test_seed_has_products_and_past_orders_of_the_user(shop: Shop) -> None:
    user = shop.world.user
    assert 30 <= len(shop.state.products) <= 60
    assert 8 <= len(shop.state.orders) <= 20
    assert len({p.name for p in shop.state.products.values()}) == len(shop.state.products)
    for order in shop.state.orders.values():
        assert order.customer_email == user.email
        assert order.ship_to.city == user.city and order.ship_to.street == user.street
        assert order.placed < shop.world.date(0)
        assert (order.tracking is not None) == (order.status in ("shipped", "delivered"))
        assert order.tracking is None or re.fullmatch(r"TRK\d{8}", order.tracking)
        product = shop.state.products[order.product_id]
        assert order.product_name == product.name
        assert order.total == round(product.price * order.quantity, 2)
    assert any(o.status == "shipped" or o.status == "delivered" for o in shop.state.orders.values())


def test_seeded_state_stays_small(shop: Shop) -> None:
    assert len(shop.state.model_dump_json()) < 60_000


# --- reads --------------------------------------------------------------------------------
def test_search_products_matches_name_and_category(shop: Shop) -> None:
    product = next(iter(shop.state.products.values()))
    found = call_ok(shop, "search_products", query=product.name.lower())
    assert product.id in [p["id"] for p in found]
    by_category = call_ok(shop, "search_products", query=product.category)
    assert by_category and all(p["category"] == product.category or product.category
                               in p["name"].lower() for p in by_category)
    assert call_ok(shop, "search_products", query="zzz nothing") == []


def test_get_product_and_find_product(shop: Shop) -> None:
    product = shop.state.products["P-0003"]
    assert call_ok(shop, "get_product", product_id="P-0003")["name"] == product.name
    assert call_ok(shop, "find_product", name=product.name.upper())["id"] == "P-0003"


def test_unknown_product_is_404_with_did_you_mean(shop: Shop) -> None:
    err = call_error(shop, "get_product", product_id="P-00003")
    assert err["code"] == 404 and "Did you mean 'P-0003'" in err["message"]
    name = shop.state.products["P-0003"].name
    err = call_error(shop, "find_product", name=name[:-1])
    assert err["code"] == 404 and f"Did you mean {name!r}" in err["message"]


def test_cheapest_in_category_is_the_cheapest_in_stock(shop: Shop) -> None:
    category = shop.state.products["P-0001"].category
    cheapest = call_ok(shop, "cheapest_in_category", category=category.upper())
    candidates = [p for p in shop.state.products.values()
                  if p.category == category and p.stock > 0]
    assert cheapest["price"] == min(p.price for p in candidates)
    assert cheapest["stock"] > 0


def test_cheapest_in_category_404_and_409(shop: Shop) -> None:
    category = shop.state.products["P-0001"].category
    err = call_error(shop, "cheapest_in_category", category=category + "s")
    assert err["code"] == 404 and "Did you mean" in err["message"]
    for key, p in list(shop.state.products.items()):
        if p.category == category:
            update(shop.state.products, key, stock=0)
    assert call_error(shop, "cheapest_in_category", category=category)["code"] == 409


def test_list_orders_filters_by_status(shop: Shop) -> None:
    everything = call_ok(shop, "list_orders")
    assert [o["id"] for o in everything] == list(shop.state.orders)
    delivered = call_ok(shop, "list_orders", status="delivered")
    assert delivered and all(o["status"] == "delivered" for o in delivered)
    assert call_error(shop, "list_orders", status="lost")["code"] == 400


def test_get_order(shop: Shop) -> None:
    assert call_ok(shop, "get_order", order_id="ORD-0001")["id"] == "ORD-0001"
    err = call_error(shop, "get_order", order_id="ORD-00001")
    assert err["code"] == 404 and "Did you mean" in err["message"]


def test_reads_do_not_change_state(shop: Shop) -> None:
    before = shop.state.digest()
    product = in_stock(shop)
    for name, args in [("search_products", {"query": "a"}),
                       ("get_product", {"product_id": "P-0001"}),
                       ("find_product", {"name": product.name}),
                       ("cheapest_in_category", {"category": product.category}),
                       ("list_orders", {}), ("get_order", {"order_id": "ORD-0001"})]:
        call_ok(shop, name, **args)
    assert shop.state.digest() == before


# --- writes -------------------------------------------------------------------------------
def test_place_order_ships_to_the_user_and_takes_stock(shop: Shop) -> None:
    product = in_stock(shop)
    stock, before = product.stock, shop.state.digest()
    order = call_ok(shop, "place_order", product_id=product.id, quantity=1)
    # a new id in the service's format, drawn (not the next number: no other task tells it)
    assert re.fullmatch(r"ORD-\d{4}", order["id"]) and order["id"] in shop.state.orders
    assert order["id"] != f"ORD-{len(shop.state.orders):04d}"
    assert order["status"] == "placed" and order["placed"] == shop.world.date(0)
    assert order["total"] == product.price and order["product_name"] == product.name
    assert order["customer_email"] == shop.world.user.email
    assert order["ship_to"]["city"] == shop.world.user.city
    assert shop.state.products[product.id].stock == stock - 1
    assert shop.state.orders[order["id"]].model_dump(mode="json") == order
    assert shop.state.digest() != before


def test_place_order_total_is_price_times_quantity(shop: Shop) -> None:
    product = next(p for p in shop.state.products.values() if p.stock >= 3)
    order = call_ok(shop, "place_order", product_id=product.id, quantity=3)
    assert order["total"] == round(product.price * 3, 2)


def test_place_order_out_of_stock_is_409_and_changes_nothing(shop: Shop) -> None:
    product = in_stock(shop)
    before = shop.state.digest()
    err = call_error(shop, "place_order", product_id=product.id, quantity=product.stock + 1)
    assert err["code"] == 409 and "in stock" in err["message"]
    assert shop.state.digest() == before


def test_place_order_rejects_bad_arguments(shop: Shop) -> None:
    for args in [{"product_id": "P-0001", "quantity": 0}, {"product_id": "P-0001", "quantity": "x"},
                 {"product_id": "shoes", "quantity": 1}, {"product_id": "P-0001"},
                 {"product_id": "P-0001", "quantity": 1, "coupon": "FREE"}]:
        assert call_error(shop, "place_order", **args)["code"] == 400
    assert call_error(shop, "place_order", product_id="P-9999", quantity=1)["code"] == 404


def test_cancel_order_restocks_and_only_placed_orders_cancel(shop: Shop) -> None:
    product = in_stock(shop)
    order = call_ok(shop, "place_order", product_id=product.id, quantity=1)
    stock = shop.state.products[product.id].stock
    assert call_ok(shop, "cancel_order", order_id=order["id"])["status"] == "cancelled"
    assert shop.state.products[product.id].stock == stock + 1
    assert call_error(shop, "cancel_order", order_id=order["id"])["code"] == 409
    shipped = next(o for o in shop.state.orders.values() if o.status in ("shipped", "delivered"))
    before = shop.state.digest()
    assert call_error(shop, "cancel_order", order_id=shipped.id)["code"] == 409
    assert shop.state.digest() == before
    assert call_error(shop, "cancel_order", order_id="ORD-9999")["code"] == 404


def test_writes_on_a_shared_seed_do_not_leak() -> None:
    world = World(0)
    first, second = Shop.create(world), Shop.create(world)
    call_ok(first, "place_order", product_id=in_stock(first).id, quantity=1)
    assert second.state.digest() == Shop(world).state.digest()


# --- contract -----------------------------------------------------------------------------
def test_tools_and_read_only_flags() -> None:
    specs = Shop.tool_specs()
    assert set(specs) == READS | WRITES
    assert {name for name, s in specs.items() if s.read_only} == READS
    assert all(s.description for s in specs.values())


def test_shop_passes_the_service_checker() -> None:
    check_service(Shop, free_text=FREE_TEXT)
