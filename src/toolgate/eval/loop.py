"""The agent loop of one task: the model, the host's tools, until an answer or the turns run out.

Each turn the host offers its tools (re-listed when it re-lists), the model answers with
text or tool calls, the host runs each call through the gateway and hands the results
back. ``TaskRun`` is what one run cost and did: tokens of the definitions and results
the model read (``toolgate.tokens``), the provider's reported usage, turns, calls.
Edge (``toolgate.eval``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from toolgate.eval.host import Host, Outcome
from toolgate.eval.providers import Conversation, ProviderError, Result, provider_failure
from toolgate.eval.tasks import CallRecord, Task
from toolgate.tokens import TokenCounter, estimate_tokens


@dataclass(frozen=True)
class TaskRun:
    """One run of one task under one strategy."""

    task: str
    strategy: str
    repeat: int
    success: bool
    reasons: tuple[str, ...]
    turns: int
    tool_calls: int
    refused: int
    failed: int
    definition_tokens: int
    result_tokens: int
    prompt_tokens: int
    completion_tokens: int
    wall_s: float
    answer: str | None
    out_of_turns: bool
    error: str | None
    calls: tuple[CallRecord, ...]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["reasons"] = list(self.reasons)
        data["calls"] = [
            {
                "name": c.name,
                "tool": c.tool,
                "arguments": dict(c.arguments),
                "refused": c.refused,
                "failed": c.failed,
            }
            for c in self.calls
        ]
        return data


@dataclass
class Tally:
    """What a run has cost so far."""

    turns: int = 0
    definition_tokens: int = 0
    result_tokens: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class Transcript:
    """How the loop ended: the final answer, the calls, the tally, and any error."""

    answer: str | None
    calls: tuple[CallRecord, ...]
    tally: Tally
    out_of_turns: bool
    error: str | None
    started: float
    #: the provider refused every request: raised by the caller once the session is closed
    fatal: Exception | None = None

    @property
    def wall_s(self) -> float:
        return time.monotonic() - self.started


async def converse(task: Task, chat: Conversation, host: Host, counter: TokenCounter) -> Transcript:
    """Run ``task`` to its end. A provider error other than a refused key or an
    unknown model ends the run as failed, with the (scrubbed) error."""
    started = time.monotonic()
    tally = Tally()
    calls: list[CallRecord] = []
    answer: str | None = None
    try:
        for _ in range(task.max_turns):
            offered = await host.offer()
            wires = [d.wire() for d in offered.definitions]
            tally.definition_tokens += int(estimate_tokens(wires, counter)["total"]) if wires else 0
            reply = await chat.ask(offered)
            tally.turns += 1
            tally.prompt_tokens += reply.prompt_tokens
            tally.completion_tokens += reply.completion_tokens
            answer = reply.text
            if not reply.calls:
                return Transcript(answer, tuple(calls), tally, False, None, started)
            results = []
            for call in reply.calls:
                outcome = await _run(
                    host, call.name, call.arguments, call.namespace, call.bad_arguments
                )
                calls.append(outcome.record)
                tally.result_tokens += counter.count(outcome.text)
                results.append(Result(call, outcome.text, not outcome.record.succeeded))
            chat.answer(results)
    except Exception as exc:
        try:
            failure = provider_failure(exc, chat.spec)
        except ProviderError as fatal:
            return Transcript(answer, tuple(calls), tally, False, fatal.message, started, fatal)
        if failure is None:
            raise
        return Transcript(answer, tuple(calls), tally, False, failure, started)
    return Transcript(answer, tuple(calls), tally, True, None, started)


async def _run(
    host: Host,
    name: str,
    arguments: Mapping[str, Any],
    namespace: str | None,
    bad_arguments: str | None,
) -> Outcome:
    if bad_arguments is not None:  # the host cannot send what it cannot read
        text = f"Error: {bad_arguments}"
        return Outcome(text, CallRecord(name, name, {}, refused=False, failed=True))
    return await host.call(name, arguments, namespace=namespace)
