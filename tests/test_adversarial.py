"""The gateway under attack, end to end: the real ``toolgate serve`` over HTTP in front of
a misbehaving backend (``tests/servers/gw_adversary.py``) and a well-behaved one.

Catastrophic regex patterns, hung and malformed backends, oversized and deeply nested
bodies, lone surrogates, credentials that are two, JSON-RPC ids that are objects,
rebinding ``Host``/``Origin`` headers on every route, and slow clients (a bounded number
of loopback sockets, each held a bounded time). Raw HTTP (httpx, sockets) where an SDK
client would refuse to send the input.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import select
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import MappingProxyType
from typing import Any

import httpx
import pytest
import uvicorn
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from _fixtures.gateway import (
    ALICE_TOKEN,
    BOB_TOKEN,
    INIT,
    SERVERS,
    HttpGateway,
    sha256,
    toolgate_argv,
)
from _fixtures.gateway import MCP_HEADERS as MCP
from _fixtures.mcp_servers import free_port
from toolgate.gateway.backends.backend import Backend, Timing, unsendable
from toolgate.gateway.backends.supervision import supervise
from toolgate.gateway.config.servers import StdioServer
from toolgate.gateway.ingress.protocol import guarded_protocol
from toolgate.wire import params_fault

OPERATOR_TOKEN = "operator-secret-token"
MAX_BODY = 65_536
MAX_CONNECTIONS = 40
ALICE = {"Authorization": f"Bearer {ALICE_TOKEN}"}
#: every route of the gateway, as (method, path)
ROUTES = [
    ("POST", "/mcp"),
    ("GET", "/webmcp.js"),
    ("GET", "/webmcp/tools"),
    ("POST", "/webmcp/call"),
    ("OPTIONS", "/webmcp/call"),
    ("GET", "/dashboard/"),
    ("POST", "/dashboard/login"),
    ("POST", "/dashboard/logout"),
]


def adversarial_config(tmp: Path) -> Path:
    config = {
        "mcpServers": {
            "adv": {
                "command": sys.executable,
                "args": [str(SERVERS / "gw_adversary.py")],
                "timeout": 3,
                "tool_timeouts": {"hang": 1.5},
            },
            "math": {"command": sys.executable, "args": [str(SERVERS / "gw_math.py")]},
        },
        "toolgate": {
            "strategy": "flat",
            "search": True,
            "groups": {
                "adv": {"description": "Misbehaves", "tools": ["adv:*"]},
                "math": {"description": "Arithmetic", "tools": ["math:*"]},
            },
            "identity": {
                "tokens": {
                    sha256(ALICE_TOKEN): {"id": "alice", "scope": ["*"]},
                    sha256(BOB_TOKEN): {"id": "bob", "scope": ["math"]},
                }
            },
            "dashboard": {"enabled": True, "tokens": [sha256(OPERATOR_TOKEN)]},
            "http": {
                "max_body_bytes": MAX_BODY,
                "max_json_depth": 32,
                "header_timeout": 1,
                "keep_alive_timeout": 1,
                "body_timeout": 2,
                "max_connections": MAX_CONNECTIONS,
            },
        },
    }
    path = tmp / "toolgate.json"
    path.write_text(json.dumps(config, indent=2))
    return path


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpGateway]:
    tmp = tmp_path_factory.mktemp("adversarial")
    served = HttpGateway(
        [*toolgate_argv(), "serve", str(adversarial_config(tmp))], tmp / "gateway.log"
    )
    served.start()
    try:
        served.wait_ready()  # the tests call math's tools from their first line
        yield served
    finally:
        served.stop()


def client(gateway: HttpGateway, token: str = ALICE_TOKEN) -> Client[Any]:
    return Client(StreamableHttpTransport(gateway.url, auth=token), mode="legacy")


async def raw_session(http: httpx.AsyncClient, gateway: HttpGateway) -> dict[str, str]:
    """Initialize a legacy session over raw HTTP; the headers its requests carry."""
    init = await http.post(gateway.url, json=INIT, headers={**MCP, **ALICE})
    assert init.status_code == 200
    headers = {
        **MCP,
        **ALICE,
        "mcp-session-id": init.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-11-25",
    }
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(gateway.url, json=done, headers=headers)).status_code == 202
    return headers


async def text_of(c: Client[Any], tool: str, arguments: dict[str, Any] | None = None) -> str:
    result = await c.call_tool(tool, arguments or {}, raise_on_error=False)
    return str(result.content[0].text)  # type: ignore[union-attr]


# -- regex search -------------------------------------------------------------------------

#: fails on "Spells aaa…a!" only after trying every way to split the a's (2^64 for a
#: backtracking engine); RE2 answers in linear time
CATASTROPHIC = "Spells (a|aa)*$"


@pytest.mark.timeout(60)
async def test_a_catastrophic_regex_pattern_answers_and_other_sessions_keep_working(
    gateway: HttpGateway,
) -> None:
    async with client(gateway) as alice, client(gateway) as other:
        found, added = await asyncio.gather(
            alice.call_tool("search_tools_regex", {"pattern": CATASTROPHIC + "|^spell$"}),
            other.call_tool("add", {"a": 2, "b": 3}),
        )
    assert [r["name"] for r in found.structured_content["results"]] == ["spell"]
    assert added.structured_content == {"result": 5}


@pytest.mark.timeout(60)
async def test_regex_search_never_reaches_a_tool_the_caller_cannot_see(
    gateway: HttpGateway,
) -> None:
    async with client(gateway, BOB_TOKEN) as bob:
        found = await bob.call_tool("search_tools_regex", {"pattern": CATASTROPHIC})
    assert found.structured_content["results"] == []


async def test_a_regex_outside_re2_syntax_is_a_clear_error(gateway: HttpGateway) -> None:
    async with client(gateway) as alice:
        result = await alice.call_tool(
            "search_tools_regex", {"pattern": "(a)\\1"}, raise_on_error=False
        )
    assert result.is_error
    assert result.structured_content == {
        "error": "Invalid regular expression '(a)\\\\1': invalid escape sequence: \\1 "
        "(RE2 syntax: no backreferences or lookaround)"
    }


# -- hung and malformed backends ----------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("tool", "seconds"), [("hang", 1.5), ("wrong_id", 3)])
async def test_a_backend_that_never_answers_properly_times_out_with_a_retryable_error(
    gateway: HttpGateway, tool: str, seconds: float
) -> None:
    async with client(gateway) as alice:
        result = await alice.call_tool(tool, {}, raise_on_error=False)
        after = await text_of(alice, "repeat", {"still": "up"})
    assert result.is_error
    data = result.structured_content
    assert data is not None
    assert (data["code"], data["backend"], data["timeout_s"], data["retryable"]) == (
        "backend_timeout",
        "adv",
        seconds,
        True,
    )
    assert f"did not answer {tool!r} within {seconds:g}s" in data["error"]
    assert after == '{"still": "up"}'


@pytest.mark.timeout(60)
async def test_a_backend_error_that_is_not_an_object_is_an_error_at_once_naming_it(
    gateway: HttpGateway,
) -> None:
    async with client(gateway) as alice:
        result = await alice.call_tool("bad_error", {}, raise_on_error=False)
        after = await text_of(alice, "repeat", {"still": "up"})
    assert result.is_error
    data = result.structured_content
    assert data is not None
    assert (data["code"], data["backend"]) == ("backend_malformed_answer", "adv")
    assert "sent a malformed answer to 'bad_error'" in data["error"]
    assert "did not answer" not in data["error"]  # not the call timeout
    assert after == '{"still": "up"}'


@pytest.mark.timeout(60)
async def test_a_timed_out_call_is_cancelled_at_the_backend(gateway: HttpGateway) -> None:
    async with client(gateway) as alice:
        before = json.loads(await text_of(alice, "cancelled"))
        await alice.call_tool("hang", {}, raise_on_error=False)
        after = json.loads(await text_of(alice, "cancelled"))
    assert len(after) == len(before) + 1


async def test_bytes_that_are_not_utf8_from_a_stdio_backend_spoil_one_answer_not_the_connection(
    gateway: HttpGateway,
) -> None:
    async with client(gateway) as alice:
        pid = await text_of(alice, "pid")
        answer = await text_of(alice, "bad_utf8")
        assert await text_of(alice, "pid") == pid  # the same process: no reconnect
    assert answer == "caf\ufffd"


# -- lone surrogates ----------------------------------------------------------------------

SURROGATE_CALL = (
    b'{"jsonrpc":"2.0","id":7,"method":"tools/call",'
    b'"params":{"name":"repeat","arguments":{"text":"\\ud800"}}}'
)


async def test_a_lone_surrogate_is_refused_at_the_edge_and_the_backend_keeps_serving(
    gateway: HttpGateway,
) -> None:
    async with client(gateway) as alice:
        pid = await text_of(alice, "pid")
        async with httpx.AsyncClient(timeout=30) as http:
            headers = await raw_session(http, gateway)
            refused = await http.post(gateway.url, content=SURROGATE_CALL, headers=headers)
            webmcp = await http.post(
                f"{gateway.origin}/webmcp/call",
                content=b'{"name":"repeat","arguments":{"text":"\\ud800"}}',
                headers={**ALICE, "Content-Type": "application/json"},
            )
            operator = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}
            events = await http.get(f"{gateway.origin}/dashboard/api/events", headers=operator)
            page = await http.get(f"{gateway.origin}/dashboard/events", headers=operator)
        assert await text_of(alice, "pid") == pid
    assert (refused.status_code, refused.json()) == (
        400,
        {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {
                "code": -32602,
                "message": "Invalid params: params.arguments.text holds a lone UTF-16 "
                "surrogate, which is not valid Unicode and cannot be sent on",
            },
        },
    )
    assert (webmcp.status_code, webmcp.json()["error"]["message"]) == (
        400,
        "Invalid params: arguments.text holds a lone UTF-16 surrogate, which is not "
        "valid Unicode and cannot be sent on",
    )
    assert (events.status_code, page.status_code) == (200, 200)


def test_arguments_are_judged_sendable_as_the_transports_encode_them() -> None:
    """The check before a backend call encodes as the transports' writers do: any
    mapping of JSON values passes, a lone surrogate or a value JSON has no form for is
    named."""
    assert unsendable(MappingProxyType({"path": "/tmp", "n": [1, 2.5, None]})) is None
    assert unsendable({"text": "\ud800"}) == (
        "an argument holds a lone UTF-16 surrogate, which is not valid Unicode"
    )
    problem = unsendable({"thing": object()})
    assert problem is not None and problem.startswith("the arguments are not JSON: ")


@pytest.mark.timeout(60)
async def test_a_backend_refuses_arguments_it_cannot_encode_without_losing_its_connection(
    tmp_path: Path,
) -> None:
    spec = StdioServer(command=sys.executable, args=[str(SERVERS / "gw_adversary.py")])
    backend = Backend("adv", spec, base_dir=tmp_path, timing=Timing(start_timeout=20))
    task = asyncio.create_task(supervise(backend))
    try:
        await asyncio.wait_for(backend.ready.wait(), 30)
        pid = (await backend.call("pid", {})).content[0]["text"]
        refused = await backend.call("repeat", {"text": "\ud800"})
        again = await backend.call("pid", {})
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert (refused.is_error, refused.content[0]["text"]) == (
        True,
        "Cannot send 'repeat' to backend 'adv': an argument holds a lone UTF-16 surrogate, "
        "which is not valid Unicode",
    )
    assert (backend.status, again.content[0]["text"]) == ("stopped", pid)


# -- bodies -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/mcp", "/webmcp/call", "/dashboard/login"])
async def test_a_body_over_the_limit_is_refused_before_it_is_read(
    gateway: HttpGateway, path: str
) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(
            f"{gateway.origin}{path}", content=b"x" * (MAX_BODY + 1), headers={**MCP, **ALICE}
        )
    assert (response.status_code, response.text) == (
        413,
        f"the request body is larger than {MAX_BODY} bytes",
    )


async def test_a_chunked_body_over_the_limit_is_refused(gateway: HttpGateway) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(MAX_BODY // 4096 + 2):
            yield b" " * 4096

    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(gateway.url, content=chunks(), headers={**MCP, **ALICE})
    assert response.status_code == 413


@pytest.mark.timeout(60)
@pytest.mark.parametrize("path", ["/mcp", "/webmcp/call"])
def test_an_unauthenticated_caller_is_answered_without_its_body_being_read(
    gateway: HttpGateway, path: str
) -> None:
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=20) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\n"
            "Transfer-Encoding: chunked\r\n\r\n4\r\n[[[[\r\n".encode()
        )  # the body never ends: an answer proves it was not waited for
        head = sock.recv(4096)
    assert head.startswith(b"HTTP/1.1 401 ")


@pytest.mark.timeout(60)
def test_a_body_that_does_not_arrive_in_time_is_a_408(gateway: HttpGateway) -> None:
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=20) as sock:
        sock.sendall(
            f"POST /webmcp/call HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {ALICE_TOKEN}\r\nContent-Type: application/json\r\n"
            'Content-Length: 100\r\n\r\n{"name": '.encode()
        )  # 10 of the 100 bytes, then nothing
        head = sock.recv(4096)
    assert head.startswith(b"HTTP/1.1 408 ")


@pytest.mark.parametrize(
    ("path", "content_type"),
    [("/mcp", "application/json"), ("/webmcp/call", "application/json"), ("/webmcp/call", "")],
)
async def test_deeply_nested_json_is_a_400_not_a_crash(
    gateway: HttpGateway, path: str, content_type: str
) -> None:
    nested = b"[" * 20_000 + b"]" * 20_000
    headers = {**MCP, **ALICE, "Content-Type": content_type}
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(f"{gateway.origin}{path}", content=nested, headers=headers)
    assert response.status_code == 400
    assert "JSON nested deeper than 32 levels" in response.text


# -- credentials and JSON-RPC -------------------------------------------------------------


@pytest.mark.parametrize(
    "authorization",
    [
        [f"Bearer {ALICE_TOKEN}, Bearer {BOB_TOKEN}"],
        [f"Bearer {ALICE_TOKEN} {BOB_TOKEN}"],
        [f"Bearer {ALICE_TOKEN}", f"Bearer {BOB_TOKEN}"],
        ["Bearer"],
    ],
)
async def test_an_authorization_header_that_is_not_one_credential_is_a_400(
    gateway: HttpGateway, authorization: list[str]
) -> None:
    headers = [(b"authorization", value.encode()) for value in authorization]
    headers += [(k.lower().encode(), v.encode()) for k, v in MCP.items()]
    async with httpx.AsyncClient(timeout=30) as http:
        for path in ("/mcp", "/webmcp/tools"):
            request = http.build_request(
                "POST" if path == "/mcp" else "GET", f"{gateway.origin}{path}"
            )
            request.headers = httpx.Headers(headers)
            request.headers["host"] = f"127.0.0.1:{gateway.port}"
            if path == "/mcp":
                request.stream = httpx.ByteStream(json.dumps(INIT).encode())
                request.headers["content-length"] = str(len(json.dumps(INIT)))
            response = await http.send(request)
            assert response.status_code == 400, (path, authorization)
            assert response.json()["error"]["message"].startswith("Bad Authorization header: ")


@pytest.mark.parametrize("rid", [{"a": 1}, [1], True])
async def test_a_request_whose_id_is_not_a_string_or_integer_is_an_error(
    gateway: HttpGateway, rid: Any
) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        headers = await raw_session(http, gateway)
        response = await http.post(
            gateway.url, json={"jsonrpc": "2.0", "id": rid, "method": "tools/list"}, headers=headers
        )
    assert (response.status_code, response.json()["error"]["code"]) == (400, -32600)


#: JSON-RPC messages of a wrong shape, and the one line each is answered with
MALFORMED = [
    ([{"jsonrpc": "2.0", "id": 2, "method": "ping"}], -32600, "a JSON-RPC batch (an array)"),
    ({"jsonrpc": "2.0", "id": 3}, -32600, "a message needs a 'method'"),
    ({"jsonrpc": "1.0", "id": 4, "method": "ping"}, -32600, '"jsonrpc" must be "2.0"'),
    ({"jsonrpc": "2.0", "id": 5, "method": 7}, -32600, "'method' must be a string"),
    ({"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": [1]}, -32602, "'params'"),
    ("ping", -32600, "the body must be one JSON-RPC message"),
]


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
@pytest.mark.parametrize(("body", "code", "named"), MALFORMED)
async def test_a_malformed_json_rpc_message_gets_one_line_naming_its_fault_on_either_era(
    gateway: HttpGateway, era: str, body: Any, code: int, named: str
) -> None:
    """The same answer on both eras (the SDK's legacy path would answer -32602 with a
    validation dump, its 2026-07-28 path -32600), the request's id echoed where it has
    one; the session keeps working."""
    async with httpx.AsyncClient(timeout=30) as http:
        if era == "2025-11-25":
            headers = await raw_session(http, gateway)
        else:
            headers = {**MCP, **ALICE, "mcp-protocol-version": era}
        response = await http.post(gateway.url, content=json.dumps(body), headers=headers)
        error = response.json()["error"]
        assert (response.status_code, error["code"]) == (400, code)
        assert named in error["message"] and "pydantic" not in error["message"]
        rid = body.get("id") if isinstance(body, dict) else None
        assert response.json()["id"] == rid
        if era == "2025-11-25":
            ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
            after = await http.post(gateway.url, json=ping, headers=headers)
            assert after.status_code == 200 and '"result"' in after.text


#: requests MCP defines, with params of the wrong type, and the fault each answer names
BAD_PARAMS = [
    ({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {}}, "params.name: Field"),
    (
        {
            "jsonrpc": "2.0",
            "id": 8,
            "method": "tools/call",
            "params": {"name": "x", "arguments": 1},
        },
        "params.arguments: Input should be a valid dictionary",
    ),
    (
        {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "completion/complete",
            "params": {"ref": {"type": "ref/prompt", "name": "x"}, "argument": 5},
        },
        "params.argument: Input should be a valid dictionary",
    ),
]


def test_params_of_the_wrong_type_are_named_by_their_path() -> None:
    fault = params_fault("initialize", {"protocolVersion": 5, "capabilities": {}})
    assert fault is not None and fault.error.code == -32602
    assert fault.error.message.startswith("Invalid params: params.")
    assert params_fault("tools/list", None) is None  # params may be left out
    assert params_fault("tools/call", {"name": "x", "arguments": {"a": 1}}) is None
    assert params_fault("groups/get", {}) is None  # not MCP's own: its handler answers


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
@pytest.mark.parametrize(("body", "named"), BAD_PARAMS)
async def test_params_of_the_wrong_type_are_answered_naming_the_field_on_either_era(
    gateway: HttpGateway, era: str, body: dict[str, Any], named: str
) -> None:
    """The SDK's own check answers only "Invalid request parameters"."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": era,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    async with httpx.AsyncClient(timeout=30) as http:
        if era == "2025-11-25":
            headers = await raw_session(http, gateway)
        else:
            headers = {**MCP, **ALICE, "mcp-protocol-version": era, "mcp-method": body["method"]}
            if body["method"] == "tools/call":
                headers["mcp-name"] = "x"
            body = {**body, "params": {**body["params"], "_meta": meta}}
        response = await http.post(gateway.url, json=body, headers=headers)
    text = response.text
    answer = (
        json.loads(text[text.index("{") :].splitlines()[0]) if "data:" in text else response.json()
    )
    assert answer["id"] == body["id"]
    assert answer["error"]["code"] == -32602
    assert named in answer["error"]["message"], answer


