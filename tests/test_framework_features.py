"""A framework's own features keep working on tools toolgate gates, on both protocol eras.

Each scenario runs the same server with and without toolgate and compares what a client
gets: FastMCP's error results (``ToolError``, masked exceptions), FastMCP guard tools
and ``MCPServer`` tools that ask for input on 2026-07-28 (``input_required`` rounds),
called directly or through ``call_tool``; ``@in_group`` marks that hold through
FastMCP's ``mount()`` and tool transformations, as FastMCP's tags do; and FastMCP's
per-tool ``auth``, which hides a tool from a token it refuses in every way toolgate
shows tools; arguments the framework reads leniently (pydantic's lax mode: ``"5"`` for
an integer) are not refused before it reads them; the server's own FastMCP middleware
sees a tool called through ``call_tool``, and schemas are listed with their ``$ref``
inlined as FastMCP lists them. Real clients
(``fastmcp.Client`` in both modes, ``mcp.Client``), in memory and over streamable HTTP.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

import fastmcp
import mcp_types as mt
import pytest
from fastmcp import Context, FastMCP
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.exceptions import ToolError
from fastmcp.server.auth import require_scopes
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from fastmcp.server.middleware import Middleware
from fastmcp.server.transforms import ToolTransform
from fastmcp.tools import Tool as FastMCPTool
from fastmcp.tools.tool_transform import ToolTransformConfig
from mcp import Client
from mcp.server import MCPServer, Server
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel

from _fixtures.mcp_servers import serve_http, text
from toolgate import Group, Policy, RateLimit, Tool, ToolSet, in_group, tool
from toolgate.errors import RegistrationError
from toolgate.fastmcp import ToolgateMiddleware
from toolgate.lowlevel import bind
from toolgate.strategies import DeliveryConfig


def fastmcp_server(*, gated: bool) -> FastMCP[Any]:
    """Tools in group ``ops`` that fail as FastMCP reports failures, and a guard tool
    that asks the client for a name (2026-07-28 multi-round-trip)."""
    mcp: FastMCP[Any] = FastMCP("ops", mask_error_details=True)

    @mcp.tool
    @in_group("ops")
    def refuse() -> str:
        """Fails with a ToolError, whose text FastMCP always shows."""
        raise ToolError("the disk is read-only")

    @mcp.tool
    @in_group("ops")
    def crash() -> str:
        """Fails with an exception, whose details FastMCP masks."""
        raise ValueError("password=hunter2")

    @mcp.tool(tags={"ops"})
    async def greet(ctx: Context) -> str:
        """Asks the client for a name, then greets it."""
        answers = ctx.input_responses
        if answers is None:
            ask = mt.ElicitRequest(
                params=mt.ElicitRequestFormParams(
                    message="Your name?",
                    requested_schema={"type": "object", "properties": {"name": {"type": "string"}}},
                )
            )
            return mt.InputRequiredResult(input_requests={"name": ask}, request_state="round-2")  # type: ignore[return-value]
        answer = answers["name"]
        assert isinstance(answer, mt.ElicitResult) and answer.content is not None
        return f"hello {answer.content['name']} ({ctx.request_state})"

    if gated:
        toolset = ToolSet("ops")
        toolset.add_group(Group("ops", "Operations."))
        ToolgateMiddleware(toolset).attach(mcp)
    return mcp


@pytest.fixture(scope="module")
def fastmcp_servers() -> dict[bool, FastMCP[Any]]:
    logging.getLogger("fastmcp").setLevel(logging.CRITICAL)  # the masked tracebacks
    return {gated: fastmcp_server(gated=gated) for gated in (False, True)}


async def answer_name(message: str, response_type: Any, params: Any, context: Any) -> Any:
    return {"name": "Ada"}


async def fastmcp_call(
    servers: dict[bool, FastMCP[Any]],
    gated: bool,
    mode: str,
    name: str,
    *,
    through_call_tool: bool = False,
) -> Any:
    """``name`` called as a client of protocol ``mode`` would, on the gated server
    after opening ``ops`` (legacy: ``enable_tools``; 2026-07-28: it calls what
    ``get_group`` indexed), or through the ``call_tool`` meta-tool."""
    options: dict[str, Any] = {"mode": "legacy"} if mode == "legacy" else {}
    server = servers[gated]
    async with fastmcp.Client(server, elicitation_handler=answer_name, **options) as client:
        if through_call_tool:
            return await client.call_tool(
                "call_tool", {"name": name, "arguments": {}}, raise_on_error=False
            )
        if gated and mode == "legacy":
            await client.call_tool("enable_tools", {"groups": ["ops"]})
        return await client.call_tool(name, {}, raise_on_error=False)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
@pytest.mark.parametrize("tool", ["refuse", "crash"])
async def test_a_revealed_fastmcp_tool_fails_with_the_text_fastmcp_sends_without_toolgate(
    fastmcp_servers: dict[bool, FastMCP[Any]], mode: str, tool: str
) -> None:
    plain = await fastmcp_call(fastmcp_servers, False, mode, tool)
    gated = await fastmcp_call(fastmcp_servers, True, mode, tool)
    assert gated.is_error and plain.is_error
    assert text(gated) == text(plain)
    assert "hunter2" not in text(gated)  # mask_error_details still holds


@pytest.mark.parametrize("through_call_tool", [False, True])
async def test_on_2026_a_fastmcp_guard_tool_asks_and_finishes_as_without_toolgate(
    fastmcp_servers: dict[bool, FastMCP[Any]], through_call_tool: bool
) -> None:
    plain = await fastmcp_call(fastmcp_servers, False, "2026-07-28", "greet")
    gated = await fastmcp_call(
        fastmcp_servers, True, "2026-07-28", "greet", through_call_tool=through_call_tool
    )
    assert text(plain) == "hello Ada (round-2)"
    assert (text(gated), gated.is_error) == (text(plain), False)


async def test_a_tool_fastmcp_disabled_after_import_answers_fastmcps_unknown_tool() -> None:
    mcp: FastMCP[Any] = FastMCP("ops")

    @mcp.tool
    def reindex() -> str:
        """Rebuild the index."""
        return "done"

    ToolgateMiddleware(ToolSet("ops")).attach(mcp)
    async with fastmcp.Client(mcp, mode="legacy") as client:
        await client.list_tools()  # imported
        mcp.disable(names={"reindex"})  # a change FastMCP does not report
        result = await client.call_tool("reindex", {}, raise_on_error=False)
    assert (result.is_error, text(result)) == (True, "Unknown tool: 'reindex'")


class Point(BaseModel):
    x: int
    y: float


def lenient_servers() -> dict[str, Any]:
    """A FastMCP tool and an ``MCPServer`` tool in group ``geo``, each taking numbers,
    a flag and a pydantic model; served plain and gated."""
    servers: dict[str, Any] = {}
    for gated in (False, True):
        fm: FastMCP[Any] = FastMCP("geo")
        sdk: MCPServer[Any] = MCPServer("geo")

        def shift(p: Point, dx: int, scale: float = 1.0, loud: bool = False) -> str:
            """Move a point."""
            return f"{p.x + dx},{p.y * scale}{'!' if loud else ''}"

        fm.tool(in_group("geo")(shift))
        sdk.tool()(shift)
        if gated:
            toolset = ToolSet("geo")
            toolset.add_group(Group("geo", "Geometry."))
            ToolgateMiddleware(toolset).attach(fm)
            bind(sdk, ToolSet("geo"))
        servers[f"fastmcp/{gated}"], servers[f"mcpserver/{gated}"] = fm, sdk
    return servers


@pytest.fixture(scope="module")
def lenient() -> dict[str, Any]:
    return lenient_servers()


@pytest.mark.parametrize("framework", ["fastmcp", "mcpserver"])
@pytest.mark.parametrize(
    ("arguments", "plain_text"),
    [
        ({"p": {"x": "3", "y": "0.5"}, "dx": "2", "scale": "2", "loud": "yes"}, "5,1.0!"),
        ({"p": {"x": 3, "y": 1}, "dx": 2.0, "loud": 1}, "5,1.0!"),
    ],
)
async def test_arguments_the_framework_reads_leniently_reach_it_as_without_toolgate(
    lenient: dict[str, Any], framework: str, arguments: dict[str, Any], plain_text: str
) -> None:
    answers = {}
    for gated in (False, True):
        async with fastmcp.Client(lenient[f"{framework}/{gated}"]) as client:
            result = await client.call_tool("shift", arguments, raise_on_error=False)
        answers[gated] = (result.is_error, text(result))
    assert answers[False] == (False, plain_text)
    assert answers[True] == answers[False]


async def test_arguments_no_lenient_reading_accepts_are_still_refused_with_the_pointer(
    lenient: dict[str, Any],
) -> None:
    async with fastmcp.Client(lenient["fastmcp/True"]) as client:
        result = await client.call_tool(
            "shift", {"p": {"x": "three", "y": 1}, "dx": 2}, raise_on_error=False
        )
    assert result.is_error
    assert text(result).startswith("Invalid arguments for tool 'shift': p/x: 'three' is not")
    assert 'Call describe_tools with {"tools": ["shift"]}' in text(result)


class Name(BaseModel):
    name: str


def ask_name() -> Elicit[Name]:
    return Elicit("Your name?", Name)


def sdk_server(*, gated: bool) -> MCPServer[Any]:
    """An ``MCPServer`` tool that asks for a name through the SDK's resolvers (an
    elicitation on the legacy era, an ``input_required`` round on 2026-07-28)."""
    mcp: MCPServer[Any] = MCPServer("greeter")

    @mcp.tool()
    def greet(who: Annotated[Name, Resolve(ask_name)]) -> str:
        """Greets whoever the client names."""
        return f"hello {who.name}"

    if gated:
        toolset = ToolSet("greeter")
        toolset.add_group(Group("admin", "Administration."))
        bind(mcp, toolset)
    return mcp


@pytest.fixture(scope="module")
def sdk_servers() -> dict[bool, MCPServer[Any]]:
    logging.getLogger("toolgate.lowlevel").setLevel(logging.ERROR)  # no identity: a warning
    return {gated: sdk_server(gated=gated) for gated in (False, True)}


async def sdk_answer(context: Any, params: Any) -> mt.ElicitResult:
    return mt.ElicitResult(action="accept", content={"name": "Ada"})


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("through_call_tool", [False, True])
async def test_an_mcpserver_tool_that_asks_for_input_finishes_as_without_toolgate(
    sdk_servers: dict[bool, MCPServer[Any]], mode: str, through_call_tool: bool
) -> None:
    results = {}
    for gated, server in sdk_servers.items():
        async with Client(server, mode=mode, elicitation_callback=sdk_answer) as client:
            if gated and through_call_tool:
                call = await client.call_tool("call_tool", {"name": "greet", "arguments": {}})
            else:
                call = await client.call_tool("greet", {})
        results[gated] = (call.is_error, text(call))
    assert results[False] == (False, "hello Ada")
    assert results[True] == results[False]


async def test_binding_a_low_level_server_that_serves_its_own_tools_is_refused_untouched() -> None:
    async def list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=[mt.Tool(name="vacuum", input_schema={"type": "object"})])

    async def call_tool(ctx: Any, params: Any) -> mt.CallToolResult:
        return mt.CallToolResult(content=[mt.TextContent(type="text", text="vacuumed")])

    server: Server[Any] = Server("db", on_list_tools=list_tools, on_call_tool=call_tool)
    toolset = ToolSet("db")
    toolset.add_tool(Tool("ping", "Check the server.", handler=lambda a, c: "pong"))
    with pytest.raises(RegistrationError) as refused:
        bind(server, toolset)
    assert refused.value.message.startswith(
        "Server 'db' already answers tools/list and tools/call with its own handlers"
    )
    async with Client(server, mode="legacy") as client:  # the server as it was
        names = [t.name for t in (await client.list_tools()).tools]
        ran = await client.call_tool("vacuum", {})
    assert (names, text(ran), list(toolset.catalog.tools)) == (["vacuum"], "vacuumed", ["ping"])


async def test_over_http_an_mcpserver_tool_asks_through_call_tool_with_its_state_sealed() -> None:
    server = sdk_server(gated=True)
    async with serve_http(server.streamable_http_app()) as url:
        transport = StreamableHttpTransport(url)
        async with fastmcp.Client(transport, elicitation_handler=answer_name) as client:
            call = await client.call_tool("call_tool", {"name": "greet", "arguments": {}})
    assert (call.is_error, text(call)) == (False, "hello Ada")


def marked_tools_server(*, gated: bool) -> FastMCP[Any]:
    """Tools marked into group ``repos`` that reach the server toolgate serves through
    FastMCP's own machinery: a mounted server, ``Tool.from_tool`` and a ``ToolTransform``."""
    repos: FastMCP[Any] = FastMCP("repos")

    @repos.tool
    @in_group("repos")
    @tool(policy=Policy(rate_limit=RateLimit(max=1, window_s=60)))
    def fork(name: str) -> str:
        """Fork a repository (once a minute)."""
        return f"forked {name}"

    mcp: FastMCP[Any] = FastMCP("code")
    mcp.mount(repos, namespace="gh")

    @mcp.tool
    @in_group("repos")
    def archive(name: str) -> str:
        """Archive a repository."""
        return f"archived {name}"

    @mcp.tool
    def ping() -> str:
        """Check that the server answers."""
        return "pong"

    mcp.add_tool(FastMCPTool.from_tool(archive, name="archive_repo"))
    mcp.add_transform(ToolTransform({"archive": ToolTransformConfig(name="shelve")}))
    if gated:
        toolset = ToolSet("code")
        toolset.add_group(Group("repos", "Repositories."))
        ToolgateMiddleware(toolset).attach(mcp)
    return mcp


