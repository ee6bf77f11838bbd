"""The gateway's configuration file: ``mcpServers`` plus a ``toolgate`` block.

Parses JSON or TOML into validated pydantic models, after expanding ``${VAR}`` in the
``mcpServers`` block from the environment. Every problem is reported at once, in one
``ConfigError`` whose ``key`` is the dotted path of the first offending value and whose
``problems`` lists them all (unknown keys with a "did you mean"). The models also give
the config's JSON Schema (``toolgate schema``). Edge layer: reads files, imports the
core for its value types, never starts anything.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
import types
import typing
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

from toolgate.errors import ConfigError
from toolgate.gateway.config.servers import (
    EXPANDED_KEYS,
    SERVER_SPECS,
    STRICT,
    ServerConfig,
    server_kind_problem,
)
from toolgate.policy import DEFAULT_TRUST_LEVELS
from toolgate.strategies.search import DEFAULT_FULL_RESULTS


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
    id: str
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


class EventsConfig(_Model):
    jsonl: str | None = None
    logging: bool = True
    otel: bool = False


class MetricsConfig(_Model):
    """``/metrics`` (Prometheus text format) on the HTTP transport."""

    enabled: bool = True


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
    #: how many of the best matches ``search_tools`` gives in full (the rest in one line)
    full_results: int = Field(DEFAULT_FULL_RESULTS, ge=0, le=50)


class DashboardConfig(_Model):
    enabled: bool = False
    tokens: list[str] = Field(default_factory=list)


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
    grouped_list: Literal["summary", "full"] = "summary"
    activators: Literal["always", "reachable"] = "always"
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
    http: HttpConfig = Field(default_factory=HttpConfig)
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
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
        return data

    @property
    def base_dir(self) -> Path:
        return self.source.parent if self.source is not None else Path.cwd()

    def resolve(self, path: str) -> Path:
        """A path from the config, relative to the config file."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else self.base_dir / p

    def exposed_name(self, server: str, name: str) -> str:
        """The name clients see for a backend's tool or prompt called ``name``:
        ``{prefix}{separator}{name}`` when the backend has a ``prefix``, else ``name``."""
        spec = self.mcp_servers.get(server)
        prefix = spec.prefix if spec is not None else None
        return f"{prefix}{self.toolgate.separator}{name}" if prefix else name


def _key_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + ("mcpServers" if part == "mcp_servers" else str(part))
    return out


# -- every problem at once, with "did you mean" -------------------------------------------


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The models an annotation can hold directly (through Optional, unions, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _models_in(typing.get_args(annotation)[0])
    if origin is typing.Union or origin is types.UnionType:
        return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]
    return []


def _step(annotation: Any, part: int | str) -> Any:
    """The annotation of ``annotation[part]`` (a field, a dict value or a list item)."""
    for model in _models_in(annotation):
        for name, info in model.model_fields.items():
            if part in (name, info.alias):
                return info.annotation
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Annotated:
        return _step(args[0], part)
    if origin is typing.Union or origin is types.UnionType:
        for arg in args:
            found = _step(arg, part)
            if found is not None:
                return found
        return None
    if origin is dict and isinstance(part, str):
        return args[1]
    if origin is list and isinstance(part, int):
        return args[0]
    return None


#: the spec model of each kind, by the tag pydantic puts in an error's location
_KINDS = {spec.kind: spec for spec in SERVER_SPECS}


def _known_keys(loc: tuple[int | str, ...]) -> list[str]:
    """The keys the object at ``loc`` accepts (as written in a file)."""
    annotation: Any = GatewayConfig
    for part in loc:
        kind = _KINDS.get(part) if isinstance(part, str) else None
        if kind is not None and kind in _models_in(annotation):
            annotation = kind
            continue
        annotation = _step(annotation, part)
        if annotation is None:
            return []
    keys: list[str] = []
    for model in _models_in(annotation):
        keys += [info.alias or name for name, info in model.model_fields.items()]
    return keys


