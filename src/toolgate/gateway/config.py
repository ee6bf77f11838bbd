"""The gateway's configuration file: ``mcpServers`` plus a ``toolgate`` block.

Parses JSON or TOML into validated pydantic models; every error is a ``ConfigError``
whose ``key`` is the dotted path of the offending value. Edge layer: reads files,
imports the core for its value types, never starts anything.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from toolgate.errors import ConfigError
from toolgate.policy import DEFAULT_TRUST_LEVELS


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class StdioServer(_Model):
    """A backend started as a subprocess speaking MCP over stdio."""

    command: str
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    prefix: str | None = None
    title: str | None = None  # indexed for search with the server's key
    type: Literal["stdio"] | None = None


class HttpServer(_Model):
    """A backend reached over streamable HTTP."""

    url: str
    headers: dict[str, str] = Field(default_factory=dict)
    prefix: str | None = None
    title: str | None = None  # indexed for search with the server's key
    type: Literal["http", "streamable-http", "streamableHttp"] | None = None

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return v


def _server_kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "http" if "url" in value else "stdio"
    return "http" if isinstance(value, HttpServer) else "stdio"


ServerConfig = Annotated[
    Annotated[StdioServer, Tag("stdio")] | Annotated[HttpServer, Tag("http")],
    Discriminator(_server_kind),
]


class GroupConfig(_Model):
    description: str = ""
    title: str | None = None
    parent: str | None = None
    instructions: str | None = None
    show_deactivator: bool = True
    tools: list[str] = Field(default_factory=list)


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


class DescriptionsConfig(_Model):
    mode: Literal["full", "lazy"] = "full"
    dir: str | None = None
    schema_mode: Literal["full", "minimal"] = Field("full", alias="schema")


class PrincipalConfig(_Model):
    id: str
    trust: str = "declared"
    scope: list[str] = Field(default_factory=lambda: ["*"])
    agent_class: str | None = None
    attributes: dict[str, Any] = Field(default_factory=dict)


class IdentityConfig(_Model):
    default: PrincipalConfig = Field(
        default_factory=lambda: PrincipalConfig(id="local", trust="declared")
    )
    tokens: dict[str, PrincipalConfig] = Field(default_factory=dict)
    trust_levels: list[str] = Field(default_factory=lambda: list(DEFAULT_TRUST_LEVELS))

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


class EventsConfig(_Model):
    jsonl: str | None = None
    logging: bool = True
    otel: bool = False


class SearchConfig(_Model):
    """The ``search`` key: ``search_tools`` for every strategy, and how it ranks.

    ``true`` is ``{mode: "lexical"}``. ``embedder`` names the hybrid mode's model
    (``wordllama``, ``wordllama:DIM[:FOLDER]`` or ``package.module:factory``);
    ``cache`` is a file for tool vectors, so a restart re-embeds nothing unchanged.
    """

    enabled: bool = True
    mode: Literal["lexical", "hybrid"] = "lexical"
    embedder: str | None = None
    cache: str | None = None
    weight: float | None = Field(None, ge=0.0, le=1.0)


class DashboardConfig(_Model):
    enabled: bool = False
    tokens: list[str] = Field(default_factory=list)


class ToolgateConfig(_Model):
    """The ``toolgate`` block (DESIGN §6). Every key has a default."""

    strategy: Literal["auto", "list_changed", "catalog", "groups", "search", "flat"] = "auto"
    meta_tools: Literal["menu", "activators"] = "menu"
    separator: Literal[".", "_", "-"] = "."
    initial_groups: list[str] = Field(default_factory=list)
    max_tools: int | None = Field(None, ge=1)
    max_tokens: int | None = Field(None, ge=1)
    hidden_tool_errors: Literal["hint", "opaque"] = "hint"
    page_size: int = Field(100, ge=1, le=10_000)
    groups_fallback: Literal["flatten", "catalog"] = "flatten"
    always: list[str] = Field(default_factory=list)
    groups: dict[str, GroupConfig] = Field(default_factory=dict)
    exclusive: list[list[str]] = Field(default_factory=list)
    policies: list[PolicyConfig] = Field(default_factory=list)
    stages: StagesConfig | None = None
    descriptions: DescriptionsConfig = Field(default_factory=DescriptionsConfig)
    identity: IdentityConfig = Field(default_factory=IdentityConfig)
    store: str = "memory://"
    idle_ttl: float = Field(3600.0, gt=0)
    events: EventsConfig = Field(default_factory=EventsConfig)
    dashboard: DashboardConfig = Field(default_factory=DashboardConfig)
    search: SearchConfig = Field(default_factory=lambda: SearchConfig(enabled=False))
    meta_tool_names: dict[str, str] = Field(default_factory=dict)

    @field_validator("search", mode="before")
    @classmethod
    def _search(cls, v: Any) -> Any:
        """``true``/``false`` are lexical search, on or off; a block turns it on."""
        return {"enabled": v} if isinstance(v, bool) else v

    @field_validator("meta_tool_names")
    @classmethod
    def _meta_names(cls, v: dict[str, str]) -> dict[str, str]:
        from dataclasses import fields

        from toolgate.strategies.base import MetaNames

        known = [f.name for f in fields(MetaNames)]
        for key in v:
            if key not in known:
                raise ValueError(f"unknown meta-tool {key!r}; known: {', '.join(known)}")
        if len(set(v.values())) != len(v):
            raise ValueError("two meta-tools cannot share one name")
        return v


class GatewayConfig(_Model):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    mcp_servers: dict[str, ServerConfig] = Field(alias="mcpServers")
    toolgate: ToolgateConfig = Field(default_factory=lambda: ToolgateConfig())
    source: Path | None = Field(None, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _server_kinds(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        servers = data.get("mcpServers")
        if isinstance(servers, Mapping):
            for name, spec in servers.items():
                if isinstance(spec, Mapping) and "command" in spec and "url" in spec:
                    raise ValueError(f"server {name!r} has both 'command' and 'url'; pick one")
                if isinstance(spec, Mapping) and "command" not in spec and "url" not in spec:
                    raise ValueError(f"server {name!r} needs a 'command' (stdio) or a 'url' (HTTP)")
        return data

    @property
    def base_dir(self) -> Path:
        return self.source.parent if self.source is not None else Path.cwd()

    def resolve(self, path: str) -> Path:
        """A path from the config, relative to the config file."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else self.base_dir / p


