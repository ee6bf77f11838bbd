"""The model side of the agent loop, through the providers' official SDKs.

``ModelSpec`` reads ``PROVIDER:MODEL``: ``openai`` and ``openai-compatible`` (chat
completions; the latter with ``--base-url`` for vLLM, Ollama, LM Studio...),
``openai-responses`` (the Responses API) and ``anthropic`` (the Messages API). A
``Conversation`` sends one turn with what the host offers and takes the tool results
back. The API key is read from the environment and never logged or reported; a
provider's error text is scrubbed of it. Edge (``toolgate.eval``): the ``eval`` extra.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from toolgate.client.export import ANTHROPIC_TOOL_SEARCH_BETA
from toolgate.errors import ConfigError
from toolgate.eval.host import NativeApi, Offered

Api = Literal["openai", "openai-compatible", "openai-responses", "anthropic"]
APIS: Mapping[str, str] = {
    "openai": "OPENAI_API_KEY",
    "openai-compatible": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
}
MAX_OUTPUT_TOKENS = 4096
TIMEOUT_S = 120.0


class ProviderError(ConfigError):
    """The provider refused every request (a key, a model, an address): the evaluation
    stops rather than count it as failed tasks."""

    code = "provider_error"


@dataclass(frozen=True)
class ModelSpec:
    """Which API and model, where, and the name of the variable holding the key."""

    api: Api
    model: str
    base_url: str | None = None
    key_env: str = ""

    @property
    def label(self) -> str:
        return f"{self.api}:{self.model}"

    @property
    def native(self) -> NativeApi | None:
        """The provider's own tool search, when the API has one."""
        if self.api == "anthropic":
            return "anthropic"
        return "openai-responses" if self.api == "openai-responses" else None

    def key(self) -> str:
        """The API key from the environment; a local OpenAI-compatible server may need none."""
        value = os.environ.get(self.key_env, "")
        if value:
            return value
        if self.api == "openai-compatible":
            return "unused"
        raise ConfigError(
            f"no API key: set {self.key_env} (or name another variable with --api-key-env)",
            key="api_key",
        )


def parse_model(text: str, *, base_url: str | None = None, key_env: str | None = None) -> ModelSpec:
    """``anthropic:claude-sonnet-4-5`` as a ``ModelSpec``; ``ConfigError`` when malformed."""
    api, sep, model = text.partition(":")
    if not sep or not model.strip() or api not in APIS:
        raise ConfigError(
            f"--model {text!r}: write PROVIDER:MODEL with PROVIDER one of {', '.join(APIS)}",
            key="model",
        )
    if api == "openai-compatible" and not base_url:
        raise ConfigError(
            "--model openai-compatible:... needs --base-url (e.g. http://127.0.0.1:11434/v1)",
            key="base_url",
        )
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        # said now, not as "cannot reach" once every strategy's gateway has started
        raise ConfigError(
            f"--base-url {base_url!r}: must start with http:// or https://", key="base_url"
        )
    return ModelSpec(api, model, base_url, key_env or APIS[api])  # type: ignore[arg-type]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: Mapping[str, Any]
    namespace: str | None = None
    #: why the arguments could not be read (not JSON, not an object), or None
    bad_arguments: str | None = None


@dataclass(frozen=True)
class Reply:
    text: str
    calls: tuple[ToolCall, ...]
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class Result:
    """One tool result sent back to the model."""

    call: ToolCall
    text: str
    is_error: bool


def _arguments(raw: Any) -> tuple[Mapping[str, Any], str | None]:
    if isinstance(raw, Mapping):
        return raw, None
    try:
        value = json.loads(raw or "{}")
    except (TypeError, json.JSONDecodeError) as exc:
        return {}, f"the arguments are not JSON: {exc}"
    if not isinstance(value, dict):
        return {}, "the arguments are not a JSON object"
    return value, None


@dataclass
class Conversation:
    """One task's exchange with the model. Subclasses speak one API."""

    spec: ModelSpec
    client: Any
    prompt: str
    system: str | None = None
    seed: int | None = None
    messages: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.start()

    def start(self) -> None:
        """Open the conversation with the prompt."""
        self.messages.append({"role": "user", "content": self.prompt})

    async def ask(self, offered: Offered) -> Reply:
        raise NotImplementedError

    def answer(self, results: Sequence[Result]) -> None:
        raise NotImplementedError


class ChatConversation(Conversation):
    """OpenAI-compatible chat completions (``/chat/completions``)."""

    def start(self) -> None:
        if self.system:
            self.messages.append({"role": "system", "content": self.system})
        super().start()

    async def ask(self, offered: Offered) -> Reply:
        params: dict[str, Any] = {"model": self.spec.model, "messages": self.messages}
        tools = [
            {
                "type": "function",
                "function": {
                    "name": d.name,
                    "description": d.description,
                    "parameters": dict(d.input_schema),
                },
            }
            for d in offered.definitions
        ]
        if tools:
            params["tools"] = tools
        if self.seed is not None:
            params["seed"] = self.seed
        response = await self.client.chat.completions.create(**params)
        message = response.choices[0].message
        calls = []
        for c in message.tool_calls or []:
            args, bad = _arguments(c.function.arguments)
            calls.append(ToolCall(c.id, c.function.name, args, bad_arguments=bad))
        turn: dict[str, Any] = {"role": "assistant", "content": message.content or ""}
        if message.tool_calls:
            turn["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function.name, "arguments": c.function.arguments},
                }
                for c in message.tool_calls
            ]
        self.messages.append(turn)
        usage = response.usage
        return Reply(
            message.content or "",
            tuple(calls),
            usage.prompt_tokens if usage else 0,
            usage.completion_tokens if usage else 0,
        )

    def answer(self, results: Sequence[Result]) -> None:
        for r in results:
            self.messages.append({"role": "tool", "tool_call_id": r.call.id, "content": r.text})