@pytest.fixture(scope="module")
def marked_servers() -> dict[bool, FastMCP[Any]]:
    return {gated: marked_tools_server(gated=gated) for gated in (False, True)}


async def test_marked_tools_reached_through_mount_and_transforms_wait_for_their_group(
    marked_servers: dict[bool, FastMCP[Any]],
) -> None:
    meta = ["call_tool", "describe_tools", "disable_tools", "enable_tools", "list_groups"]
    grouped = ["archive_repo", "gh_fork", "shelve"]
    async with fastmcp.Client(marked_servers[True], mode="legacy") as client:
        before = sorted(t.name for t in await client.list_tools())
        hidden = await client.call_tool("gh_fork", {"name": "x"}, raise_on_error=False)
        await client.call_tool("enable_tools", {"groups": ["repos"]})
        after = sorted(t.name for t in await client.list_tools())
        forked = await client.call_tool("gh_fork", {"name": "toolgate"})
        again = await client.call_tool("gh_fork", {"name": "toolgate"}, raise_on_error=False)
    assert before == sorted([*meta, "ping"])
    assert hidden.structured_content is not None
    assert hidden.structured_content["enable"] == ["repos"]
    assert after == sorted([*meta, *grouped, "ping"])
    async with fastmcp.Client(marked_servers[False], mode="legacy") as plain:
        assert text(forked) == text(await plain.call_tool("gh_fork", {"name": "toolgate"}))
    assert again.structured_content is not None  # the mounted tool's @tool policy holds
    assert again.structured_content["code"] == "rate_limited"


