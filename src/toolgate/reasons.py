"""Why a tool or a group is what a view says it is: a verdict's kind (DESIGN §4's names)
and the facts that name it. ``toolgate.view`` decides verdicts; this module only says
them. Core: the standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ReasonKind(StrEnum):
    """What decided a tool's or a group's verdict (DESIGN §4's names)."""

    VISIBLE = "visible"
    UNKNOWN = "unknown"
    OUT_OF_SCOPE = "out-of-scope"
    TRUST_TOO_LOW = "trust-too-low"
    CLASS_NOT_ALLOWED = "class-not-allowed"
    AUTHZ_DENY = "authz-deny"
    STAGE_LOCKED = "stage-locked"
    GROUP_INACTIVE = "group-inactive"
    PREDICATE_FALSE = "predicate-false"
    NOTHING_USABLE = "nothing-usable"  # a group: holds tools, none the principal may use
    ACTIVE = "active"  # a group: effectively active
    PARENT_INACTIVE = "parent-inactive"  # a group: its parent is not effectively active
    ACTIVATABLE = "activatable"  # a group: activating it now can succeed
    CUSTOM = "custom"  # a rule outside toolgate's own; ``text`` says why


@dataclass(frozen=True)
class Reason:
    """A verdict's kind and the facts that name it. ``str(reason)`` is the rendering
    ``explain`` shows: ``Reason(ReasonKind.TRUST_TOO_LOW, have="detected",
    need="verified")`` is ``trust-too-low:detected<verified``."""

    kind: ReasonKind
    group: str | None = None  # group-inactive: the tool's first group; parent-inactive: the parent
    stages: tuple[str, ...] = ()  # stage-locked: the stages the tool is available in, sorted
    have: str | None = None  # trust-too-low: the principal's trust; class-not-allowed: its class
    need: str | None = None  # trust-too-low: the tool's min_trust
    text: str | None = None  # custom

    def __str__(self) -> str:
        k = self.kind
        if k is ReasonKind.TRUST_TOO_LOW:
            return f"{k}:{self.have}<{self.need}"
        if k is ReasonKind.CLASS_NOT_ALLOWED:
            return f"{k}:{self.have}"
        if k is ReasonKind.STAGE_LOCKED:
            return f"{k}:" + ",".join(self.stages)
        if k in (ReasonKind.GROUP_INACTIVE, ReasonKind.PARENT_INACTIVE):
            return f"{k}:{self.group}"
        return self.text if k is ReasonKind.CUSTOM and self.text is not None else k.value


VISIBLE = Reason(ReasonKind.VISIBLE)
UNKNOWN = Reason(ReasonKind.UNKNOWN)
OUT_OF_SCOPE = Reason(ReasonKind.OUT_OF_SCOPE)
ACTIVE = Reason(ReasonKind.ACTIVE)
ACTIVATABLE = Reason(ReasonKind.ACTIVATABLE)
NOTHING_USABLE = Reason(ReasonKind.NOTHING_USABLE)