def _key_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + ("mcpServers" if part == "mcp_servers" else str(part))
    return out


def _from_validation(exc: ValidationError, source: str) -> ConfigError:
    first = exc.errors(include_url=False)[0]
    loc = tuple(p for p in first["loc"] if p not in ("stdio", "http"))
    loc = tuple(p for p in loc if not (isinstance(p, str) and p.startswith("function-")))
    key = _key_path(loc) or "(top level)"
    msg = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        msg = "unknown key"
    elif first["type"] == "missing":
        msg = "required key is missing"
    count = len(exc.errors())
    more = f" (and {count - 1} more problem{'s' if count > 2 else ''})" if count > 1 else ""
    return ConfigError(f"{source}: {key}: {msg}{more}", key=key)


def parse_config(data: Mapping[str, Any], *, source: Path | None = None) -> GatewayConfig:
    """Validate a config mapping; raises ConfigError naming the key path."""
    label = str(source) if source is not None else "config"
    if not isinstance(data, Mapping):
        raise ConfigError(f"{label}: the config must be an object", key="(top level)")
    servers = data.get("mcpServers")
    if isinstance(servers, Mapping):
        # checked here too so the error names the server's key, not "(top level)"
        for name, spec in servers.items():
            key = f"mcpServers.{name}"
            if isinstance(spec, Mapping) and "command" in spec and "url" in spec:
                raise ConfigError(
                    f"{label}: {key}: has both 'command' and 'url'; pick one", key=key
                )
            if isinstance(spec, Mapping) and "command" not in spec and "url" not in spec:
                raise ConfigError(
                    f"{label}: {key}: needs a 'command' (stdio) or a 'url' (HTTP)", key=key
                )
    try:
        cfg = GatewayConfig.model_validate(dict(data))
    except ValidationError as exc:
        raise _from_validation(exc, label) from None
    cfg.source = source
    return cfg


def load_config(path: str | Path) -> GatewayConfig:
    """Read ``toolgate.json`` or a ``.toml`` file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"{p}: cannot read the config file: {exc.strerror}", key="(file)"
        ) from None
    try:
        data = tomllib.loads(text) if p.suffix == ".toml" else json.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(
            f"{p}: not valid {'TOML' if p.suffix == '.toml' else 'JSON'}: {exc}", key="(file)"
        ) from None
    return parse_config(data, source=p.resolve())
