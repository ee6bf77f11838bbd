"""What the HTTP edge and a config reload hold to, where a probe found gaps: the real
``toolgate serve`` over HTTP, raw sockets where a client library would not send the input.

A request head over ``http.max_header_bytes`` is a 431 however it arrives (in one read,
split, many small headers); another client's 404 or ``DELETE`` on a session does not
free its owner's place under ``max_sessions_per_client``; a reload that leaves a live
session's owner no token ends that session (the report says so, per token) and frees
its place; a client's malformed JSON-RPC response is a -32600 naming the problem, and a
2026-07-28 envelope value of the wrong shape a -32602 naming the key; more than one
``Host`` header is a 400, and an absolute-form target is judged by its host.
"""

from __future__ import annotations

import io
import json
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from _fixtures.gateway import (
    ALICE_TOKEN,
    BOB_TOKEN,
    INIT,
    SERVERS,
    HttpGateway,
    gateway_config,
    sha256,
    toolgate_argv,
)
from _fixtures.gateway import MCP_HEADERS as MCP
from toolgate.gateway.ingress.envelope import GuardLimits, json_problem

OPERATOR = "operator-secret-token"
CAROL = "carol-secret-token"
EVE = "eve-secret-token"
MAX_HEADER = 4096
PER_CLIENT = 2
LEGACY = "2025-11-25"


def identity(carol: str = "carol", *, eve: bool = True) -> dict[str, Any]:
    tokens = {
        sha256(ALICE_TOKEN): {"id": "alice", "trust": "verified", "scope": ["*"]},
        sha256(BOB_TOKEN): {"id": "bob", "scope": ["*"]},
        sha256(CAROL): {"id": carol, "scope": ["*"]},
    }
    if eve:
        tokens[sha256(EVE)] = {"id": "eve", "scope": ["*"]}
    return {"tokens": tokens}


def write_config(tmp: Path, **identity_args: Any) -> Path:
    notes = {"command": sys.executable, "args": [str(SERVERS / "gw_notes.py")]}
    return gateway_config(
        tmp,
        servers={"notes": notes},
        groups={"notes": {"description": "Take notes", "tools": ["notes:note_*"]}},
        always=[],
        policies=[],
        identity=identity(**identity_args),
        dashboard={"tokens": [sha256(OPERATOR)]},
        http={"max_header_bytes": MAX_HEADER, "max_sessions_per_client": PER_CLIENT},
    )


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpGateway]:
    tmp = tmp_path_factory.mktemp("edge-hold")
    served = HttpGateway([*toolgate_argv(), "serve", str(write_config(tmp))], tmp / "gateway.log")
    served.start()
    try:
        served.wait_ready()
        yield served
    finally:
        served.stop()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def open_session(http: httpx.Client, gateway: HttpGateway, token: str) -> httpx.Response:
    return http.post(gateway.url, json=INIT, headers={**MCP, **bearer(token)})


def on_session(session: str, token: str) -> dict[str, str]:
    return {**MCP, **bearer(token), "mcp-session-id": session, "mcp-protocol-version": LEGACY}


def ping(http: httpx.Client, gateway: HttpGateway, session: str, token: str) -> int:
    body = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
    return http.post(gateway.url, json=body, headers=on_session(session, token)).status_code


def exchange(gateway: HttpGateway, request: bytes, *, pause: float = 0.0) -> bytes:
    """Send ``request`` (in two pieces, ``pause`` seconds apart, when ``pause``) and read
    until the gateway closes the connection."""
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=10) as s:
        if pause:
            s.sendall(request[:100])
            time.sleep(pause)
            s.sendall(request[100:])
        else:
            s.sendall(request)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    return answer


# -- the request head's size -----------------------------------------------------------------


