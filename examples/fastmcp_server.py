"""A FastMCP server with toolgate: groups, policies, stages, lazy descriptions and search.

A small bookshop. ``@mcp.tool`` functions join toolgate's catalog (``@in_group`` marks
and FastMCP tags name their groups); toolgate-only tools come from ``toolset.tool``.

Run it over stdio (what an MCP host starts)::

    python examples/fastmcp_server.py            # list_changed for legacy clients
    python examples/fastmcp_server.py --lazy     # plus lazy descriptions

``build()`` returns the server for tests and in-memory clients.
"""

from __future__ import annotations

import sys
from typing import Any

from fastmcp import FastMCP

from toolgate import (
    CallContext,
    Flow,
    Group,
    Policy,
    RateLimit,
    Stage,
    ToolSet,
    Transition,
    in_group,
    tool,
)
from toolgate.fastmcp import ToolgateMiddleware
from toolgate.strategies import DeliveryConfig
from toolgate.strategies.lazy import LazyDescriptions

BOOKS = {
    "dune": {"title": "Dune", "price": 12},
    "emma": {"title": "Emma", "price": 8},
}


def build(*, lazy: bool = False, strategy: str = "auto") -> FastMCP[Any]:
    """The bookshop server. ``lazy=True`` lists one-sentence summaries and requires
    ``describe_tools`` before a tool's first call; ``strategy`` is DESIGN §5's."""
    mcp: FastMCP[Any] = FastMCP("bookshop")
    checkout = Flow(
        initial="browse",
        stages=(
            Stage("browse", transitions=(Transition(on="cart_add", to="checkout"),)),
            Stage("checkout", enables=("browse",), transitions=(Transition("pay", "browse"),)),
        ),
    )
    toolset = ToolSet("bookshop", flow=checkout, max_tools=12)
    toolset.add_groups(
        [
            Group("catalog", "Find books and read about them."),
            Group("cart", "Fill a cart and pay.", parent="catalog"),
            Group("admin", "Change prices (staff only)."),
        ]
    )
    cart: list[str] = []

    @mcp.tool
    def ping() -> str:
        """Check that the shop answers."""
        return "pong"

    @mcp.tool
    @in_group("catalog")
    def find_book(words: str) -> list[str]:
        """Find books whose title contains the words. Returns book ids."""
        return [k for k, b in BOOKS.items() if words.lower() in str(b["title"]).lower()]

    @mcp.tool(tags={"catalog"})
    def book_price(book_id: str) -> int:
        """The price of a book in euros."""
        return int(BOOKS[book_id]["price"])

    @mcp.tool
    @in_group("cart")
    def cart_add(book_id: str) -> list[str]:
        """Put a book in the cart. Opens the checkout stage."""
        cart.append(book_id)
        return cart

    @mcp.tool
    @in_group("cart")
    @tool(stages=["checkout"], policy=Policy(rate_limit=RateLimit(max=2, window_s=60)))
    def pay() -> dict[str, Any]:
        """Pay for the cart (checkout stage only; at most twice a minute)."""
        total = sum(int(BOOKS[b]["price"]) for b in cart)
        cart.clear()
        return {"paid": total}

    @toolset.tool(groups=["admin"], policy=Policy(min_trust="verified"))
    def set_price(book_id: str, price: int) -> str:
        """Change a book's price (needs trust "verified")."""
        BOOKS[book_id]["price"] = price
        return f"{book_id} now costs {price}"

    @toolset.tool(always=True)
    def whoami(ctx: CallContext) -> dict[str, Any]:
        """Who the server thinks you are."""
        return {"id": ctx.principal.id, "trust": ctx.principal.trust}

    addons = [LazyDescriptions(toolset, schema="minimal", check_names=False)] if lazy else []
    ToolgateMiddleware(
        toolset, DeliveryConfig(strategy=strategy, search=True), addons=addons
    ).attach(mcp)
    return mcp


if __name__ == "__main__":
    build(lazy="--lazy" in sys.argv[1:]).run("stdio", show_banner=False)
