"""What travels with a request through ``toolgate serve``, both ways, on both eras.

The npm reference server ``@modelcontextprotocol/server-everything`` behind one real
gateway (served over streamable HTTP in this process): progress, sampling, form and URL
elicitation, roots and logging give the same result through the gateway as from the server
directly, with ``mcp.ClientSession`` (legacy), ``fastmcp.Client`` (legacy and the default
2026-07-28) and ``mcp.Client`` (2026-07-28), each answering with real handlers. A small
Python backend (``tests/servers/gw_call_relay.py``) covers cancellation and the faults: a
backend that dies during a sampling round trip, a client that leaves mid-progress; the
completion of a URL-mode elicitation and the logging levels sessions ask for. Two of it,
``alpha`` and ``beta``, behind a second gateway whose principals each have one of them in
scope, cover who hears a backend outside calls and who may answer a parked call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

import fastmcp
import httpx2
import mcp
import mcp_types as mt
import pytest
import pytest_asyncio
from fastmcp.client.elicitation import ElicitResult
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from _fixtures.gateway import INIT, MCP_HEADERS
from _fixtures.mcp_servers import free_port, serve_http
from _fixtures.npm_servers import NpmServers
from toolgate.events import Event
from toolgate.gateway.backends.backend import Backend, Timing
from toolgate.gateway.backends.http import HttpTransport
from toolgate.gateway.backends.http_calls import HttpCalls
from toolgate.gateway.config.model import parse_config
from toolgate.gateway.ingress import call_response, stateless_calls
from toolgate.gateway.ingress.fast_path import FastPath
from toolgate.gateway.ingress.protocol import GuardedProtocol
from toolgate.gateway.serve import Gateway
from toolgate.identity import Caller, IdentityResolver
from toolgate.policy import Principal

pytestmark = pytest.mark.asyncio(loop_scope="module")

SERVERS = Path(__file__).parent / "servers"
ROOT_URI = "file:///work/project"
ANSWER = "a relayed answer"
FORM = {"name": "Ada Lovelace", "check": True}
#: the clients: name → (what it speaks to the gateway, the era)
KINDS = ("session", "fastmcp-legacy", "fastmcp")
T = TypeVar("T")


@dataclass
class Served:
    gateway: Gateway
    url: str
    marks: Path
    everything: list[str]  # the server's stdio command line, for direct connections


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def served(
    npm_servers: NpmServers, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Served]:
    marks = tmp_path_factory.mktemp("upstream-marks")
    faulty = {
        "command": sys.executable,
        "args": [str(SERVERS / "gw_call_relay.py"), "--marks", str(marks)],
    }
    cfg = parse_config(
        {
            "mcpServers": {"everything": npm_servers.command("everything"), "faulty": faulty},
            "toolgate": {"always": ["everything:*", "faulty:*"]},
        }
    )
    timing = Timing(backoff_initial=0.2, backoff_max=0.5, health_interval=2.0, start_timeout=60.0)
    gateway = Gateway(cfg, timing=timing)
    try:
        async with gateway.running(), serve_http(gateway.http_app()) as url:
            yield Served(gateway, url, marks, npm_servers.argv("everything"))
    finally:
        await gateway.close()


# -- clients with real handlers ---------------------------------------------------------


@dataclass
class Heard:
    """What a client heard besides results: progress and log messages."""

    progress: list[tuple[float, float | None]] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    #: every notification's method and params, as the client's message handler got it
    notes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    got_progress: asyncio.Event = field(default_factory=asyncio.Event)
    got_log: asyncio.Event = field(default_factory=asyncio.Event)
    #: awaited before answering sampling or elicitation (a test holds the answer back)
    hold: Callable[[], Awaitable[Any]] | None = None

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append((progress, total))
        self.got_progress.set()

    def on_log(self, data: Any) -> None:
        self.logs.append(str(data))
        self.got_log.set()

    async def on_message(self, message: Any) -> None:
        if isinstance(message, mt.Notification):
            params = message.params
            data = (
                params.model_dump(by_alias=True, mode="json", exclude_none=True) if params else {}
            )
            self.notes.append((message.method, data))


@dataclass
class Talk:
    """One connected client, whatever its kind: ``call`` returns the result's text and
    whether it is an error."""

    call: Callable[..., Awaitable[tuple[str, bool]]]
    tools: Callable[[], Awaitable[list[str]]]
    heard: Heard
    raw: Any


async def _sdk_sampling(ctx: Any, params: mt.CreateMessageRequestParams) -> mt.CreateMessageResult:
    return mt.CreateMessageResult(
        role="assistant", content=mt.TextContent(type="text", text=ANSWER), model="test-model"
    )


async def _sdk_elicitation(ctx: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
    if isinstance(params, mt.ElicitRequestURLParams):
        return mt.ElicitResult(action="accept")
    return mt.ElicitResult(action="accept", content=dict(FORM))


async def _sdk_roots(context: ClientRequestContext) -> mt.ListRootsResult | mt.ErrorData:
    return mt.ListRootsResult(roots=[mt.Root(uri=ROOT_URI)])


async def _fm_sampling(messages: Any, params: Any, ctx: Any) -> str:
    return ANSWER


def _held(heard: Heard, answer: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def held(*args: Any) -> Any:
        if heard.hold is not None:
            await heard.hold()
        return await answer(*args)

    return held


async def _fm_elicitation(message: str, response_type: Any, params: Any, ctx: Any) -> Any:
    if isinstance(params, mt.ElicitRequestURLParams):
        return ElicitResult(action="accept")
    return ElicitResult(action="accept", content=dict(FORM))


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


@contextlib.asynccontextmanager
async def talk(
    kind: str,
    target: str | list[str],
    *,
    capable: bool = True,
    heard: Heard | None = None,
    who: str | None = None,
) -> AsyncIterator[Talk]:
    """A client of ``kind`` to the gateway's URL or a stdio command line (direct);
    ``who`` names its principal (the ``x-who`` header ``WhoHeader`` reads)."""
    heard = heard or Heard()
    headers = {"x-who": who} if who is not None else None
    if kind == "session":

        async def log(params: mt.LoggingMessageNotificationParams) -> None:
            heard.on_log(params.data)

        callbacks: dict[str, Any] = (
            {
                "sampling_callback": _held(heard, _sdk_sampling),
                "elicitation_callback": _held(heard, _sdk_elicitation),
                "list_roots_callback": _sdk_roots,
            }
            if capable
            else {}
        )
        if isinstance(target, str):
            http = httpx2.AsyncClient(headers=headers)
            transport: Any = streamable_http_client(target, http_client=http)
        else:
            http = None
            transport = stdio_client(StdioServerParameters(command=target[0], args=target[1:]))
        async with (
            http or contextlib.nullcontext(),
            transport as streams,
            ClientSession(
                streams[0],
                streams[1],
                logging_callback=log,
                message_handler=heard.on_message,
                **callbacks,
            ) as session,
        ):
            await session.initialize()
            assert session.protocol_version not in MODERN_PROTOCOL_VERSIONS

            async def call(
                tool: str, args: dict[str, Any], *, progress: bool = False
            ) -> tuple[str, bool]:
                result = await session.call_tool(
                    tool, args, progress_callback=heard.on_progress if progress else None
                )
                return _text(result), bool(result.is_error)

            async def tools() -> list[str]:
                return sorted(t.name for t in (await session.list_tools()).tools)

            yield Talk(call, tools, heard, session)
        return

    async def fm_log(message: Any) -> None:
        heard.on_log(message.data)

    transport = (
        StreamableHttpTransport(target, headers=headers)
        if isinstance(target, str)
        else StdioTransport(command=target[0], args=target[1:])
    )
    handlers: dict[str, Any] = (
        {
            "sampling_handler": _held(heard, _fm_sampling),
            "elicitation_handler": _held(heard, _fm_elicitation),
            "roots": [ROOT_URI],
        }
        if capable
        else {}
    )
    mode = {"fastmcp-legacy": "legacy"}.get(kind, "auto")
    async with fastmcp.Client(
        transport, mode=mode, log_handler=fm_log, message_handler=heard.on_message, **handlers
    ) as client:
        if isinstance(target, str):  # the gateway speaks both eras; the npm server, legacy
            assert (client.protocol_version in MODERN_PROTOCOL_VERSIONS) == (kind == "fastmcp")

        async def fcall(
            tool: str, args: dict[str, Any], *, progress: bool = False
        ) -> tuple[str, bool]:
            result = await client.call_tool(
                tool,
                args,
                progress_handler=heard.on_progress if progress else None,
                raise_on_error=False,
            )
            return _text(result), bool(result.is_error)

        async def ftools() -> list[str]:
            return sorted(t.name for t in await client.list_tools())

        yield Talk(fcall, ftools, heard, client)


async def both(
    served: Served, kind: str, tool: str, args: dict[str, Any], *, progress: bool = False
) -> tuple[tuple[str, bool, Heard], tuple[str, bool, Heard]]:
    """``tool`` called directly on server-everything and through the gateway."""
    out = []
    for target in (served.everything, served.url):
        async with talk(kind, target) as client:
            text, error = await client.call(tool, args, progress=progress)
            out.append((text, error, client.heard))
    return out[0], out[1]


async def eventually(check: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = check()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


# -- the same result as directly ----------------------------------------------------------

CONDITIONAL = {
    "trigger-sampling-request",
    "trigger-elicitation-request",
    "get-roots-list",
    "trigger-url-elicitation",
}


@pytest.mark.parametrize("kind", KINDS)
async def test_tools_that_need_client_capabilities_are_listed_through_the_gateway(
    served: Served, kind: str
) -> None:
    async with talk(kind, served.url) as client:
        assert set(await client.tools()) >= CONDITIONAL


@pytest.mark.parametrize("kind", KINDS)
async def test_progress_reaches_the_client_as_it_does_directly(served: Served, kind: str) -> None:
    args = {"duration": 0.3, "steps": 3}
    (direct, _, heard_direct), (relayed, error, heard) = await both(
        served, kind, "trigger-long-running-operation", args, progress=True
    )
    assert not error and relayed == direct
    assert heard.progress == heard_direct.progress == [(1.0, 3.0), (2.0, 3.0), (3.0, 3.0)]


@pytest.mark.parametrize("kind", KINDS)
async def test_sampling_is_answered_by_the_calling_client(served: Served, kind: str) -> None:
    (direct, _, _), (relayed, error, _) = await both(
        served, kind, "trigger-sampling-request", {"prompt": "Say hello", "maxTokens": 20}
    )
    assert not error and ANSWER in relayed
    assert relayed == direct


@pytest.mark.parametrize("kind", KINDS)
async def test_form_elicitation_is_answered_by_the_calling_client(
    served: Served, kind: str
) -> None:
    (direct, _, _), (relayed, error, _) = await both(
        served, kind, "trigger-elicitation-request", {}
    )
    assert not error and "Ada Lovelace" in relayed
    assert relayed == direct


@pytest.mark.parametrize("kind", KINDS)
async def test_url_elicitation_is_answered_by_the_calling_client(served: Served, kind: str) -> None:
    args = {"url": "https://example.com/connect", "elicitationId": f"upstream-{kind}"}
    (direct, _, _), (relayed, error, _) = await both(served, kind, "trigger-url-elicitation", args)
    assert not error and "accept" in relayed
    assert relayed == direct


#: what a client sets in a call's ``_meta`` for the tool to see (a host's own keys)
CALL_META = {"com.example/tenant": "t1", "trace": "abc"}


async def _seen_meta(kind: str, target: str | list[str]) -> dict[str, Any]:
    """The ``_meta`` the backend's ``meta`` tool saw, less what belongs to one hop (the
    progress token, MCP's reserved keys, the trace context the SDK sets per hop)."""
    async with talk(kind, target) as client:
        result = await client.raw.call_tool("meta", {}, meta=dict(CALL_META))
    seen: dict[str, Any] = json.loads(_text(result))
    hop = {"progressToken", "traceparent", "tracestate"}
    kept = {
        k: v
        for k, v in seen.items()
        if k not in hop and not k.startswith("io.modelcontextprotocol/")
    }
    # the result's own ``_meta``, which comes back as the backend sent it
    kept["(result)"] = (result.meta or {}).get("example.com/answered-by")
    return kept


