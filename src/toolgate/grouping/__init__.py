"""Groups made for you: a server's tools proposed as small, named, nested groups.

``propose_groups`` (``propose``) reads tool names as verbs and objects and their texts as
search-term vectors (``words``). ``toolgate init`` and ``toolgate inspect
--suggest-groups`` write its proposal into a config. Core: no MCP imports.
"""

from toolgate.grouping.propose import GroupingSettings, ProposedGroup, propose_groups

__all__ = ["GroupingSettings", "ProposedGroup", "propose_groups"]
