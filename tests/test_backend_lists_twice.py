"""A backend that lists one tool, prompt or resource twice is told so, naming the backend
and the name, never as a collision between two backends ("give one of them a prefix"
cannot settle it); the first is served, and the rest of the gateway with it. A tool
whose name MCP refuses is left out the same way.

Built in the test process from the listings (``build_toolset``, ``namespace``).
"""

from __future__ import annotations

from typing import Any

from toolgate.gateway.backends.backend import Backend
from toolgate.gateway.config.build import BuildReport, ContentProblem, build_toolset
from toolgate.gateway.config.model import parse_config
from toolgate.gateway.relay.namespace import namespace


def content_problems(report: BuildReport) -> list[str]:
    return [e.message for e in report.errors if isinstance(e, ContentProblem)]


def test_a_tool_listed_twice_by_one_backend_names_that_backend_and_serves_the_first() -> None:
    cfg = parse_config({"mcpServers": {"w": {"command": "w"}}})
    listed = {"w": [{"name": "echo", "description": "first"}, {"name": "echo"}, {"name": "ping"}]}
    toolset, report = build_toolset(cfg, listed, lambda tool: lambda args, ctx: "ok")
    assert content_problems(report) == [
        "mcpServers.w: backend 'w' lists tool 'echo' twice; the first is served"
    ]
    assert sorted(toolset.catalog.tools) == ["echo", "ping"]
    assert toolset.catalog.tools["echo"].description == "first"


def test_a_prefixed_backend_listing_a_tool_twice_is_told_its_own_name_for_it() -> None:
    cfg = parse_config({"mcpServers": {"w": {"command": "w", "prefix": "web"}}})
    listed = {"w": [{"name": "echo"}, {"name": "echo"}]}
    _, report = build_toolset(cfg, listed, lambda tool: lambda args, ctx: "ok")
    assert content_problems(report) == [
        "mcpServers.w: backend 'w' lists tool 'echo' twice; the first is served"
    ]


def test_a_prompt_resource_or_template_listed_twice_by_one_backend_names_that_backend() -> None:
    cfg = parse_config({"mcpServers": {"w": {"command": "w", "prefix": "web"}}})
    backend = Backend("w", cfg.mcp_servers["w"])
    greet: dict[str, Any] = {"name": "greet", "description": "first"}
    memo: dict[str, Any] = {"uri": "memo://shared", "name": "memo"}
    page: dict[str, Any] = {"uriTemplate": "memo://{id}", "name": "page"}
    backend.prompts = (greet, {"name": "greet"})
    backend.resources = (memo, memo)
    backend.templates = (page, page)
    report = BuildReport()
    served = namespace(cfg, {"w": backend}, report)
    assert content_problems(report) == [
        "mcpServers.w: backend 'w' lists prompt 'greet' twice; the first is served",
        "mcpServers.w: backend 'w' lists resource 'memo://shared' twice; the first is served",
        "mcpServers.w: backend 'w' lists resource template 'memo://{id}' twice; "
        "the first is served",
    ]
    assert [p.name for p in served.prompts] == ["web.greet"]
    assert served.prompts[0].wire["description"] == "first"
    assert [r.name for r in served.resources] == ["memo://shared"]
    assert [t.name for t in served.templates] == ["memo://{id}"]


def test_a_tool_whose_name_mcp_refuses_is_not_served_and_the_rest_is() -> None:
    """A content problem, so the gateway starts with the backend's other tools whether
    the backend answered within the start grace or joined later (when its tools were
    always built this way)."""
    cfg = parse_config({"mcpServers": {"w": {"command": "w"}}})
    listed = {"w": [{"name": "has space"}, {"name": "ok_tool"}]}
    toolset, report = build_toolset(cfg, listed, lambda tool: lambda args, ctx: "ok")
    assert not report.fatal
    (problem,) = content_problems(report)
    assert problem.startswith("mcpServers.w: Invalid tool name 'has space'")
    assert problem.endswith("; not served")
    assert sorted(toolset.catalog.tools) == ["ok_tool"]