@pytest.mark.parametrize("session", [True, False])
async def test_a_protocol_version_header_naming_no_known_version_is_a_400_naming_it(
    gateway: HttpGateway, session: bool
) -> None:
    """MCP: "MUST respond with 400 Bad Request"; the body is the 2026-07-28 error, with the
    versions this gateway speaks (the SDK read a junk version as the stateless era and
    asked for that era's ``_meta``)."""
    async with httpx.AsyncClient(timeout=30) as http:
        headers = await raw_session(http, gateway) if session else {**MCP, **ALICE}
        ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
        response = await http.post(
            gateway.url, json=ping, headers={**headers, "mcp-protocol-version": "junk"}
        )
        error = response.json()["error"]
        assert (response.status_code, error["code"]) == (400, -32022)
        assert error["message"].startswith("Unsupported protocol version 'junk'")
        assert error["data"]["requested"] == "junk"
        assert {"2025-11-25", "2026-07-28"} <= set(error["data"]["supported"])
        if session:  # the session is untouched
            after = await http.post(gateway.url, json=ping, headers=headers)
            assert after.status_code == 200 and '"result"' in after.text


async def test_a_post_without_the_required_accept_header_is_406(gateway: HttpGateway) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        del http.headers["accept"]  # httpx sends "*/*" unless told otherwise
        response = await http.post(
            gateway.url, json=INIT, headers={"Content-Type": "application/json", **ALICE}
        )
    assert response.status_code == 406