def _problem(error: Any) -> tuple[str, str]:
    """``(key path, message)`` for one pydantic error."""
    raw: tuple[int | str, ...] = tuple(error["loc"])
    loc = tuple(p for p in raw if p not in _KINDS)
    loc = tuple(p for p in loc if not (isinstance(p, str) and p.startswith("function-")))
    key = _key_path(loc) or "(top level)"
    msg = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        msg = "unknown key"
        unknown = str(raw[-1])
        close = difflib.get_close_matches(unknown, _known_keys(raw[:-1]), n=1, cutoff=0.6)
        if close:
            msg += f"; did you mean {close[0]!r}?"
    elif error["type"] == "missing":
        msg = "required key is missing"
    elif error["type"] == "literal_error" and isinstance(error.get("input"), str | int | float):
        msg += f", got {error['input']!r}"
    return key, msg


def config_error(problems: list[tuple[str, str]], source: str) -> ConfigError:
    """One error carrying every ``(key, message)``: one line each, ``source: key: message``."""
    lines = [f"{source}: {key}: {msg}" for key, msg in problems]
    return ConfigError(
        "\n".join(lines),
        key=problems[0][0],
        problems=[{"key": key, "message": msg} for key, msg in problems],
    )


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
            problem = server_kind_problem(spec)
            if problem is None:
                kept[name] = spec
            else:
                problems.append((f"mcpServers.{name}", problem))
        data = {**data, "mcpServers": kept}
    try:
        cfg = GatewayConfig.model_validate(dict(data))
    except ValidationError as exc:
        problems += [_problem(e) for e in exc.errors(include_url=False)]
    if problems:
        raise config_error(problems, label)
    cfg.source = source
    return cfg


# -- ${VAR} in mcpServers ------------------------------------------------------------------

_REFERENCE = re.compile(r"\$\$\{|\$\{([^{}]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def expand_string(text: str, environ: Mapping[str, str]) -> tuple[str, list[str]]:
    """``${VAR}``, ``${VAR:-default}`` and ``${env:VAR}`` from ``environ``; ``$${`` is a
    literal ``${``. Returns the text and the problems (unset or malformed references)."""
    problems: list[str] = []

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$${":
            return "${"
        body = match.group(1)
        name, sep, default = body.partition(":-")
        name = name.removeprefix("env:")
        if not _NAME.fullmatch(name):
            problems.append(
                f"${{{body}}} is not an environment variable reference "
                "(write $${ for a literal ${)"
            )
            return match.group(0)
        value = environ.get(name)
        if sep and not value:
            return default
        if value is None:
            problems.append(f"environment variable {name} is not set (referenced as ${{{body}}})")
            return match.group(0)
        return value

    return _REFERENCE.sub(one, text), problems


def expand_env(
    data: Mapping[str, Any], environ: Mapping[str, str]
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """A copy of ``data`` with ``${VAR}`` expanded in each server's ``EXPANDED_KEYS``,
    and the ``(key path, problem)`` of every reference that cannot be expanded."""
    out = dict(data)
    problems: list[tuple[str, str]] = []
    servers = data.get("mcpServers")
    if not isinstance(servers, Mapping):
        return out, problems

    def walk(value: Any, key: str) -> Any:
        if isinstance(value, str):
            text, found = expand_string(value, environ)
            problems.extend((key, p) for p in found)
            return text
        if isinstance(value, list):
            return [walk(v, f"{key}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, Mapping):
            return {k: walk(v, f"{key}.{k}") for k, v in value.items()}
        return value

    expanded: dict[str, Any] = {}
    for name, spec in servers.items():
        if isinstance(spec, Mapping):
            spec = {
                k: walk(v, f"mcpServers.{name}.{k}") if k in EXPANDED_KEYS else v
                for k, v in spec.items()
            }
        expanded[name] = spec
    out["mcpServers"] = expanded
    return out, problems


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
