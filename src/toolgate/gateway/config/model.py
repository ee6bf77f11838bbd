"""The gateway's configuration file, ``mcpServers`` plus a ``toolgate`` block: its pydantic
models, validating what ``files`` read from JSON or TOML (``${VAR}`` expanded by ``env``
first; every problem reported at once in one ``ConfigError`` by ``problems``) and its JSON
Schema (``toolgate schema``). Imports the core for its value types, ``files``, ``env`` and
``problems``; never starts anything.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from toolgate.catalog.tool import check_tool_name
from toolgate.errors import ConfigError, RegistrationError
from toolgate.gateway.config.env import expand_env
from toolgate.gateway.config.files import read_config_data
from toolgate.gateway.config.problems import config_error, problem_of
from toolgate.gateway.config.search import SearchConfig
from toolgate.gateway.config.servers import (
    STRICT,
    ServerConfig,
    server_kind_problem,
    server_name_problem,
)
from toolgate.identity import is_token_digest
from toolgate.policy import DEFAULT_TRUST_LEVELS, TrustLadder
from toolgate.state.open import check_store_url, is_store_path
from toolgate.strategies.registry import default_registry


class _Model(BaseModel):
    model_config = STRICT


def _primitive_pattern(pattern: str) -> str:
    if not pattern.strip():
        raise ValueError(
            "the pattern is empty; write a glob such as 'review_*' or 'file:///docs/*'"
        )
    if pattern != pattern.strip():
        raise ValueError(f"{pattern!r} has spaces around it; prompt names and URIs have none")
    return pattern


PrimitivePattern = Annotated[
    str,
    AfterValidator(_primitive_pattern),
    # the schema says what the validator says: not empty, no spaces around
    Field(json_schema_extra={"minLength": 1, "pattern": r"^\S(?:[\s\S]*\S)?$"}),
]


def _proxy_network(entry: str) -> str:
    """An address or network (``10.0.0.0/8``, ``::1``) of ``http.trusted_proxies``."""
    try:
        ipaddress.ip_network(entry.strip(), strict=True)
    except ValueError as exc:
        raise ValueError(f"{entry!r} is not an IP address or network: {exc}") from None
    return entry


ProxyNetwork = Annotated[str, AfterValidator(_proxy_network)]


def _store_url(url: str) -> str:
    """``toolgate.store`` in the form a store opens (``check_store_url``), so ``check``,
    ``serve`` and a reload refuse a typo before anything connects."""
    try:
        check_store_url(url)
    except ConfigError as exc:
        raise ValueError(exc.message) from None
    return url


StoreUrl = Annotated[str, AfterValidator(_store_url)]


class GroupConfig(_Model):
    description: str = ""
    title: str | None = None
    parent: str | None = None
    instructions: str | None = None
    show_deactivator: bool = True
    tools: list[str] = Field(default_factory=list)
    #: globs on prompt names, optionally ``server:glob`` (see ``toolgate.gateway.relay.exposure``)
    prompts: list[PrimitivePattern] = Field(default_factory=list)
    #: globs on resource URIs and URI templates, optionally ``server:glob``
    resources: list[PrimitivePattern] = Field(default_factory=list)


class RateLimitConfig(_Model):
    max: int = Field(ge=1)
    window_s: float = Field(gt=0)


class PolicyConfig(_Model):
    tools: list[str] = Field(min_length=1)
    min_trust: str | None = None
    allowed_classes: list[str] = Field(default_factory=list)
    decision: Literal["allow", "deny", "confirm"] = "allow"
    rate_limit: RateLimitConfig | None = None


class TransitionConfig(_Model):
    on: str
    to: str


class StageConfig(_Model):
    name: str
    enables: list[str] = Field(default_factory=list)
    transitions: list[TransitionConfig] = Field(default_factory=list)


class StagesConfig(_Model):
    initial: str = "undefined"
    stages: list[StageConfig] = Field(default_factory=list)
    tool_stages: dict[str, list[str]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _initial_is_declared(self) -> StagesConfig:
        # a typo in ``initial`` would otherwise become a new, empty stage
        names = [s.name for s in self.stages]
        if names and self.initial not in names:
            raise ValueError(
                f"initial stage {self.initial!r} is not a declared stage; declared: "
                + ", ".join(names)
            )
        return self


class DescriptionsConfig(_Model):
    mode: Literal["full", "lazy"] = "full"
    dir: str | None = None
    schema_mode: Literal["full", "minimal"] = Field("full", alias="schema")


class PrincipalConfig(_Model):
    id: str = Field(min_length=1)  # keys the principal's state and rate limits
    trust: str = "declared"
    scope: list[str] = Field(default_factory=lambda: ["*"])
    agent_class: str | None = None
    attributes: dict[str, Any] = Field(default_factory=dict)


class ClaimsConfig(_Model):
    """Which JWT claims make the principal (``identity.oauth.claims``)."""

    id: list[str] = Field(default_factory=lambda: ["sub", "client_id"], min_length=1)
    trust: str | None = None
    agent_class: str | None = Field(None, alias="class")
    scope: str | None = "scope"
    attributes: list[str] = Field(default_factory=list)


class OAuthConfig(_Model):
    """An OAuth 2.1 resource server (``identity.oauth``): JWT access tokens from
    ``issuer`` for ``audience``, keys from ``jwks_url`` or a local JWKS file ``keys``."""

    issuer: str
    audience: list[str] = Field(min_length=1)
    jwks_url: str | None = None
    keys: str | None = None
    resource: str | None = None
    algorithms: list[str] = Field(
        default_factory=lambda: ["RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA"],
        min_length=1,
    )
    leeway_s: float = Field(30.0, ge=0)
    claims: ClaimsConfig = Field(default_factory=ClaimsConfig)
    trust: str = "verified"
    scope_map: dict[str, list[str]] = Field(default_factory=dict)
    scope_prefix: str = ""
    default_scope: list[str] = Field(default_factory=lambda: ["*"])
    required_scopes: list[str] = Field(default_factory=list)
    jwks_max_age_s: float = Field(300.0, gt=0)
    jwks_min_interval_s: float = Field(10.0, ge=0)
    jwks_timeout_s: float = Field(5.0, gt=0)
    share_static_ids: bool = False

    @field_validator("issuer", "jwks_url", "resource")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return v

    @model_validator(mode="after")
    def _one_key_source(self) -> OAuthConfig:
        if (self.jwks_url is None) == (self.keys is None):
            raise ValueError("give exactly one key source: 'jwks_url' or 'keys' (a JWKS file)")
        return self


class IdentityConfig(_Model):
    default: PrincipalConfig = Field(
        default_factory=lambda: PrincipalConfig(id="local", trust="declared")
    )
    tokens: dict[str, PrincipalConfig] = Field(default_factory=dict)
    trust_levels: list[str] = Field(default_factory=lambda: list(DEFAULT_TRUST_LEVELS))
    oauth: OAuthConfig | None = None

    @field_validator("tokens")
    @classmethod
    def _hashes(cls, v: dict[str, PrincipalConfig]) -> dict[str, PrincipalConfig]:
        for digest in v:
            if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest.lower()):
                raise ValueError(
                    f"token key {digest[:12]!r}... is not a SHA-256 hex digest: config holds "
                    "hashes of bearer tokens, never the tokens themselves"
                )
        return {k.lower(): p for k, p in v.items()}

    @field_validator("trust_levels")
    @classmethod
    def _ladder(cls, v: list[str]) -> list[str]:
        try:  # the ladder's own rules: one level at least, none twice
            TrustLadder(tuple(v))
        except ConfigError as exc:
            raise ValueError(exc.message) from None
        return v


class EventsConfig(_Model):
    jsonl: str | None = None
    logging: bool = True
    otel: bool = False


class MetricsConfig(_Model):
    """``/metrics`` (Prometheus text format) on the HTTP transport."""

    enabled: bool = True


class DashboardConfig(_Model):
    """The dashboard and the operator's endpoints (``/admin/reload``): operator tokens by
    their SHA-256, as ``toolgate check`` and the start both require."""

    enabled: bool = False
    tokens: list[str] = Field(default_factory=list)

    @field_validator("tokens")
    @classmethod
    def _digests(cls, v: list[str]) -> list[str]:
        for i, entry in enumerate(v):
            if not is_token_digest(entry.lower()):  # the length only: it may be a secret
                raise ValueError(
                    f"entry {i} is not a SHA-256 hex digest (64 hex characters; it has "
                    f"{len(entry)}): the config holds digests of operator tokens, never "
                    "the tokens themselves"
                )
        return [entry.lower() for entry in v]

    @model_validator(mode="after")
    def _a_token_when_enabled(self) -> DashboardConfig:
        if self.enabled and not self.tokens:
            raise ValueError(
                "the dashboard is enabled but no operator token is configured: add the "
                "SHA-256 hex digest of one to tokens"
            )
        return self


class HttpConfig(_Model):
    """Limits of the HTTP transport (``toolgate serve --transport http``); every request
    and connection is held to them (docs/guides/operators.md)."""

    max_body_bytes: int = Field(1_048_576, ge=1024)
    max_json_depth: int = Field(64, ge=2, le=128)
    body_timeout: float = Field(30.0, gt=0)
    header_timeout: float = Field(10.0, gt=0)
    keep_alive_timeout: float = Field(5.0, gt=0)
    max_connections: int = Field(1000, ge=1)
    max_header_bytes: int = Field(16_384, ge=1024)
    allowed_origins: list[str] = Field(default_factory=list)
    #: open MCP sessions (legacy protocol) in all, and per client: one principal (a
    #: credential the gateway accepts) or, without one, one address
    max_sessions: int = Field(10_000, ge=1)
    max_sessions_per_client: int = Field(32, ge=1)
    #: ``tools/call`` served on the SDK's kernel without its session transport (the
    #: ingress's fast path); off, every request takes the SDK's transport
    fast_path: bool = True
    #: seconds a stopping gateway (SIGTERM, SIGINT) lets calls in flight finish before
    #: it answers them with a retryable error; fits Kubernetes' 30 s grace with room
    #: for a preStop pause and the backends' stop
    drain_timeout: float = Field(20.0, ge=0, le=3600)
    #: proxies (addresses or networks) whose ``Forwarded`` / ``X-Forwarded-For`` give
    #: the client's address; from any other peer those headers are ignored
    trusted_proxies: list[ProxyNetwork] = Field(default_factory=list)


def _known_strategy(name: str) -> str:
    """``auto`` or a strategy ``default_registry`` holds when the config is read."""
    problem = default_registry.problem(name)
    if problem is not None:
        raise ValueError(problem)
    return name


def _strategy_choices(schema: dict[str, Any]) -> None:
    # when the schema is generated, not when this module is imported: strategies
    # registered since then are in it
    schema["enum"] = list(default_registry.choices)


class ToolgateConfig(_Model):
    """The ``toolgate`` block (DESIGN §6). Every key has a default."""

    strategy: Annotated[str, AfterValidator(_known_strategy)] = Field(
        "auto", json_schema_extra=_strategy_choices
    )
    meta_tools: Literal["menu", "activators"] = "menu"
    separator: Literal[".", "_", "-"] = "."
    initial_groups: list[str] = Field(default_factory=list)
    max_tools: int | None = Field(None, ge=1, strict=True)
    max_tokens: int | None = Field(None, ge=1, strict=True)
    hidden_tool_errors: Literal["hint", "opaque"] = "hint"
    # strict: ``true`` or ``"10"`` is a mistake, not a count
    page_size: int = Field(100, ge=1, le=10_000, strict=True)
    groups_fallback: Literal["flatten", "catalog"] = "flatten"
    grouped_list: Literal["summary", "full"] = "summary"
    activators: Literal["always", "reachable"] = "always"
    always: list[str] = Field(default_factory=list)
    groups: dict[str, GroupConfig] = Field(default_factory=dict)
    exclusive: list[list[str]] = Field(default_factory=list)
    policies: list[PolicyConfig] = Field(default_factory=list)
    stages: StagesConfig | None = None
    descriptions: DescriptionsConfig = Field(default_factory=DescriptionsConfig)
    identity: IdentityConfig = Field(default_factory=IdentityConfig)
    store: StoreUrl = "memory://"
    idle_ttl: float = Field(3600.0, gt=0)
    events: EventsConfig = Field(default_factory=EventsConfig)
    dashboard: DashboardConfig = Field(default_factory=DashboardConfig)
    http: HttpConfig = Field(default_factory=HttpConfig)
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
    search: SearchConfig = Field(default_factory=lambda: SearchConfig(enabled=False))
    meta_tool_names: dict[str, str] = Field(default_factory=dict)

    @field_validator("search", mode="before")
    @classmethod
    def _search(cls, v: Any) -> Any:
        """``true``/``false`` are lexical search, on or off; a block turns it on."""
        if isinstance(v, bool):
            return {"enabled": v}
        if not isinstance(v, dict | SearchConfig):
            raise ValueError(
                f'search is true, false or an object such as {{"mode": "hybrid"}}, '
                f"not {type(v).__name__} {v!r:.40}"
            )
        return v

    @field_validator("meta_tool_names")
    @classmethod
    def _meta_names(cls, v: dict[str, str]) -> dict[str, str]:
        from dataclasses import fields

        from toolgate.strategies.base import MetaNames

        known = [f.name for f in fields(MetaNames)]
        for key, name in v.items():
            if key not in known:
                raise ValueError(f"unknown meta-tool {key!r}; known: {', '.join(known)}")
            try:
                check_tool_name(name)
            except RegistrationError as exc:
                raise ValueError(f"{key}: {exc.message}") from None
        if len(set(v.values())) != len(v):
            raise ValueError("two meta-tools cannot share one name")
        return v


class GatewayConfig(_Model):
    mcp_servers: dict[str, ServerConfig] = Field(alias="mcpServers")
    toolgate: ToolgateConfig = Field(default_factory=lambda: ToolgateConfig())
    schema_url: str | None = Field(
        None,
        alias="$schema",
        exclude=True,
        description="The JSON Schema editors validate this file against (ignored by toolgate).",
    )
    source: SkipJsonSchema[Path | None] = Field(None, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _server_kinds(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        servers = data.get("mcpServers")
        if isinstance(servers, Mapping):
            for name, spec in servers.items():
                problem = server_kind_problem(spec)
                if problem is not None:
                    raise ValueError(f"server {name!r} {problem}")
                problem = server_name_problem(str(name))
                if problem is not None:
                    raise ValueError(f"server {name!r}: {problem}")
        return data

    @property
    def base_dir(self) -> Path:
        return self.source.parent if self.source is not None else Path.cwd()

    def resolve(self, path: str) -> Path:
        """A path from the config, relative to the config file."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else self.base_dir / p

    @property
    def store_url(self) -> str:
        """``toolgate.store`` as a store opens it: a bare path is a SQLite file, relative
        to the config file like every path."""
        store = self.toolgate.store
        return str(self.resolve(store)) if is_store_path(store) else store

    def exposed_name(self, server: str, name: str) -> str:
        """The name clients see for a backend's tool or prompt called ``name``:
        ``{prefix}{separator}{name}`` when the backend has a ``prefix``, else ``name``."""
        spec = self.mcp_servers.get(server)
        prefix = spec.prefix if spec is not None else None
        return f"{prefix}{self.toolgate.separator}{name}" if prefix else name