class ResponsesConversation(Conversation):
    """The OpenAI Responses API (``/responses``), its output items sent back as input."""

    async def ask(self, offered: Offered) -> Reply:
        params: dict[str, Any] = {"model": self.spec.model, "input": self.messages}
        if self.system:
            params["instructions"] = self.system
        if offered.native_tools is not None:
            params["tools"] = [dict(t) for t in offered.native_tools]
        elif offered.definitions:
            params["tools"] = [
                {
                    "type": "function",
                    "name": d.name,
                    "description": d.description,
                    "parameters": dict(d.input_schema),
                    "strict": False,  # MCP schemas are not written for strict mode
                }
                for d in offered.definitions
            ]
        response = await self.client.responses.create(**params)
        calls = []
        for item in response.output:
            self.messages.append(item.model_dump(exclude_none=True, by_alias=True, mode="json"))
            if item.type == "function_call":
                args, bad = _arguments(item.arguments)
                namespace = getattr(item, "namespace", None)
                calls.append(ToolCall(item.call_id, item.name, args, namespace, bad))
        usage = response.usage
        return Reply(
            response.output_text or "",
            tuple(calls),
            usage.input_tokens if usage else 0,
            usage.output_tokens if usage else 0,
        )

    def answer(self, results: Sequence[Result]) -> None:
        for r in results:
            self.messages.append(
                {"type": "function_call_output", "call_id": r.call.id, "output": r.text}
            )


class MessagesConversation(Conversation):
    """The Anthropic Messages API (``/v1/messages``)."""

    async def ask(self, offered: Offered) -> Reply:
        params: dict[str, Any] = {
            "model": self.spec.model,
            "max_tokens": MAX_OUTPUT_TOKENS,
            "messages": self.messages,
        }
        if self.system:
            params["system"] = self.system
        if offered.native_tools is not None:
            params["tools"] = [dict(t) for t in offered.native_tools]
            params["extra_headers"] = {"anthropic-beta": ANTHROPIC_TOOL_SEARCH_BETA}
        elif offered.definitions:
            params["tools"] = [
                {"name": d.name, "description": d.description, "input_schema": d.input_schema}
                for d in offered.definitions
            ]
        response = await self.client.messages.create(**params)
        texts, calls = [], []
        for block in response.content:
            if block.type == "text":
                texts.append(block.text)
            elif block.type == "tool_use":
                args, bad = _arguments(block.input)
                calls.append(ToolCall(block.id, block.name, args, bad_arguments=bad))
        self.messages.append(
            {
                "role": "assistant",
                "content": [
                    b.model_dump(exclude_none=True, by_alias=True, mode="json")
                    for b in response.content
                ],
            }
        )
        usage = response.usage
        return Reply("".join(texts), tuple(calls), usage.input_tokens, usage.output_tokens)

    def answer(self, results: Sequence[Result]) -> None:
        self.messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": r.call.id,
                        "content": r.text,
                        **({"is_error": True} if r.is_error else {}),
                    }
                    for r in results
                ],
            }
        )


def sdk_client(spec: ModelSpec) -> Any:
    """The provider's official async client (the ``eval`` extra)."""
    try:
        if spec.api == "anthropic":
            import anthropic

            return anthropic.AsyncAnthropic(
                api_key=spec.key(), base_url=spec.base_url, timeout=TIMEOUT_S, max_retries=2
            )
        import openai

        return openai.AsyncOpenAI(
            api_key=spec.key(), base_url=spec.base_url, timeout=TIMEOUT_S, max_retries=2
        )
    except ImportError as exc:
        raise ConfigError(
            f"toolgate eval needs the provider SDKs: pip install 'toolgate[eval]' ({exc.name})",
            key="model",
        ) from None


def conversation(
    spec: ModelSpec,
    client: Any,
    prompt: str,
    *,
    system: str | None = None,
    seed: int | None = None,
) -> Conversation:
    kind: type[Conversation]
    if spec.api == "anthropic":
        kind = MessagesConversation
    elif spec.api == "openai-responses":
        kind = ResponsesConversation
    else:
        kind = ChatConversation
    return kind(spec, client, prompt, system=system, seed=seed)


def provider_failure(exc: BaseException, spec: ModelSpec) -> str | None:
    """What went wrong if ``exc`` is the provider's error (key scrubbed), else None.
    Raises ``ProviderError`` when no request can succeed: a refused key, an unknown
    model, an address nothing answers on."""
    module = type(exc).__module__.split(".")[0]
    if module not in ("openai", "anthropic"):
        return None
    status = getattr(exc, "status_code", None)
    where = spec.base_url or "the provider"
    if status in (401, 403):
        raise ProviderError(
            f"{where} refused the API key from {spec.key_env} (HTTP {status})", key="api_key"
        )
    if status == 404:
        raise ProviderError(
            f"{where} answered 404 for model {spec.model!r}: no such model or endpoint",
            key="model",
        )
    if status is None and "Connection" in type(exc).__name__:
        raise ProviderError(f"cannot reach {where}: {type(exc).__name__}", key="base_url")
    return scrub(f"{type(exc).__name__}: {exc}", spec)


def scrub(text: str, spec: ModelSpec) -> str:
    """``text`` without the API key in it."""
    key = os.environ.get(spec.key_env, "")
    return text.replace(key, "***") if len(key) >= 4 else text