def head(size: int, *, many: bool = False) -> bytes:
    """A complete ``GET /healthz`` head of about ``size`` bytes: one big header, or many
    small ones."""
    start = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    if many:
        return start + b"".join(b"X-%d: a\r\n" % i for i in range(size // 10)) + b"\r\n"
    return start + b"X-Big: " + b"a" * size + b"\r\n\r\n"


@pytest.mark.parametrize(
    ("request_head", "pause"),
    [
        (head(MAX_HEADER + 1000), 0.0),
        (head(60_000), 0.0),
        (head(MAX_HEADER + 1000, many=True), 0.0),
        (head(MAX_HEADER + 1000), 0.3),
    ],
    ids=["complete in one read", "60 KB in one read", "many small headers", "split over reads"],
)
def test_a_complete_request_head_over_the_size_limit_is_a_431_and_the_connection_closes(
    gateway: HttpGateway, request_head: bytes, pause: float
) -> None:
    answer = exchange(gateway, request_head, pause=pause)
    assert answer.startswith(b"HTTP/1.1 431 ")
    assert answer.endswith(b"Request header fields too large")


def test_a_request_head_within_the_size_limit_is_served(gateway: HttpGateway) -> None:
    assert exchange(gateway, head(MAX_HEADER - 200)).startswith(b"HTTP/1.1 200 ")
    assert exchange(gateway, head(MAX_HEADER - 200, many=True)).startswith(b"HTTP/1.1 200 ")


def test_a_pipelined_head_over_the_limit_ends_the_connection_after_the_answer_before_it(
    gateway: HttpGateway,
) -> None:
    small = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    answer = exchange(gateway, small + head(MAX_HEADER + 1000))
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert answer.count(b"HTTP/1.1 ") == 1  # no second request ran


# -- sessions per client ----------------------------------------------------------------------


def test_another_clients_404_or_delete_on_a_session_does_not_free_its_owners_place(
    gateway: HttpGateway,
) -> None:
    with httpx.Client(timeout=30) as http:
        bobs = []
        for _ in range(PER_CLIENT):
            opened = open_session(http, gateway, BOB_TOKEN)
            assert opened.status_code == 200
            bobs.append(opened.headers["mcp-session-id"])
        assert open_session(http, gateway, BOB_TOKEN).status_code == 429
        for session in bobs:  # alice has no business with bob's sessions: 404, both ways
            assert ping(http, gateway, session, ALICE_TOKEN) == 404
            deleted = http.delete(gateway.url, headers=on_session(session, ALICE_TOKEN))
            assert deleted.status_code == 404
        assert open_session(http, gateway, BOB_TOKEN).status_code == 429  # still at his cap
        assert [ping(http, gateway, s, BOB_TOKEN) for s in bobs] == [200, 200]
        # bob ending one of his own frees its place
        assert http.delete(gateway.url, headers=on_session(bobs[0], BOB_TOKEN)).status_code == 200
        assert open_session(http, gateway, BOB_TOKEN).status_code == 200


# -- a client's JSON-RPC responses ------------------------------------------------------------

LIMITS = GuardLimits()
ID_PROBLEM = "Invalid Request: a response's id must be a string or an integer"
ERROR_PROBLEM = (
    "Invalid Request: a response's 'error' must be an object with an integer 'code' and a "
    "string 'message'"
)


@pytest.mark.parametrize(
    ("response", "message", "echoed"),
    [
        ({"id": 1.5, "result": {}}, ID_PROBLEM, None),
        ({"id": True, "result": {}}, ID_PROBLEM, None),
        ({"id": None, "result": {}}, ID_PROBLEM, None),
        ({"id": {"a": 1}, "error": {"code": 1, "message": "m"}}, ID_PROBLEM, None),
        ({"id": 4, "error": "x"}, ERROR_PROBLEM, 4),
        ({"id": 4, "error": {"code": "1", "message": "m"}}, ERROR_PROBLEM, 4),
        ({"id": 4, "error": {"code": True, "message": "m"}}, ERROR_PROBLEM, 4),
        ({"id": 4, "error": {"code": 1}}, ERROR_PROBLEM, 4),
        (
            {"id": "r", "result": {}, "error": {"code": 1, "message": "m"}},
            "Invalid Request: a response carries a 'result' or an 'error', not both",
            "r",
        ),
        ({"id": 4, "result": 5}, "Invalid Request: a response's 'result' must be an object", 4),
    ],
)
def test_a_malformed_jsonrpc_response_is_an_invalid_request_naming_the_problem(
    response: dict[str, Any], message: str, echoed: Any
) -> None:
    body = json.dumps({"jsonrpc": "2.0", **response}).encode()
    problem = json_problem(body, LIMITS, rpc=True)
    assert problem is not None
    assert (problem.status, problem.rpc_code, problem.message, problem.rpc_id) == (
        400,
        -32600,
        message,
        echoed,
    )


@pytest.mark.parametrize(
    "response",
    [
        {"id": 4, "result": {}},
        {"id": "x", "error": {"code": -1, "message": "no", "data": [1]}},
        {"id": None, "error": {"code": -32700, "message": "could not read it"}},
    ],
)
def test_a_wellformed_jsonrpc_response_passes_the_guard(response: dict[str, Any]) -> None:
    assert (
        json_problem(json.dumps({"jsonrpc": "2.0", **response}).encode(), LIMITS, rpc=True) is None
    )


def test_a_malformed_response_on_a_session_is_answered_400_invalid_request(
    gateway: HttpGateway,
) -> None:
    with httpx.Client(timeout=30) as http:
        opened = open_session(http, gateway, ALICE_TOKEN)
        session = opened.headers["mcp-session-id"]
        headers = on_session(session, ALICE_TOKEN)
        for response, message in (
            ({"id": 1.5, "result": {}}, ID_PROBLEM),
            ({"id": 4, "error": "x"}, ERROR_PROBLEM),
        ):
            answer = http.post(gateway.url, json={"jsonrpc": "2.0", **response}, headers=headers)
            assert answer.status_code == 400
            assert answer.json()["error"] == {"code": -32600, "message": message}
        assert http.delete(gateway.url, headers=headers).status_code == 200


# -- a 2026-07-28 request's envelope ----------------------------------------------------------

MODERN = "2026-07-28"
CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL = "io.modelcontextprotocol/logLevel"


def envelope() -> dict[str, Any]:
    """A sessionless ``tools/list`` with a well-formed envelope."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        CLIENT_INFO: {"name": "raw", "version": "1"},
        CAPABILITIES: {},
    }
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": meta}}


@pytest.mark.parametrize(
    ("key", "value", "where", "problem"),
    [
        (CAPABILITIES, 5, CAPABILITIES, "Input should be a valid dictionary"),
        (CAPABILITIES, {"roots": 5}, f"{CAPABILITIES}.roots", "Input should be a valid dictionary"),
        (CLIENT_INFO, "x", CLIENT_INFO, "Input should be a valid dictionary"),
        (CLIENT_INFO, {"name": "x"}, f"{CLIENT_INFO}.version", "Field required"),
        (LOG_LEVEL, "loud", LOG_LEVEL, "Input should be 'alert', 'critical', 'debug'"),
    ],
)
def test_a_2026_envelope_value_of_the_wrong_shape_is_invalid_params_naming_the_key(
    gateway: HttpGateway, key: str, value: Any, where: str, problem: str
) -> None:
    body = envelope()
    body["params"]["_meta"][key] = value
    headers = {
        **MCP,
        **bearer(BOB_TOKEN),
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/list",
    }
    answer = httpx.post(gateway.url, json=body, headers=headers, timeout=30)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == -32602
    assert error["message"].startswith(f"Invalid params: params._meta.{where}: {problem}")
    assert error["data"] == {"field": f"_meta.{where}"}
    assert answer.json()["id"] == 7
    # the same request with a well-formed envelope is served
    answer = httpx.post(gateway.url, json=envelope(), headers=headers, timeout=30)
    assert answer.status_code == 200, answer.text
    assert "tools" in answer.json()["result"]


def test_legacy_requests_and_envelopes_the_sdk_names_itself_pass_the_guard() -> None:
    def fault(meta: dict[str, Any]) -> Any:
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
        return json_problem(json.dumps(message).encode(), LIMITS, rpc=True)

    assert fault({"progressToken": 5}) is None  # a legacy request's _meta
    assert fault({CAPABILITIES: 5}) is None  # no version: the SDK names the missing key
    assert fault({"io.modelcontextprotocol/protocolVersion": MODERN}) is None  # likewise
    unknown = {"io.modelcontextprotocol/protocolVersion": "2099-01-01", CAPABILITIES: 5}
    assert fault(unknown) is None  # the SDK answers the unsupported version


# -- Host -----------------------------------------------------------------------------------


def test_more_than_one_host_header_is_a_400_naming_it(gateway: HttpGateway) -> None:
    for hosts in (b"Host: 127.0.0.1\r\nHost: evil.com", b"Host: 127.0.0.1\r\nHost: 127.0.0.1"):
        answer = exchange(
            gateway, b"GET /healthz HTTP/1.1\r\n" + hosts + b"\r\nConnection: close\r\n\r\n"
        )
        assert answer.startswith(b"HTTP/1.1 400 ")
        assert answer.endswith(b"send one Host header, not several")


def test_an_absolute_form_target_is_judged_by_its_own_host(gateway: HttpGateway) -> None:
    def get(target: bytes, host: bytes) -> bytes:
        request = b"GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (target, host)
        return exchange(gateway, request)

    assert get(b"http://evil.com/healthz", b"127.0.0.1").startswith(b"HTTP/1.1 421 ")
    here = b"http://127.0.0.1:%d/healthz" % gateway.port
    assert get(here, b"evil.com").startswith(b"HTTP/1.1 200 ")
    assert get(b"http://[::1]/healthz", b"evil.com").startswith(b"HTTP/1.1 200 ")


# -- a reload that rebinds or removes a token (last: it changes the config) --------------------


def test_a_reload_that_leaves_a_sessions_owner_no_token_ends_it_and_says_so(
    gateway: HttpGateway,
) -> None:
    config = Path(gateway.argv[-1])
    admin = {"Authorization": f"Bearer {OPERATOR}"}
    with httpx.Client(timeout=60) as http:
        carols = [open_session(http, gateway, CAROL).headers["mcp-session-id"] for _ in "ab"]
        eves = [open_session(http, gateway, EVE).headers["mcp-session-id"]]
        alices = [open_session(http, gateway, ALICE_TOKEN).headers["mcp-session-id"]]
        assert [ping(http, gateway, s, CAROL) for s in carols] == [200, 200]

        write_config(config.parent, carol="carol-renamed", eve=False)
        reloaded = http.post(f"{gateway.origin}/admin/reload", headers=admin)
        assert reloaded.status_code == 200, reloaded.text
        report = reloaded.json()
        assert report["applied"] is True
        assert report["sessions_ended"] == 3
        assert (
            f"identity.tokens.{sha256(CAROL)[:12]}...: principal changed 'carol' -> "
            "'carol-renamed': 2 live session(s) end"
        ) in report["warnings"]
        assert (
            f"identity.tokens.{sha256(EVE)[:12]}...: removed ('eve'): 1 live session(s) end"
        ) in report["warnings"]
        # the sessions of a token whose principal stayed are untouched
        assert ping(http, gateway, alices[0], ALICE_TOKEN) == 200
        assert [ping(http, gateway, s, CAROL) for s in carols] == [404, 404]

        # ended, not hidden: the old name back does not bring them back, and their places
        # under the per-client bound are free again
        write_config(config.parent)
        reloaded = http.post(f"{gateway.origin}/admin/reload", headers=admin)
        assert reloaded.status_code == 200, reloaded.text
        assert reloaded.json()["sessions_ended"] == 0
        assert reloaded.json()["warnings"] == [
            f"identity.tokens.{sha256(CAROL)[:12]}...: principal changed 'carol-renamed' -> "
            "'carol': 0 live session(s) end"
        ]
        assert [ping(http, gateway, s, CAROL) for s in carols] == [404, 404]
        assert ping(http, gateway, eves[0], EVE) == 404
        fresh = [open_session(http, gateway, CAROL).status_code for _ in range(PER_CLIENT)]
        assert fresh == [200] * PER_CLIENT


def test_toolgate_reload_prints_how_many_live_sessions_a_rebound_token_ended() -> None:
    from toolgate.gateway.commands.reload import _print_report

    out = io.StringIO()
    _print_report({"applied": True, "config": "toolgate.json", "sessions_ended": 3}, out)
    assert "  3 live session(s) ended: no token names their principal\n" in out.getvalue()
    out = io.StringIO()
    _print_report({"applied": True, "config": "toolgate.json", "sessions_ended": 0}, out)
    assert "ended" not in out.getvalue()