async def test_on_2026_get_group_indexes_the_mounted_and_transformed_tools_of_a_group(
    marked_servers: dict[bool, FastMCP[Any]],
) -> None:
    async with fastmcp.Client(marked_servers[True]) as client:
        listed = sorted(t.name for t in await client.list_tools())
        group = await client.call_tool("get_group", {"name": "repos"})
    assert "gh_fork" not in listed and "shelve" not in listed
    assert group.structured_content is not None
    indexed = [entry.split("(")[0] for entry in group.structured_content["tools"]]
    assert indexed == ["archive_repo", "gh_fork", "shelve"]


TOKENS = {
    "tok-admin": {"client_id": "ops", "sub": "alice", "scopes": ["admin"]},
    "tok-user": {"client_id": "ops", "sub": "bob", "scopes": ["user"]},
}


def authorized_server(*, gated: bool) -> FastMCP[Any]:
    """Two tools only a token with scope ``admin`` may see and call, one of them in
    group ``keys``, and one anyone may call."""
    mcp: FastMCP[Any] = FastMCP("keys", auth=StaticTokenVerifier(tokens=TOKENS))

    @mcp.tool(auth=require_scopes("admin"))
    @in_group("keys")
    def rotate_keys() -> str:
        """Rotate the signing keys."""
        return "rotated"

    @mcp.tool(auth=require_scopes("admin"))
    def audit_log() -> str:
        """Read the audit log."""
        return "log"

    @mcp.tool
    def ping() -> str:
        """Check that the server answers."""
        return "pong"

    if gated:
        toolset = ToolSet("keys")
        toolset.add_group(Group("keys", "Signing keys."))
        ToolgateMiddleware(toolset, DeliveryConfig(search=True)).attach(mcp)
    return mcp


