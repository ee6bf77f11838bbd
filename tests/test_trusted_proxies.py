"""Behind trusted proxies the client's address comes from ``Forwarded`` or
``X-Forwarded-For``: the real ``toolgate serve`` over HTTP, raw requests from 127.0.0.1.

With ``toolgate.http.trusted_proxies`` naming the peer, each forwarded client has its own
share of sessions (an office behind one proxy is not one client); without it, the
headers are ignored and the peer is the client. Several hops are walked from the right,
trusted ones skipped; ``Forwarded``'s quoted IPv6, obfuscated and ``unknown`` nodes and
garbage are read as RFC 7239 says. A bad entry is a config problem naming key and entry.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from _fixtures.gateway import HttpGateway, toolgate_argv
from toolgate.errors import ConfigError
from toolgate.gateway.config.model import parse_config
from toolgate.gateway.ingress.forwarded import TrustedProxies

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


def gateway(tmp: Path, **http: Any) -> HttpGateway:
    config = tmp / "toolgate.json"  # no backends: only the way in is under test
    config.write_text(json.dumps({"mcpServers": {}, "toolgate": {"http": http}}))
    return HttpGateway([*toolgate_argv(), "serve", str(config)], tmp / "gateway.log")


@pytest.fixture(scope="module")
def gateways(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, HttpGateway]]:
    """Three gateways. ``behind_proxy``: the default share (32 sessions
    per client), the loopback peer a trusted proxy. ``one_each``: one session per client,
    so a second session tells whether two requests came from the same client; 127.0.0.1,
    10.0.0.0/8 and fd00::/8 are trusted. ``no_proxy``: nothing trusted, two each."""
    tmp = tmp_path_factory.mktemp("proxies")
    for name in "abc":
        (tmp / name).mkdir()
    started = {
        "behind_proxy": gateway(tmp / "a", trusted_proxies=["127.0.0.1"]),
        "one_each": gateway(
            tmp / "b",
            trusted_proxies=["127.0.0.1", "10.0.0.0/8", "fd00::/8"],
            max_sessions_per_client=1,
        ),
        "no_proxy": gateway(tmp / "c", max_sessions_per_client=2),
    }
    try:
        for each in started.values():  # one by one: each has its own start deadline
            each.start()
        yield started
    finally:
        for each in started.values():
            each.stop()


@pytest.fixture
def behind_proxy(gateways: dict[str, HttpGateway]) -> HttpGateway:
    return gateways["behind_proxy"]


@pytest.fixture
def one_each(gateways: dict[str, HttpGateway]) -> HttpGateway:
    return gateways["one_each"]


@pytest.fixture
def no_proxy(gateways: dict[str, HttpGateway]) -> HttpGateway:
    return gateways["no_proxy"]


def opened(http: httpx.Client, url: str, **forwarding: str) -> int:
    """The status of an ``initialize`` sent with these forwarding headers."""
    headers = {**HEADERS, **{k.replace("_", "-"): v for k, v in forwarding.items()}}
    return http.post(url, json=INITIALIZE, headers=headers).status_code


def test_a_hundred_clients_behind_a_trusted_proxy_each_get_their_own_sessions(
    behind_proxy: HttpGateway,
) -> None:
    with httpx.Client(timeout=30) as http:
        codes = [
            opened(http, behind_proxy.url, x_forwarded_for=f"198.51.100.{i}") for i in range(100)
        ]
    assert codes == [200] * 100


def test_one_forwarded_client_is_still_held_to_its_share(behind_proxy: HttpGateway) -> None:
    with httpx.Client(timeout=30) as http:
        codes = [opened(http, behind_proxy.url, x_forwarded_for="203.0.113.7") for _ in range(40)]
    assert codes == [200] * 32 + [429] * 8


def test_forwarding_headers_from_a_peer_not_trusted_are_ignored(no_proxy: HttpGateway) -> None:
    with httpx.Client(timeout=30) as http:
        codes = [
            opened(http, no_proxy.url, x_forwarded_for=f"198.51.100.{i}") for i in range(2)
        ] + [opened(http, no_proxy.url, forwarded="for=198.51.100.77")]
    assert codes == [200, 200, 429]


# a first request, then a second: the same client (429, its one session taken) or not
SAME_OR_NOT = [
    pytest.param({"x_forwarded_for": "192.0.2.1"}, {"x_forwarded_for": "192.0.2.1"}, 429, id="xff"),
    pytest.param(
        {"x_forwarded_for": "192.0.2.2, 10.1.1.1, 10.2.2.2"},
        {"x_forwarded_for": "192.0.2.2"},
        429,
        id="xff-chain-of-trusted-hops",
    ),
    pytest.param(
        {"x_forwarded_for": "192.0.2.66, 192.0.2.3"},
        {"x_forwarded_for": "192.0.2.99, 192.0.2.3"},
        429,
        id="xff-spoofed-left-of-the-first-untrusted-hop",
    ),
    pytest.param(
        {"forwarded": 'for="[2001:db8::1]:4711"'},
        {"x_forwarded_for": "2001:db8::1"},
        429,
        id="forwarded-quoted-ipv6-with-port",
    ),
    pytest.param(
        {"forwarded": "for=192.0.2.4;proto=https, for=10.0.0.9;by=10.0.0.1"},
        {"forwarded": "For=192.0.2.4:8080"},
        429,
        id="forwarded-chain-and-parameters",
    ),
    pytest.param(
        {"forwarded": 'for="[fd00::5]", for=192.0.2.5'},
        {"forwarded": "for=192.0.2.5"},
        429,
        id="forwarded-ipv6-proxy",
    ),
    pytest.param(
        {"forwarded": "for=_office1"}, {"forwarded": "for=_office2"}, 200, id="obfuscated"
    ),
    pytest.param(
        {"forwarded": "for=192.0.2.6", "x_forwarded_for": "192.0.2.7"},
        {"x_forwarded_for": "192.0.2.6"},
        429,
        id="forwarded-wins-over-x-forwarded-for",
    ),
    pytest.param({"x_forwarded_for": "192.0.2.8"}, {"x_forwarded_for": "192.0.2.9"}, 200, id="two"),
]


@pytest.mark.parametrize(("first", "second", "status"), SAME_OR_NOT)
def test_the_client_is_the_first_untrusted_hop_from_the_right(
    one_each: HttpGateway, first: dict[str, str], second: dict[str, str], status: int
) -> None:
    with httpx.Client(timeout=30) as http:
        assert opened(http, one_each.url, **first) == 200
        assert opened(http, one_each.url, **second) == status


def test_unknown_and_garbage_hops_leave_the_proxy_as_the_client(one_each: HttpGateway) -> None:
    # the proxy itself (127.0.0.1) opens its one session; what names no client is the proxy
    garbage = [
        {"forwarded": "for=unknown"},
        {"x_forwarded_for": "not-an-address"},
        {"x_forwarded_for": ",,,"},
        {"forwarded": 'for="[::1'},
        {"forwarded": ";;==,"},
    ]
    with httpx.Client(timeout=30) as http:
        assert opened(http, one_each.url) == 200
        assert [opened(http, one_each.url, **g) for g in garbage] == [429] * len(garbage)


@pytest.mark.parametrize(
    ("peer", "headers", "client"),
    [
        ("127.0.0.1", {"x-forwarded-for": ["1.2.3.4, 10.0.0.2", "10.0.0.3"]}, "1.2.3.4"),
        ("::ffff:127.0.0.1", {"x-forwarded-for": ["1.2.3.4"]}, "1.2.3.4"),
        ("127.0.0.1", {"x-forwarded-for": ["10.0.0.2"]}, "10.0.0.2"),
        ("127.0.0.1", {"forwarded": ['for="_hidden", for=10.0.0.2']}, "_hidden"),
        ("127.0.0.1", {"forwarded": ['for="[2001:DB8::A]"']}, "2001:db8::a"),
        ("127.0.0.1", {"forwarded": ["for=unknown, for=10.0.0.2"]}, "10.0.0.2"),
        ("127.0.0.1", {"forwarded": ["proto=https"]}, "127.0.0.1"),
        ("192.0.2.1", {"x-forwarded-for": ["1.2.3.4"]}, "192.0.2.1"),
    ],
)
def test_the_rule_on_its_own(peer: str, headers: dict[str, list[str]], client: str) -> None:
    assert TrustedProxies.of(["127.0.0.0/8", "10.0.0.0/8"]).client(peer, headers) == client


@pytest.mark.parametrize(
    ("peer", "headers", "scheme"),
    [
        ("127.0.0.1", {"x-forwarded-proto": ["https"]}, "https"),
        ("127.0.0.1", {"forwarded": ["for=1.2.3.4;proto=http, for=10.0.0.1;proto=https"]}, "https"),
        ("127.0.0.1", {"x-forwarded-proto": ["gopher"]}, "http"),
        ("192.0.2.1", {"x-forwarded-proto": ["https"]}, "http"),
    ],
)
def test_the_scheme_is_the_nearest_trusted_proxys(
    peer: str, headers: dict[str, list[str]], scheme: str
) -> None:
    assert TrustedProxies.of(["127.0.0.0/8"]).scheme(peer, "http", headers) == scheme


def test_a_bad_trusted_proxy_entry_is_a_config_problem_naming_the_key_and_the_entry() -> None:
    bad = {"toolgate": {"http": {"trusted_proxies": ["10.0.0.1", "10.0.0.1/8", "proxy.lan"]}}}
    with pytest.raises(ConfigError) as raised:
        parse_config({"mcpServers": {}, **bad}, environ={})
    found = [f"{p['key']}: {p['message']}" for p in raised.value.details["problems"]]
    assert len(found) == 2
    assert found[0].startswith("toolgate.http.trusted_proxies[1]: ")
    assert "'10.0.0.1/8'" in found[0] and "has host bits set" in found[0]
    assert found[1].startswith("toolgate.http.trusted_proxies[2]: ")
    assert "'proxy.lan' is not an IP address or network" in found[1]
