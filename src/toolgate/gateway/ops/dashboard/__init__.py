"""The operator dashboard, served next to the gateway's MCP endpoint.

``dashboard_app(source)`` is a Starlette app to mount at ``/dashboard``;
``record_sessions`` feeds the session list from MCP requests. Edge layer (gateway):
imports ``build``, ``check``, ``config`` and ``inspect``, never ``serve``.
"""

from toolgate.gateway.ops.dashboard.app import DashboardSource, dashboard_app
from toolgate.gateway.ops.dashboard.events import EventRing
from toolgate.gateway.ops.dashboard.sessions import SessionRecorder, record_sessions, session_rows

__all__ = [
    "DashboardSource",
    "EventRing",
    "SessionRecorder",
    "dashboard_app",
    "record_sessions",
    "session_rows",
]
