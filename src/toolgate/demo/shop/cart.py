"""Shop tools for the one cart: add, view, remove.

Imports ``demo.backend``, ``demo.db`` and ``demo.shop.model``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from pydantic import Field

from toolgate.demo.backend import ADD, READ, SET
from toolgate.demo.db import Database, utc_now
from toolgate.demo.shop.model import ProductId, current_cart, load_product


def register(server: FastMCP, db: Database) -> None:
    """Add these tools to ``server``, working on ``db``."""

    @server.tool(annotations=ADD)
    def cart_add(
        product_id: ProductId,
        quantity: Annotated[
            int, Field(description="How many to add (1-20, default 1).", ge=1, le=20)
        ] = 1,
    ) -> dict[str, Any]:
        """Add a product to the cart (or more of one already in it) and return the cart.

        Fails if the product is unknown or there is not enough stock for the total quantity.
        """
        with db.write() as conn:
            product = load_product(conn, product_id)
            row = conn.execute(
                "SELECT quantity FROM shop_cart_items WHERE product_id = ?", (product_id,)
            ).fetchone()
            wanted = quantity + (row["quantity"] if row else 0)
            if wanted > product["stock"]:
                raise ToolError(
                    f"Not enough stock for {product['name']!r}: {product['stock']} available, "
                    f"{wanted} wanted."
                )
            conn.execute(
                "INSERT INTO shop_cart_items (product_id, quantity, added_at) VALUES (?, ?, ?)"
                " ON CONFLICT (product_id) DO UPDATE SET quantity = excluded.quantity",
                (product_id, wanted, utc_now()),
            )
            return current_cart(conn)

    @server.tool(annotations=READ)
    def cart_view() -> dict[str, Any]:
        """Show the cart: items, quantities, line totals, subtotal and total weight.

        Shipping is not included; see estimate_shipping or checkout_start.
        """
        with db.read() as conn:
            return current_cart(conn)

    @server.tool(annotations=SET)
    def cart_remove(product_id: ProductId) -> dict[str, Any]:
        """Remove a product line from the cart entirely and return the cart.

        Fails if the product is not in the cart.
        """
        with db.write() as conn:
            cur = conn.execute("DELETE FROM shop_cart_items WHERE product_id = ?", (product_id,))
            if cur.rowcount == 0:
                raise ToolError(f"Product {product_id} is not in the cart.")
            return current_cart(conn)
