"""An agent loop on ``toolgate.client.GroupsClient``, with a scripted "model".

The "model" is deterministic: it picks the tool whose name and description share the
most words with the task, and opens the group whose description does when no loaded
tool fits. A real host hands ``groups.openai_tools()`` (or ``anthropic_tools()``) to its
LLM and passes the model's tool calls to ``groups.dispatch`` in the same way.

    python examples/agent_loop.py

runs three tasks against ``examples/lowlevel_server.py`` in memory and prints the
transcript. ``run_tasks`` works with any MCP client session.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from toolgate.client import GroupsClient

STOP = {"a", "an", "and", "the", "to", "of", "in", "by", "is", "it", "its", "with", "called"}

#: (what the user asks, the arguments the "model" fills in)
TASKS: list[tuple[str, dict[str, Any]]] = [
    ("read the note called todo", {"name": "todo"}),
    ("add two integers: 2 and 3", {"a": 2, "b": 3}),
    ("write a note called shopping", {"name": "shopping", "text": "eggs"}),
]


def words(text: str) -> set[str]:
    """Lower-case words of a text or a tool name (``files_read`` -> files, read)."""
    return {w for w in re.split(r"[^a-z0-9]+", text.lower()) if w and w not in STOP}


def best(task: str, candidates: Iterable[Mapping[str, Any]]) -> str | None:
    """The candidate sharing the most words with the task (ties: first by name)."""
    scored = [
        (len(words(task) & words(f"{c['name']} {c.get('description', '')}")), str(c["name"]))
        for c in candidates
    ]
    scored = [s for s in scored if s[0] > 0]
    if not scored:
        return None
    top = max(n for n, _ in scored)
    return min(name for n, name in scored if n == top)


async def run_task(groups: GroupsClient, task: str, arguments: dict[str, Any]) -> list[str]:
    """One task: open groups until a loaded tool fits, then call it. The transcript."""
    log = [f"task: {task}"]
    helpers = {h["name"] for h in groups.helper_tools()}
    for _ in range(5):  # a budget of steps, as any agent loop has
        tools = [
            {"name": t["function"]["name"], "description": t["function"]["description"]}
            for t in groups.openai_tools()
            if t["function"]["name"] not in helpers
        ]
        # a tool fits when its name shares a word with the task
        choice = best(task, [t for t in tools if words(task) & words(t["name"])])
        if choice is not None:
            answer = await groups.dispatch(choice, arguments)
            text = " ".join(c.get("text", "") for c in answer.get("content", []))
            log.append(f"  call {choice} {json.dumps(arguments)} -> {text or answer}")
            return log
        # otherwise open a group: sub-groups of opened groups first, then top-level ones
        closed = [
            child
            for opened in groups.fetched.values()
            for child in opened.groups
            if child["name"] not in groups.fetched
        ]
        listed = await groups.dispatch("list_groups", {})
        closed += [g for g in listed.get("groups", []) if g["name"] not in groups.fetched]
        if not closed:
            break
        group = best(task, closed) or str(closed[0]["name"])
        content = await groups.dispatch("get_group", {"name": group})
        names = [t["name"] for t in content.get("tools", [])]
        log.append(f"  get_group {group} -> tools {names}")
    log.append("  gave up")
    return log


async def run_tasks(session: Any, tasks: Iterable[tuple[str, dict[str, Any]]] = TASKS) -> list[str]:
    """Start a ``GroupsClient`` on ``session`` and run every task; the transcript."""
    groups = GroupsClient(session)
    mode = await groups.start()
    log = [f"mode: {mode}; tools at start: {sorted(groups.tools)}"]
    for task, arguments in tasks:
        log += await run_task(groups, task, arguments)
    return log


async def main() -> None:
    import logging

    from mcp import Client

    from toolgate.client import GroupsClientExtension

    sys.path.insert(0, str(Path(__file__).parent))
    from lowlevel_server import build

    # the SDK client warns that it cannot check the output of tools it found in groups
    # rather than in tools/list; that is how the groups extension works
    logging.getLogger("client").setLevel(logging.ERROR)  # mcp.client.session's logger
    server, _ = build()
    async with Client(server, extensions=[GroupsClientExtension()]) as client:
        for line in await run_tasks(client):
            print(line)


if __name__ == "__main__":
    asyncio.run(main())
