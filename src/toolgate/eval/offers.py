"""What ``--strategies`` names: how each is served and how a host offers it to a model.

A user-facing name (``flat``, ``menu``, ``activators``, ``catalog``, ``search``,
``lazy``, ``groups``, ``native``) maps to the gateway config keys it overrides and to
the host that offers it: a plain ``tools/list`` host, a groups-extension host
(``toolgate.client``), or the provider's own tool search over the fetched catalog.
Any other strategy the registry holds is served as it is. Edge (``toolgate.eval``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from toolgate.errors import ConfigError
from toolgate.strategies.registry import default_registry

HostKind = Literal["list", "groups", "native"]


@dataclass(frozen=True)
class Offer:
    """One row of the report: a name, the ``toolgate`` keys it sets, and its host."""

    name: str
    overrides: Mapping[str, Any] = field(default_factory=dict)
    host: HostKind = "list"
    about: str = ""


OFFERS: Mapping[str, Offer] = {
    o.name: o
    for o in (
        Offer("flat", {"strategy": "flat"}, about="every tool listed: the baseline"),
        Offer(
            "menu",
            {"strategy": "list_changed", "meta_tools": "menu"},
            about="enable_tools / disable_tools, the list changes",
        ),
        Offer(
            "activators",
            {"strategy": "list_changed", "meta_tools": "activators"},
            about="<group>.activate tools, the list changes",
        ),
        Offer("catalog", {"strategy": "catalog"}, about="get_group and call_tool, a fixed list"),
        Offer("search", {"strategy": "search"}, about="search_tools and call_tool"),
        Offer(
            "lazy",
            {"strategy": "flat", "descriptions": {"mode": "lazy"}},
            about="every tool in one line; describe_tools gives the rest",
        ),
        Offer(
            "groups",
            {"strategy": "groups"},
            host="groups",
            about="the groups extension through toolgate.client",
        ),
        Offer(
            "native",
            {"strategy": "groups"},  # the same gateway as ``groups``: one process for both
            host="native",
            about="the provider's own tool search over every group (defer_loading)",
        ),
    )
}

DEFAULT_OFFERS = ("flat", "menu", "catalog", "search")


def parse_offers(text: str, *, native_ok: bool) -> list[Offer]:
    """``flat,menu,search`` as offers, in the order given. Raises ``ConfigError`` for an
    unknown name, a repeated one, or ``native`` with a provider that has no tool search."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise ConfigError("--strategies names no strategy", key="strategies")
    out: list[Offer] = []
    for name in names:
        if name in OFFERS:
            offer = OFFERS[name]
        elif name in default_registry.names:
            offer = Offer(name, {"strategy": name}, about="served as registered")
        else:
            known = sorted({*OFFERS, *default_registry.names})
            raise ConfigError(
                f"--strategies: unknown strategy {name!r}; known: {', '.join(known)}",
                key="strategies",
            )
        if offer.host == "native" and not native_ok:
            raise ConfigError(
                "--strategies: 'native' is the provider's own tool search, which only the "
                "Anthropic Messages API (anthropic:) and the OpenAI Responses API "
                "(openai-responses:) have",
                key="strategies",
            )
        if any(o.name == offer.name for o in out):
            raise ConfigError(f"--strategies names {name!r} twice", key="strategies")
        out.append(offer)
    return out