@pytest.mark.parametrize("kind", KINDS)
async def test_a_calls_meta_reaches_the_backend_as_it_does_directly(
    served: Served, kind: str
) -> None:
    direct, relayed = await _faulty_both_ways(served, kind, _seen_meta)
    assert relayed == direct == {**CALL_META, "(result)": "gw-upstream"}


async def _refusal(
    kind: str, target: str | list[str], args: dict[str, Any] | None = None
) -> tuple[int, str, Any]:
    async with talk(kind, target) as client:
        with pytest.raises(mcp.MCPError) as refused:
            await client.call("sign_in_first", args or {})
    error = refused.value.error
    return error.code, error.message, error.data


@pytest.mark.parametrize("kind", KINDS)
async def test_a_backends_json_rpc_error_reaches_the_client_as_it_was_sent(
    served: Served, kind: str
) -> None:
    events: list[Event] = []
    stop = served.gateway.events.subscribe(events.append)
    try:
        direct, relayed = await _faulty_both_ways(served, kind, _refusal)
    finally:
        stop()
    assert relayed == direct
    code, _, data = relayed
    assert code == mt.URL_ELICITATION_REQUIRED
    assert data["elicitations"][0]["url"] == "https://example.com/sign-in"
    # recorded as a call that ran and failed
    executed = [
        (e.data["outcome"], e.data.get("reason"))
        for e in events
        if e.type == "tool.executed" and e.data.get("tool") == "sign_in_first"
    ]
    assert executed == [("error", "URL elicitation required")]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_backends_json_rpc_error_after_a_round_trip_is_relayed_too(
    served: Served, kind: str
) -> None:
    """The backend asks for roots, then refuses with -32042: on 2026-07-28 the refusal
    ends the resumed round (the client's retry), and is the same error there too."""
    await _faulty_up(served)
    code, message, data = await _refusal(kind, served.url, {"roots_first": True})
    assert (code, message) == (mt.URL_ELICITATION_REQUIRED, "URL elicitation required")
    assert data["elicitations"][0]["url"] == "https://example.com/sign-in"


