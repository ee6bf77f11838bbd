"""The operator dashboard and WebMCP publishing, served next to the gateway's MCP endpoint.

``dashboard_app(source)`` is a Starlette app to mount at ``/dashboard``;
``webmcp_routes(delivery, identity)`` adds ``/webmcp.js`` and its JSON endpoints;
``record_sessions`` feeds the session list from MCP requests. Edge layer (gateway).
"""

from toolgate.gateway.dashboard.app import DashboardSource, dashboard_app
from toolgate.gateway.dashboard.events import EventRing
from toolgate.gateway.dashboard.sessions import SessionRecorder, record_sessions, session_rows
from toolgate.gateway.dashboard.webmcp import webmcp_routes

__all__ = [
    "DashboardSource",
    "EventRing",
    "SessionRecorder",
    "dashboard_app",
    "record_sessions",
    "session_rows",
    "webmcp_routes",
]
