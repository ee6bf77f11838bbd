"""Who may see and use what the gateway relays: ``PrimitiveAccess`` says which relayed
prompts, resources and templates (``Relayed``) a request may list and use (``OpenAccess``:
all; ``relay.exposure``: by the groups' ``prompts:`` / ``resources:`` patterns), and
``Audience`` who may hear what a backend sends outside any call. Imports the request kit
only: the seam the rest of the relay stands on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from toolgate.request import RequestFacts

PrimitiveKind = Literal["prompt", "resource", "template"]
#: the config key whose patterns place a primitive in a group (``prompts:``/``resources:``)
PatternKind = Literal["prompts", "resources"]


@dataclass(frozen=True)
class KindSpec:
    """What the gateway needs to know of one kind of primitive, in one place."""

    key: str  # the wire key it is named by
    listed: str  # the backend list it comes from (``Backend.prompts`` ...)
    list_changed: str  # the legacy notification a change of that list is announced with
    patterns: PatternKind  # the group config key whose patterns place it


KINDS: Mapping[PrimitiveKind, KindSpec] = {
    "prompt": KindSpec("name", "prompts", "notifications/prompts/list_changed", "prompts"),
    "resource": KindSpec("uri", "resources", "notifications/resources/list_changed", "resources"),
    "template": KindSpec(
        "uriTemplate", "templates", "notifications/resources/list_changed", "resources"
    ),
}
#: the facts of the request behind an SDK request context (``Gateway._facts``)
FactsOf = Callable[[Any], Awaitable[RequestFacts]]
#: whether the principal of a request may hear what the named backend sends on its own
#: (log messages outside any call; the level it logs at): ``exposure.BackendAudience``
Audience = Callable[[RequestFacts, str], bool]


@dataclass(frozen=True)
class Relayed:
    """One backend primitive as the gateway exposes it.

    ``name`` is the exposed key: a prompt's name, a resource's URI or a template's URI
    template, after the namespace rule; ``original`` is the backend's own key; ``wire``
    the definition to send (already carrying the exposed key).
    """

    kind: PrimitiveKind
    backend: str
    name: str
    original: str
    wire: Mapping[str, Any] = field(default_factory=dict, compare=False)


class PrimitiveAccess(Protocol):
    """Which relayed prompts and resources one request may list and use."""

    def visible(self, facts: RequestFacts, items: Sequence[Relayed]) -> list[Relayed]:
        """The subset of ``items`` this request lists, in the same order."""
        ...

    def check(self, facts: RequestFacts, item: Relayed) -> None:
        """Raise a ``toolgate.errors`` error (mapped to JSON-RPC by ``toolgate.wire``)
        when this request may not use ``item`` (``prompts/get``, ``resources/read``,
        ``resources/subscribe``, ``completion/complete``)."""
        ...


class OpenAccess:
    """Every relayed prompt and resource is visible and usable."""

    def visible(self, facts: RequestFacts, items: Sequence[Relayed]) -> list[Relayed]:
        return list(items)

    def check(self, facts: RequestFacts, item: Relayed) -> None:
        return None
