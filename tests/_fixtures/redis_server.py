"""A real ``redis-server`` for the tests: ``redis_server`` (session) and ``redis_url``.

Starts the Debian binary on a free 127.0.0.1 port in a temp dir with persistence off,
and FAILS (never skips) when the binary is missing or will not answer PING. Imports
only the stdlib, pytest and ``redis``; nothing from toolgate.
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis

INSTALL_HINT = "install it with `apt-get update && apt-get install -y redis-server`"

# Each test gets its own database (1..63), flushed before use; 0 is left to open_store.
DATABASES = 64


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@dataclass
class RedisServer:
    """One redis-server process that a test may stop, freeze and start again."""

    binary: str
    port: int
    directory: Path
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return self.url_for(0)

    def url_for(self, db: int) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self, wait_s: float = 10.0) -> None:
        """Start (or restart, on the same port) and return once it answers PING."""
        if self.running:
            return
        options = {
            "--save": "",
            "--appendonly": "no",
            "--port": str(self.port),
            "--bind": "127.0.0.1",
            "--dir": str(self.directory),
            "--databases": str(DATABASES),
        }
        command = [self.binary, *itertools.chain.from_iterable(options.items())]
        log_path = self.directory / "redis.log"
        with log_path.open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"redis-server exited with code {self.process.returncode} on port "
                    f"{self.port}:\n{log_path.read_text(errors='replace')[-2000:]}"
                )
            if answers_ping(self.port):
                return
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"redis-server on port {self.port} did not answer PING in {wait_s}s")

    def stop(self) -> None:
        """Stop the server (its data is gone: persistence is off)."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.thaw()
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self.process = None

    def freeze(self) -> None:
        """SIGSTOP: connections are accepted by the kernel but never answered."""
        if self.process is not None:
            os.kill(self.process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        if self.process is not None:
            os.kill(self.process.pid, signal.SIGCONT)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail(f"redis-server binary not found on PATH: {INSTALL_HINT}", pytrace=False)
    server = RedisServer(binary, free_port(), tmp_path_factory.mktemp("redis"))
    try:
        server.start()
    except (OSError, RuntimeError) as exc:
        server.stop()
        pytest.fail(f"redis-server could not start: {exc}", pytrace=False)
    try:
        yield server
    finally:
        server.stop()


_next_db = itertools.cycle(range(1, DATABASES))


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """A URL to an empty database of the running server, for this test alone."""
    redis_server.thaw()
    redis_server.start()  # a fault test may have left it stopped
    db = next(_next_db)
    with redis.Redis(port=redis_server.port, db=db) as client:
        client.flushdb()
    return redis_server.url_for(db)
