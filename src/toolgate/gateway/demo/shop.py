"""Demo backend `shop`: a small web shop as a real FastMCP server over SQLite.

Owns the shop's tools (catalog, reviews, shipping, one cart, checkout and order admin);
storage is `db.SHOP_SCHEMA`. Annotations: read-only tools never write; `destructiveHint`
marks tools that move money or overwrite data (pay, cancel, refund, set_price), while
cart edits and stock top-ups are not destructive. The demo has one customer, `local`.
Run: `python -m toolgate.gateway.demo.shop --db PATH` (stdio).
"""

from __future__ import annotations

import argparse
import math
import secrets
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from toolgate.gateway.demo.db import SHOP_SCHEMA, Database, as_dict, default_db_path, utc_now

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

READ = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
ADD = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
SET = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
OVERWRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)

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

_PRODUCT_SELECT = (
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


def _product_dict(row: sqlite3.Row) -> dict[str, Any]:
    product = as_dict(row)
    product["price"] = money(row["price_cents"])
    product["in_stock"] = row["stock"] > 0
    return product


def _product(conn: sqlite3.Connection, product_id: int) -> dict[str, Any]:
    row = conn.execute(f"{_PRODUCT_SELECT} WHERE p.id = ? GROUP BY p.id", (product_id,)).fetchone()
    if row is None:
        raise ToolError(
            f"Unknown product {product_id}. Use search_products or browse_catalog to find ids."
        )
    return _product_dict(row)


def _categories(conn: sqlite3.Connection) -> list[str]:
    return [
        r["category"]
        for r in conn.execute("SELECT DISTINCT category FROM shop_products ORDER BY category")
    ]


def _cart(conn: sqlite3.Connection) -> dict[str, Any]:
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


def _order_row(conn: sqlite3.Connection, order_id: int) -> sqlite3.Row:
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM shop_orders WHERE id = ?", (order_id,)
    ).fetchone()
    if row is None:
        raise ToolError(f"Unknown order {order_id}. Order ids come from checkout_start.")
    return row


def _order(conn: sqlite3.Connection, order_id: int) -> dict[str, Any]:
    order = as_dict(_order_row(conn, order_id))
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