async def own_tools_seen(url: str, token: str, mode: str) -> dict[str, Any]:
    """What a client with ``token`` learns of the server's own tools: its list (after
    opening ``keys`` on the legacy protocol, if the token may know of it), what search
    and ``describe_tools`` give."""
    own = {"rotate_keys", "audit_log", "ping"}
    options: dict[str, Any] = {"mode": mode}
    async with fastmcp.Client(StreamableHttpTransport(url, auth=token), **options) as client:
        names = {t.name for t in await client.list_tools()}
        if "enable_tools" not in names:
            return {"listed": sorted(own & names)}
        if mode == "legacy":  # a token that may use none of its tools is not told of it
            await client.call_tool("enable_tools", {"groups": ["keys"]}, raise_on_error=False)
        listed = sorted(own & {t.name for t in await client.list_tools()})
        found = await client.call_tool("search_tools", {"query": "rotate signing keys"})
        described = await client.call_tool(
            "describe_tools", {"tools": ["rotate_keys"]}, raise_on_error=False
        )
    assert found.structured_content is not None and described.structured_content is not None
    return {
        "listed": listed,
        "found": [r["name"] for r in found.structured_content["results"]],
        "described": "inputSchema" in described.structured_content["rotate_keys"],
    }


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_tool_fastmcp_auth_refuses_a_token_stays_out_of_everything_it_is_shown(
    mode: str,
) -> None:
    seen: dict[tuple[bool, str], dict[str, Any]] = {}
    for gated in (False, True):
        async with serve_http(authorized_server(gated=gated).http_app()) as url:
            for token in TOKENS:
                seen[gated, token] = await own_tools_seen(url, token, mode)
    if mode == "legacy":  # with its group open, the list FastMCP gives each token
        for token in TOKENS:
            assert seen[True, token]["listed"] == seen[False, token]["listed"]
    assert seen[False, "tok-user"] == {"listed": ["ping"]}
    assert seen[True, "tok-user"] == {"listed": ["ping"], "found": [], "described": False}
    admin = seen[True, "tok-admin"]
    assert ("audit_log" in admin["listed"], admin["found"], admin["described"]) == (
        True,
        ["rotate_keys"],
        True,
    )


