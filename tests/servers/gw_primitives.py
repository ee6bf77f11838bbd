"""A backend with prompts, resources, a resource template and completions, for the relay
tests, on the SDK's low-level ``Server``.

Everything is named after ``--tag`` except the prompt ``greet`` and the resource
``memo://shared`` (two instances collide on those); resources are listed one per page,
and ``memo://<tag>/unlisted`` is read but never listed. ``grow_<tag>`` adds a prompt and
a resource and sends both list_changed notifications; ``reword_<tag>`` changes the
description of the prompt ``only_<tag>`` and sends prompts list_changed; ``touch_<tag>`` sends
``notifications/resources/updated`` for a URI; ``crash_<tag>`` kills the process;
``--fail-if FILE`` refuses to start while FILE exists; with ``--subscribe-gate FILE``
each ``resources/subscribe`` adds a line to ``FILE.asked``, waits until FILE exists and
fails. Run: ``python tests/servers/gw_primitives.py --tag alpha [--fail-if FILE]
[--subscribe-gate FILE]`` (stdio).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from toolgate.exiting import quick_exit

EMPTY: dict[str, Any] = {"type": "object", "properties": {}}
URI = {"type": "object", "properties": {"uri": {"type": "string"}}, "required": ["uri"]}


def build(tag: str, subscribe_gate: Path | None = None) -> Server[Any]:
    prompts = [
        mt.Prompt(
            name="greet",
            description=f"Greet someone ({tag})",
            arguments=[mt.PromptArgument(name="name", required=True)],
        ),
        mt.Prompt(name=f"only_{tag}", description=f"A prompt only {tag} has"),
    ]
    resources = [
        mt.Resource(uri="memo://shared", name="shared", mime_type="text/plain"),
        mt.Resource(uri=f"memo://{tag}/note", name=f"{tag} note", mime_type="text/plain"),
    ]
    template = mt.ResourceTemplate(
        uri_template=f"memo://{tag}/items/{{id}}", name=f"{tag} item", mime_type="text/plain"
    )
    names = [f"{tag}-ann", f"{tag}-bob", f"{tag}-cy"]

    async def list_prompts(
        ctx: ServerRequestContext, params: mt.PaginatedRequestParams | None
    ) -> mt.ListPromptsResult:
        return mt.ListPromptsResult(prompts=list(prompts))

    async def get_prompt(
        ctx: ServerRequestContext, params: mt.GetPromptRequestParams
    ) -> mt.GetPromptResult:
        if params.name not in {p.name for p in prompts}:
            raise MCPError(code=mt.INVALID_PARAMS, message=f"Unknown prompt: {params.name}")
        who = (params.arguments or {}).get("name", "you")
        text = f"[{tag}] {params.name}: hello {who}"
        message = mt.PromptMessage(role="user", content=mt.TextContent(type="text", text=text))
        return mt.GetPromptResult(description=f"{params.name} from {tag}", messages=[message])

    async def list_resources(
        ctx: ServerRequestContext, params: mt.PaginatedRequestParams | None
    ) -> mt.ListResourcesResult:
        # one resource per page: a client must walk the cursor to see them all
        index = int(params.cursor) if params is not None and params.cursor else 0
        more = str(index + 1) if index + 1 < len(resources) else None
        return mt.ListResourcesResult(resources=resources[index : index + 1], next_cursor=more)

    async def list_templates(
        ctx: ServerRequestContext, params: mt.PaginatedRequestParams | None
    ) -> mt.ListResourceTemplatesResult:
        return mt.ListResourceTemplatesResult(resource_templates=[template])

    async def read_resource(
        ctx: ServerRequestContext, params: mt.ReadResourceRequestParams
    ) -> mt.ReadResourceResult:
        uri = str(params.uri)
        known = {str(r.uri) for r in resources} | {f"memo://{tag}/unlisted"}
        if uri not in known and not uri.startswith(f"memo://{tag}/items/"):
            raise MCPError(code=-32002, message=f"Resource not found: {uri}")
        body = mt.TextResourceContents(uri=uri, mime_type="text/plain", text=f"{tag} says {uri}")
        return mt.ReadResourceResult(contents=[body])

    async def subscribe(
        ctx: ServerRequestContext, params: mt.SubscribeRequestParams
    ) -> mt.EmptyResult:
        if subscribe_gate is None:
            return mt.EmptyResult()
        with subscribe_gate.with_name(subscribe_gate.name + ".asked").open("a") as out:
            out.write(f"{params.uri}\n")
        while not subscribe_gate.exists():
            await anyio.sleep(0.02)
        raise MCPError(code=mt.INTERNAL_ERROR, message=f"cannot subscribe to {params.uri}")

    async def unsubscribe(
        ctx: ServerRequestContext, params: mt.UnsubscribeRequestParams
    ) -> mt.EmptyResult:
        return mt.EmptyResult()

    async def complete(
        ctx: ServerRequestContext, params: mt.CompleteRequestParams
    ) -> mt.CompleteResult:
        value = params.argument.value
        if isinstance(params.ref, mt.PromptReference):
            values = [n for n in names if n.startswith(value)]
        else:
            values = [i for i in ("1", "2", "3", "12") if i.startswith(value)]
        return mt.CompleteResult(completion=mt.Completion(values=values, total=len(values)))

    tools = [
        mt.Tool(name=f"grow_{tag}", description="Add a prompt and a resource.", input_schema=EMPTY),
        mt.Tool(name=f"reword_{tag}", description="Reword a prompt.", input_schema=EMPTY),
        mt.Tool(name=f"touch_{tag}", description="Announce a resource update.", input_schema=URI),
        mt.Tool(name=f"crash_{tag}", description="Stop this server at once.", input_schema=EMPTY),
    ]

    async def list_tools(
        ctx: ServerRequestContext, params: mt.PaginatedRequestParams | None
    ) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext, params: mt.CallToolRequestParams
    ) -> mt.CallToolResult:
        if params.name == f"grow_{tag}":
            prompts.append(mt.Prompt(name=f"later_{tag}", description="Added later"))
            resources.append(mt.Resource(uri=f"memo://{tag}/later", name="later"))
            await ctx.session.send_notification(mt.PromptListChangedNotification())
            await ctx.session.send_notification(mt.ResourceListChangedNotification())
        elif params.name == f"reword_{tag}":
            at = next(i for i, p in enumerate(prompts) if p.name == f"only_{tag}")
            prompts[at] = mt.Prompt(name=f"only_{tag}", description=f"Reworded by {tag}")
            await ctx.session.send_notification(mt.PromptListChangedNotification())
        elif params.name == f"touch_{tag}":
            uri = str((params.arguments or {})["uri"])
            await ctx.session.send_notification(
                mt.ResourceUpdatedNotification(params=mt.ResourceUpdatedNotificationParams(uri=uri))
            )
        elif params.name == f"crash_{tag}":
            sys.stdout.flush()
            os._exit(3)
        else:
            raise MCPError(code=mt.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        return mt.CallToolResult(content=[mt.TextContent(type="text", text="done")])

    return Server(
        f"gw-primitives-{tag}",
        version="1.0",
        instructions=f"Use the {tag} memos for notes about {tag}.",
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_completion=complete,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tag", required=True)
    parser.add_argument("--fail-if", type=Path)
    parser.add_argument("--subscribe-gate", type=Path)
    args = parser.parse_args()
    if args.fail_if is not None and args.fail_if.exists():
        print(f"refusing to start: {args.fail_if} exists", file=sys.stderr)
        sys.exit(2)
    server = build(args.tag, args.subscribe_gate)
    options = server.create_initialization_options(
        NotificationOptions(prompts_changed=True, resources_changed=True)
    )
    async with stdio_server() as (read, write):
        await server.run(read, write, options)


if __name__ == "__main__":
    anyio.run(main)
    quick_exit()  # end without collecting the heap (toolgate.exiting)