def parse_config(
    data: Mapping[str, Any],
    *,
    source: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> GatewayConfig:
    """Validate a config mapping, ``${VAR}`` read from ``environ`` (default ``os.environ``).

    Raises one ConfigError naming every problem's key path."""
    label = str(source) if source is not None else "config"
    if not isinstance(data, Mapping):
        raise ConfigError(f"{label}: the config must be an object", key="(top level)")
    data, problems = expand_env(data, os.environ if environ is None else environ)
    servers = data.get("mcpServers")
    if isinstance(servers, Mapping):
        # checked here so the error names the server's key, and the other servers are
        # still validated: a server of neither kind is left out of pydantic's pass
        kept = {}
        for name, spec in servers.items():
            problem = server_name_problem(str(name)) or server_kind_problem(spec)
            if problem is None:
                kept[name] = spec
            else:
                problems.append((f"mcpServers.{name}", problem))
        data = {**data, "mcpServers": kept}
    try:
        cfg = GatewayConfig.model_validate(dict(data))
    except ValidationError as exc:
        problems += [problem_of(e, GatewayConfig) for e in exc.errors(include_url=False)]
    if problems:
        raise config_error(problems, label)
    cfg.source = source
    return cfg


# -- the JSON Schema ------------------------------------------------------------------------


def json_schema() -> dict[str, Any]:
    """The config file's JSON Schema (draft 2020-12), generated from the models."""
    schema = GatewayConfig.model_json_schema(by_alias=True, mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **schema,
        "title": "toolgate gateway config",
        "description": "mcpServers (the hosts' block, ${VAR} expanded from the environment) "
        "plus the toolgate block. Generated by `toolgate schema`.",
    }


def load_config(path: str | Path) -> GatewayConfig:
    """Read ``toolgate.json`` or a ``.toml`` file."""
    return parse_config(read_config_data(path), source=Path(path).resolve())