async def _misshapen(kind: str, target: str | list[str]) -> str:
    """What a client makes of ``misshapen``'s answer: its result, or what it raised."""
    async with talk(kind, target) as client:
        try:
            text, error = await client.call("misshapen", {})
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        return f"{text} (error: {error})"


@pytest.mark.parametrize("kind", KINDS)
async def test_structured_content_its_schema_refuses_is_the_clients_to_judge(
    served: Served, kind: str
) -> None:
    """The gateway relays a result as the backend sent it: a client that checks
    structured content against the output schema refuses it as it does directly, and
    the backend is not taken for broken."""
    direct, relayed = await _faulty_both_ways(served, kind, _misshapen)
    assert relayed == direct
    assert served.gateway.backends["faulty"].up


@pytest.mark.parametrize("kind", KINDS)
async def test_roots_come_from_the_calling_client(served: Served, kind: str) -> None:
    (direct, _, _), (relayed, error, _) = await both(served, kind, "get-roots-list", {})
    assert not error and ROOT_URI in relayed
    assert relayed == direct


@pytest.mark.parametrize("kind", KINDS)
async def test_each_client_is_asked_for_its_own_roots(served: Served, kind: str) -> None:
    """A backend that asks for roots on every call gets the calling client's roots."""
    mine = "file:///work/" + kind

    async def roots(*args: Any) -> Any:
        return mt.ListRootsResult(roots=[mt.Root(uri=mine)])

    async with talk(kind, served.url) as client, talk("session", served.url) as other:
        if kind == "session":
            client.raw._list_roots_callback = roots
        else:
            client.raw.session._list_roots_callback = roots
        text, error = await client.call("list_roots", {})
        theirs, _ = await other.call("list_roots", {})
    assert not error and text == mine
    assert theirs == ROOT_URI


async def test_a_clients_roots_list_changed_reaches_the_backends(served: Served) -> None:
    await _faulty_up(served)
    before = _marked(served, "roots_changed")
    async with talk("session", served.url) as client:
        with warnings.catch_warnings():  # deprecated on 2026-07-28; this session is legacy
            warnings.simplefilter("ignore")
            await client.raw.send_roots_list_changed()
        await eventually(lambda: _marked(served, "roots_changed") > before)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_client_without_the_capability_gets_a_clear_error(
    served: Served, kind: str
) -> None:
    async with talk(kind, served.url, capable=False) as client:
        text, error = await client.call("trigger-sampling-request", {"prompt": "hi"})
    assert error
    assert "does not support sampling" in text


async def set_level(client: Talk, level: mt.LoggingLevel) -> None:
    with warnings.catch_warnings():  # deprecated on 2026-07-28; these sessions are legacy
        warnings.simplefilter("ignore")
        await client.raw.set_logging_level(level)


async def test_log_messages_reach_a_legacy_session_that_set_a_level(served: Served) -> None:
    for target in (served.everything, served.url):
        async with talk("session", target) as client:
            await set_level(client, "debug")
            text, _ = await client.call("toggle-simulated-logging", {})
            try:
                await asyncio.wait_for(client.heard.got_log.wait(), 15)
            finally:
                await client.call("toggle-simulated-logging", {})
            assert "level" in client.heard.logs[0].lower()
            assert "Started" in text or "started" in text


async def test_log_messages_ride_a_2026_request_that_opted_in(served: Served) -> None:
    """2026-07-28: log delivery is a per-request opt-in; a message the backend sends
    during the call comes on the call's response stream."""
    heard = Heard()

    async def log(params: mt.LoggingMessageNotificationParams) -> None:
        heard.on_log(params.data)

    async with mcp.Client(served.url, log_level="debug", logging_callback=log) as client:
        await client.call_tool("toggle-simulated-logging", {})
        await client.call_tool("toggle-simulated-logging", {})
    assert heard.logs and "level" in heard.logs[0].lower()


async def test_each_legacy_session_hears_the_levels_it_asked_for(served: Served) -> None:
    """The backend is asked for the lowest level any session wants; each session hears
    its own levels: during its call on the call's stream, after it on its session."""
    async with talk("session", served.url) as quiet, talk("session", served.url) as chatty:
        await set_level(quiet, "error")
        await set_level(chatty, "debug")
        assert (served.marks / "level").read_text() == "debug"
        await quiet.call("log", {})
        assert quiet.heard.logs == ["error during the call"]
        await chatty.call("log", {"later": True})
        await eventually(lambda: "warning after the call" in chatty.heard.logs)
        assert chatty.heard.logs == [
            "debug during the call",
            "error during the call",
            "warning after the call",
        ]
        assert quiet.heard.logs == ["error during the call"]


async def test_a_2026_call_that_opted_in_hears_its_level_below_a_legacy_sessions(
    served: Served,
) -> None:
    """A legacy session set the backend to ``error``; a 2026-07-28 call asking for
    ``debug`` lowers it for its run and hears its debug message; after it, the backend
    is back at ``error`` and the legacy session still hears only errors."""
    await _faulty_up(served)
    level = served.marks / "level"
    heard = Heard()

    async def log(params: mt.LoggingMessageNotificationParams) -> None:
        heard.on_log(params.data)

    async with talk("session", served.url) as quiet:
        await set_level(quiet, "error")
        assert level.read_text() == "error"
        async with mcp.Client(served.url, log_level="debug", logging_callback=log) as client:
            result = await client.call_tool("log", {})
        assert not result.is_error
        assert heard.logs == ["debug during the call", "error during the call"]
        await eventually(lambda: level.read_text() == "error")
        await quiet.call("log", {})
        assert quiet.heard.logs == ["error during the call"]


async def test_a_request_for_input_that_two_clients_calls_could_own_is_refused(
    served: Served,
) -> None:
    """The backend's request does not say which call it serves: with calls of two
    clients in flight it goes to neither."""
    await _faulty_up(served)
    async with talk("session", served.url) as first, talk("session", served.url) as second:
        slow: asyncio.Future[tuple[str, bool]] = asyncio.ensure_future(
            first.call("slow_progress", {}, progress=True)
        )
        await asyncio.wait_for(first.heard.got_progress.wait(), 20)
        # the backend fails its call on the refusal, with a JSON-RPC error: relayed as is
        with pytest.raises(mcp.MCPError, match="calls from different clients are in progress"):
            await second.call("list_roots", {})
        slow.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await slow


