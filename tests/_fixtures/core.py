"""Small helpers the core tests share: a trivial handler, a tool factory, visible names,
a call asked again while a store or gateway is not answering.

Imports only toolgate's core; no MCP.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from toolgate import CallContext, Session, Tool
from toolgate.state.base import StateStore
from toolgate.state.listing import SessionListing

R = TypeVar("R")


def ok(args: Mapping[str, Any], ctx: CallContext) -> str:
    """A handler that answers ``"ok"``."""
    return "ok"


def T(name: str, *groups: str, **kw: Any) -> Tool:
    """A tool named ``name`` in ``groups`` that answers ``"ok"``."""
    return Tool(name, f"{name} tool.", handler=ok, groups=groups, **kw)


async def visible_names(session: Session) -> list[str]:
    """The names a core session lists now."""
    return [t.name for t in await session.list_tools()]


def listing(store: StateStore) -> SessionListing:
    """``store`` as the listing interface every built-in store implements."""
    assert isinstance(store, SessionListing), f"{type(store).__name__} lists no sessions"
    return store


async def asked_again(
    call: Callable[[], Awaitable[R]],
    failing: type[Exception],
    seconds: float,
    pause: float = 0.1,
) -> R:
    """``call``'s answer, asked again every ``pause`` seconds while it raises ``failing``,
    for at most ``seconds`` (then the last error): a step that waits for a store or a
    gateway to answer again, around the behaviour under test."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return await call()
        except failing:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(pause)
