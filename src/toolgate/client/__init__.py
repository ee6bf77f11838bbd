"""Host side of progressive disclosure: the groups extension from an MCP client.

``extension`` declares and speaks the extension, ``discovery`` finds, fetches and calls
a server's grouped tools, ``export`` hands them to an agent and the LLM APIs, ``names``
keeps their names valid there. Edge: talks to servers over ``mcp``, never to the core.
"""

from toolgate.client.discovery import FetchedGroup
from toolgate.client.export import GroupsClient, ProviderRequest
from toolgate.client.extension import GroupsClientExtension, session_options
from toolgate.client.names import HelperNames, ToolNames

__all__ = [
    "FetchedGroup",
    "GroupsClient",
    "GroupsClientExtension",
    "HelperNames",
    "ProviderRequest",
    "ToolNames",
    "session_options",
]