# -- DNS rebinding and cross-origin requests ----------------------------------------------


@pytest.mark.parametrize(("method", "path"), ROUTES)
async def test_every_route_refuses_a_foreign_host(
    gateway: HttpGateway, method: str, path: str
) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.request(
            method, f"{gateway.origin}{path}", headers={**ALICE, "Host": "evil.example"}
        )
    assert (response.status_code, response.text) == (421, "Invalid Host header")


@pytest.mark.parametrize(("method", "path"), ROUTES)
async def test_every_route_refuses_a_foreign_origin(
    gateway: HttpGateway, method: str, path: str
) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.request(
            method, f"{gateway.origin}{path}", headers={**ALICE, "Origin": "http://evil.example"}
        )
    assert (response.status_code, response.text) == (403, "Invalid Origin header")
    assert "access-control-allow-origin" not in response.headers


async def test_webmcp_names_the_allowed_origin_instead_of_any(gateway: HttpGateway) -> None:
    origin = "http://127.0.0.1:9999"
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.get(
            f"{gateway.origin}/webmcp/tools", headers={**ALICE, "Origin": origin}
        )
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == origin


# -- slow clients -------------------------------------------------------------------------


def closed_within(sockets: list[socket.socket], seconds: float) -> int:
    """How many of ``sockets`` the server closed (EOF or reset) within ``seconds``."""
    closed: set[socket.socket] = set()
    deadline = time.monotonic() + seconds
    while len(closed) < len(sockets) and time.monotonic() < deadline:
        ready, _, _ = select.select([s for s in sockets if s not in closed], [], [], 0.2)
        for s in ready:
            try:
                if s.recv(4096) == b"":
                    closed.add(s)
            except OSError:
                closed.add(s)
    return len(closed)


