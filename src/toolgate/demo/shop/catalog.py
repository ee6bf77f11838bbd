"""Shop tools for the catalog: search, browse, products, reviews and shipping
estimates.

Imports ``demo.backend``, ``demo.db`` and ``demo.shop.model``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from pydantic import Field

from toolgate.demo.backend import ADD, READ
from toolgate.demo.db import Database, as_dict, utc_now
from toolgate.demo.shop.model import (
    CUSTOMER,
    PRODUCT_SELECT,
    Country,
    Method,
    ProductId,
    category_names,
    current_cart,
    load_product,
    product_dict,
    shipping_quote,
)


def register(server: FastMCP, db: Database) -> None:
    """Add these tools to ``server``, working on ``db``."""

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
            if category is not None and category not in category_names(conn):
                raise ToolError(
                    f"Unknown category {category!r}. "
                    f"Known categories: {', '.join(category_names(conn))}."
                )
            rows = conn.execute(f"{PRODUCT_SELECT} GROUP BY p.id ORDER BY p.id").fetchall()
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
                hits.append((score, product_dict(row)))
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
                if category not in category_names(conn):
                    raise ToolError(
                        f"Unknown category {category!r}. "
                        f"Known categories: {', '.join(category_names(conn))}."
                    )
                where, params = " WHERE p.category = ?", (category,)
            total = conn.execute(f"SELECT COUNT(*) FROM shop_products p{where}", params).fetchone()[
                0
            ]
            rows = conn.execute(
                f"{PRODUCT_SELECT}{where} GROUP BY p.id ORDER BY {order} LIMIT ? OFFSET ?",
                (*params, page_size, (page - 1) * page_size),
            ).fetchall()
        return {
            "category": category,
            "page": page,
            "page_size": page_size,
            "total": total,
            "has_next_page": page * page_size < total,
            "products": [product_dict(r) for r in rows],
        }

    @server.tool(annotations=READ)
    def get_product(product_id: ProductId) -> dict[str, Any]:
        """Read one product: description, price, stock, weight and average rating.

        Use list_reviews for what customers wrote.
        """
        with db.read() as conn:
            return load_product(conn, product_id)

    @server.tool(annotations=READ)
    def list_reviews(
        product_id: ProductId,
        limit: Annotated[int, Field(description="Maximum reviews (1-50).", ge=1, le=50)] = 10,
    ) -> dict[str, Any]:
        """List a product's customer reviews, newest first, with the average rating.

        Ratings are whole stars from 1 to 5.
        """
        with db.read() as conn:
            product = load_product(conn, product_id)
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
            load_product(conn, product_id)
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
                product = load_product(conn, product_id)
                weight = product["weight_grams"] * quantity
                subtotal = product["price_cents"] * quantity
            else:
                cart = current_cart(conn)
                if not cart["items"]:
                    raise ToolError(
                        "The cart is empty: pass product_id, or add items with cart_add first."
                    )
                weight, subtotal = cart["weight_grams"], cart["subtotal_cents"]
        return shipping_quote(country, method, weight, subtotal)
