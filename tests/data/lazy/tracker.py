"""A small issue-tracker catalog for the lazy-description tests (data, not a test).

``tracker_toolset()`` registers five tools that cover every case: a root tool with an
output schema, one documented by ``docs/add_comment.json``, one with an explicit
summary and a ``ToolDoc``, one in an inactive group, one only verified principals see.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from toolgate import Group, Policy, Principal, Tool, ToolDoc, ToolSet
from toolgate.state.base import StateStore

DOCS = Path(__file__).parent / "docs"
MALFORMED = Path(__file__).parent / "malformed"

SEARCH_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "Words to look for."}},
    "required": ["query"],
    "additionalProperties": False,
}
SEARCH_OUTPUT: Mapping[str, Any] = {
    "type": "object",
    "properties": {"issues": {"type": "array", "items": {"type": "integer"}}},
    "required": ["issues"],
}
COMMENT_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "issue_id": {
            "type": "integer",
            "minimum": 1,
            "description": "Numeric issue id (see search_issues).",
        },
        "body": {"type": "string", "minLength": 1, "description": "The comment, in markdown."},
    },
    "required": ["issue_id", "body"],
    "additionalProperties": False,
}
WHOAMI_DOC = ToolDoc(
    examples=({"description": "No arguments", "input": {}},),
    usage_guidance={"important_notes": ["The login never changes within a session."]},
)


def _search(args: Mapping[str, Any], ctx: Any) -> dict[str, Any]:
    return {"issues": [7, 9] if "crash" in str(args["query"]) else []}


def _comment(args: Mapping[str, Any], ctx: Any) -> str:
    return f"commented on #{args['issue_id']}"


def tracker_tools() -> list[Tool]:
    return [
        Tool(
            "search_issues",
            "Search issues by keyword. Matches titles and bodies, newest first.",
            handler=_search,
            input_schema=SEARCH_SCHEMA,
            output_schema=SEARCH_OUTPUT,
            annotations={"readOnlyHint": True},
        ),
        Tool(
            "add_comment",
            "Add a comment to an issue. Posted as the current user.",
            handler=_comment,
            input_schema=COMMENT_SCHEMA,
        ),
        Tool(
            "whoami",
            "Tell who the current user is. Returns the login and display name.",
            handler=lambda a, c: "ada",
            summary="Who am I?",
            doc=WHOAMI_DOC,
        ),
        Tool("close_issue", "Close an issue.", handler=lambda a, c: "closed", groups=("admin",)),
        Tool(
            "delete_repo",
            "Delete the repository.",
            handler=lambda a, c: "deleted",
            policy=Policy(min_trust="verified"),
        ),
    ]


def tracker_toolset(
    *,
    store: StateStore | None = None,
    clock: Callable[[], float] = time.time,
    principal: Principal | None = None,
) -> ToolSet:
    ts = ToolSet("tracker", store=store, clock=clock, default_principal=principal)
    ts.add_group(Group("admin", "Administer the tracker."))
    ts.add_tools(tracker_tools())
    return ts