class Recorder(Middleware):
    """A server's own middleware: records the tool calls it sees and hides one tool
    from FastMCP's list."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def on_call_tool(self, context: Any, call_next: Any) -> Any:
        self.calls.append(context.message.name)
        return await call_next(context)

    async def on_list_tools(self, context: Any, call_next: Any) -> Any:
        return [t for t in await call_next(context) if t.name != "restart"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_servers_own_middleware_sees_a_tool_called_through_call_tool_checked_once(
    mode: str,
) -> None:
    mcp: FastMCP[Any] = FastMCP("ops")

    @mcp.tool
    @in_group("ops")
    @tool(policy=Policy(rate_limit=RateLimit(max=1, window_s=60)))
    def flush() -> str:
        """Flush the caches (once a minute)."""
        return "flushed"

    toolset = ToolSet("ops")
    toolset.add_group(Group("ops", "Operations."))
    executed: list[str] = []
    toolset.events.subscribe(
        lambda e: executed.append(e.data["tool"]) if e.type == "tool.executed" else None
    )
    ToolgateMiddleware(toolset).attach(mcp)
    recorder = Recorder()
    mcp.add_middleware(recorder)
    async with fastmcp.Client(mcp, mode=mode) as client:
        if mode == "legacy":
            await client.call_tool("enable_tools", {"groups": ["ops"]})
        result = await client.call_tool("call_tool", {"name": "flush", "arguments": {}})
    assert text(result) == "flushed"  # one rate-limit slot spent, not two
    assert (recorder.calls, executed) == (["flush"], ["flush"])


async def test_a_middleware_whose_on_list_tools_cannot_run_is_named_at_the_first_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    mcp: FastMCP[Any] = FastMCP("ops")

    @mcp.tool
    def restart() -> str:
        """Restart the service."""
        return "restarted"

    ToolgateMiddleware(ToolSet("ops")).attach(mcp)
    mcp.add_middleware(Recorder())
    with caplog.at_level(logging.WARNING, logger="toolgate.fastmcp"):
        async with fastmcp.Client(mcp, mode="legacy") as client:
            await client.list_tools()
            await client.list_tools()
    warned = [r.getMessage() for r in caplog.records if "on_list_tools" in r.getMessage()]
    assert len(warned) == 1
    assert warned[0].startswith("toolgate: Recorder.on_list_tools does not run on FastMCP server")


class Address(BaseModel):
    street: str


class Person(BaseModel):
    name: str
    home: Address
    work: Address | None = None


def hiring_server(*, gated: bool) -> FastMCP[Any]:
    mcp: FastMCP[Any] = FastMCP("hr")

    @mcp.tool
    @in_group("hr")
    def hire(person: Person) -> Person:
        """Hire a person."""
        return person

    if gated:
        toolset = ToolSet("hr")
        toolset.add_group(Group("hr", "Hiring."))
        ToolgateMiddleware(toolset, DeliveryConfig(grouped_list="full")).attach(mcp)
    return mcp


async def test_a_model_argument_is_listed_with_its_refs_inlined_as_fastmcp_lists_it() -> None:
    async with fastmcp.Client(hiring_server(gated=False), mode="legacy") as plain:
        (own,) = await plain.list_tools()
    async with fastmcp.Client(hiring_server(gated=True), mode="legacy") as client:
        await client.call_tool("enable_tools", {"groups": ["hr"]})
        listed = {t.name: t for t in await client.list_tools()}["hire"]
        described = await client.call_tool("describe_tools", {"tools": ["hire"]})
        hired = await client.call_tool(
            "hire", {"person": {"name": "Ada", "home": {"street": "Main"}}}
        )
    assert "$ref" not in str(own.input_schema)  # FastMCP's dereference_schemas default
    assert (listed.input_schema, listed.output_schema) == (own.input_schema, own.output_schema)
    assert described.structured_content is not None
    assert described.structured_content["hire"]["inputSchema"] == own.input_schema
    assert hired.structured_content is not None
    assert hired.structured_content["home"] == {"street": "Main"}
