"""The shop's tables and seed data (products, reviews, the cart, orders).

Storage only; the file and its transactions are ``demo.db``'s. Stdlib only.
"""

from __future__ import annotations

import sqlite3

from toolgate.demo.db import Schema

_SHOP_TABLES = (
    (
        "shop_products",
        "CREATE TABLE IF NOT EXISTS shop_products ("
        " id INTEGER PRIMARY KEY,"
        " sku TEXT NOT NULL UNIQUE,"
        " name TEXT NOT NULL,"
        " category TEXT NOT NULL,"
        " description TEXT NOT NULL,"
        " price_cents INTEGER NOT NULL CHECK (price_cents >= 0),"
        " stock INTEGER NOT NULL CHECK (stock >= 0),"
        " weight_grams INTEGER NOT NULL CHECK (weight_grams > 0))",
    ),
    (
        "shop_reviews",
        "CREATE TABLE IF NOT EXISTS shop_reviews ("
        " id INTEGER PRIMARY KEY,"
        " product_id INTEGER NOT NULL REFERENCES shop_products (id) ON DELETE CASCADE,"
        " author TEXT NOT NULL,"
        " rating INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5),"
        " title TEXT NOT NULL,"
        " body TEXT NOT NULL,"
        " created_at TEXT NOT NULL)",
    ),
    (
        "shop_cart_items",
        "CREATE TABLE IF NOT EXISTS shop_cart_items ("
        " product_id INTEGER PRIMARY KEY REFERENCES shop_products (id),"
        " quantity INTEGER NOT NULL CHECK (quantity > 0),"
        " added_at TEXT NOT NULL)",
    ),
    (
        "shop_orders",
        "CREATE TABLE IF NOT EXISTS shop_orders ("
        " id INTEGER PRIMARY KEY,"
        " customer TEXT NOT NULL,"
        " status TEXT NOT NULL CHECK (status IN"
        "  ('pending_payment', 'paid', 'shipped', 'cancelled', 'refunded')),"
        " ship_to_name TEXT NOT NULL,"
        " ship_to_address TEXT NOT NULL,"
        " country TEXT NOT NULL,"
        " shipping_method TEXT NOT NULL,"
        " subtotal_cents INTEGER NOT NULL,"
        " shipping_cents INTEGER NOT NULL,"
        " total_cents INTEGER NOT NULL,"
        " payment_ref TEXT,"
        " carrier TEXT,"
        " tracking_number TEXT,"
        " created_at TEXT NOT NULL,"
        " updated_at TEXT NOT NULL)",
    ),
    (
        "shop_order_items",
        "CREATE TABLE IF NOT EXISTS shop_order_items ("
        " order_id INTEGER NOT NULL REFERENCES shop_orders (id) ON DELETE CASCADE,"
        " product_id INTEGER NOT NULL REFERENCES shop_products (id),"
        " name TEXT NOT NULL,"
        " unit_price_cents INTEGER NOT NULL,"
        " quantity INTEGER NOT NULL CHECK (quantity > 0),"
        " PRIMARY KEY (order_id, product_id))",
    ),
    (
        "shop_order_events",
        "CREATE TABLE IF NOT EXISTS shop_order_events ("
        " id INTEGER PRIMARY KEY,"
        " order_id INTEGER NOT NULL REFERENCES shop_orders (id) ON DELETE CASCADE,"
        " status TEXT NOT NULL,"
        " note TEXT NOT NULL,"
        " at TEXT NOT NULL)",
    ),
)


def _seed_shop(conn: sqlite3.Connection) -> None:
    t0 = "2026-09-01T09:00:00+00:00"
    products = [
        # id, sku, name, category, description, price_cents, stock, weight_grams
        (1, "BK-001", "The Pragmatic Gardener", "books",
         "Hands-on guide to growing vegetables on a balcony.", 2450, 12, 480),
        (2, "BK-002", "SQLite Internals", "books",
         "How a B-tree database fits in one file.", 3900, 5, 650),
        (3, "KT-001", "Cast-iron skillet 26 cm", "kitchen",
         "Pre-seasoned skillet for stove, oven and campfire.", 4500, 8, 2300),
        (4, "KT-002", "Pour-over coffee set", "kitchen",
         "Glass dripper, carafe and 100 paper filters.", 3200, 15, 900),
        (5, "KT-003", "Chef's knife 20 cm", "kitchen",
         "Stainless steel, full tang, with blade guard.", 6900, 0, 300),
        (6, "OD-001", "Ultralight tent 2P", "outdoor",
         "Two-person, three-season tent, 1.2 kg packed.", 24900, 3, 1200),
        (7, "OD-002", "Headlamp 400 lm", "outdoor",
         "USB-C rechargeable, red light mode.", 2999, 25, 90),
        (8, "OD-003", "Insulated bottle 750 ml", "outdoor",
         "Keeps drinks cold for 24 h or hot for 12 h.", 2200, 40, 380),
        (9, "EL-001", "Mechanical keyboard", "electronics",
         "Tenkeyless, hot-swappable switches, USB-C.", 8900, 7, 850),
        (10, "EL-002", "Noise-cancelling earbuds", "electronics",
         "Active noise cancelling, 24 h with case.", 12900, 10, 60),
    ]  # fmt: skip
    conn.executemany(
        "INSERT INTO shop_products"
        " (id, sku, name, category, description, price_cents, stock, weight_grams)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        products,
    )
    conn.executemany(
        "INSERT INTO shop_reviews (product_id, author, rating, title, body, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        [
            (1, "sam", 5, "Finally tomatoes", "Clear, practical, no fluff.", t0),
            (1, "kim", 4, "Good start", "Wish it covered herbs more.", t0),
            (3, "lee", 5, "Lasts forever", "Heavy but perfect sear.", t0),
            (6, "ana", 4, "Light and roomy", "Condensation on cold nights.", t0),
            (7, "joe", 3, "Bright", "Strap loosens over time.", t0),
            (9, "max", 5, "Great feel", "Swapped to tactile switches in minutes.", t0),
        ],
    )
    conn.execute(
        "INSERT INTO shop_orders (id, customer, status, ship_to_name, ship_to_address, country,"
        " shipping_method, subtotal_cents, shipping_cents, total_cents, payment_ref, carrier,"
        " tracking_number, created_at, updated_at)"
        " VALUES (1, 'local', 'shipped', 'Local Demo User', '1 Demo Street, Springfield',"
        " 'US', 'standard', 5198, 0, 5198, 'pay_seed0001', 'ups', '1Z999AA10123456784', ?, ?)",
        (t0, "2026-09-02T12:00:00+00:00"),
    )
    conn.executemany(
        "INSERT INTO shop_order_items (order_id, product_id, name, unit_price_cents, quantity)"
        " VALUES (1, ?, ?, ?, ?)",
        [(7, "Headlamp 400 lm", 2999, 1), (8, "Insulated bottle 750 ml", 2200, 1)],
    )
    conn.executemany(
        "INSERT INTO shop_order_events (order_id, status, note, at) VALUES (1, ?, ?, ?)",
        [
            ("pending_payment", "Checkout started.", t0),
            ("paid", "Paid with card ending 4242.", t0),
            (
                "shipped",
                "Shipped with ups, tracking 1Z999AA10123456784.",
                "2026-09-02T12:00:00+00:00",
            ),
        ],
    )


SHOP_SCHEMA = Schema(name="shop", tables=_SHOP_TABLES, seed=_seed_shop)
