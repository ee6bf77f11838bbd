"""Confirmation on protocol 2026-07-28, through FastMCP: the multi-round-trip pattern.

``RoundTripConfirmer`` ends the first leg of a ``confirm`` tool call with an
``input_required`` result (SEP-2322); the client's retry carries the human's answer and
the sealed request state. Adapter layer: imports ``fastmcp``, ``mcp`` and the policy.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as mt
from fastmcp.tools.base import InputRequiredToolResult

from toolgate.policy import ConfirmRequest
from toolgate.request import CONFIRM_SCHEMA


class InputRequired(Exception):
    """Raised by the round-trip confirmer to end this leg with an input request."""

    def __init__(self, request: ConfirmRequest, state: str) -> None:
        super().__init__(request.message)
        self.request = request
        self.state = state

    def result(self) -> InputRequiredToolResult:
        """The ``input_required`` result that asks the human."""
        ask = mt.ElicitRequest(
            params=mt.ElicitRequestFormParams(
                message=self.request.message, requested_schema=CONFIRM_SCHEMA
            )
        )
        return InputRequiredToolResult(
            mt.InputRequiredResult(input_requests={"confirm": ask}, request_state=self.state)
        )


def _confirm_state(request: ConfirmRequest) -> str:
    """The request state that binds an answer to exactly this tool and these arguments
    (FastMCP seals it, so a client cannot forge it for another call)."""
    args = json.dumps(dict(request.arguments), sort_keys=True, default=str)
    digest = hashlib.sha256(f"{request.tool}\x1f{args}".encode()).hexdigest()[:32]
    return f"toolgate-confirm:{digest}"


@dataclass(frozen=True)
class RoundTripConfirmer:
    """Confirms through SEP-2322 multi-round-trip: the first leg asks, the client's
    retry carries the answer (``input_responses``) and our sealed ``request_state``."""

    responses: Mapping[str, Any] | None
    state: str | None

    async def confirm(self, request: ConfirmRequest) -> bool:
        expected = _confirm_state(request)
        answer = (self.responses or {}).get("confirm")
        if answer is None or self.state != expected:
            raise InputRequired(request, expected)
        content = getattr(answer, "content", None) or {}
        return getattr(answer, "action", None) == "accept" and content.get("confirm") is True
