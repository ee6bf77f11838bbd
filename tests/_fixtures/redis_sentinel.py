"""A real Redis Sentinel group for the tests: a primary ``redis-server``, one replica
(``--replicaof``) and three ``redis-sentinel`` (quorum 2) on free 127.0.0.1 ports in a
temp dir, with short failure detection so a failover takes seconds. FAILS (never skips)
when a binary is missing or a process will not come up. Imports only the stdlib, pytest,
``redis`` and ``free_port``; nothing from toolgate.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis

from _fixtures.mcp_servers import free_port

SERVICE = "toolgate"
HINT = "install it with `apt-get update && apt-get install -y redis-server redis-sentinel`"


def answers_ping(port: int) -> bool:
    try:
        with redis.Redis(port=port, socket_timeout=0.2, socket_connect_timeout=0.2) as r:
            return bool(r.ping())
    except redis.RedisError:
        return False


@dataclass
class SentinelGroup:
    directory: Path
    data_ports: list[int] = field(default_factory=lambda: [free_port(), free_port()])
    sentinel_ports: list[int] = field(default_factory=lambda: [free_port() for _ in range(3)])
    processes: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)

    def url(self, db: int = 0, query: str = "") -> str:
        hosts = ",".join(f"127.0.0.1:{p}" for p in self.sentinel_ports)
        return f"redis+sentinel://{hosts}/{SERVICE}/{db}" + (f"?{query}" if query else "")

    def _spawn(self, port: int, argv: list[str]) -> None:
        log = (self.directory / f"{port}.log").open("ab")
        with log:
            self.processes[port] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while not answers_ping(port):
            if self.processes[port].poll() is not None or time.monotonic() > deadline:
                text = (self.directory / f"{port}.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"{argv[0]} on port {port} did not come up:\n{text}")
            time.sleep(0.02)

    def start(self) -> None:
        server, sentinel = shutil.which("redis-server"), shutil.which("redis-sentinel")
        if server is None or sentinel is None:
            pytest.fail(f"redis-server or redis-sentinel not on PATH: {HINT}", pytrace=False)
        primary, replica = self.data_ports
        common = ["--save", "", "--appendonly", "no", "--bind", "127.0.0.1"]
        common += ["--dir", str(self.directory)]  # a full sync writes an RDB file there
        self._spawn(primary, [server, "--port", str(primary), *common])
        self._spawn(
            replica,
            [server, "--port", str(replica), "--replicaof", "127.0.0.1", str(primary), *common],
        )
        for port in self.sentinel_ports:
            conf = self.directory / f"sentinel-{port}.conf"
            conf.write_text(
                f"port {port}\nbind 127.0.0.1\ndir {self.directory}\n"
                f"sentinel monitor {SERVICE} 127.0.0.1 {primary} 2\n"
                f"sentinel down-after-milliseconds {SERVICE} 1000\n"
                f"sentinel failover-timeout {SERVICE} 3000\n"
                f"sentinel parallel-syncs {SERVICE} 1\n"
            )
            self._spawn(port, [sentinel, str(conf)])
        self.wait_until(self.ready, "the replica to sync and the sentinels to see each other")

    def primary_port(self) -> int | None:
        """The primary's port as the sentinels agree on it now (a majority)."""
        seen: list[int] = []
        for port in self.sentinel_ports:
            try:
                with redis.Redis(port=port, socket_timeout=0.5) as s:
                    address = s.execute_command("SENTINEL GET-MASTER-ADDR-BY-NAME", SERVICE)
            except redis.RedisError:
                continue
            if address:
                seen.append(int(address[1]))
        best = max(set(seen), key=seen.count, default=None)
        return best if best is not None and seen.count(best) >= 2 else None

    def ready(self) -> bool:
        with redis.Redis(port=self.data_ports[1], socket_timeout=0.5) as r:
            if r.info("replication").get("master_link_status") != "up":
                return False
        with redis.Redis(port=self.sentinel_ports[0], socket_timeout=0.5) as s:
            state = s.execute_command("SENTINEL MASTER", SERVICE)
        return int(state.get("num-other-sentinels", 0)) >= 2 and int(state["num-slaves"]) >= 1

    def kill_primary(self) -> int:
        """SIGKILL the primary; its port."""
        port = self.primary_port()
        assert port is not None
        process = self.processes.pop(port)
        process.send_signal(signal.SIGKILL)
        process.wait()
        return port

    def wait_until(self, check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if check():
                    return
            except redis.RedisError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"timed out after {timeout:g}s waiting for {what}")

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
            process.wait()
        self.processes.clear()


@pytest.fixture(scope="module")
def sentinel_group(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SentinelGroup]:
    """One group per module; a failover changes it for good, so it comes last."""
    group = SentinelGroup(tmp_path_factory.mktemp("sentinel"))
    try:
        group.start()
        yield group
    finally:
        group.stop()
