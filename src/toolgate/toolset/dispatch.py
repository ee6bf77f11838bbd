"""A tool call, start to end: the checks before it, the run, the stage it leads to.

The view's verdict first (visible implies dispatchable), then describe-before-call,
argument validation, the rate limit and confirmation (a slot is spent only by a call
that runs); a successful call may move the session to its next stage. Orchestration:
imports the core; reads the session through ``CallingSession``.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from toolgate.catalog import CallContext, Catalog, Handler, Tool, ToolResult
from toolgate.catalog.arguments import required_sentence
from toolgate.catalog.handler import to_result
from toolgate.errors import (
    ConfirmationRefused,
    DescriptionRequired,
    RateLimited,
    RegistrationError,
    RelayedError,
    ToolgateError,
    json_type,
)
from toolgate.policy import Confirmer, ConfirmRequest, Principal
from toolgate.state.base import SessionState, StateStore
from toolgate.view import Surfacing, View


class CallingToolset(Protocol):
    """What a call reads of its ``ToolSet``."""

    @property
    def catalog(self) -> Catalog: ...
    @property
    def store(self) -> StateStore: ...
    @property
    def describe_before_call(self) -> bool: ...
    @property
    def description_required(self) -> Callable[[str], DescriptionRequired]: ...
    def view(self, principal: Principal, state: SessionState) -> View: ...
    def validate_arguments(self, tool: Tool, arguments: Mapping[str, Any]) -> str | None: ...
    def hidden_error(self, s: Surfacing, view: View) -> ToolgateError: ...


class CallingSession(Protocol):
    """What a call reads of its ``Session`` (``toolgate.toolset.session``), named here so
    this module does not import the one that calls it."""

    @property
    def toolset(self) -> CallingToolset: ...
    @property
    def key(self) -> str | None: ...
    @property
    def principal(self) -> Principal: ...
    async def state(self) -> SessionState: ...
    def _emit(self, type_: str, **data: Any) -> None: ...
    async def advance(self, tool: Tool) -> StageMove: ...


logger = logging.getLogger("toolgate.toolset")


@dataclass(frozen=True)
class StageMove:
    """Where a successful call of a tool took its session (``Session.advance``): the
    transition is worked out from the stage the session is in when the move is written.
    ``to`` is None when that stage has none for the tool; ``refused`` says why the
    session stayed in ``stage_from`` (a budget the new stage would exceed)."""

    stage_from: str
    to: str | None = None
    visible_changed: bool = False
    refused: str | None = None


@dataclass(frozen=True)
class CallOutcome:
    """A finished call: its result, and what it changed for the session."""

    result: ToolResult
    stage_from: str | None = None
    stage_to: str | None = None
    visible_changed: bool = False
    #: the tool ran, but its stage change was refused (a budget) or could not be saved:
    #: the session stays in ``stage_from``; the result is still the tool's, never a
    #: retryable failure
    state_error: str | None = None
    #: why the call was refused before it ran, when that is an answer rather than an
    #: error: ``"invalid-arguments"`` (a strategy adds where the full definition is)
    refused: str | None = None

    @property
    def stage_changed(self) -> bool:
        return self.stage_to is not None and self.stage_to != self.stage_from


async def maybe_await(value: Any) -> Any:
    """A handler's or hook's return value, awaited when it is awaitable."""
    return await value if inspect.isawaitable(value) else value


async def dispatch(
    session: CallingSession,
    name: str,
    arguments: Mapping[str, Any] | None,
    confirmer: Confirmer | None,
    extras: Mapping[str, Any] | None,
    handler: Handler | None,
) -> CallOutcome:
    """``session.call``: run ``name`` if the view shows it and every check passes."""
    ts = session.toolset
    state = await session.state()
    view = ts.view(session.principal, state)
    s = view.surfacing(name)
    if not s.visible:
        session._emit("tool.executed", tool=name, outcome="blocked", reason=str(s.reason))
        raise ts.hidden_error(s, view)
    tool = s.tool
    assert tool is not None
    if (
        ts.describe_before_call
        and session.key is not None
        # the session's own state: a cached view may carry an older ``described``
        and name not in state.described
    ):
        # first: an undescribed call learns where the schema is, spends no rate-limit slot
        session._emit("tool.executed", tool=name, outcome="blocked", reason="description-required")
        raise ts.description_required(name)
    args: Mapping[str, Any] = arguments if arguments is not None else {}
    if not isinstance(args, Mapping):
        return _refuse_args(
            session,
            name,
            f"Invalid arguments for tool {name!r}: they must be a JSON object, not "
            f"{json_type(args)}. {required_sentence(tool.input_schema)}",
        )
    # arguments first: a malformed call neither spends a rate-limit slot nor asks a human
    problem = ts.validate_arguments(tool, args)
    if problem is not None:
        return _refuse_args(session, name, problem)
    policy = tool.policy
    if policy.decision == "confirm":
        # look without recording: a human is never asked about a call the limit would
        # refuse, and a call refused or declined (or the first, asking leg on 2026-07-28,
        # whose retry comes back here) spends no slot
        await _rate_limit(session, tool, record=False)
        await _confirm(session, tool, args, confirmer)
    await _rate_limit(session, tool, record=True)  # the call runs: it spends its slot
    run = handler or tool.handler
    if run is None:
        raise RegistrationError(f"Tool {name!r} has no handler", name=name)
    ctx = CallContext(name, session.key, session.principal, extras or {})
    started = time.perf_counter()
    try:
        result = to_result(await maybe_await(run(args, ctx)))
    except Exception as exc:
        if isinstance(exc, ToolgateError) and not isinstance(exc, RelayedError):
            raise  # a refusal, not a call that ran
        took = time.perf_counter() - started
        session._emit(
            "tool.executed", tool=name, outcome="error", reason=str(exc)[:200], duration_s=took
        )
        if isinstance(exc, RelayedError):
            raise  # it ran elsewhere and failed: the caller hears that server's error
        return CallOutcome(ToolResult.error(f"Tool {name!r} failed: {exc}"))
    took = time.perf_counter() - started
    if result.is_error:
        session._emit(
            "tool.executed",
            tool=name,
            outcome="error",
            reason="tool reported error",
            duration_s=took,
        )
        return CallOutcome(result)
    session._emit("tool.executed", tool=name, outcome="success", duration_s=took)
    if not ts.catalog.flow.moves_on(name, tool.next_stage):
        return CallOutcome(result)  # no store round trip for a tool that moves nothing
    try:
        move = await session.advance(tool)
    except Exception as exc:
        # The tool has run: a failure here must not read as a failed call, or a
        # client's retry would repeat its side effect. Report the result; log this.
        problem = exc.message if isinstance(exc, ToolgateError) else f"{exc}"
        stage = view.ctx.stage  # the store could not say where it is now: name where it was
        logger.error(
            "tool %r ran, but moving session %r to stage %r failed: %s",
            name,
            session.key,
            ts.catalog.flow.next_stage(stage, name, tool.next_stage),
            problem,
        )
        return CallOutcome(result, stage_from=stage, state_error=problem)
    if move.refused is not None:
        return CallOutcome(result, stage_from=move.stage_from, state_error=move.refused)
    if move.to is None:
        return CallOutcome(result)
    return CallOutcome(
        result, stage_from=move.stage_from, stage_to=move.to, visible_changed=move.visible_changed
    )


async def _rate_limit(session: CallingSession, tool: Tool, *, record: bool) -> None:
    """Refuse the call if ``tool``'s rate limit is spent for this principal; with
    ``record``, count the call (one atomic store step: check and record)."""
    limit = tool.policy.rate_limit
    if limit is None:
        return
    bucket = f"{session.principal.id}\x1f{tool.name}"
    retry = await session.toolset.store.rate_check(bucket, limit.max, limit.window_s, record=record)
    if retry is not None:
        session._emit("tool.executed", tool=tool.name, outcome="blocked", reason="rate-limited")
        raise RateLimited(tool.name, retry)


def _refuse_args(session: CallingSession, name: str, message: str) -> CallOutcome:
    session._emit("tool.executed", tool=name, outcome="error", reason="invalid-arguments")
    return CallOutcome(ToolResult.error(message), refused="invalid-arguments")


async def _confirm(
    session: CallingSession, tool: Tool, args: Mapping[str, Any], confirmer: Confirmer | None
) -> None:
    if confirmer is None:
        session._emit("tool.executed", tool=tool.name, outcome="blocked", reason="no-confirmer")
        raise ConfirmationRefused(
            f"Tool {tool.name!r} needs a human's confirmation, and this client cannot "
            "ask for it (no elicitation support). Nothing was run.",
            tool=tool.name,
        )
    request = ConfirmRequest(
        tool=tool.name,
        arguments=dict(args),
        principal=session.principal,
        message=f"Allow {session.principal.id!r} to run {tool.name!r} with {dict(args)!r}?",
    )
    if not await confirmer.confirm(request):
        session._emit("tool.executed", tool=tool.name, outcome="blocked", reason="declined")
        raise ConfirmationRefused(
            f"The user declined to run {tool.name!r}. Nothing was run.", tool=tool.name
        )
