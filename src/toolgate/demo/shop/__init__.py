"""Demo backend `shop`: a small web shop as a real FastMCP server over SQLite.

Owns the shop's tools, one module per area: catalog (with reviews and shipping), cart,
checkout, orders (admin); storage is `shop.schema`. `destructiveHint` marks tools that
move money or overwrite data (pay, cancel, refund, set_price); cart edits and stock
top-ups are not destructive. The demo has one customer, `local`.
Run: `python -m toolgate.demo.shop --db PATH` (stdio).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fastmcp import FastMCP

from toolgate.demo.backend import serve_stdio
from toolgate.demo.db import Database
from toolgate.demo.shop import cart, catalog, checkout, orders
from toolgate.demo.shop.schema import SHOP_SCHEMA


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
    for area in (catalog, cart, checkout, orders):
        area.register(server, db)
    return server


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: serve the shop over stdio on the given SQLite file."""
    serve_stdio(build_server, "toolgate.demo.shop", "a small web shop", argv)
