"""The client's address behind trusted proxies: ``Forwarded`` (RFC 7239) or
``X-Forwarded-For``, believed only from a peer in ``toolgate.http.trusted_proxies``.

``TrustedProxies.client`` is the one rule; the guard applies it once per request and
everything after reads the answer from ``scope["client"]``. Ingress layer: stdlib only.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

#: RFC 7239 §6.3: an obfuscated node name, chosen by the proxy to tell clients apart
_OBFUSCATED = re.compile(r"_[A-Za-z0-9._-]+")


def _address(node: str) -> str | None:
    """The IP address in a node (``1.2.3.4``, ``1.2.3.4:80``, ``[::1]:80``, ``::1``),
    normalised, or None when it holds none."""
    node = node.strip()
    if node.startswith("["):
        node = node[1 : node.find("]")] if "]" in node else ""
    elif node.count(":") == 1:
        node = node.partition(":")[0]
    try:
        return str(ipaddress.ip_address(node))
    except ValueError:
        return None


def _forwarded(value: str, parameter: str, missing: str = "unknown") -> list[str]:
    """The ``parameter`` (``for``, ``proto``) of each element of a ``Forwarded`` value,
    oldest first (an element without one gives ``missing``)."""
    nodes: list[str] = []
    for element in value.split(","):
        node = missing
        for pair in element.split(";"):
            name, _, token = pair.partition("=")
            if name.strip().lower() == parameter:
                node = token.strip().strip('"')
        nodes.append(node)
    return nodes


@dataclass(frozen=True)
class TrustedProxies:
    """Proxies whose forwarding headers are believed.

    >>> TrustedProxies.of(["10.0.0.0/8"]).client("10.1.1.1", {"x-forwarded-for": ["9.9.9.9"]})
    '9.9.9.9'

    From a trusted peer, the hops the headers list are walked from the right (the
    nearest first), trusted addresses skipped; the first untrusted hop is the client
    (all trusted: the farthest). A hop holding no address ends the walk: an obfuscated
    identifier (``_abc``) is the client, ``unknown`` or garbage leaves the last
    trusted address as the client. A peer not trusted is the client, whatever it sends.
    """

    networks: tuple[Network, ...] = ()

    @classmethod
    def of(cls, entries: Iterable[str]) -> TrustedProxies:
        return cls(tuple(ipaddress.ip_network(e.strip(), strict=True) for e in entries))

    def trusts(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped  # a dual-stack socket's view of an IPv4 peer
        return any(ip in network for network in self.networks)

    def client(self, peer: str, headers: dict[str, list[str]]) -> str:
        """The client's address for a request from ``peer`` with these header values
        (lower-case names, every line of each): ``forwarded`` wins over
        ``x-forwarded-for``."""
        if not self.networks or not self.trusts(peer):
            return peer
        if headers.get("forwarded"):
            hops = _forwarded(",".join(headers["forwarded"]), "for")
        elif headers.get("x-forwarded-for"):
            hops = ",".join(headers["x-forwarded-for"]).split(",")
        else:
            return peer
        client = peer
        for node in reversed(hops):
            address = _address(node)
            if address is None:
                node = node.strip()
                return node if _OBFUSCATED.fullmatch(node) else client
            client = address
            if not self.trusts(address):
                return address
        return client

    def scheme(self, peer: str, scheme: str, headers: dict[str, list[str]]) -> str:
        """The scheme the client used (``http`` or ``https``): the nearest proxy's word
        (``Forwarded: proto=``, else ``X-Forwarded-Proto``) when ``peer`` is trusted."""
        if not self.networks or not self.trusts(peer):
            return scheme
        if headers.get("forwarded"):
            said = _forwarded(",".join(headers["forwarded"]), "proto", "")[-1]
        else:
            said = ",".join(headers.get("x-forwarded-proto", [])).split(",")[-1]
        said = said.strip().lower()
        return said if said in ("http", "https") else scheme


__all__ = ["TrustedProxies"]
