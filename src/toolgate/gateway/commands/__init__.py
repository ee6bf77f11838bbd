"""The gateway's tooling commands over a config: ``check``, ``inspect`` and ``init``.
Imports the config, the backends and the relay; nothing in the gateway imports it but the
operations' dashboard.
"""
