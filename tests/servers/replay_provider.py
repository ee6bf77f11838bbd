"""A test double of the model providers' HTTP APIs that replays scripted model turns.

Serves OpenAI chat completions (``/v1/chat/completions``), the OpenAI Responses API
(``/v1/responses``) and the Anthropic Messages API (``/v1/messages``) on loopback, so
``toolgate eval`` runs with the real ``openai`` and ``anthropic`` SDK clients and no
network. It is not a model: a script, picked by a phrase of the prompt, lists goals (a
tool call) and the ways to reach a goal's tool when it is not offered (``enable_tools``,
``get_group``, the ``call_tool`` dispatcher...). Each turn it derives where the
conversation stands from the conversation itself, calls the goal's tool if the request
offers it, else the first unused way that is offered, else answers that it cannot — so
a wrong offer shows as a failed task. Every request and the usage it reported is logged.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

#: a scripted model turn: a tool call (name, arguments) or a final text
Action = tuple[str, Mapping[str, Any]] | str


@dataclass(frozen=True)
class Step:
    call: str
    args: Mapping[str, Any] = field(default_factory=dict)
    completes: bool = False  # reaching the goal through this way counts as the goal

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Step:
        return cls(str(data["call"]), dict(data.get("args") or {}), bool(data.get("completes")))


@dataclass(frozen=True)
class Goal:
    target: Step
    ways: tuple[Step, ...] = ()


@dataclass(frozen=True)
class Script:
    """``match``: a phrase of the prompt. ``answer``: the final text; ``{result}`` is the
    last tool result's text. ``wrong_every``: every n-th conversation of this script
    answers ``wrong`` at once (a model's noise, for the spread over repeats)."""

    match: str
    goals: tuple[Goal, ...]
    answer: str
    wrong_every: int = 0
    wrong: str = "I could not do it."

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Script:
        goals = tuple(
            Goal(Step.of(g), tuple(Step.of(w) for w in g.get("ways") or ()))
            for g in data.get("goals") or ()
        )
        return cls(
            str(data["match"]),
            goals,
            str(data.get("answer", "Done.")),
            int(data.get("wrong_every", 0)),
            str(data.get("wrong", "I could not do it.")),
        )


@dataclass(frozen=True)
class Seen:
    """One request, read the same way for every API."""

    prompt: str
    offered: Mapping[str, str | None]  # tool name -> its namespace (OpenAI Responses)
    history: tuple[tuple[str, Mapping[str, Any]], ...]  # the model's earlier calls
    results: tuple[str, ...]  # the tool results sent back, in order
    turns: int  # the model's earlier turns


def decide(script: Script, seen: Seen, wrong: bool) -> Action:
    if wrong:
        return script.wrong
    made = list(seen.history)

    def used(step: Step) -> bool:
        return (step.call, dict(step.args)) in [(n, dict(a)) for n, a in made]

    for goal in script.goals:
        if used(goal.target) or any(w.completes and used(w) for w in goal.ways):
            continue
        if goal.target.call in seen.offered:
            return goal.target.call, goal.target.args
        for way in goal.ways:
            if not used(way) and way.call in seen.offered:
                return way.call, way.args
        return f"I cannot reach {goal.target.call} with the tools I was given."
    last = seen.results[-1] if seen.results else ""
    return script.answer.replace("{result}", last)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(b.get("text") or b.get("content") or "") if isinstance(b, Mapping) else str(b)
            for b in content
        )
    return ""


def read_chat(body: Mapping[str, Any]) -> Seen:
    messages = list(body.get("messages") or [])
    prompt = next(_text(m.get("content")) for m in messages if m.get("role") == "user")
    offered = {t["function"]["name"]: None for t in body.get("tools") or []}
    history, results, turns = [], [], 0
    for m in messages:
        if m.get("role") == "assistant":
            turns += 1
            for c in m.get("tool_calls") or []:
                history.append((c["function"]["name"], json.loads(c["function"]["arguments"])))
        elif m.get("role") == "tool":
            results.append(_text(m.get("content")))
    return Seen(prompt, offered, tuple(history), tuple(results), turns)


