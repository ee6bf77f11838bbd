"""A small MCP backend with prompts, resources and a resource template beside one tool,
for the gateway tests of groups that hold prompts and resources (FastMCP, stdio).

Run: ``python tests/servers/gw_prompts.py``.
"""

from __future__ import annotations

from fastmcp import FastMCP

from toolgate.exiting import quick_exit

mcp = FastMCP("gw-prompts")


@mcp.tool
def lookup(q: str) -> str:
    """Look a word up in the docs."""
    return f"found {q}"


@mcp.prompt
def review_pr(number: int) -> str:
    """Review one pull request."""
    return f"Review pull request #{number}."


@mcp.prompt
def greet() -> str:
    """Say hello."""
    return "Hello."


@mcp.resource("docs://readme")
def readme() -> str:
    """The project's readme."""
    return "# readme"


@mcp.resource("docs://pages/{page}")
def page(page: str) -> str:
    """One page of the docs."""
    return f"page {page}"


if __name__ == "__main__":
    mcp.run(show_banner=False)
    quick_exit()  # end without collecting the heap (toolgate.exiting)
