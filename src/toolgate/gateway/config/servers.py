"""What an ``mcpServers`` entry may be: one spec model per kind of server, each knowing its
kind, the key that marks it and the keys whose ``${VAR}`` are expanded. ``SERVER_SPECS``
is the one list; the config's union, its kind checks and ``toolgate init`` read it. A new
kind is one model here and one transport (``toolgate.gateway.backends.transport``).
Config layer: pydantic and the catalog's tool-name rule, nothing of the gateway.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator

from toolgate.catalog.tool import TOOL_NAME

#: every config model's settings: unknown keys are errors, aliases and names both read
STRICT = ConfigDict(extra="forbid", populate_by_name=True)


class ServerSpec(BaseModel):
    """What every backend has: how long a call to one of its tools may take, and how
    its tools are named and titled in the catalog."""

    model_config = STRICT

    #: the kind's tag, the key whose presence marks an entry as this kind, how a person
    #: calls it, and the keys whose ``${VAR}`` references are expanded
    kind: ClassVar[str]
    marker: ClassVar[str]
    label: ClassVar[str]
    expanded: ClassVar[tuple[str, ...]]

    timeout: float = Field(60.0, gt=0)
    tool_timeouts: dict[str, float] = Field(default_factory=dict)
    prefix: str | None = None
    title: str | None = None  # indexed for search with the server's key

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, v: str | None) -> str | None:
        """A prefix begins each of the server's tool names, so it takes their characters
        (an empty one is no prefix)."""
        if v and not TOOL_NAME.match(v):
            raise ValueError(
                f"prefix {v!r} must be characters a tool name may hold (A-Z a-z 0-9 _ . -): "
                "it begins every tool name of the server"
            )
        return v

    @field_validator("tool_timeouts")
    @classmethod
    def _positive(cls, v: dict[str, float]) -> dict[str, float]:
        for tool, seconds in v.items():
            if seconds <= 0:
                raise ValueError(f"the timeout of {tool!r} must be a positive number of seconds")
        return v

    def timeout_for(self, tool: str) -> float:
        """Seconds a call to ``tool`` (the backend's own name) may take."""
        return self.tool_timeouts.get(tool, self.timeout)

    def describe(self) -> str:
        """Where the backend is, one line for the log."""
        raise NotImplementedError

    @classmethod
    def host_types(cls) -> tuple[str, ...]:
        """The values of ``type`` a host's config gives this kind of server."""
        return typing.get_args(typing.get_args(cls.model_fields["type"].annotation)[0])


class StdioServer(ServerSpec):
    """A backend started as a subprocess speaking MCP over stdio."""

    kind = "stdio"
    marker = "command"
    label = "stdio"
    expanded = ("command", "args", "env", "cwd")

    command: str
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    env_passthrough: list[str] = Field(
        default_factory=list,
        description="Names (or globs such as 'AWS_*') of the gateway's environment variables "
        "this backend inherits, beyond HOME, LOGNAME, PATH, SHELL, TERM and USER; "
        "'env' values win over them.",
    )
    cwd: str | None = None
    type: Literal["stdio"] | None = None

    @field_validator("env_passthrough")
    @classmethod
    def _passthrough(cls, v: list[str]) -> list[str]:
        for name in v:
            if not re.fullmatch(r"[A-Za-z0-9_*?\[\]!]+", name):
                raise ValueError(f"{name!r} is not an environment variable name or glob")
        return v

    def describe(self) -> str:
        return " ".join([self.command, *self.args])


class HttpServer(ServerSpec):
    """A backend reached over streamable HTTP."""

    kind = "http"
    marker = "url"
    label = "HTTP"
    expanded = ("url", "headers")

    url: str
    headers: dict[str, str] = Field(default_factory=dict)
    type: Literal["http", "streamable-http", "streamableHttp"] | None = None

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return v

    def describe(self) -> str:
        return self.url


#: every kind of server the gateway fronts; the first whose marker an entry holds is its kind
SERVER_SPECS: tuple[type[ServerSpec], ...] = (StdioServer, HttpServer)
#: the server keys whose values are expanded, as Claude Code, Cursor and Windsurf do
EXPANDED_KEYS = tuple(key for spec in SERVER_SPECS for key in spec.expanded)


def server_kind(value: Any) -> str:
    """The kind (tag) of an ``mcpServers`` entry: a mapping by its marker key, a model by
    its class."""
    if isinstance(value, ServerSpec):
        return value.kind
    found = [s.kind for s in SERVER_SPECS if isinstance(value, Mapping) and s.marker in value]
    return found[0] if found else SERVER_SPECS[0].kind


def server_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name an ``mcpServers`` entry: a ``server:glob`` pattern splits
    at the first ':', so no pattern could name a server whose name holds one, and an
    empty name could be named by none (``:glob`` is a pattern with no server)."""
    if not name.strip():
        return "a server name cannot be empty"
    return "a server name cannot contain ':'" if ":" in name else None


def server_kind_problem(spec: Any) -> str | None:
    """Why an ``mcpServers`` entry is of no kind, or of more than one; else None."""
    if not isinstance(spec, Mapping):
        return None
    markers = [repr(s.marker) for s in SERVER_SPECS if s.marker in spec]
    if len(markers) > 1:
        return f"has both {' and '.join(markers)}; pick one"
    if not markers:
        needs = [f"a {s.marker!r} ({s.label})" for s in SERVER_SPECS]
        return f"needs {', '.join(needs[:-1])} or {needs[-1]}"
    return None


if TYPE_CHECKING:
    ServerConfig = ServerSpec
else:  # the union of SERVER_SPECS, each tagged with its kind
    ServerConfig = Annotated[
        typing.Union[tuple(Annotated[s, Tag(s.kind)] for s in SERVER_SPECS)],  # noqa: UP007
        Discriminator(server_kind),
    ]

__all__ = [
    "EXPANDED_KEYS",
    "SERVER_SPECS",
    "STRICT",
    "HttpServer",
    "ServerConfig",
    "ServerSpec",
    "StdioServer",
    "server_kind",
    "server_kind_problem",
    "server_name_problem",
]