def read_responses(body: Mapping[str, Any]) -> Seen:
    items = list(body.get("input") or [])
    prompt = next(_text(i.get("content")) for i in items if i.get("role") == "user")
    offered: dict[str, str | None] = {}
    for t in body.get("tools") or []:
        if t.get("type") == "function":
            offered[t["name"]] = None
        elif t.get("type") == "namespace":  # deferred: the provider's search finds them
            offered.update({f["name"]: t["name"] for f in t.get("tools") or []})
    history, results, turns = [], [], 0
    for i in items:
        if i.get("type") == "function_call":
            history.append((i["name"], json.loads(i["arguments"])))
        elif i.get("type") == "function_call_output":
            results.append(str(i.get("output", "")))
        if i.get("type") == "function_call" or (
            i.get("type") == "message" and i.get("role") == "assistant"
        ):
            turns += 1
    return Seen(prompt, offered, tuple(history), tuple(results), turns)


def read_messages(body: Mapping[str, Any]) -> Seen:
    messages = list(body.get("messages") or [])
    prompt = _text(messages[0].get("content"))
    # a tool with defer_loading is offered too: the provider's tool search loads it
    offered = {t["name"]: None for t in body.get("tools") or [] if "input_schema" in t}
    history, results, turns = [], [], 0
    for m in messages[1:]:
        blocks = m.get("content") if isinstance(m.get("content"), list) else []
        if m.get("role") == "assistant":
            turns += 1
            history += [
                (b["name"], b.get("input") or {}) for b in blocks if b.get("type") == "tool_use"
            ]
        else:
            results += [_text(b.get("content")) for b in blocks if b.get("type") == "tool_result"]
    return Seen(prompt, offered, tuple(history), tuple(results), turns)


def usage_of(body: Mapping[str, Any], output: Any) -> tuple[int, int]:
    """What this double reports as usage: a quarter of the request's and the answer's
    JSON characters (deterministic, so a test can check what the report summed)."""
    prompt = math.ceil(len(json.dumps(body, sort_keys=True)) / 4)
    completion = math.ceil(len(json.dumps(output, sort_keys=True)) / 4)
    return prompt, completion


