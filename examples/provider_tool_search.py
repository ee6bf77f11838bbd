"""Hand tool discovery to the model provider; toolgate still checks every call.

``GroupsClient`` fetches a grouped server's catalog once (``fetch_tree``) and exports it
for the providers' own tool search: the Anthropic Messages API (every grouped tool with
``defer_loading`` plus the BM25 tool-search tool) and the OpenAI Responses API (one
``namespace`` per group, its tools deferred, plus ``tool_search``). The model loads only
the definitions its search finds; each call it makes still goes through the MCP server,
which applies the caller's scope, trust, policies and stages.

    python examples/provider_tool_search.py             # print both request bodies
    ANTHROPIC_API_KEY=... python examples/provider_tool_search.py anthropic   # send one
    OPENAI_API_KEY=... python examples/provider_tool_search.py openai

Without a key nothing is sent: the script prints the requests it would make.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from toolgate.client import GroupsClient, ProviderRequest

TASK = "Add 2 and 3 with the calculator."
ANTHROPIC_MODEL = "claude-sonnet-4-5"
OPENAI_MODEL = "gpt-5.4"


def requests(groups: GroupsClient) -> dict[str, ProviderRequest]:
    """The two requests a host sends for ``TASK``."""
    return {
        "anthropic": groups.anthropic_request(
            ANTHROPIC_MODEL, [{"role": "user", "content": TASK}], max_tokens=1024
        ),
        "openai": groups.openai_request(OPENAI_MODEL, TASK),
    }


async def send(groups: GroupsClient, provider: str, request: ProviderRequest) -> None:
    """Send ``request`` with the provider's key and run the tool calls it answers with."""
    import httpx2  # toolgate's own HTTP client: installed with it

    if provider == "anthropic":
        headers = {**request.headers, "x-api-key": os.environ["ANTHROPIC_API_KEY"]}
    else:
        headers = {**request.headers, "authorization": f"Bearer {os.environ['OPENAI_API_KEY']}"}
    async with httpx2.AsyncClient(timeout=60) as http:
        answer = (await http.post(request.url, headers=headers, json=request.body)).json()
    if provider == "anthropic":
        for block in answer.get("content", []):
            if block.get("type") == "tool_use":
                print(json.dumps(await groups.run_anthropic_tool_use(block), indent=2))
    else:
        for item in answer.get("output", []):
            if item.get("type") == "function_call":
                print(json.dumps(await groups.run_openai_call(item), indent=2))


PROVIDERS = ("anthropic", "openai")


async def main(argv: list[str]) -> None:
    from mcp import Client

    from toolgate.client import GroupsClientExtension

    sys.path.insert(0, str(Path(__file__).parent))
    from lowlevel_server import build

    logging.getLogger("client").setLevel(logging.ERROR)  # tools found in groups, not lists
    server, _ = build()
    async with Client(server, extensions=[GroupsClientExtension()]) as client:
        groups = GroupsClient(client)
        await groups.start()
        await groups.fetch_tree()
        built = requests(groups)
        provider = argv[0] if argv else None
        key = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}.get(provider or "")
        if provider in built and key and os.environ.get(key):
            await send(groups, provider, built[provider])
            return
        out: dict[str, Any] = {
            name: {"url": r.url, "headers": dict(r.headers), "body": r.body}
            for name, r in built.items()
        }
        print(json.dumps(out, indent=2))


if __name__ == "__main__":
    if sys.argv[2:] or (sys.argv[1:] and sys.argv[1] not in PROVIDERS):
        sys.exit(f"usage: python {sys.argv[0]} [{' | '.join(PROVIDERS)}]")
    asyncio.run(main(sys.argv[1:]))
