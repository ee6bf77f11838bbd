"""``toolgate serve`` with the per-call work a 2026-07-28 ``tools/call`` can shed cut
away, to measure what this gateway's design costs at the least on this machine: not a
configuration anyone should run. Three things go, in this process only:

- the SDK's kernel around the handler: the lane calls the ``tools/call`` handler
  directly (no middleware chain, no check of the request against its protocol
  version's schema, no shaping of the result for the version, no server-info stamp);
- the check of a call's arguments against the tool's input schema (``jsonschema``);
- events and metrics (``Session._emit``).

What stays is what a relay with progressive disclosure and access control must do per
call: HTTP in through the edge, the lane's envelope checks, the request's facts, the
view and access checks, the hop to the backend, the answer out. ``bench_gateway.py``
measures it beside the gateway and the other relays.
Run: ``python benchmarks/peer_toolgate_stripped.py BACKEND_URL --port N``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench_gateway import gateway_config
from mcp.server.lowlevel import Server
from mcp.server.runner import ServerRunner

import toolgate.gateway.ingress.stateless_calls as stateless
from toolgate import toolset as toolset_module
from toolgate.cli import main


async def _handler_only(
    server: Server[Any],
    dctx: Any,
    method: str,
    params: Mapping[str, Any] | None,
    *,
    connection: Any,
    lifespan_state: Any,
) -> dict[str, Any]:
    """The handler of ``method`` with its typed params, and nothing around it."""
    runner = ServerRunner(server, connection, lifespan_state)
    ctx = runner._make_context(dctx, method, params, None, connection.protocol_version)
    entry = server.get_request_handler(method)
    if entry is None:
        raise LookupError(method)
    typed = entry.params_type.model_validate(params or {}, by_name=False)
    result: dict[str, Any] = await entry.handler(ctx, typed)
    return result


def strip() -> None:
    """Replace the three pieces; one that is no longer there is an error, not a run of
    the whole gateway under this script's name."""
    cuts: list[tuple[object, str, object]] = [
        (stateless, "_serve_one", _handler_only),
        (toolset_module.ToolSet, "validate_arguments", lambda self, tool, arguments: None),
        (toolset_module.Session, "_emit", lambda self, type_, **data: None),
    ]
    for owner, name, _ in cuts:
        if not callable(getattr(owner, name, None)):
            raise SystemExit(f"nothing to strip: {owner!r} has no {name}")
    for owner, name, replacement in cuts:
        setattr(owner, name, replacement)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("backend")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    path = Path(tempfile.mkdtemp(prefix="toolgate-stripped-")) / "toolgate.json"
    path.write_text(json.dumps(gateway_config(args.backend, 1000)))  # as the gateway's
    strip()
    main(["serve", str(path), "--transport", "http", "--port", str(args.port)])
