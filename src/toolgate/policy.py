"""Who may see and call what: principals, the trust ladder, per-tool policies.

These are the inputs of the access rules in ``toolgate.view`` (scope, trust, class,
authz decision) and of the rate limit and confirmation checks at call time. Pure
data and pure functions; core: no MCP imports.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from types import NoneType
from typing import Any, Literal, Protocol

from toolgate.errors import ConfigError, check_kind, described

DEFAULT_TRUST_LEVELS: tuple[str, ...] = ("detected", "declared", "verified", "linked")


def _names(value: Any, key: str, what: str) -> tuple[str, ...]:
    """``value`` as a tuple of names: a list of strings; a string (which would be read
    letter by letter), an empty or blank name, or anything else is a ``ConfigError``
    naming ``key``."""
    if isinstance(value, str):
        raise ConfigError(f"{key} must be a list of {what}, got the string {value!r}", key=key)
    if isinstance(value, Iterable) and not isinstance(value, Mapping):
        names = tuple(value)
        if all(isinstance(n, str) for n in names):
            blank = [i for i, n in enumerate(names) if not n.strip()]
            if blank:
                raise ConfigError(
                    f"{key}[{blank[0]}] is {names[blank[0]]!r}: {what} must not be blank",
                    key=key,
                )
            return names
    raise ConfigError(f"{key} must be a list of {what}, got {value!r:.80}", key=key)


Decision = Literal["allow", "deny", "confirm"]


@dataclass(frozen=True)
class TrustLadder:
    """An ordered list of trust levels, lowest first."""

    levels: Sequence[str] = DEFAULT_TRUST_LEVELS

    def __post_init__(self) -> None:
        object.__setattr__(self, "levels", _names(self.levels, "trust_levels", "level names"))
        if not self.levels:
            raise ConfigError("The trust ladder needs at least one level", key="trust_levels")
        if len(set(self.levels)) != len(self.levels):
            raise ConfigError(f"Duplicate trust level in {list(self.levels)}", key="trust_levels")

    def rank(self, level: str) -> int:
        try:
            return self.levels.index(level)
        except ValueError:
            raise ConfigError(
                f"Unknown trust level {level!r}; known levels: {', '.join(self.levels)}",
                key="trust",
            ) from None

    def check(self, level: str) -> str:
        self.rank(level)
        return level


@dataclass(frozen=True)
class RateLimit:
    """At most ``max`` calls per ``window_s`` seconds, per principal and tool."""

    max: int
    window_s: float

    def __post_init__(self) -> None:
        if not isinstance(self.max, int) or isinstance(self.max, bool) or self.max < 1:
            raise ConfigError(f"rate_limit.max must be an integer >= 1, got {self.max!r}")
        window = self.window_s
        if (
            not isinstance(window, int | float)
            or isinstance(window, bool)
            or not math.isfinite(window)
            or window <= 0
        ):
            raise ConfigError(
                f"rate_limit.window_s must be a finite number of seconds > 0, got {window!r}"
            )


@dataclass(frozen=True)
class Policy:
    """Access policy of one tool (the tool-management seed's ``authz`` + ``rateLimit``)."""

    min_trust: str | None = None
    allowed_classes: tuple[str, ...] = ()
    decision: Decision = "allow"
    rate_limit: RateLimit | None = None

    def __post_init__(self) -> None:
        if self.decision not in ("allow", "deny", "confirm"):
            raise ConfigError(
                f"policy decision must be allow, deny or confirm, got {self.decision!r}"
            )
        classes = _names(self.allowed_classes, "allowed_classes", "class names")
        object.__setattr__(self, "allowed_classes", classes)
        if self.rate_limit is not None and not isinstance(self.rate_limit, RateLimit):
            raise ConfigError(
                f"policy rate_limit must be a RateLimit(max, window_s) or None, got "
                f"{described(self.rate_limit)}",
                key="rate_limit",
            )


DEFAULT_POLICY = Policy()


@dataclass(frozen=True)
class Principal:
    """Who is asking. Comes from the transport (auth, config), never from tool arguments.

    ``scope`` lists the groups this principal may use: ``("*",)`` all, ``()`` none;
    ungrouped tools count as group ``"default"``.
    """

    id: str = "local"
    trust: str = "declared"
    agent_class: str | None = None
    scope: tuple[str, ...] = ("*",)
    attributes: Mapping[str, Any] = field(default_factory=dict)
    authenticated: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "scope", _names(self.scope, "scope", "group names"))
        check_kind(self.attributes, Mapping, "attributes", "a dict", key="attributes")
        check_kind(self.id, str, "a principal's id", "a string", key="id")
        check_kind(
            self.agent_class, (str, NoneType), "agent_class", "a string or None", key="agent_class"
        )

    @cached_property
    def key(self) -> tuple[Any, ...]:
        """A hashable identity of everything rules may read (for view caching; computed
        once: principals are immutable)."""
        attrs = json.dumps(self.attributes, sort_keys=True, default=str) if self.attributes else ""
        return (self.id, self.trust, self.agent_class, self.scope, attrs)

    @property
    def all_scope(self) -> bool:
        return "*" in self.scope


ANONYMOUS = Principal()


@dataclass(frozen=True)
class ConfirmRequest:
    """What a confirmer is asked: may ``principal`` run ``tool`` with ``arguments``?"""

    tool: str
    arguments: Mapping[str, Any]
    principal: Principal
    message: str


class Confirmer(Protocol):
    """Asks a human to approve a ``confirm``-policy call (MCP adapters use elicitation)."""

    def confirm(self, request: ConfirmRequest) -> Awaitable[bool]: ...


def policy_from_mapping(data: Mapping[str, Any], ladder: TrustLadder) -> Policy:
    """A Policy from config keys (``min_trust``, ``allowed_classes``, ``decision``,
    ``rate_limit: {max, window_s}``), validated against the trust ladder."""
    known = {"min_trust", "allowed_classes", "decision", "rate_limit", "tools"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"Unknown policy key(s): {', '.join(unknown)}")
    min_trust = data.get("min_trust")
    if min_trust is not None:
        ladder.check(str(min_trust))
    rl = data.get("rate_limit")
    rate_limit = None
    if rl is not None:
        if not isinstance(rl, Mapping) or set(rl) - {"max", "window_s"} or "max" not in rl:
            raise ConfigError("rate_limit must be {max: int, window_s: number}")
        rate_limit = RateLimit(max=rl["max"], window_s=rl.get("window_s", 60))
    classes: Sequence[str] = data.get("allowed_classes", ())
    return Policy(
        min_trust=min_trust,
        allowed_classes=tuple(classes) if not isinstance(classes, str) else classes,  # type: ignore[arg-type]
        decision=data.get("decision", "allow"),
        rate_limit=rate_limit,
    )
