"""The groups extension on a FastMCP 4 server: ``mcp.add_extension(GroupsServerExtension(d))``.

FastMCP's ``ServerExtension`` over ``toolgate.groups_extension``'s endpoint, which owns
the methods and the legacy advertisement. Adapter layer: imports ``fastmcp`` and the
extension's SDK glue; the rules live in the strategy.
"""

from __future__ import annotations

from typing import Any

from fastmcp.server.extensions import MethodBinding, ServerExtension

from toolgate.fastmcp_internals import sdk_server
from toolgate.groups_extension import EndpointExtension


class GroupsServerExtension(EndpointExtension, ServerExtension):
    """The extension for FastMCP: ``mcp.add_extension(GroupsServerExtension(delivery))``.

    Registering it also installs the legacy advertisement on the server's SDK layer.
    """

    def methods(self) -> list[Any]:
        return [MethodBinding(m, p, h) for m, p, h in self.endpoint.method_table()]

    def clone(self) -> GroupsServerExtension:
        # a deep copy would copy the toolset; an extension shares its delivery
        endpoint = self.endpoint
        return GroupsServerExtension(
            endpoint.delivery,
            identity=endpoint.identity,
            facts=endpoint.facts,
            contents=endpoint.contents,
        )

    def _bind(self, server: Any) -> None:
        super()._bind(server)
        self.endpoint.install_advert(sdk_server(server))
