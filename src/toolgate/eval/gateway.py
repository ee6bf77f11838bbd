"""The gateway an evaluation talks to: ``toolgate serve CONFIG`` with one strategy set.

``ServedGateway`` runs this module as a child process (``python -m
toolgate.eval.gateway``), which reads CONFIG as ``toolgate serve`` does, sets the
strategy's ``toolgate`` keys over it (the file is never rewritten, so its relative
paths and ``${VAR}`` keep their meaning) and serves streamable HTTP on a free loopback
port. ``demo`` as CONFIG is ``toolgate demo``'s config on a new copy of its data.
Edge (``toolgate.eval``): imports the gateway and the demo.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from toolgate.errors import ConfigError
from toolgate.gateway.config.files import read_config_data
from toolgate.gateway.config.model import GatewayConfig, parse_config

DEMO = "demo"
START_TIMEOUT_S = 60.0


def merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``over`` set on it; objects merge key by key."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def build_config(
    config: str, overrides: Mapping[str, Any], *, db: Path | None = None
) -> GatewayConfig:
    """CONFIG (a path, or ``demo``) with ``overrides`` set on its ``toolgate`` block.
    Raises ``ConfigError`` as ``toolgate serve`` would."""
    if config == DEMO:
        from toolgate.demo.run import CONFIG_PATH, demo_config

        shipped = json.loads(CONFIG_PATH.read_text(encoding="utf-8"))["toolgate"]
        return demo_config(db=db, toolgate=merge(shipped, overrides))
    path = Path(config)
    data = read_config_data(path)
    if isinstance(data, Mapping):
        block = data.get("toolgate")
        data = {**data, "toolgate": merge(block if isinstance(block, Mapping) else {}, overrides)}
    return parse_config(data, source=path.resolve())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class ServedGateway:
    """One gateway process serving CONFIG with ``overrides``, until :meth:`stop`.

    >>> with ServedGateway("toolgate.json", {"strategy": "flat"}, log=f) as gw:
    ...     gw.url
    """

    def __init__(
        self,
        config: str,
        overrides: Mapping[str, Any],
        *,
        log: IO[bytes] | None = None,
        db: Path | None = None,
    ) -> None:
        self.config = config
        self.overrides = dict(overrides)
        self.db = db
        self.log = log
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        # without a log of the caller's, the output is kept to say why a start failed
        self._output: IO[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def argv(self) -> list[str]:
        argv = [sys.executable, "-m", "toolgate.eval.gateway", self.config]
        argv += ["--overrides", json.dumps(self.overrides), "--port", str(self.port)]
        return argv + (["--db", str(self.db)] if self.db is not None else [])

    def start(self) -> None:
        if self.log is None:
            self._output = tempfile.TemporaryFile()  # noqa: SIM115 - closed by stop()
        self.proc = subprocess.Popen(
            self.argv(),
            stdin=subprocess.DEVNULL,
            stdout=self.log or self._output,
            stderr=subprocess.STDOUT,
            env=os.environ.copy(),
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        ready = f"http://127.0.0.1:{self.port}/readyz"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                said = self._said()
                self.stop()
                raise ConfigError(
                    f"the gateway for {self.config} exited with {self.proc.returncode} "
                    f"before it served{said}",
                    key="(gateway)",
                )
            try:
                with urllib.request.urlopen(ready, timeout=1) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise ConfigError(
            f"the gateway for {self.config} was not ready within {START_TIMEOUT_S:.0f} s",
            key="(gateway)",
        )

    def _said(self, limit: int = 2000) -> str:
        """The end of what the gateway printed, or where to find it."""
        if self._output is None:
            return " (see its log)"
        self._output.seek(0)
        text = self._output.read().decode("utf-8", "replace").strip()[-limit:]
        return f"; it said:\n{text}" if text else ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._output is not None:
            self._output.close()
            self._output = None

    def __enter__(self) -> ServedGateway:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


class GatewayPool:
    """The gateways of one evaluation, one per strategy, started when first asked for;
    each demo gateway has its own copy of the demo data.

    >>> pool = GatewayPool("toolgate.json"); url = pool.url({"strategy": "flat"}); pool.close()
    """

    def __init__(self, config: str, *, log: IO[bytes] | None = None) -> None:
        self.config = config
        self.log = log
        self._tmp = tempfile.TemporaryDirectory(prefix="toolgate-eval-")
        self._served: dict[str, ServedGateway] = {}

    def url(self, overrides: Mapping[str, Any]) -> str:
        """The URL of the gateway serving ``overrides`` (started now if need be: strategies
        setting the same keys share one gateway)."""
        key = json.dumps(overrides, sort_keys=True)
        served = self._served.get(key)
        if served is None:
            db = Path(self._tmp.name) / f"{len(self._served)}.sqlite3"
            served = ServedGateway(
                self.config, overrides, log=self.log, db=db if self.config == DEMO else None
            )
            served.start()
            self._served[key] = served
        return served.url

    def stop(self, overrides: Mapping[str, Any]) -> None:
        served = self._served.pop(json.dumps(overrides, sort_keys=True), None)
        if served is not None:
            served.stop()

    def close(self) -> None:
        for served in self._served.values():
            served.stop()
        self._served.clear()
        self._tmp.cleanup()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m toolgate.eval.gateway")
    parser.add_argument("config")
    parser.add_argument("--overrides", default="{}")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--db", default=None)
    args = parser.parse_args(argv)
    from toolgate.gateway.serve import serve

    # on stderr, which the evaluation writes to its log: backends' noise is not its output
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    try:
        cfg = build_config(
            args.config, json.loads(args.overrides), db=Path(args.db) if args.db else None
        )
    except ConfigError as exc:
        print(f"toolgate: {exc.message}", file=sys.stderr)
        return 1
    asyncio.run(serve(cfg, transport="http", host="127.0.0.1", port=args.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