async def test_a_2026_round_trip_driven_by_hand_and_a_spent_request_state(
    served: Served,
) -> None:
    """The round trip on the wire: ``input_required`` with the backend's request and a
    sealed ``requestState``; the retry answers it; the same state again is refused."""
    await _faulty_up(served)
    # the callback declares the roots capability; the test answers by hand
    async with mcp.Client(served.url, mode="auto", list_roots_callback=_sdk_roots) as client:
        session = client.session
        first = await session.call_tool("list_roots", {}, allow_input_required=True)
        assert isinstance(first, mt.InputRequiredResult)
        assert first.request_state and "toolgate" not in first.request_state  # sealed
        assert first.input_requests is not None
        [(key, request)] = first.input_requests.items()
        assert isinstance(request, mt.ListRootsRequest)
        answers: dict[str, mt.InputResponse] = {
            str(key): mt.ListRootsResult(roots=[mt.Root(uri="file:///by/hand")])
        }
        done = await session.call_tool(
            "list_roots",
            {},
            input_responses=answers,
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert isinstance(done, mt.CallToolResult)
        assert _text(done) == "file:///by/hand"
        with pytest.raises(mcp.MCPError, match="input round is over"):
            await session.call_tool(
                "list_roots", {}, input_responses=answers, request_state=first.request_state
            )
    assert served.gateway.calls.rounds.parked == {}


# -- cancellation and faults ------------------------------------------------------------


def _marked(where: Served | Hopped, mark: str = "cancelled") -> int:
    """Lines the test backend wrote to its ``mark`` file so far (one per request it saw
    cancelled, per roots change it heard)."""
    marks = where.marks / mark
    return len(marks.read_text().splitlines()) if marks.exists() else 0


def _others(before: set[asyncio.Task[Any]]) -> set[asyncio.Task[Any]]:
    """Tasks begun since ``before`` and still running, but the SSE library's one watcher
    per event loop (begun by the loop's first SSE response, whichever test sends it)."""
    return {
        t
        for t in asyncio.all_tasks()
        if t not in before and not t.done() and not _qualname(t).endswith("_shutdown_watcher")
    }


def _qualname(task: asyncio.Task[Any]) -> str:
    return str(getattr(task.get_coro(), "__qualname__", ""))


#: the tasks of a backend connection (a restarted backend gets new ones) and the SSE
#: library's one watcher per event loop
_CONNECTION_TASKS = (
    "toolgate.gateway.backends.supervision.Connection._forward",
    "mcp.client.stdio.",
    "mcp.shared.jsonrpc_dispatcher.JSONRPCDispatcher.run",
)


def _reconnection(task: asyncio.Task[Any]) -> bool:
    coro = getattr(task.get_coro(), "__qualname__", "")
    return task.get_name().startswith(_CONNECTION_TASKS) or coro == "_shutdown_watcher"


async def _faulty_both_ways(
    served: Served, kind: str, probe: Callable[[str, str | list[str]], Awaitable[T]]
) -> tuple[T, T]:
    """``probe`` run on the ``faulty`` backend directly (its command line), then through
    the gateway."""
    await _faulty_up(served)
    argv = [sys.executable, str(SERVERS / "gw_call_relay.py"), "--marks", str(served.marks)]
    return await probe(kind, argv), await probe(kind, served.url)


async def _faulty_up(served: Served) -> None:
    await eventually(lambda: served.gateway.backends["faulty"].up)


@pytest.mark.parametrize("kind", ["session", "fastmcp"])
async def test_a_cancelled_call_cancels_the_backend_request(served: Served, kind: str) -> None:
    await _faulty_up(served)
    before = _marked(served)
    async with talk(kind, served.url) as client:
        call: asyncio.Future[tuple[str, bool]] = asyncio.ensure_future(
            client.call("slow_progress", {}, progress=True)
        )
        await asyncio.wait_for(client.heard.got_progress.wait(), 20)
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call
        await eventually(lambda: _marked(served) > before)
    assert served.gateway.calls.rounds.parked == {}


@pytest.mark.parametrize("kind", ["fastmcp-legacy", "fastmcp"])
async def test_a_client_that_leaves_mid_progress_cancels_the_backend_and_leaks_no_task(
    served: Served, kind: str
) -> None:
    await _faulty_up(served)
    before_marks = _marked(served)
    before = set(asyncio.all_tasks())
    async with talk(kind, served.url) as client:
        call: asyncio.Future[tuple[str, bool]] = asyncio.ensure_future(
            client.call("slow_progress", {}, progress=True)
        )
        await asyncio.wait_for(client.heard.got_progress.wait(), 20)
    # the client is gone (its connection closed) while the call was still running
    with contextlib.suppress(BaseException):
        await asyncio.wait_for(call, 10)
    await eventually(lambda: _marked(served) > before_marks)
    await eventually(lambda: not _others(before))
    assert served.gateway.calls.rounds.parked == {}


@pytest.mark.parametrize("ask", ["sampling", "elicitation"])
@pytest.mark.parametrize("kind", KINDS)
async def test_a_backend_that_dies_during_a_round_trip_gives_a_clear_error(
    served: Served, kind: str, ask: str
) -> None:
    await _faulty_up(served)
    gateway = served.gateway
    before = set(asyncio.all_tasks())
    heard = Heard(hold=lambda: eventually(lambda: not gateway.backends["faulty"].up))
    async with talk(kind, served.url, heard=heard) as client:
        text, error = await client.call("ask_then_die", {"ask": ask})
    assert error
    assert "'faulty'" in text and "unavailable" in text
    assert gateway.calls.rounds.parked == {}
    await _faulty_up(served)
    # the backend's new connection has tasks of its own; nothing else may be left
    await eventually(lambda: not {t for t in _others(before) if not _reconnection(t)})


# -- URL-mode elicitation's completion and the levels sessions ask for --------------------


@pytest.mark.parametrize("kind", ["session", "fastmcp-legacy"])
async def test_a_url_elicitations_completion_reaches_the_session_that_was_asked(
    served: Served, kind: str
) -> None:
    """The backend says its URL-mode elicitation is done after the call returned: the
    session that was asked hears ``notifications/elicitation/complete``, another does not."""
    await _faulty_up(served)
    elicitation = f"sign-in-{kind}"
    async with talk(kind, served.url) as asked, talk("session", served.url) as other:
        await set_level(other, "debug")  # a live session beside it, listening
        text, error = await asked.call("url_elicit", {"id": elicitation})
        assert not error and text == "accept"
        done = ("notifications/elicitation/complete", {"elicitationId": elicitation})
        await eventually(lambda: done in asked.heard.notes)
    assert [n for n in other.heard.notes if n[0] == done[0]] == []


@pytest.mark.parametrize("kind", ["session", "fastmcp-legacy"])
async def test_a_backends_level_is_raised_back_when_the_chatty_session_ends(
    served: Served, kind: str
) -> None:
    """The backend logs at the lowest level a session asked for; once that session is
    gone it is raised to the lowest level of those left, and once none is left, set
    back to ``debug``."""
    await _faulty_up(served)
    level = served.marks / "level"
    async with talk(kind, served.url) as quiet:
        await set_level(quiet, "warning")
        async with talk(kind, served.url) as chatty:
            await set_level(chatty, "debug")
            assert level.read_text() == "debug"
        await eventually(lambda: level.read_text() == "warning")
    # nobody asks any more: back to what a server never asked sends (every level)
    await eventually(lambda: level.read_text() == "debug")


# -- principals: who hears a backend outside calls, who may answer a parked call ----------


class WhoHeader(IdentityResolver):
    """The principal the ``x-who`` header names, as a proxy in front of the gateway would
    say it: bob has the group ``b`` (beta's tools) in scope, everyone else ``a`` (alpha's)."""

    async def resolve(self, caller: Caller) -> Principal | None:
        who = caller.headers.get("x-who")
        if who is None:
            return None
        return Principal(id=who, trust="declared", scope=("b",) if who == "bob" else ("a",))


@dataclass
class Scoped:
    gateway: Gateway
    url: str
    marks: dict[str, Path]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def scoped(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Scoped]:
    marks = {name: tmp_path_factory.mktemp(f"upstream-{name}") for name in ("alpha", "beta")}

    def backend(name: str) -> dict[str, Any]:
        script = str(SERVERS / "gw_call_relay.py")
        args = [script, "--marks", str(marks[name]), "--name", name]
        return {"command": sys.executable, "args": args, "prefix": name[0]}

    cfg = parse_config(
        {
            "mcpServers": {"alpha": backend("alpha"), "beta": backend("beta")},
            "toolgate": {
                "always": ["alpha:*", "beta:*"],
                "groups": {
                    "a": {"description": "Alpha's tools", "tools": ["alpha:*"]},
                    "b": {"description": "Beta's tools", "tools": ["beta:*"]},
                },
                "policies": [
                    {"tools": ["a.list_roots"], "rate_limit": {"max": 1, "window_s": 600}}
                ],
                "events": {"logging": False},
            },
        }
    )
    gateway = Gateway(cfg, timing=Timing(start_timeout=60.0))
    gateway.identity = WhoHeader()
    try:
        async with gateway.running(), serve_http(gateway.http_app()) as url:
            await eventually(lambda: gateway.live() == {"alpha", "beta"})
            await gateway.sync(reason="start")
            yield Scoped(gateway, url, marks)
    finally:
        await gateway.close()


@pytest.mark.parametrize("kind", ["session", "fastmcp-legacy"])
async def test_a_backends_messages_outside_calls_reach_only_the_principals_it_serves(
    scoped: Scoped, kind: str
) -> None:
    """alice has alpha in scope, bob beta; both set a level. Each backend logs at the
    level of the sessions that hear it, and what it says after a call reaches only them."""
    async with (
        talk(kind, scoped.url, who="alice") as alice,
        talk(kind, scoped.url, who="bob") as bob,
    ):
        await set_level(alice, "warning")
        await set_level(bob, "debug")
        assert (scoped.marks["alpha"] / "level").read_text() == "warning"
        assert (scoped.marks["beta"] / "level").read_text() == "debug"
        await alice.call("a.log", {"later": True})
        await eventually(lambda: "warning after the call from alpha" in alice.heard.logs)
        await bob.call("b.log", {"later": True})
        # bob's session stream is ordered: alpha's message, had it been sent, came first
        await eventually(lambda: "warning after the call from beta" in bob.heard.logs)
    assert alice.heard.logs == ["error during the call", "warning after the call from alpha"]
    assert bob.heard.logs == [
        "debug during the call",
        "error during the call",
        "warning after the call from beta",
    ]


@dataclass
class Modern:
    """A 2026-07-28 client: ``call`` runs a tool as the library does (answering the
    rounds itself), ``session`` drives them by hand."""

    call: Callable[[str, dict[str, Any]], Awaitable[tuple[str, bool]]]
    session: ClientSession


@contextlib.asynccontextmanager
async def modern(kind: str, url: str, who: str) -> AsyncIterator[Modern]:
    """``mcp.Client`` or ``fastmcp.Client`` on 2026-07-28 as ``who``, answering the
    backend's roots requests with ``ROOT_URI``."""
    headers = {"x-who": who}
    if kind == "sdk":
        async with (
            httpx2.AsyncClient(headers=headers) as http,
            mcp.Client(
                streamable_http_client(url, http_client=http), list_roots_callback=_sdk_roots
            ) as client,
        ):
            assert client.session.protocol_version in MODERN_PROTOCOL_VERSIONS

            async def call(tool: str, args: dict[str, Any]) -> tuple[str, bool]:
                result = await client.call_tool(tool, args)
                return _text(result), bool(result.is_error)

            yield Modern(call, client.session)
        return
    transport = StreamableHttpTransport(url, headers=headers)
    async with fastmcp.Client(transport, roots=[ROOT_URI]) as fm:
        assert fm.session.protocol_version in MODERN_PROTOCOL_VERSIONS

        async def fcall(tool: str, args: dict[str, Any]) -> tuple[str, bool]:
            result = await fm.call_tool(tool, args, raise_on_error=False)
            return _text(result), bool(result.is_error)

        yield Modern(fcall, fm.session)


@pytest.mark.parametrize("kind", ["sdk", "fastmcp"])
async def test_a_2026_retry_goes_on_with_its_call_not_a_new_one(scoped: Scoped, kind: str) -> None:
    """``a.list_roots`` may be called once per principal: the call's ``input_required``
    round trip (the client answers the backend's roots request and retries) is that one
    call, and the next call is the one refused."""
    who = f"{kind}-user"
    events: list[Event] = []
    stop = scoped.gateway.events.subscribe(events.append)
    try:
        async with modern(kind, scoped.url, who) as client:
            done = await client.call("a.list_roots", {})
            again = await client.call("a.list_roots", {})
    finally:
        stop()
    assert done == (ROOT_URI, False)
    assert again[1] and "Rate limit reached" in again[0]
    # recorded as one call that ran, then one refused
    executed = [
        (e.data["tool"], e.data["outcome"], e.data.get("reason"))
        for e in events
        if e.type == "tool.executed" and e.principal == who
    ]
    assert executed == [
        ("a.list_roots", "success", None),
        ("a.list_roots", "blocked", "rate-limited"),
    ]
    assert scoped.gateway.calls.rounds.parked == {}


async def test_a_parked_call_is_answered_only_by_its_own_principal(scoped: Scoped) -> None:
    """bob cannot answer alice's parked call with her ``requestState``, nor can a forged
    state: both are refused with a clear error, and alice's call waits for her."""
    async with (
        modern("sdk", scoped.url, "alice") as alice_client,
        modern("sdk", scoped.url, "bob") as bob_client,
    ):
        alice, bob = alice_client.session, bob_client.session
        first = await alice.call_tool("a.list_roots", {}, allow_input_required=True)
        assert isinstance(first, mt.InputRequiredResult) and first.input_requests is not None
        [key] = first.input_requests
        bobs: dict[str, mt.InputResponse] = {
            str(key): mt.ListRootsResult(roots=[mt.Root(uri="file:///bob")])
        }
        with pytest.raises(mcp.MCPError) as other:
            await bob.call_tool(
                "a.list_roots", {}, input_responses=bobs, request_state=first.request_state
            )
        with pytest.raises(mcp.MCPError) as forged:
            await bob.call_tool(
                "a.list_roots", {}, input_responses=bobs, request_state="v1.forged-state"
            )
        assert len(scoped.gateway.calls.rounds.parked) == 1
        hers: dict[str, mt.InputResponse] = {
            str(key): mt.ListRootsResult(roots=[mt.Root(uri="file:///alice")])
        }
        done = await alice.call_tool(
            "a.list_roots", {}, input_responses=hers, request_state=first.request_state
        )
    assert other.value.error.code == mt.INVALID_PARAMS
    assert "another principal" in other.value.error.message
    assert forged.value.error.code == mt.INVALID_PARAMS
    assert "requestState" in forged.value.error.message
    assert isinstance(done, mt.CallToolResult) and _text(done) == "file:///alice"
    assert scoped.gateway.calls.rounds.parked == {}


# -- the fast path: the lane (legacy clients) and the hop (HTTP backends) ----------------


@dataclass
class Hopped:
    gateway: Gateway
    url: str
    backend_url: str
    marks: Path


async def _listening(port: int, proc: subprocess.Popen[bytes]) -> None:
    for _ in range(400):
        if proc.poll() is not None:
            raise RuntimeError(f"gw_call_relay.py exited with {proc.returncode}")
        with contextlib.suppress(OSError):
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"gw_call_relay.py does not listen on {port}")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def hopped(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Hopped]:
    """``gw_call_relay.py`` over streamable HTTP behind a gateway: its calls go by the
    lane (legacy clients) and the hop."""
    marks = tmp_path_factory.mktemp("hop-marks")
    port = free_port()
    argv = [sys.executable, str(SERVERS / "gw_call_relay.py"), "--marks", str(marks)]
    proc = subprocess.Popen([*argv, "--port", str(port), "--header-param"])
    try:
        await _listening(port, proc)
        backend_url = f"http://127.0.0.1:{port}/mcp"
        cfg = parse_config(
            {"mcpServers": {"h": {"url": backend_url}}, "toolgate": {"always": ["h:*"]}}
        )
        timing = Timing(backoff_initial=0.2, backoff_max=0.5, health_interval=2.0)
        gateway = Gateway(cfg, timing=timing)
        try:
            async with (
                gateway.running(),
                # on the edge's HTTP protocol, as `toolgate serve` runs it
                serve_http(gateway.http_app(), http=GuardedProtocol) as url,
            ):
                await eventually(lambda: gateway.backends["h"].up)
                yield Hopped(gateway, url, backend_url, marks)
        finally:
            await gateway.close()
    finally:
        proc.terminate()
        proc.wait(10)


