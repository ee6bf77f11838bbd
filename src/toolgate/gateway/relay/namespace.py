"""The backends' prompts, resources and templates in one namespace, each under the key
clients see (a prompt takes its backend's ``prefix``, URIs stay; a key two backends offer
is reported and kept by the first by name), and their instructions merged into one.
Imports ``mcp`` (URI templates), the backends, the config and the access seam.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from mcp import InvalidUriTemplate, UriTemplate

from toolgate.gateway.backends.backend import Backend
from toolgate.gateway.config.build import BuildReport, listed_twice
from toolgate.gateway.config.model import GatewayConfig
from toolgate.gateway.relay.access import KINDS, PrimitiveKind, Relayed

logger = logging.getLogger("toolgate.gateway")
KIND_WORDS: Mapping[PrimitiveKind, str] = {
    "prompt": "prompt",
    "resource": "resource",
    "template": "resource template",
}


@dataclass(frozen=True)
class Namespace:
    """Every relayed prompt, resource and template under its exposed key, each sorted by it."""

    prompts: tuple[Relayed, ...] = ()
    resources: tuple[Relayed, ...] = ()
    templates: tuple[Relayed, ...] = ()
    _by_key: dict[tuple[str, str], Relayed] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _patterns: tuple[tuple[UriTemplate, Relayed], ...] = field(
        default=(), init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        for item in (*self.prompts, *self.resources, *self.templates):
            self._by_key[(item.kind, item.name)] = item
        patterns: list[tuple[UriTemplate, Relayed]] = []
        for t in self.templates:
            try:  # RFC 6570 matching is the SDK's (linear time, every operator)
                patterns.append((UriTemplate.parse(t.name), t))
            except InvalidUriTemplate as exc:
                logger.warning("template %r of %r is not served: %s", t.name, t.backend, exc)
        object.__setattr__(self, "_patterns", tuple(patterns))

    @property
    def items(self) -> tuple[Relayed, ...]:
        """Every prompt, resource and template (``groups/get`` contents, ``check``)."""
        return (*self.prompts, *self.resources, *self.templates)

    def of(self, kind: PrimitiveKind) -> tuple[Relayed, ...]:
        return {"prompt": self.prompts, "resource": self.resources, "template": self.templates}[
            kind
        ]

    def prompt(self, name: str) -> Relayed | None:
        return self._by_key.get(("prompt", name))

    def template(self, uri_template: str) -> Relayed | None:
        return self._by_key.get(("template", uri_template))

    def resource(self, uri: str) -> Relayed | None:
        """What serves ``uri``: the listed resource, else the first template it matches."""
        listed = self._by_key.get(("resource", uri))
        if listed is not None:
            return listed
        return next((t for pattern, t in self._patterns if pattern.match(uri) is not None), None)


def namespace(
    cfg: GatewayConfig, backends: Mapping[str, Backend], report: BuildReport | None = None
) -> Namespace:
    """The one namespace of what ``backends`` offer. A prompt is exposed as
    ``{prefix}{separator}{name}`` when its backend has a ``prefix`` (as its tools are);
    URIs are global, so resources and templates keep theirs. A key two backends offer is
    reported at ``mcpServers.<second>`` and kept by the first in name order; one a
    backend lists twice, at ``mcpServers.<backend>``, its first kept."""
    found: dict[PrimitiveKind, dict[str, Relayed]] = {k: {} for k in KINDS}
    for server in sorted(backends):
        backend = backends[server]
        for kind, spec in KINDS.items():
            key = spec.key
            for wire in getattr(backend, spec.listed):
                original = str(wire.get(key, ""))
                exposed = cfg.exposed_name(server, original) if kind == "prompt" else original
                owner = found[kind].get(exposed)
                if owner is not None:
                    if report is not None:
                        report.fail(
                            f"mcpServers.{server}",
                            _collision(kind, exposed, owner.backend, server)
                            if owner.backend != server
                            else listed_twice(server, KIND_WORDS[kind], original),
                            content=True,
                        )
                    continue
                found[kind][exposed] = Relayed(
                    kind, server, exposed, original, {**wire, key: exposed}
                )
    ordered = {k: tuple(v[n] for n in sorted(v)) for k, v in found.items()}
    return Namespace(ordered["prompt"], ordered["resource"], ordered["template"])


def _collision(kind: PrimitiveKind, key: str, first: str, second: str) -> str:
    if kind == "prompt":
        return (
            f"prompt {key!r} is offered by both {first!r} and {second!r}; "
            f'{first!r} serves it; give one of them a "prefix"'
        )
    what = KIND_WORDS[kind]
    return (
        f"{what} {key!r} is offered by both {first!r} and {second!r}; {first!r} serves it "
        "(URIs are global, so a prefix does not rename them: front only one of the two)"
    )


def merged_instructions(own: str | None, backends: Mapping[str, Backend]) -> str | None:
    """toolgate's instructions, then one ``## <backend>`` section per backend that gave any."""
    parts = [own.strip()] if own and own.strip() else []
    for name, backend in backends.items():
        text = (backend.instructions or "").strip()
        if text:
            parts.append(f"## {name}\n\n{text}")
    return "\n\n".join(parts) or None


__all__ = ["Namespace", "merged_instructions", "namespace"]
