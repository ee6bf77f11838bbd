"""Shop tools for checkout: start an order from the cart, pay or cancel it,
follow its status.

Imports ``demo.backend``, ``demo.db`` and ``demo.shop.model``.
"""

from __future__ import annotations

import secrets
from typing import Annotated, Any

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from pydantic import Field

from toolgate.demo.backend import ADD, OVERWRITE, READ, SET
from toolgate.demo.db import Database, utc_now
from toolgate.demo.shop.model import (
    CUSTOMER,
    DECLINED_TEST_CARD,
    Country,
    Method,
    OrderId,
    current_cart,
    load_order,
    luhn_valid,
    money,
    order_row,
    set_status,
    shipping_quote,
)


def register(server: FastMCP, db: Database) -> None:
    """Add these tools to ``server``, working on ``db``."""

    @server.tool(annotations=ADD)
    def checkout_start(
        ship_to_name: Annotated[
            str, Field(description="Recipient's full name.", min_length=1, max_length=100)
        ],
        ship_to_address: Annotated[
            str,
            Field(description="Street, city and postal code.", min_length=5, max_length=300),
        ],
        country: Country,
        shipping_method: Method = "standard",
    ) -> dict[str, Any]:
        """Turn the cart into an order awaiting payment, with shipping and total computed.

        The cart is emptied into the new order (status 'pending_payment'). Pay it with
        checkout_pay, or put the items back in the cart with checkout_cancel.
        """
        with db.write() as conn:
            cart = current_cart(conn)
            if not cart["items"]:
                raise ToolError("The cart is empty: add products with cart_add first.")
            short = [
                f"{item['name']!r} ({item['stock']} in stock, {item['quantity']} in cart)"
                for item in cart["items"]
                if item["quantity"] > item["stock"]
            ]
            if short:
                raise ToolError(f"Not enough stock for: {'; '.join(short)}.")
            quote = shipping_quote(
                country, shipping_method, cart["weight_grams"], cart["subtotal_cents"]
            )
            now = utc_now()
            cur = conn.execute(
                "INSERT INTO shop_orders (customer, status, ship_to_name, ship_to_address,"
                " country, shipping_method, subtotal_cents, shipping_cents, total_cents,"
                " created_at, updated_at) VALUES (?, 'pending_payment', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    CUSTOMER,
                    ship_to_name,
                    ship_to_address,
                    quote["country"],
                    shipping_method,
                    cart["subtotal_cents"],
                    quote["cost_cents"],
                    cart["subtotal_cents"] + quote["cost_cents"],
                    now,
                    now,
                ),
            )
            order_id = int(cur.lastrowid or 0)
            conn.executemany(
                "INSERT INTO shop_order_items (order_id, product_id, name, unit_price_cents,"
                " quantity) VALUES (?, ?, ?, ?, ?)",
                [
                    (order_id, i["product_id"], i["name"], i["unit_price_cents"], i["quantity"])
                    for i in cart["items"]
                ],
            )
            conn.execute(
                "INSERT INTO shop_order_events (order_id, status, note, at) VALUES (?, ?, ?, ?)",
                (order_id, "pending_payment", "Checkout started.", now),
            )
            conn.execute("DELETE FROM shop_cart_items")
            order = load_order(conn, order_id)
        order["delivery_days"] = [quote["days_min"], quote["days_max"]]
        return order

    @server.tool(annotations=OVERWRITE)
    def checkout_pay(
        order_id: OrderId,
        card_number: Annotated[
            str,
            Field(
                description="Card number, 12-19 digits (spaces allowed). Test card: "
                "4242 4242 4242 4242; 4000 0000 0000 0002 is always declined.",
                pattern=r"^[0-9 ]{12,23}$",
            ),
        ],
    ) -> dict[str, Any]:
        """Pay an order awaiting payment by card; on success stock is taken and it is 'paid'.

        Only orders in 'pending_payment' can be paid, so an order is never charged twice.
        A declined or invalid card changes nothing.
        """
        digits = card_number.replace(" ", "")
        if not 12 <= len(digits) <= 19 or not luhn_valid(digits):
            raise ToolError("Invalid card number: it fails the checksum. Check the digits.")
        with db.write() as conn:
            order = order_row(conn, order_id)
            if order["status"] != "pending_payment":
                raise ToolError(
                    f"Order {order_id} cannot be paid: its status is {order['status']!r}."
                )
            if digits == DECLINED_TEST_CARD:
                raise ToolError("Payment declined by the card issuer. Try another card.")
            short = conn.execute(
                "SELECT oi.name, p.stock, oi.quantity FROM shop_order_items oi"
                " JOIN shop_products p ON p.id = oi.product_id"
                " WHERE oi.order_id = ? AND oi.quantity > p.stock",
                (order_id,),
            ).fetchall()
            if short:
                listing = "; ".join(
                    f"{r['name']!r} ({r['stock']} left, {r['quantity']} ordered)" for r in short
                )
                raise ToolError(f"Not enough stock to fulfil order {order_id}: {listing}.")
            conn.execute(
                "UPDATE shop_products SET stock = stock - (SELECT quantity FROM shop_order_items"
                " oi WHERE oi.order_id = ? AND oi.product_id = shop_products.id)"
                " WHERE id IN (SELECT product_id FROM shop_order_items WHERE order_id = ?)",
                (order_id, order_id),
            )
            set_status(
                conn,
                order_id,
                "paid",
                f"Paid {money(order['total_cents'])} with card ending {digits[-4:]}.",
                payment_ref=f"pay_{secrets.token_hex(6)}",
            )
            return load_order(conn, order_id)

    @server.tool(annotations=SET)
    def checkout_cancel(order_id: OrderId) -> dict[str, Any]:
        """Abandon an unpaid order and put its items back in the cart.

        Only works while the order is 'pending_payment'; paid orders need cancel_order.
        """
        with db.write() as conn:
            order = order_row(conn, order_id)
            if order["status"] != "pending_payment":
                raise ToolError(
                    f"Order {order_id} is {order['status']!r}, not awaiting payment; "
                    "only pending orders can be abandoned."
                )
            now = utc_now()
            conn.execute(
                "INSERT INTO shop_cart_items (product_id, quantity, added_at)"
                " SELECT product_id, quantity, ? FROM shop_order_items WHERE order_id = ? AND true"
                " ON CONFLICT (product_id) DO UPDATE"
                " SET quantity = shop_cart_items.quantity + excluded.quantity",
                (now, order_id),
            )
            set_status(conn, order_id, "cancelled", "Checkout abandoned; items back in cart.")
            return {"order": load_order(conn, order_id), "cart": current_cart(conn)}

    @server.tool(annotations=READ)
    def order_status(order_id: OrderId) -> dict[str, Any]:
        """Show an order's status, items, totals, shipping details and full history.

        Statuses: pending_payment, paid, shipped, cancelled, refunded.
        """
        with db.read() as conn:
            return load_order(conn, order_id)