class ReplayProvider:
    """The test double, served by uvicorn on a thread: ``with ReplayProvider(scripts) as p``,
    then ``p.openai_base_url`` / ``p.anthropic_base_url``; ``p.log`` holds every request."""

    def __init__(self, scripts: Sequence[Mapping[str, Any]]) -> None:
        self.scripts = [Script.of(s) for s in scripts]
        self.log: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._started: dict[str, int] = {}
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def openai_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _script(self, prompt: str) -> Script:
        for s in self.scripts:
            if s.match in prompt:
                return s
        raise LookupError(f"no script matches the prompt {prompt!r}")

    @staticmethod
    def refused(request: Request) -> JSONResponse | None:
        """A key starting with ``reject`` gets the 401 a provider gives a bad key."""
        key = request.headers.get("x-api-key") or request.headers.get("authorization", "")
        if key.removeprefix("Bearer ").startswith("reject"):
            error = {"type": "authentication_error", "message": "invalid x-api-key"}
            return JSONResponse({"type": "error", "error": error}, status_code=401)
        return None

    def _act(self, api: str, body: Mapping[str, Any], seen: Seen, request: Request) -> Action:
        script = self._script(seen.prompt)
        with self._lock:
            if seen.turns == 0:  # a new conversation
                self._started[script.match] = self._started.get(script.match, 0) + 1
            n = self._started.get(script.match, 1)
        wrong = script.wrong_every > 0 and n % script.wrong_every == 0
        return decide(script, seen, wrong)

    def _record(
        self, api: str, body: Any, headers: Mapping[str, str], output: Any
    ) -> dict[str, int]:
        prompt, completion = usage_of(body, output)
        with self._lock:
            self.log.append(
                {
                    "api": api,
                    "body": body,
                    "headers": dict(headers),
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                }
            )
        return {"prompt": prompt, "completion": completion}

    def _id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids)}"

    async def chat(self, request: Request) -> JSONResponse:
        body = await request.json()
        if (refusal := self.refused(request)) is not None:
            return refusal
        action = self._act("chat", body, read_chat(body), request)
        if isinstance(action, str):
            message: dict[str, Any] = {"role": "assistant", "content": action}
            finish = "stop"
        else:
            call = {
                "id": self._id("call"),
                "type": "function",
                "function": {"name": action[0], "arguments": json.dumps(action[1])},
            }
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        used = self._record("chat", body, request.headers, message)
        return JSONResponse(
            {
                "id": self._id("chatcmpl"),
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {
                    "prompt_tokens": used["prompt"],
                    "completion_tokens": used["completion"],
                    "total_tokens": used["prompt"] + used["completion"],
                },
            }
        )

    async def responses(self, request: Request) -> JSONResponse:
        body = await request.json()
        if (refusal := self.refused(request)) is not None:
            return refusal
        seen = read_responses(body)
        action = self._act("responses", body, seen, request)
        if isinstance(action, str):
            item: dict[str, Any] = {
                "type": "message",
                "id": self._id("msg"),
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": action, "annotations": []}],
            }
        else:
            item = {
                "type": "function_call",
                "id": self._id("fc"),
                "call_id": self._id("call"),
                "name": action[0],
                "arguments": json.dumps(action[1]),
                "status": "completed",
            }
            if seen.offered.get(action[0]) is not None:
                item["namespace"] = seen.offered[action[0]]
        used = self._record("responses", body, request.headers, item)
        return JSONResponse(
            {
                "id": self._id("resp"),
                "object": "response",
                "created_at": 0,
                "model": body["model"],
                "status": "completed",
                "output": [item],
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": [],
                "usage": {
                    "input_tokens": used["prompt"],
                    "output_tokens": used["completion"],
                    "total_tokens": used["prompt"] + used["completion"],
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens_details": {"reasoning_tokens": 0},
                },
            }
        )

    async def messages(self, request: Request) -> JSONResponse:
        body = await request.json()
        if (refusal := self.refused(request)) is not None:
            return refusal
        action = self._act("messages", body, read_messages(body), request)
        if isinstance(action, str):
            content: list[dict[str, Any]] = [{"type": "text", "text": action}]
            stop = "end_turn"
        else:
            content = [
                {"type": "tool_use", "id": self._id("toolu"), "name": action[0], "input": action[1]}
            ]
            stop = "tool_use"
        used = self._record("messages", body, request.headers, content)
        return JSONResponse(
            {
                "id": self._id("msg"),
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": content,
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": {"input_tokens": used["prompt"], "output_tokens": used["completion"]},
            }
        )

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/v1/responses", self.responses, methods=["POST"]),
                Route("/v1/messages", self.messages, methods=["POST"]),
            ]
        )

    def clear(self) -> None:
        with self._lock:
            self.log.clear()
            self._started.clear()

    def __enter__(self) -> ReplayProvider:
        config = uvicorn.Config(self.app(), host="127.0.0.1", port=0, log_level="warning")
        self._server = server = uvicorn.Server(config)
        self._thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
        self._thread.start()
        while not server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the replay provider stopped before it started")
            threading.Event().wait(0.01)
        self.port = server.servers[0].sockets[0].getsockname()[1]
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(10)


@contextmanager
def replaying(scripts: Sequence[Mapping[str, Any]]) -> Iterator[ReplayProvider]:
    with ReplayProvider(scripts) as provider:
        yield provider