def _set_status(
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


def _restock_order(conn: sqlite3.Connection, order_id: int) -> None:
    conn.execute(
        "UPDATE shop_products SET stock = stock + (SELECT quantity FROM shop_order_items oi"
        " WHERE oi.order_id = ? AND oi.product_id = shop_products.id)"
        " WHERE id IN (SELECT product_id FROM shop_order_items WHERE order_id = ?)",
        (order_id, order_id),
    )


# --------------------------------------------------------------------------- server


def build_server(db_path: str | Path) -> FastMCP:
    """The shop server over the SQLite file at `db_path` (created and seeded if new).

    >>> server = build_server("/tmp/demo.sqlite3")  # then server.run() or Client(server)
    """
    db = Database(db_path, SHOP_SCHEMA)
    db.initialize()
    server = FastMCP(
        "toolgate-demo-shop",
        instructions=(
            "A small web shop with one cart. Find products with search_products or "
            "browse_catalog, add them with cart_add, then checkout_start and checkout_pay."
        ),
    )

    # ----------------------------------------------------------------- catalog

    @server.tool(annotations=READ)
    def search_products(
        query: Annotated[
            str,
            Field(
                description="Words to find in product names, descriptions, categories or SKUs.",
                min_length=1,
                max_length=200,
            ),
        ],
        category: Annotated[
            str | None, Field(description="Only this category (see list_categories).")
        ] = None,
        max_price_cents: Annotated[
            int | None, Field(description="Only products at or below this price, in cents.", ge=0)
        ] = None,
        in_stock_only: Annotated[
            bool, Field(description="Skip products that are out of stock (default false).")
        ] = False,
        limit: Annotated[int, Field(description="Maximum results (1-50).", ge=1, le=50)] = 10,
    ) -> dict[str, Any]:
        """Search the catalog by keywords and return matching products, best match first.

        A product matches when any query word appears in its name, description, category
        or SKU; products matching more words (and in the name) rank higher.
        """
        words = query.lower().split()
        if not words:
            raise ToolError("query must contain at least one word.")
        with db.read() as conn:
            if category is not None and category not in _categories(conn):
                raise ToolError(
                    f"Unknown category {category!r}. "
                    f"Known categories: {', '.join(_categories(conn))}."
                )
            rows = conn.execute(f"{_PRODUCT_SELECT} GROUP BY p.id ORDER BY p.id").fetchall()
        hits: list[tuple[int, dict[str, Any]]] = []
        for row in rows:
            if category is not None and row["category"] != category:
                continue
            if max_price_cents is not None and row["price_cents"] > max_price_cents:
                continue
            if in_stock_only and row["stock"] == 0:
                continue
            name = row["name"].lower()
            text = f"{row['description']} {row['category']} {row['sku']}".lower()
            score = sum(3 * (w in name) + (w in text) for w in words)
            if score:
                hits.append((score, _product_dict(row)))
        hits.sort(key=lambda hit: (-hit[0], hit[1]["id"]))
        return {
            "query": query,
            "count": min(len(hits), limit),
            "products": [product for _, product in hits[:limit]],
        }

    @server.tool(annotations=READ)
    def list_categories() -> dict[str, Any]:
        """List the catalog's categories with product counts and price ranges.

        Category names are what browse_catalog and search_products take.
        """
        with db.read() as conn:
            rows = conn.execute(
                "SELECT category, COUNT(*) AS products, MIN(price_cents) AS min_price_cents,"
                " MAX(price_cents) AS max_price_cents, SUM(stock > 0) AS in_stock"
                " FROM shop_products GROUP BY category ORDER BY category"
            ).fetchall()
        return {"categories": [as_dict(r) for r in rows]}

    @server.tool(annotations=READ)
    def browse_catalog(
        category: Annotated[
            str | None, Field(description="Category to browse; the whole catalog if null.")
        ] = None,
        sort: Annotated[
            Literal["name", "price_asc", "price_desc", "rating"],
            Field(description="Order: 'name' (default), 'price_asc', 'price_desc' or 'rating'."),
        ] = "name",
        page: Annotated[int, Field(description="Page number, starting at 1.", ge=1)] = 1,
        page_size: Annotated[int, Field(description="Products per page (1-50).", ge=1, le=50)] = 10,
    ) -> dict[str, Any]:
        """Browse products page by page, optionally within one category, in a chosen order.

        Returns the page, the total number of products and whether there is a next page.
        """
        order = {
            "name": "p.name, p.id",
            "price_asc": "p.price_cents, p.id",
            "price_desc": "p.price_cents DESC, p.id",
            "rating": "rating IS NULL, rating DESC, p.id",
        }[sort]
        with db.read() as conn:
            params: tuple[Any, ...] = ()
            where = ""
            if category is not None:
                if category not in _categories(conn):
                    raise ToolError(
                        f"Unknown category {category!r}. "
                        f"Known categories: {', '.join(_categories(conn))}."
                    )
                where, params = " WHERE p.category = ?", (category,)
            total = conn.execute(f"SELECT COUNT(*) FROM shop_products p{where}", params).fetchone()[
                0
            ]
            rows = conn.execute(
                f"{_PRODUCT_SELECT}{where} GROUP BY p.id ORDER BY {order} LIMIT ? OFFSET ?",
                (*params, page_size, (page - 1) * page_size),
            ).fetchall()
        return {
            "category": category,
            "page": page,
            "page_size": page_size,
            "total": total,
            "has_next_page": page * page_size < total,
            "products": [_product_dict(r) for r in rows],
        }

    @server.tool(annotations=READ)
    def get_product(product_id: ProductId) -> dict[str, Any]:
        """Read one product: description, price, stock, weight and average rating.

        Use list_reviews for what customers wrote.
        """
        with db.read() as conn:
            return _product(conn, product_id)

    @server.tool(annotations=READ)
    def list_reviews(
        product_id: ProductId,
        limit: Annotated[int, Field(description="Maximum reviews (1-50).", ge=1, le=50)] = 10,
    ) -> dict[str, Any]:
        """List a product's customer reviews, newest first, with the average rating.

        Ratings are whole stars from 1 to 5.
        """
        with db.read() as conn:
            product = _product(conn, product_id)
            rows = conn.execute(
                "SELECT id, author, rating, title, body, created_at FROM shop_reviews"
                " WHERE product_id = ? ORDER BY created_at DESC, id DESC LIMIT ?",
                (product_id, limit),
            ).fetchall()
        return {
            "product_id": product_id,
            "name": product["name"],
            "rating": product["rating"],
            "review_count": product["review_count"],
            "reviews": [as_dict(r) for r in rows],
        }

    @server.tool(annotations=ADD)
    def add_review(
        product_id: ProductId,
        rating: Annotated[int, Field(description="Stars from 1 (bad) to 5 (great).", ge=1, le=5)],
        title: Annotated[str, Field(description="Short headline.", min_length=1, max_length=100)],
        body: Annotated[
            str, Field(description="What you liked or did not.", min_length=1, max_length=2000)
        ],
    ) -> dict[str, Any]:
        """Write a review of a product as the demo customer.

        One review per product: fails if you already reviewed it.
        """
        with db.write() as conn:
            _product(conn, product_id)
            if conn.execute(
                "SELECT 1 FROM shop_reviews WHERE product_id = ? AND author = ?",
                (product_id, CUSTOMER),
            ).fetchone():
                raise ToolError(f"You already reviewed product {product_id}.")
            cur = conn.execute(
                "INSERT INTO shop_reviews (product_id, author, rating, title, body, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (product_id, CUSTOMER, rating, title, body, utc_now()),
            )
            review = as_dict(
                conn.execute("SELECT * FROM shop_reviews WHERE id = ?", (cur.lastrowid,)).fetchone()
            )
        return review

    @server.tool(annotations=READ)
    def estimate_shipping(
        country: Country,
        method: Method = "standard",
        product_id: Annotated[
            int | None,
            Field(description="Estimate for this product; for the current cart if null.", ge=1),
        ] = None,
        quantity: Annotated[
            int, Field(description="How many of product_id (1-20).", ge=1, le=20)
        ] = 1,
    ) -> dict[str, Any]:
        """Estimate shipping cost and delivery days to a country, for a product or the cart.

        Cost depends on the zone (domestic US, North America, Europe, international), the
        method and the weight. Standard domestic shipping is free from $75.00.
        """
        with db.read() as conn:
            if product_id is not None:
                product = _product(conn, product_id)
                weight = product["weight_grams"] * quantity
                subtotal = product["price_cents"] * quantity
            else:
                cart = _cart(conn)
                if not cart["items"]:
                    raise ToolError(
                        "The cart is empty: pass product_id, or add items with cart_add first."
                    )
                weight, subtotal = cart["weight_grams"], cart["subtotal_cents"]
        return shipping_quote(country, method, weight, subtotal)

    # ----------------------------------------------------------------- cart

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
            product = _product(conn, product_id)
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
            return _cart(conn)

    @server.tool(annotations=READ)
    def cart_view() -> dict[str, Any]:
        """Show the cart: items, quantities, line totals, subtotal and total weight.

        Shipping is not included; see estimate_shipping or checkout_start.
        """
        with db.read() as conn:
            return _cart(conn)

    @server.tool(annotations=SET)
    def cart_remove(product_id: ProductId) -> dict[str, Any]:
        """Remove a product line from the cart entirely and return the cart.

        Fails if the product is not in the cart.
        """
        with db.write() as conn:
            cur = conn.execute("DELETE FROM shop_cart_items WHERE product_id = ?", (product_id,))
            if cur.rowcount == 0:
                raise ToolError(f"Product {product_id} is not in the cart.")
            return _cart(conn)

    # ----------------------------------------------------------------- checkout

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
            cart = _cart(conn)
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
            order = _order(conn, order_id)
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
            order = _order_row(conn, order_id)
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
            _set_status(
                conn,
                order_id,
                "paid",
                f"Paid {money(order['total_cents'])} with card ending {digits[-4:]}.",
                payment_ref=f"pay_{secrets.token_hex(6)}",
            )
            return _order(conn, order_id)

    @server.tool(annotations=SET)
    def checkout_cancel(order_id: OrderId) -> dict[str, Any]:
        """Abandon an unpaid order and put its items back in the cart.

        Only works while the order is 'pending_payment'; paid orders need cancel_order.
        """
        with db.write() as conn:
            order = _order_row(conn, order_id)
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
            _set_status(conn, order_id, "cancelled", "Checkout abandoned; items back in cart.")
            return {"order": _order(conn, order_id), "cart": _cart(conn)}

    @server.tool(annotations=READ)
    def order_status(order_id: OrderId) -> dict[str, Any]:
        """Show an order's status, items, totals, shipping details and full history.

        Statuses: pending_payment, paid, shipped, cancelled, refunded.
        """
        with db.read() as conn:
            return _order(conn, order_id)

    # ----------------------------------------------------------------- order admin

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
            order = _order_row(conn, order_id)
            if order["status"] != "paid":
                raise ToolError(
                    f"Order {order_id} cannot be shipped: its status is {order['status']!r}."
                )
            _set_status(
                conn,
                order_id,
                "shipped",
                f"Shipped with {carrier}, tracking {tracking_number}.",
                carrier=carrier,
                tracking_number=tracking_number,
            )
            return _order(conn, order_id)

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
            order = _order_row(conn, order_id)
            if order["status"] not in ("pending_payment", "paid"):
                raise ToolError(
                    f"Order {order_id} cannot be cancelled: its status is {order['status']!r}."
                )
            note = f"Cancelled: {reason}"
            if order["status"] == "paid":
                _restock_order(conn, order_id)
                note += f" Refunded {money(order['total_cents'])}; items restocked."
            _set_status(conn, order_id, "cancelled", note)
            return _order(conn, order_id)

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
            order = _order_row(conn, order_id)
            if order["status"] != "shipped":
                raise ToolError(
                    f"Order {order_id} cannot be refunded: its status is {order['status']!r}."
                )
            if restock:
                _restock_order(conn, order_id)
            _set_status(
                conn,
                order_id,
                "refunded",
                f"Refunded {money(order['total_cents'])}: {reason}"
                + (" Items restocked." if restock else ""),
            )
            return _order(conn, order_id)

    @server.tool(annotations=ADD)
    def restock_product(
        product_id: ProductId,
        quantity: Annotated[int, Field(description="Units received (1-1000).", ge=1, le=1000)],
    ) -> dict[str, Any]:
        """Add received units to a product's stock and return the product.

        Adds to the current stock; it does not set an absolute level.
        """
        with db.write() as conn:
            _product(conn, product_id)
            conn.execute(
                "UPDATE shop_products SET stock = stock + ? WHERE id = ?", (quantity, product_id)
            )
            return _product(conn, product_id)

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
            old = _product(conn, product_id)
            conn.execute(
                "UPDATE shop_products SET price_cents = ? WHERE id = ?", (price_cents, product_id)
            )
            product = _product(conn, product_id)
        product["old_price_cents"] = old["price_cents"]
        return product

    return server


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: serve the shop over stdio on the given SQLite file."""
    parser = argparse.ArgumentParser(
        prog="python -m toolgate.gateway.demo.shop",
        description="toolgate demo backend: a small web shop MCP server over stdio.",
    )
    parser.add_argument(
        "--db",
        type=Path,
        default=default_db_path(),
        help=f"SQLite file (created and seeded if new; default {default_db_path()})",
    )
    args = parser.parse_args(argv)
    build_server(args.db).run(transport="stdio", show_banner=False)


if __name__ == "__main__":
    main()