def _direct(backend: Backend) -> HttpCalls:
    """The calls by hand of an HTTP backend's connection (its transport's one way)."""
    transport = backend.transport
    assert isinstance(transport, HttpTransport) and transport.direct is not None
    return transport.direct


def _counts(hopped: Hopped) -> tuple[int, int]:
    """Calls the lane served and the hop sent, so far."""
    lane = hopped.gateway.fast_path
    assert lane is not None
    return lane.served, _direct(hopped.gateway.backends["h"]).calls


@pytest.mark.parametrize("kind", KINDS)
async def test_the_fast_path_carries_a_call_as_the_backend_answers_it_directly(
    hopped: Hopped, kind: str
) -> None:
    """A call's ``_meta`` reaches the backend as it does directly; the lane serves the
    call (a legacy session's or a 2026-07-28 request) and the hop takes it to the HTTP
    backend."""
    meta = {"tenant": "acme"}

    results: list[Any] = []

    async def seen(target: str) -> dict[str, Any]:
        async with talk(kind, target) as client:
            raw = client.raw
            if isinstance(raw, ClientSession):
                result = await raw.call_tool("meta", {}, meta=cast(Any, meta))
            else:
                result = await raw.call_tool("meta", {}, meta=meta)
            results.append(result)
            seen: dict[str, Any] = json.loads(_text(result))
            return seen

    direct = await seen(hopped.backend_url)
    lane, hop = _counts(hopped)
    relayed = await seen(hopped.url)
    # and the result's own ``_meta`` comes back as the backend sent it
    answered = [(r.meta or {}).get("example.com/answered-by") for r in results]
    assert answered == ["gw-upstream", "gw-upstream"]
    # the hop's own keys (the reserved ones, the progress token) are its own, as always
    mine = {k for k in direct if k.startswith("io.modelcontextprotocol/")} | {"progressToken"}
    assert relayed["tenant"] == direct["tenant"] == "acme"
    assert set(relayed) - mine == set(direct) - mine == {"tenant"}
    # the backend is asked for progress when the client asked for it
    assert ("progressToken" in relayed) == ("progressToken" in direct)
    assert _counts(hopped) == (lane + 1, hop + 1)


