"""A backend's requests for input (sampling, elicitation, roots) as the calling client takes
them, on both eras: the capability each needs, the result it is answered with, and the
URL-mode elicitations whose completion a legacy session awaits. Imports ``mcp``, the
request kit and the backends' ``Backend``; the calls and the rounds that carry them import it.
"""

from __future__ import annotations

import logging
import weakref
from collections import OrderedDict
from typing import Any

import mcp_types as mt
from mcp_types import INVALID_REQUEST

from toolgate.gateway.backends.backend import Backend
from toolgate.request import Context

logger = logging.getLogger("toolgate.gateway")

#: URL-mode elicitations whose completion is awaited, at most (the oldest are forgotten)
MAX_OPEN_ELICITATIONS = 1024
ELICITATION_COMPLETE = "notifications/elicitation/complete"
_CAPABILITY: dict[str, tuple[str, mt.ClientCapabilities]] = {
    "sampling/createMessage": ("sampling", mt.ClientCapabilities(sampling=mt.SamplingCapability())),
    "elicitation/create": (
        "elicitation",
        mt.ClientCapabilities(elicitation=mt.ElicitationCapability()),
    ),
    "roots/list": ("roots", mt.ClientCapabilities(roots=mt.RootsCapability())),
}


def error(message: str, code: int = INVALID_REQUEST) -> mt.ErrorData:
    return mt.ErrorData(code=code, message=message)


def answer_type(request: mt.InputRequest) -> type[mt.InputResponse]:
    """The result a client answers ``request`` with (one rule for both eras)."""
    if isinstance(request, mt.CreateMessageRequest):
        params = request.params
        tools = params.tools or params.tool_choice
        return mt.CreateMessageResultWithTools if tools else mt.CreateMessageResult
    if isinstance(request, mt.ElicitRequest):
        return mt.ElicitResult
    return mt.ListRootsResult


def answers_input(ctx: Context) -> bool:
    """Whether the calling client declared any capability a backend's request for input
    needs (``lacks`` refuses the others)."""
    check = ctx.session.check_client_capability
    return any(check(capability) for _, capability in _CAPABILITY.values())


def lacks(ctx: Context, request: mt.InputRequest) -> mt.ErrorData | None:
    """The error for a request the calling client declared no capability for."""
    name, capability = _CAPABILITY[request.method]
    if request.method == "elicitation/create" and isinstance(
        request.params, mt.ElicitRequestURLParams
    ):
        capability = mt.ClientCapabilities(
            elicitation=mt.ElicitationCapability(url=mt.UrlElicitationCapability())
        )
        name = "elicitation (url mode)"
    if ctx.session.check_client_capability(capability):
        return None
    return error(
        f"The client of this call does not support {name}: it did not declare the "
        f"capability, so toolgate cannot relay the backend's {request.method} to it."
    )


class OpenElicitations:
    """Which legacy session each URL-mode elicitation went to, for its
    ``notifications/elicitation/complete`` (2026-07-28 has no such notification)."""

    def __init__(self) -> None:
        # (backend, elicitationId) → the legacy connection its URL-mode elicitation went to
        self._sessions: OrderedDict[tuple[str, str], weakref.ref[Any]] = OrderedDict()

    def open(
        self, backend: str, request: mt.InputRequest, connection: Any
    ) -> tuple[str, str] | None:
        """Remember ``connection`` (a legacy session's; None: no session to tell) as the
        one ``request`` goes to, when it is a URL-mode elicitation; its key, if so."""
        if not (
            connection is not None
            and isinstance(request, mt.ElicitRequest)
            and isinstance(request.params, mt.ElicitRequestURLParams)
            and request.params.elicitation_id is not None
        ):
            return None
        key = (backend, request.params.elicitation_id)
        self._sessions[key] = weakref.ref(connection)
        self._sessions.move_to_end(key)
        while len(self._sessions) > MAX_OPEN_ELICITATIONS:
            self._sessions.popitem(last=False)
        return key

    def answered(
        self, key: tuple[str, str] | None, answer: mt.InputResponse | mt.ErrorData
    ) -> None:
        """A declined elicitation is forgotten: no completion will follow."""
        if key is not None and not (
            isinstance(answer, mt.ElicitResult) and answer.action == "accept"
        ):
            self._sessions.pop(key, None)

    async def complete(self, backend: Backend, params: mt.ElicitCompleteNotificationParams) -> None:
        """The backend's URL-mode elicitation is done: tell the session that was asked."""
        ref = self._sessions.pop((backend.name, params.elicitation_id), None)
        connection = ref() if ref is not None else None
        if connection is None:
            logger.debug(
                "backend %s: elicitation %s completed; no session waits for it",
                backend.name,
                params.elicitation_id,
            )
            return
        data = params.model_dump(by_alias=True, mode="json", exclude_none=True)
        await connection.notify(ELICITATION_COMPLETE, data)  # never raises


__all__ = ["OpenElicitations", "answer_type", "answers_input", "error", "lacks"]
