"""The shop's vocabulary: the demo customer, argument types, prices, shipping
quotes and row lookups.

Shared by every shop tool module. Imports ``demo.db``, ``fastmcp`` and ``pydantic`` only.
"""

from __future__ import annotations

import math
import sqlite3
from typing import Annotated, Any, Literal

from fastmcp.exceptions import ToolError
from pydantic import Field

from toolgate.demo.db import as_dict, utc_now

CUSTOMER = "local"
"""The demo is single-customer: one cart, and every order belongs to this name."""

DECLINED_TEST_CARD = "4000000000000002"
"""A card number that passes the checksum but is always declined, to demo payment errors."""

FREE_SHIPPING_CENTS = 7500
"""Standard domestic shipping is free from this cart subtotal on."""

ShippingMethod = Literal["standard", "express"]
OrderStatus = Literal["pending_payment", "paid", "shipped", "cancelled", "refunded"]

ProductId = Annotated[
    int, Field(description="Numeric product id, e.g. 3 (see search_products).", ge=1)
]
OrderId = Annotated[
    int, Field(description="Numeric order id, as returned by checkout_start.", ge=1)
]
Country = Annotated[
    str,
    Field(
        description="Destination country as an ISO 3166 two-letter code, e.g. 'US' or 'DE'.",
        pattern=r"^[A-Za-z]{2}$",
    ),
]
Method = Annotated[ShippingMethod, Field(description="'standard' (default, slower) or 'express'.")]

_ZONES = {
    "domestic": {"US"},
    "north_america": {"CA", "MX"},
    "europe": {
        "AT", "BE", "CH", "CZ", "DE", "DK", "ES", "FI", "FR", "GB", "IE", "IT", "NL", "NO",
        "PL", "PT", "SE",
    },
}  # fmt: skip

# method -> zone -> (base cents, cents per started kg, days min, days max)
_RATES: dict[str, dict[str, tuple[int, int, int, int]]] = {
    "standard": {
        "domestic": (499, 100, 3, 5),
        "north_america": (999, 250, 5, 8),
        "europe": (1499, 400, 6, 10),
        "international": (1999, 600, 8, 15),
    },
    "express": {
        "domestic": (1299, 200, 1, 2),
        "north_america": (2499, 500, 2, 3),
        "europe": (3499, 800, 2, 4),
        "international": (4999, 1200, 3, 6),
    },
}

PRODUCT_SELECT = (
    "SELECT p.*, ROUND(AVG(r.rating), 2) AS rating, COUNT(r.id) AS review_count"
    " FROM shop_products p LEFT JOIN shop_reviews r ON r.product_id = p.id"
)


def money(cents: int) -> str:
    """Cents as a display price: `money(2450) == "$24.50"`."""
    return f"${cents / 100:,.2f}"


def luhn_valid(number: str) -> bool:
    """Whether a card number passes the Luhn checksum (the check every real card passes)."""
    total = 0
    for i, ch in enumerate(reversed(number)):
        digit = int(ch)
        if i % 2 == 1:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


def shipping_quote(
    country: str, method: str, weight_grams: int, subtotal_cents: int
) -> dict[str, Any]:
    """Cost and delivery window for a parcel; pure, so checkout and estimates agree."""
    code = country.upper()
    zone = next((name for name, codes in _ZONES.items() if code in codes), "international")
    base, per_kg, days_min, days_max = _RATES[method][zone]
    cost = base + per_kg * max(1, math.ceil(weight_grams / 1000))
    free = method == "standard" and zone == "domestic" and subtotal_cents >= FREE_SHIPPING_CENTS
    cents = 0 if free else cost
    return {
        "country": code,
        "zone": zone,
        "method": method,
        "weight_grams": weight_grams,
        "cost_cents": cents,
        "cost": money(cents),
        "free_shipping_applied": free,
        "days_min": days_min,
        "days_max": days_max,
    }


# --------------------------------------------------------------------------- lookups


def product_dict(row: sqlite3.Row) -> dict[str, Any]:
    product = as_dict(row)
    product["price"] = money(row["price_cents"])
    product["in_stock"] = row["stock"] > 0
    return product


def load_product(conn: sqlite3.Connection, product_id: int) -> dict[str, Any]:
    row = conn.execute(f"{PRODUCT_SELECT} WHERE p.id = ? GROUP BY p.id", (product_id,)).fetchone()
    if row is None:
        raise ToolError(
            f"Unknown product {product_id}. Use search_products or browse_catalog to find ids."
        )
    return product_dict(row)


def category_names(conn: sqlite3.Connection) -> list[str]:
    return [
        r["category"]
        for r in conn.execute("SELECT DISTINCT category FROM shop_products ORDER BY category")
    ]


def current_cart(conn: sqlite3.Connection) -> dict[str, Any]:
    rows = conn.execute(
        "SELECT c.product_id, p.name, p.price_cents AS unit_price_cents, c.quantity,"
        " p.price_cents * c.quantity AS line_cents, p.weight_grams * c.quantity AS weight_grams,"
        " p.stock FROM shop_cart_items c JOIN shop_products p ON p.id = c.product_id"
        " ORDER BY c.added_at, c.product_id"
    ).fetchall()
    items = [as_dict(r) for r in rows]
    subtotal = sum(item["line_cents"] for item in items)
    return {
        "items": items,
        "item_count": sum(item["quantity"] for item in items),
        "subtotal_cents": subtotal,
        "subtotal": money(subtotal),
        "weight_grams": sum(item["weight_grams"] for item in items),
    }


def order_row(conn: sqlite3.Connection, order_id: int) -> sqlite3.Row:
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM shop_orders WHERE id = ?", (order_id,)
    ).fetchone()
    if row is None:
        raise ToolError(f"Unknown order {order_id}. Order ids come from checkout_start.")
    return row


def load_order(conn: sqlite3.Connection, order_id: int) -> dict[str, Any]:
    order = as_dict(order_row(conn, order_id))
    order["total"] = money(order["total_cents"])
    order["items"] = [
        as_dict(r)
        for r in conn.execute(
            "SELECT product_id, name, unit_price_cents, quantity FROM shop_order_items"
            " WHERE order_id = ? ORDER BY product_id",
            (order_id,),
        )
    ]
    order["history"] = [
        as_dict(r)
        for r in conn.execute(
            "SELECT status, note, at FROM shop_order_events WHERE order_id = ? ORDER BY id",
            (order_id,),
        )
    ]
    return order


def set_status(
    conn: sqlite3.Connection, order_id: int, status: str, note: str, **extra: Any
) -> None:
    now = utc_now()
    columns = {"status": status, "updated_at": now, **extra}
    assignments = ", ".join(f"{k} = ?" for k in columns)
    conn.execute(
        f"UPDATE shop_orders SET {assignments} WHERE id = ?", (*columns.values(), order_id)
    )
    conn.execute(
        "INSERT INTO shop_order_events (order_id, status, note, at) VALUES (?, ?, ?, ?)",
        (order_id, status, note, now),
    )


def restock_order(conn: sqlite3.Connection, order_id: int) -> None:
    conn.execute(
        "UPDATE shop_products SET stock = stock + (SELECT quantity FROM shop_order_items oi"
        " WHERE oi.order_id = ? AND oi.product_id = shop_products.id)"
        " WHERE id IN (SELECT product_id FROM shop_order_items WHERE order_id = ?)",
        (order_id, order_id),
    )