@pytest.mark.parametrize("kind", KINDS)
async def test_sampling_and_roots_by_the_fast_path_are_answered_by_the_calling_client(
    hopped: Hopped, kind: str
) -> None:
    """The backend's requests on the hop's stream go to the gateway's handlers; on the
    legacy protocol they reach the client on the lane's stream and its answers come
    back by the lane; on 2026-07-28 as ``input_required`` rounds."""
    lane, hop = _counts(hopped)
    async with talk(kind, hopped.url) as client:
        sampled = await client.call("sample", {})
        roots = await client.call("list_roots", {})
    assert sampled == (ANSWER, False)
    assert roots == (ROOT_URI, False)
    # 2026-07-28: each call is two rounds, each a request the lane serves
    rounds = 2 if kind == "fastmcp" else 1
    assert _counts(hopped) == (lane + 2 * rounds, hop + 2)
    assert hopped.gateway.calls.rounds.parked == {}


@pytest.mark.parametrize("kind", ["session", "fastmcp-legacy"])
async def test_progress_and_logs_by_the_fast_path_reach_the_calling_client(
    hopped: Hopped, kind: str
) -> None:
    """Progress and log messages the backend sends on the hop's stream reach the client
    on the lane's stream; cancelling the call cancels the backend's request."""
    before = _marked(hopped)
    async with talk(kind, hopped.url) as client:
        await set_level(client, "debug")
        assert await client.call("log", {}) == ("logged", False)
        call = asyncio.ensure_future(client.call("slow_progress", {}, progress=True))
        await asyncio.wait_for(client.heard.got_progress.wait(), 20)
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call
    assert client.heard.logs[:2] == ["debug during the call", "error during the call"]
    assert client.heard.progress and client.heard.progress[0][0] == 1
    await eventually(lambda: _marked(hopped) > before)


@pytest.mark.parametrize("kind", KINDS)
async def test_structured_content_its_schema_refuses_is_relayed_by_the_fast_path_too(
    hopped: Hopped, kind: str
) -> None:
    direct = await _misshapen(kind, hopped.backend_url)
    counts = _counts(hopped)
    relayed = await _misshapen(kind, hopped.url)
    assert relayed == direct
    assert _counts(hopped) == (counts[0] + 1, counts[1] + 1)


async def test_a_backends_json_rpc_error_by_the_fast_path_is_relayed_as_it_was_sent(
    hopped: Hopped,
) -> None:
    direct = await _refusal("session", hopped.backend_url)
    relayed = await _refusal("session", hopped.url)
    assert relayed == direct
    assert relayed[0] == mt.URL_ELICITATION_REQUIRED


