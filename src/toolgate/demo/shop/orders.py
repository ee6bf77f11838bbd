"""The shop's order admin tools: list, ship, cancel and refund orders,
restock products and set prices (some move money).

Imports ``demo.backend``, ``demo.db`` and ``demo.shop.model``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from pydantic import Field

from toolgate.demo.backend import ADD, OVERWRITE, READ, SET
from toolgate.demo.db import Database, as_dict
from toolgate.demo.shop.model import (
    OrderId,
    OrderStatus,
    ProductId,
    load_order,
    load_product,
    money,
    order_row,
    restock_order,
    set_status,
)


def register(server: FastMCP, db: Database) -> None:
    """Add these tools to ``server``, working on ``db``."""

    @server.tool(annotations=READ)
    def list_orders(
        status: Annotated[
            OrderStatus | None, Field(description="Only orders with this status; all if null.")
        ] = None,
        limit: Annotated[int, Field(description="Maximum orders (1-100).", ge=1, le=100)] = 20,
    ) -> dict[str, Any]:
        """List orders, newest first, optionally only those with one status.

        Returns a summary per order; use order_status for items and history.
        """
        with db.read() as conn:
            rows = conn.execute(
                "SELECT o.id, o.customer, o.status, o.country, o.total_cents, o.created_at,"
                " (SELECT SUM(quantity) FROM shop_order_items WHERE order_id = o.id) AS items"
                " FROM shop_orders o WHERE ? IS NULL OR o.status = ?"
                " ORDER BY o.id DESC LIMIT ?",
                (status, status, limit),
            ).fetchall()
        return {"count": len(rows), "orders": [as_dict(r) for r in rows]}

    @server.tool(annotations=SET)
    def ship_order(
        order_id: OrderId,
        carrier: Annotated[
            Literal["ups", "fedex", "dhl", "usps"], Field(description="Shipping carrier.")
        ],
        tracking_number: Annotated[
            str,
            Field(
                description="Carrier tracking number: 8-30 uppercase letters or digits.",
                pattern=r"^[A-Z0-9]{8,30}$",
            ),
        ],
    ) -> dict[str, Any]:
        """Mark a paid order as shipped, recording the carrier and tracking number.

        Only 'paid' orders can be shipped.
        """
        with db.write() as conn:
            order = order_row(conn, order_id)
            if order["status"] != "paid":
                raise ToolError(
                    f"Order {order_id} cannot be shipped: its status is {order['status']!r}."
                )
            set_status(
                conn,
                order_id,
                "shipped",
                f"Shipped with {carrier}, tracking {tracking_number}.",
                carrier=carrier,
                tracking_number=tracking_number,
            )
            return load_order(conn, order_id)

    @server.tool(annotations=OVERWRITE)
    def cancel_order(
        order_id: OrderId,
        reason: Annotated[
            str, Field(description="Why the order is cancelled.", min_length=1, max_length=500)
        ],
    ) -> dict[str, Any]:
        """Cancel an order that has not shipped; a paid order is refunded and restocked.

        Shipped orders cannot be cancelled: use refund_order once the parcel is returned.
        """
        with db.write() as conn:
            order = order_row(conn, order_id)
            if order["status"] not in ("pending_payment", "paid"):
                raise ToolError(
                    f"Order {order_id} cannot be cancelled: its status is {order['status']!r}."
                )
            note = f"Cancelled: {reason}"
            if order["status"] == "paid":
                restock_order(conn, order_id)
                note += f" Refunded {money(order['total_cents'])}; items restocked."
            set_status(conn, order_id, "cancelled", note)
            return load_order(conn, order_id)

    @server.tool(annotations=OVERWRITE)
    def refund_order(
        order_id: OrderId,
        reason: Annotated[
            str, Field(description="Why the order is refunded.", min_length=1, max_length=500)
        ],
        restock: Annotated[
            bool, Field(description="Put the returned items back in stock (default true).")
        ] = True,
    ) -> dict[str, Any]:
        """Refund a shipped order in full, optionally returning its items to stock.

        Only 'shipped' orders can be refunded; cancel unshipped ones with cancel_order.
        """
        with db.write() as conn:
            order = order_row(conn, order_id)
            if order["status"] != "shipped":
                raise ToolError(
                    f"Order {order_id} cannot be refunded: its status is {order['status']!r}."
                )
            if restock:
                restock_order(conn, order_id)
            set_status(
                conn,
                order_id,
                "refunded",
                f"Refunded {money(order['total_cents'])}: {reason}"
                + (" Items restocked." if restock else ""),
            )
            return load_order(conn, order_id)

    @server.tool(annotations=ADD)
    def restock_product(
        product_id: ProductId,
        quantity: Annotated[int, Field(description="Units received (1-1000).", ge=1, le=1000)],
    ) -> dict[str, Any]:
        """Add received units to a product's stock and return the product.

        Adds to the current stock; it does not set an absolute level.
        """
        with db.write() as conn:
            load_product(conn, product_id)
            conn.execute(
                "UPDATE shop_products SET stock = stock + ? WHERE id = ?", (quantity, product_id)
            )
            return load_product(conn, product_id)

    @server.tool(annotations=OVERWRITE)
    def set_price(
        product_id: ProductId,
        price_cents: Annotated[
            int, Field(description="New price in cents, e.g. 1999 for $19.99.", ge=0, le=10_000_000)
        ],
    ) -> dict[str, Any]:
        """Change a product's price; carts pick it up, existing orders keep their price.

        Returns the product with its old and new price.
        """
        with db.write() as conn:
            old = load_product(conn, product_id)
            conn.execute(
                "UPDATE shop_products SET price_cents = ? WHERE id = ?", (price_cents, product_id)
            )
            product = load_product(conn, product_id)
        product["old_price_cents"] = old["price_cents"]
        return product
