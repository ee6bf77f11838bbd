"""The groups extension as a client declares and speaks it.

The request and notification envelopes of ``groups/list`` / ``groups/get``, the
``ClientExtension`` that declares the extension, and the same for an
``mcp.ClientSession``. Edge: imports ``mcp``, never toolgate's core.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

import mcp_types as mt
from mcp.client.extension import ClientExtension, NotificationBinding
from pydantic import TypeAdapter

GROUPS_EXTENSION = "io.modelcontextprotocol/groups"
GROUPS_LIST_CHANGED = "notifications/groups/list_changed"
OnListChanged = Callable[[], Awaitable[None]]
#: reads a request's result as the plain dict the server sent
RAW: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])


class ListGroupsParams(mt.PaginatedRequestParams):
    pass


class GetGroupParams(mt.RequestParams):
    name: str


class ListGroupsRequest(mt.Request[ListGroupsParams, Literal["groups/list"]]):
    method: Literal["groups/list"] = "groups/list"
    params: ListGroupsParams


class GetGroupRequest(mt.Request[GetGroupParams, Literal["groups/get"]]):
    method: Literal["groups/get"] = "groups/get"
    params: GetGroupParams


class GroupsListChangedParams(mt.NotificationParams):
    pass


def _bindings(on_list_changed: OnListChanged | None) -> list[NotificationBinding[Any]]:
    if on_list_changed is None:
        return []
    callback = on_list_changed

    async def handler(_params: GroupsListChangedParams) -> None:
        await callback()

    return [
        NotificationBinding(
            method=GROUPS_LIST_CHANGED, params_type=GroupsListChangedParams, handler=handler
        )
    ]


class GroupsClientExtension(ClientExtension):
    """Declares the extension for ``mcp.Client`` / ``fastmcp.Client(extensions=[...])``
    and delivers ``notifications/groups/list_changed`` to ``on_list_changed``."""

    identifier = GROUPS_EXTENSION

    def __init__(self, on_list_changed: OnListChanged | None = None) -> None:
        self.on_list_changed = on_list_changed

    def notifications(self) -> list[NotificationBinding[Any]]:
        return _bindings(self.on_list_changed)


def session_options(on_list_changed: OnListChanged | None = None) -> dict[str, Any]:
    """Keyword arguments declaring the extension on an ``mcp.ClientSession``."""
    return {
        "extensions": {GROUPS_EXTENSION: {}},
        "notification_bindings": _bindings(on_list_changed),
    }