async def test_a_backend_that_forgot_the_session_is_called_again_by_the_hop(
    hopped: Hopped,
) -> None:
    """The backend ends the session under the gateway (as a restarted server forgets
    it): the next call gets a clear error (nothing ran), the gateway reconnects at once,
    and later calls go by the hop on the new session."""
    backend = hopped.gateway.backends["h"]
    hop, old = _direct(backend), backend.transport
    assert hop.seen.session_id is not None
    async with httpx2.AsyncClient() as http:
        gone = await http.delete(
            hopped.backend_url,
            headers={
                "mcp-session-id": hop.seen.session_id,
                "mcp-protocol-version": str(hop.seen.protocol_version),
            },
        )
    assert gone.status_code == 200
    async with talk("session", hopped.url) as client:
        text, error = await client.call("meta", {})
        assert error and "'h'" in text and "unavailable" in text
        await eventually(lambda: backend.up and backend.transport is not old)
        new = _direct(backend)
        sent = new.calls
        assert await client.call("meta", {}) == ("{}", False)
    assert new.calls == sent + 1 and new.seen.session_id != hop.seen.session_id


# -- Mcp-Param-* headers (2026-07-28) ------------------------------------------------------


def _listings(events: list[Event]) -> int:
    return sum(1 for e in events if e.type == "tool.selection")


async def test_a_2026_call_runs_no_listing_when_no_tool_declares_a_header_param(
    served: Served,
) -> None:
    """No tool of this gateway declares ``x-mcp-header``: the SDK's header check has
    nothing to check, and a 2026-07-28 ``tools/call`` is not preceded by a whole
    ``tools/list`` for its caller."""
    await _faulty_up(served)
    events: list[Event] = []
    async with mcp.Client(served.url) as client:
        await client.list_tools()
        stop = served.gateway.events.subscribe(events.append)
        try:
            result = await client.call_tool("log", {"later": False})
        finally:
            stop()
    assert _text(result) == "logged"
    assert _listings(events) == 0


def _modern_call(tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """A 2026-07-28 ``tools/call`` by hand: its body (the envelope in ``_meta``) and the
    headers the protocol asks for."""
    version = sorted(MODERN_PROTOCOL_VERSIONS)[-1]
    meta = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": meta},
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": version,
        "mcp-method": "tools/call",
        "mcp-name": tool,
    }
    return body, headers


@pytest.mark.parametrize("token", [None, "p-1"])
async def test_a_2026_call_asks_the_backend_for_progress_only_with_its_own_token(
    hopped: Hopped, token: str | None
) -> None:
    """A 2026-07-28 call's backend request carries a progress token only when the
    call's request does, as a legacy call's does."""
    call, headers = _modern_call("meta", {})
    if token is not None:
        call["params"]["_meta"]["progressToken"] = token
    async with httpx2.AsyncClient(timeout=20) as http:
        response = await http.post(hopped.url, json=call, headers=headers)
    result = response.json()["result"]
    seen = json.loads(result["content"][0]["text"])
    assert ("progressToken" in seen) == (token is not None)


@pytest.mark.parametrize("capabilities", [{}, {"sampling": {}}], ids=["none", "sampling"])
async def test_a_2026_call_is_parked_only_when_its_client_can_answer_the_backend(
    hopped: Hopped, capabilities: dict[str, Any]
) -> None:
    """A 2026-07-28 call whose client declared none of sampling, elicitation and roots
    cannot end a round with ``input_required`` (each such request is refused for it), so
    it runs in its request's own task; a client that can answer has its call parked, so
    a round can end while the backend waits. Either way, a client that leaves cancels
    the backend's request and nothing stays parked."""
    call, headers = _modern_call("slow_progress", {})
    call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = capabilities
    relay = hopped.gateway.calls
    before = _marked(hopped)
    async with httpx2.AsyncClient(timeout=20) as http:
        post = asyncio.create_task(http.post(hopped.url, json=call, headers=headers))
        await eventually(lambda: relay._running.get("h"))
        assert len(relay.rounds.parked) == (1 if capabilities else 0)
        post.cancel()  # the client leaves
        with contextlib.suppress(asyncio.CancelledError):
            await post
    await eventually(lambda: _marked(hopped) > before)
    await eventually(lambda: not relay._running.get("h") and not relay.rounds.parked)


@pytest.mark.parametrize("capabilities", [{}, {"sampling": {}}], ids=["none", "sampling"])
async def test_a_2026_call_that_can_be_asked_nothing_reaches_the_backend_as_2026(
    hopped: Hopped, capabilities: dict[str, Any]
) -> None:
    """A 2026-07-28 call whose client declared nothing a backend could ask of it reaches
    a backend that serves that protocol as a 2026-07-28 request, as it would from the
    client directly (the gateway's client info in its envelope). A client that can
    answer has its call go on the gateway's session, where the backend can ask it."""
    transport = hopped.gateway.backends["h"].transport
    assert isinstance(transport, HttpTransport) and transport.direct is not None
    assert transport.stateless  # learned by server/discover
    call, headers = _modern_call("meta", {})
    call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = capabilities
    async with httpx2.AsyncClient(timeout=20) as http:
        response = await http.post(hopped.url, json=call, headers=headers)
    result = response.json()["result"]
    seen = json.loads(result["content"][0]["text"])
    version = seen.get("io.modelcontextprotocol/protocolVersion")
    assert version == (None if capabilities else "2026-07-28")
    if not capabilities:
        assert seen["io.modelcontextprotocol/clientInfo"]["name"] == "toolgate-gateway"
        assert seen["io.modelcontextprotocol/clientCapabilities"] == {}
    # the answer carries the gateway's server info, whichever way the backend was asked
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "toolgate"
    assert result["_meta"]["example.com/answered-by"] == "gw-upstream"


async def test_a_header_param_reaches_a_2026_backend_as_its_header(hopped: Hopped) -> None:
    """A tool whose argument is also a header (``x-mcp-header``) is sent to a 2026-07-28
    backend with that header, which the backend checks against the argument."""
    call, headers = _modern_call("region", {"region": "eu-west"})
    headers["mcp-param-region"] = "eu-west"
    async with httpx2.AsyncClient(timeout=20) as http:
        response = await http.post(hopped.url, json=call, headers=headers)
    result = response.json()["result"]
    assert not result.get("isError"), result
    assert result["content"][0]["text"] == "eu-west"


