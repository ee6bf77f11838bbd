"""Capture the tool catalog of the GitLab MCP server (``@zereight/mcp-gitlab``, pinned),
and the server's own toolsets, for ``benchmarks/bench_groups.py``.

Installs the pinned npm package into ``benchmarks/.cache/npm``, starts it over stdio
with every toolset on (``GITLAB_TOOLSETS=all``) and a token and API URL that are never
used (listing tools calls no GitLab API), lists its tools with the MCP SDK's client, and
reads the toolsets its authors wrote (``TOOLSET_DEFINITIONS`` of ``build/tools/registry.js``)
with Node. Writes ``benchmarks/data/gitlab-mcp-server.json`` (the ``tools/list`` result,
sorted by name) and ``benchmarks/data/gitlab-mcp-toolsets.json``.
Run: ``python benchmarks/capture_gitlab.py`` (needs npm and node).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import mcp_types as mt
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "@zereight/mcp-gitlab@2.1.64"
PREFIX = ROOT / "benchmarks" / ".cache" / "npm"
ENTRY = PREFIX / "node_modules" / "@zereight" / "mcp-gitlab" / "build" / "index.js"
REGISTRY = ENTRY.parent / "tools" / "registry.js"
OUT = ROOT / "benchmarks" / "data"
TOOLSETS_JS = """
const m = await import(process.argv[1]);
const out = {};
for (const d of m.TOOLSET_DEFINITIONS) out[d.id] = [...d.tools].sort();
console.log(JSON.stringify(out));
"""


def install(node: str) -> None:
    if not ENTRY.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit("npm is needed to install " + PACKAGE)
        subprocess.run(
            [npm, "install", "--prefix", str(PREFIX), "--no-audit", "--no-fund", PACKAGE],
            check=True,
        )


def server_env() -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(PREFIX),
        "GITLAB_PERSONAL_ACCESS_TOKEN": "unused",
        "GITLAB_API_URL": "http://127.0.0.1:9/api/v4",
        "GITLAB_TOOLSETS": "all",
        "GITLAB_DISABLE_VERSION_CHECK": "true",
    }


async def list_tools(node: str) -> list[dict[str, Any]]:
    params = StdioServerParameters(command=node, args=[str(ENTRY)], env=server_env())
    tools: list[dict[str, Any]] = []
    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(params, errlog=quiet) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            cursor: str | None = None
            while True:
                params = mt.PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await session.list_tools(params=params)
                tools += [t.model_dump(by_alias=True, exclude_none=True) for t in page.tools]
                cursor = page.next_cursor
                if not cursor:
                    break
    return sorted(tools, key=lambda t: str(t["name"]))


def toolsets(node: str) -> dict[str, list[str]]:
    done = subprocess.run(
        [node, "--input-type=module", "-e", TOOLSETS_JS, str(REGISTRY)],
        capture_output=True,
        text=True,
        check=True,
        env=server_env(),
    )
    found: dict[str, list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def main() -> None:
    node = shutil.which("node")
    if node is None:
        raise SystemExit("node is needed to run " + PACKAGE)
    install(node)
    tools = asyncio.run(list_tools(node))
    sets = toolsets(node)
    (OUT / "gitlab-mcp-server.json").write_text(
        json.dumps(tools, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (OUT / "gitlab-mcp-toolsets.json").write_text(json.dumps(sets, indent=1) + "\n")
    print(f"{len(tools)} tools, {len(sets)} toolsets")


if __name__ == "__main__":
    main()
