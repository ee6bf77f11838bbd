"""Operations: health and readiness, Prometheus metrics, OpenTelemetry, the dashboard.
Reads a running gateway through the ``ServedGateway`` protocol it declares
(``toolgate.gateway.ops.health``), so it never imports ``serve``.
"""