async def test_a_2026_calls_log_level_travels_to_the_backend_in_its_envelope(
    hopped: Hopped,
) -> None:
    """A 2026-07-28 call sent to the backend as one asks for the log messages its client
    opted in to (its level in the envelope); they come back on the call's stream."""
    call, headers = _modern_call("log", {})
    call["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = "error"
    async with httpx2.AsyncClient(timeout=20) as http:
        response = await http.post(hopped.url, json=call, headers=headers)
    assert "error during the call" in response.text
    assert "debug during the call" not in response.text
    assert '"logged"' in response.text


@pytest.mark.parametrize("kind", KINDS)
async def test_a_request_on_a_calls_own_stream_reaches_that_call_whoever_else_calls(
    hopped: Hopped, kind: str
) -> None:
    """Over HTTP a backend's request related to a call comes on that call's response
    stream, so with calls of two clients in flight it still reaches the right client;
    one on the backend's standalone stream says no call, and is refused."""
    async with talk("session", hopped.url) as first, talk(kind, hopped.url) as second:
        slow: asyncio.Future[tuple[str, bool]] = asyncio.ensure_future(
            first.call("slow_progress", {}, progress=True)
        )
        await asyncio.wait_for(first.heard.got_progress.wait(), 20)
        here = await second.call("list_roots_here", {})
        try:
            unrelated: tuple[str, bool] | str = await second.call("list_roots", {})
        except mcp.MCPError as exc:  # a legacy SDK session raises the backend's error
            unrelated = str(exc)
        slow.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await slow
    assert here == (ROOT_URI, False)
    assert "calls from different clients are in progress" in str(unrelated)


@pytest.mark.parametrize(
    ("info", "capabilities"),
    [
        ({"name": 5}, {}),
        ({"name": "raw", "version": "1"}, "all"),
        ("raw", {"sampling": {}}),
        ({"name": "raw", "version": "1"}, {"sampling": 3}),
    ],
    ids=["info-field", "capabilities-string", "info-string", "capability-field"],
)
async def test_a_misshapen_envelope_is_refused_as_the_sdk_refuses_it_naming_the_key(
    hopped: Hopped, info: Any, capabilities: Any
) -> None:
    """A 2026-07-28 call whose client info or capabilities are not what the protocol
    says gets, through the lane, the HTTP status and error code the SDK gives directly,
    and a message that names the key (the SDK's own says "Invalid request parameters")."""
    call, headers = _modern_call("meta", {})
    call["params"]["_meta"]["io.modelcontextprotocol/clientInfo"] = info
    call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = capabilities
    async with httpx2.AsyncClient(timeout=20) as http:
        relayed = await http.post(hopped.url, json=call, headers=headers)
        direct = await http.post(hopped.backend_url, json=call, headers=headers)
    assert relayed.status_code == direct.status_code == 400
    error = relayed.json()["error"]
    assert error["code"] == direct.json()["error"]["code"] == -32602
    assert error["message"].startswith("Invalid params: params._meta.io.modelcontextprotocol/")
    assert error["data"]["field"].startswith("_meta.io.modelcontextprotocol/client")


async def test_a_header_param_is_still_checked_against_the_callers_listing(
    hopped: Hopped,
) -> None:
    """``region`` declares ``Mcp-Param-Region``: a 2026-07-28 call whose header
    disagrees with its argument is refused (400, ``HEADER_MISMATCH``); one that agrees
    is served."""
    async with mcp.Client(hopped.url) as client:
        await client.list_tools()
        agreed = await client.call_tool("region", {"region": "eu-west"})
    assert _text(agreed) == "eu-west"
    body, headers = _modern_call("region", {"region": "eu-west"})
    async with httpx2.AsyncClient() as http:
        refused = await http.post(
            hopped.url, json=body, headers={**headers, "mcp-param-region": "us-east"}
        )
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == mt.HEADER_MISMATCH


async def test_an_app_built_again_has_one_lane_that_learns_sessions() -> None:
    """Each ``http_app()`` has a session manager and a lane of its own; only the newest
    lane learns sessions from the server's middleware."""
    cfg = parse_config({"mcpServers": {"h": {"url": "http://127.0.0.1:9/mcp"}}})
    gateway = Gateway(cfg)
    try:
        gateway.build()
        gateway.http_app()
        first = gateway.fast_path
        gateway.http_app()
        second = gateway.fast_path
        learners = [
            m
            for m in gateway.server.middleware
            if isinstance(getattr(m, "__self__", None), FastPath)
        ]
        assert first is not None and second is not None and first is not second
        assert learners == [second.learn]
    finally:
        await gateway.close()


async def _raw_session(http: httpx2.AsyncClient, url: str) -> dict[str, str]:
    """Open a legacy session over plain HTTP; the headers its requests carry."""
    opened = await http.post(url, json=INIT, headers=MCP_HEADERS)
    session = {
        **MCP_HEADERS,
        "mcp-session-id": opened.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-11-25",
    }
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(url, json=done, headers=session)).status_code == 202
    return session


async def test_a_quiet_call_in_the_lane_keeps_its_stream_alive_with_pings(
    hopped: Hopped, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A legacy call that says nothing for a ping interval answers on an SSE stream with
    pings (as the SDK's transport does), so idle-read timeouts do not cut it."""
    monkeypatch.setattr(call_response, "SSE_PING_INTERVAL", 0.1)
    before = _marked(hopped)
    async with httpx2.AsyncClient(timeout=20) as http:
        session = await _raw_session(http, hopped.url)
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "slow_progress", "arguments": {}},
        }
        async with http.stream("POST", hopped.url, json=call, headers=session) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            chunks = response.aiter_text()
            assert (await anext(chunks)).startswith(": ping")
            cancel = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 2},
            }
            assert (await http.post(hopped.url, json=cancel, headers=session)).status_code == 202
            rest = "".join([c async for c in chunks])
        assert "data:" not in rest  # a cancelled call is not answered
    await eventually(lambda: _marked(hopped) > before)


async def test_a_session_deleted_under_a_call_in_the_lane_ends_its_stream_and_the_call(
    hopped: Hopped,
) -> None:
    """The client ends its session (``DELETE``) while a call streams progress: the
    call's stream ends, unanswered, and the backend's request is cancelled."""
    before = _marked(hopped)
    lane = hopped.gateway.fast_path
    assert lane is not None
    async with httpx2.AsyncClient(timeout=20) as http:
        session = await _raw_session(http, hopped.url)
        call = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "slow_progress", "arguments": {}, "_meta": {"progressToken": 1}},
        }
        served = lane.served
        async with http.stream("POST", hopped.url, json=call, headers=session) as response:
            chunks = response.aiter_text()
            assert "notifications/progress" in await anext(chunks)
            assert (await http.delete(hopped.url, headers=session)).status_code == 200
            rest = "".join([c async for c in chunks])
        assert '"id":7' not in rest.replace(" ", "")  # the call is not answered
        assert lane.served == served + 1
        assert session["mcp-session-id"] not in lane.sessions
    await eventually(lambda: _marked(hopped) > before)


@pytest.mark.parametrize("told_by", ["edge", "receive"])
async def test_a_quiet_2026_call_pings_and_a_client_that_leaves_cancels_it(
    hopped: Hopped, monkeypatch: pytest.MonkeyPatch, told_by: str
) -> None:
    """A 2026-07-28 call that says nothing for a ping interval answers on an SSE stream
    with pings, as the SDK's modern entry does; the client closing the connection
    cancels the call, down to the backend's request. The lane learns it from the edge's
    protocol (``Leaving``), or, on a server without it, from ``receive``."""
    monkeypatch.setattr(call_response, "SSE_PING_INTERVAL", 0.1)
    if told_by == "receive":  # as if served by a protocol that puts no Leaving in scope
        monkeypatch.setattr(stateless_calls, "LEAVING", "no.such.scope.key")
    before = _marked(hopped)
    call, headers = _modern_call("slow_progress", {})
    lane = hopped.gateway.fast_path
    assert lane is not None
    served = lane.served
    async with (
        httpx2.AsyncClient(timeout=20) as http,
        http.stream("POST", hopped.url, json=call, headers=headers) as response,
    ):
        assert response.headers["content-type"].startswith("text/event-stream")
        assert (await anext(response.aiter_text())).startswith(": ping")
    assert lane.served == served + 1
    await eventually(lambda: _marked(hopped) > before)
