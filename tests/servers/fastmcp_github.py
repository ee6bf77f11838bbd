"""A FastMCP server with toolgate: GitHub-like groups, served in memory, over stdio
(``python fastmcp_github.py [strategy]``) or over HTTP by the FastMCP adapter tests.

Tools come from FastMCP's decorators (``@mcp.tool`` with ``@in_group``, tags, or the
``tool_groups`` mapping) and from toolgate (``ToolSet.tool``), all in one catalog.
"""

from __future__ import annotations

import sys
from typing import Any

from fastmcp import Context, FastMCP

from toolgate import CallContext, Group, Policy, ToolSet, in_group, tool
from toolgate.exiting import quick_exit
from toolgate.fastmcp import ToolgateMiddleware
from toolgate.strategies import DeliveryConfig


def build(
    *,
    strategy: str = "auto",
    meta_tools: str = "menu",
    page_size: int = 100,
    identity: Any = None,
    auth: Any = None,
    hidden_tool_errors: str = "hint",
    store: Any = None,
) -> tuple[FastMCP[Any], ToolgateMiddleware]:
    mcp: FastMCP[Any] = FastMCP("github", auth=auth)
    ts = ToolSet(page_size=page_size, hidden_tool_errors=hidden_tool_errors, store=store)
    ts.add_groups(
        [
            Group("code", "Code management"),
            Group("repos", "Repositories", parent="code"),
            Group("branches", "Branches", parent="repos"),
            Group("issues", "Issue tracking"),
            Group("read_mode", "Read-only database access"),
            Group("write_mode", "Read-write database access"),
            Group("admin", "Administration"),
        ]
    )
    ts.exclusive("read_mode", "write_mode")

    @mcp.tool
    def ping() -> str:
        """Check that the server answers."""
        return "pong"

    @mcp.tool
    @in_group("code")
    async def get_file(path: str, ctx: Context) -> str:
        """Read a file of the repository."""
        return f"contents of {path} (FastMCP session {ctx.session_id[:8]})"

    @mcp.tool
    def create_repository(name: str) -> dict[str, str]:
        """Create a repository."""
        return {"created": name}

    @mcp.tool(tags={"issues"})
    def create_issue(title: str) -> str:
        """Open an issue."""
        return f"opened {title!r}"

    @mcp.tool(tags={"issues"})
    def list_issues() -> list[str]:
        """List open issues."""
        return ["#1 bug", "#2 feature"]

    @mcp.tool
    @tool(policy=Policy(decision="confirm"))
    def drop_table(table: str) -> str:
        """Drop a database table (asks a human first)."""
        return f"dropped {table}"

    @ts.tool(groups=["branches"])
    def delete_branch(branch: str) -> str:
        """Delete a branch."""
        return f"deleted {branch}"

    @ts.tool(groups=["read_mode"])
    def read_db(query: str) -> str:
        """Run a read-only query."""
        return f"rows for {query}"

    @ts.tool(groups=["write_mode"])
    def write_db(statement: str) -> str:
        """Run a statement that writes."""
        return f"ran {statement}"

    @ts.tool(groups=["admin"], policy=Policy(min_trust="verified"))
    def rotate_keys() -> str:
        """Rotate the deploy keys."""
        return "rotated"

    @ts.tool(always=True)
    def whoami(ctx: CallContext) -> dict[str, Any]:
        """Who the server thinks is calling, and in which session."""
        return {
            "id": ctx.principal.id,
            "trust": ctx.principal.trust,
            "scope": list(ctx.principal.scope),
            "agent_class": ctx.principal.agent_class,
            "session": ctx.session_key,
        }

    middleware = ToolgateMiddleware(
        ts,
        DeliveryConfig(strategy=strategy, meta_tools=meta_tools),
        identity=identity,
        tool_groups={"create_repository": ["repos"]},
    ).attach(mcp)
    return mcp, middleware


if __name__ == "__main__":
    server, _ = build(strategy=sys.argv[1] if len(sys.argv) > 1 else "auto", page_size=4)
    server.run("stdio", show_banner=False)
    quick_exit()  # end without collecting the heap (toolgate.exiting)
