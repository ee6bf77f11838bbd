"""Scripts the replay provider (``tests/servers/replay_provider.py``) follows for the
example tasks of ``examples/eval/demo_tasks.yaml``: each goal is the call a capable model
makes, and its ways are how it reaches the tool under each strategy when the tool is
not offered yet. Plain data; imports nothing.
"""

from __future__ import annotations

from typing import Any

FILE_BUG_ARGS = {
    "project_key": "WEB",
    "title": "Checkout button overlaps the footer on mobile",
    "priority": "high",
}

DEMO_SCRIPTS: list[dict[str, Any]] = [
    {
        "match": "Who are you acting as",
        "goals": [{"call": "whoami"}],
        "answer": "I am acting as {result}",
    },
    {
        "match": "File a high-priority issue",
        "goals": [
            {
                "call": "create_issue",
                "args": FILE_BUG_ARGS,
                "ways": [
                    {"call": "enable_tools", "args": {"groups": ["tracker", "issues"]}},
                    {"call": "tracker_activate"},
                    {"call": "issues_activate"},
                    {"call": "get_group", "args": {"name": "issues"}},
                    {
                        "call": "call_tool",
                        "args": {"name": "create_issue", "arguments": FILE_BUG_ARGS},
                        "completes": True,
                    },
                ],
            }
        ],
        "answer": "Filed: {result}",
    },
    {
        "match": "Which product categories",
        "goals": [
            {
                "call": "list_categories",
                "ways": [
                    {"call": "enable_tools", "args": {"groups": ["shopper"]}},
                    {"call": "shopper_activate"},
                    {"call": "get_group", "args": {"name": "shopper"}},
                    {
                        "call": "call_tool",
                        "args": {"name": "list_categories", "arguments": {}},
                        "completes": True,
                    },
                ],
            }
        ],
        "answer": "The shop sells: {result}",
    },
]