@pytest.mark.timeout(60)
def test_clients_that_dribble_their_headers_are_disconnected(gateway: HttpGateway) -> None:
    sockets = [socket.create_connection(("127.0.0.1", gateway.port)) for _ in range(20)]
    try:
        for s in sockets:
            s.sendall(b"GET /webmcp.js HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        stop = threading.Event()

        def dribble() -> None:  # one more header byte each 0.3 s, forever
            while not stop.is_set():
                for s in sockets:
                    with contextlib.suppress(OSError):
                        s.sendall(b"X")
                stop.wait(0.3)

        thread = threading.Thread(target=dribble, daemon=True)
        thread.start()
        try:
            assert closed_within(sockets, 20) == len(sockets)
        finally:
            stop.set()
            thread.join()
    finally:
        for s in sockets:
            s.close()
    response = httpx.get(f"{gateway.origin}/webmcp.js", timeout=30)
    assert response.status_code == 200


@pytest.mark.parametrize("pieces", [1, 40], ids=["at once", "in pieces"])
def test_a_request_head_over_the_size_limit_is_a_431_and_the_connection_closes(
    gateway: HttpGateway, pieces: int
) -> None:
    # the configured default, 16 KiB: one header of 20 KiB, never ended
    head = b"GET /webmcp.js HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 20_000
    step = -(-len(head) // pieces)
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=10) as s:
        for i in range(0, len(head), step):
            s.sendall(head[i : i + step])
        answer = b""
        while chunk := s.recv(4096):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 431 ")
    assert answer.endswith(b"Request header fields too large")
    # a head within the limit is served as before
    assert httpx.get(f"{gateway.origin}/webmcp.js", headers={"X-Ok": "a" * 8000}).status_code == 200


def test_a_client_still_sending_after_its_431_reads_the_answer_whole(
    gateway: HttpGateway,
) -> None:
    """After the 431 the gateway still reads (and drops) what the client sends for a
    while: closing on unread data would reset the connection, and the client would lose
    the answer."""
    head = b"GET /webmcp.js HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 20_000
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=10) as s:
        s.sendall(head)
        time.sleep(0.3)  # the 431 is written by now
        s.sendall(b"a" * 1_000_000)  # and the client goes on sending
        answer = b""
        while chunk := s.recv(4096):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 431 ")
    assert answer.endswith(b"Request header fields too large")


@pytest.mark.timeout(60)
def test_connections_past_the_limit_are_closed_at_once() -> None:
    async def hello(request: Any) -> PlainTextResponse:
        return PlainTextResponse("hello")

    port, limit = free_port(), 10
    config = uvicorn.Config(
        Starlette(routes=[Route("/", hello)]),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        http=guarded_protocol(header_timeout=60, max_connections=limit),
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.05)
        sockets = [socket.create_connection(("127.0.0.1", port)) for _ in range(limit + 5)]
        try:
            assert closed_within(sockets, 3) == 5
        finally:
            for s in sockets:
                s.close()
        assert httpx.get(f"http://127.0.0.1:{port}/", timeout=30).text == "hello"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
