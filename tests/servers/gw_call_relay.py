"""A small MCP backend for the gateway's relay tests (``test_gateway_call_relay.py``).

``ask_then_die`` asks the client to sample (or, with ``{"ask": "elicitation"}``, to fill
a form), then exits while the answer is awaited;
``list_roots`` asks the client for its roots on every call (the URIs, one a line), and
``list_roots_here`` the same on the call's own response stream (related to the call);
``log`` sends a debug and an error message during the call (those at or above the level
set, if one was) and, with ``later``, a
warning after it returned (outside any call; ``--name NAME`` adds "from NAME" to it);
``url_elicit`` asks the client to open a URL (URL-mode elicitation ``{"id": ...}``) and,
once it accepted, sends ``notifications/elicitation/complete`` for it after returning;
``meta`` answers with its request's ``_meta`` as JSON (its result has a ``_meta`` of
its own); ``sign_in_first`` refuses with
JSON-RPC error -32042 (URL elicitation required), with ``roots_first`` after asking for
the client's roots; ``sample`` asks the client to sample and answers with its text;
``misshapen`` answers with structured content its output schema refuses;
``slow_progress`` reports progress every 50 ms until cancelled, and then writes a line to
``DIR/cancelled``; with ``--header-param``, ``region`` answers with its argument, which
2026-07-28 clients also send as the ``Mcp-Param-Region`` header.
``logging/setLevel`` writes the level to ``DIR/level``,
``notifications/roots/list_changed`` a line to ``DIR/roots_changed``.
Run: ``python tests/servers/gw_call_relay.py --marks DIR [--port N]`` (SDK low-level
``Server``; stdio, or streamable HTTP on port N).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import threading
import warnings
from pathlib import Path
from typing import Any, get_args

import anyio
import mcp_types as mt
import uvicorn
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import UrlElicitationRequiredError
from mcp.shared.message import ServerMessageMetadata

from toolgate.exiting import quick_exit

EMPTY: dict[str, Any] = {"type": "object", "properties": {}}
TOOLS = [
    mt.Tool(
        name="ask_then_die",
        description="Ask the client to sample or elicit; exit before the answer arrives.",
        input_schema={
            "type": "object",
            "properties": {"ask": {"enum": ["sampling", "elicitation"]}},
        },
    ),
    mt.Tool(
        name="log",
        description="Log at debug and error now; with later, at warning after returning.",
        input_schema={"type": "object", "properties": {"later": {"type": "boolean"}}},
    ),
    mt.Tool(name="list_roots", description="The client's roots, asked now.", input_schema=EMPTY),
    mt.Tool(
        name="list_roots_here",
        description="The client's roots, asked on the call's own response stream.",
        input_schema=EMPTY,
    ),
    mt.Tool(
        name="url_elicit",
        description="Have the client open a URL; say when that is done.",
        input_schema={"type": "object", "properties": {"id": {"type": "string"}}},
    ),
    mt.Tool(name="meta", description="The request's _meta, as JSON.", input_schema=EMPTY),
    mt.Tool(
        name="sign_in_first",
        description="Refuse with -32042 (with roots_first, after asking for the roots).",
        input_schema={"type": "object", "properties": {"roots_first": {"type": "boolean"}}},
    ),
    mt.Tool(
        name="sample",
        description="Ask the client to sample; answer with its text.",
        input_schema=EMPTY,
    ),
    mt.Tool(
        name="slow_progress",
        description="Report progress every 50 ms until cancelled.",
        input_schema=EMPTY,
    ),
    mt.Tool(
        name="misshapen",
        description="Answer with structured content its own output schema refuses.",
        input_schema=EMPTY,
        output_schema={
            "type": "object",
            "properties": {"count": {"type": "integer"}},
            "required": ["count"],
        },
    ),
]


#: with ``--header-param``: its argument travels as ``Mcp-Param-Region`` too (2026-07-28)
REGION = mt.Tool(
    name="region",
    description="Answer with the region asked for.",
    input_schema={
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
    },
)

LATER: set[asyncio.Task[None]] = set()


LEVELS: tuple[mt.LoggingLevel, ...] = get_args(mt.LoggingLevel)  # severity-ascending
#: the level the client set (none: every message is sent), honoured by ``log``
LEVEL: list[str] = []


async def set_level(ctx: ServerRequestContext, params: mt.SetLevelRequestParams) -> mt.EmptyResult:
    (MARKS / "level").write_text(params.level)
    LEVEL[:] = [params.level]
    return mt.EmptyResult()


def wanted(level: mt.LoggingLevel) -> bool:
    return not LEVEL or LEVELS.index(level) >= LEVELS.index(LEVEL[0])


async def roots_changed(ctx: ServerRequestContext, params: mt.NotificationParams | None) -> None:
    with (MARKS / "roots_changed").open("a") as out:
        out.write("changed\n")


MARKS = Path()


def main() -> None:
    global MARKS
    parser = argparse.ArgumentParser()
    parser.add_argument("--marks", type=Path, required=True)
    parser.add_argument("--name")
    parser.add_argument("--port", type=int, help="serve streamable HTTP here (else stdio)")
    parser.add_argument(
        "--header-param", action="store_true", help="add ``region``, whose argument is a header"
    )
    options = parser.parse_args()
    if options.header_param:
        TOOLS.append(REGION)
    marks: Path = options.marks
    MARKS = marks
    later_text = "warning after the call" + (f" from {options.name}" if options.name else "")

    async def list_tools(
        ctx: ServerRequestContext, params: mt.PaginatedRequestParams | None
    ) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=list(TOOLS))

    async def call_tool(
        ctx: ServerRequestContext, params: mt.CallToolRequestParams
    ) -> mt.CallToolResult:
        if params.name == "ask_then_die":
            request: Any = mt.CreateMessageRequest(
                params=mt.CreateMessageRequestParams(
                    messages=[
                        mt.SamplingMessage(
                            role="user", content=mt.TextContent(type="text", text="hi")
                        )
                    ],
                    max_tokens=10,
                )
            )
            answer: Any = mt.CreateMessageResult
            if (params.arguments or {}).get("ask") == "elicitation":
                schema = {"type": "object", "properties": {"name": {"type": "string"}}}
                request = mt.ElicitRequest(
                    params=mt.ElicitRequestFormParams(message="Your name?", requested_schema=schema)
                )
                answer = mt.ElicitResult
            # the process ends while the request is outstanding (the client holds its answer)
            threading.Timer(0.3, os._exit, args=(3,)).start()
            await ctx.session.send_request(request, answer, metadata=None)
            return mt.CallToolResult(content=[mt.TextContent(type="text", text="unreachable")])
        if params.name == "log":
            session = ctx.session
            with warnings.catch_warnings():  # logging is deprecated on 2026-07-28 only
                warnings.simplefilter("ignore")
                levels: tuple[mt.LoggingLevel, ...] = ("debug", "error")
                for level in filter(wanted, levels):
                    await session.send_log_message(
                        level, f"{level} during the call", "gw", ctx.request_id
                    )
                if (params.arguments or {}).get("later"):

                    async def later() -> None:
                        await anyio.sleep(0.2)
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            if wanted("warning"):
                                await session.send_log_message("warning", later_text, "gw")

                    LATER.add(asyncio.get_running_loop().create_task(later()))
            return mt.CallToolResult(content=[mt.TextContent(type="text", text="logged")])
        if params.name == "url_elicit":
            elicitation = str((params.arguments or {}).get("id", "url-1"))
            url_request = mt.ElicitRequest(
                params=mt.ElicitRequestURLParams(
                    message="Sign in, please",
                    url="https://example.com/sign-in",
                    elicitation_id=elicitation,
                )
            )
            answer = await ctx.session.send_request(url_request, mt.ElicitResult, metadata=None)
            if answer.action == "accept":
                session = ctx.session

                async def done() -> None:
                    await anyio.sleep(0.2)
                    await session.send_elicit_complete(elicitation)

                LATER.add(asyncio.get_running_loop().create_task(done()))
            return mt.CallToolResult(content=[mt.TextContent(type="text", text=answer.action)])
        if params.name == "meta":
            meta = params.model_dump(by_alias=True, mode="json").get("_meta") or {}
            return mt.CallToolResult(
                content=[mt.TextContent(type="text", text=json.dumps(meta))],
                meta={"example.com/answered-by": "gw-upstream", "example.com/keys": len(meta)},
            )
        if params.name == "sign_in_first":
            if (params.arguments or {}).get("roots_first"):
                await ctx.session.send_request(
                    mt.ListRootsRequest(), mt.ListRootsResult, metadata=None
                )
            raise UrlElicitationRequiredError(
                [
                    mt.ElicitRequestURLParams(
                        message="Sign in first",
                        url="https://example.com/sign-in",
                        elicitation_id="sign-in-1",
                    )
                ]
            )
        if params.name == "misshapen":
            return mt.CallToolResult(
                content=[mt.TextContent(type="text", text='{"count": "many"}')],
                structured_content={"count": "many"},
            )
        if params.name == "region":
            region = str((params.arguments or {}).get("region"))
            return mt.CallToolResult(content=[mt.TextContent(type="text", text=region)])
        if params.name == "sample":
            asked = mt.CreateMessageRequest(
                params=mt.CreateMessageRequestParams(
                    messages=[
                        mt.SamplingMessage(
                            role="user", content=mt.TextContent(type="text", text="hi")
                        )
                    ],
                    max_tokens=10,
                )
            )
            sampled = await ctx.session.send_request(asked, mt.CreateMessageResult, metadata=None)
            content = sampled.content
            text = content.text if isinstance(content, mt.TextContent) else str(content)
            return mt.CallToolResult(content=[mt.TextContent(type="text", text=text)])
        if params.name in ("list_roots", "list_roots_here"):
            here = params.name == "list_roots_here"  # related to the call: on its stream
            related = ServerMessageMetadata(related_request_id=ctx.request_id) if here else None
            roots = await ctx.session.send_request(
                mt.ListRootsRequest(), mt.ListRootsResult, metadata=related
            )
            uris = "\n".join(str(root.uri) for root in roots.roots)
            return mt.CallToolResult(content=[mt.TextContent(type="text", text=uris)])
        step = 0
        try:
            while True:
                step += 1
                await ctx.session.report_progress(step, None, f"step {step}")
                await anyio.sleep(0.05)
        except anyio.get_cancelled_exc_class():
            with (marks / "cancelled").open("a") as out:
                out.write(f"cancelled at step {step}\n")
            raise

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = Server(
            "gw-upstream",
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_set_logging_level=set_level,
            on_roots_list_changed=roots_changed,
        )

    if options.port is not None:
        app = server.streamable_http_app()
        uvicorn.run(app, host="127.0.0.1", port=options.port, log_level="warning")
        return

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)
    quick_exit()  # end without collecting the heap (toolgate.exiting)


if __name__ == "__main__":
    main()
