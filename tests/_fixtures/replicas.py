"""Gateway replicas behind a real HAProxy, for the replica tests and benchmark.

``ReplicaSet`` runs N ``toolgate serve --transport http`` processes on free 127.0.0.1
ports, sharing one Redis, each fronting ``tests/servers/gw_replica.py`` (which names the
replica in every answer), and Debian's ``haproxy`` on the repository's own
``deploy/haproxy.cfg``, its addresses given through the environment. A missing binary
FAILS (never skips). Imports the stdlib, pytest and the fixtures; nothing from toolgate.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from _fixtures.gateway import ALICE_TOKEN, BOB_TOKEN, gateway_env, sha256, toolgate_argv
from _fixtures.mcp_servers import free_port
from _fixtures.redis_server import INSTALL_HINT, RedisServer

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
SERVERS = ROOT / "tests" / "servers"
#: the public name clients and the balancer's health check use; replicas allow it
PUBLIC_HOST = "mcp.example.test"
#: ``finish`` runs only in stage ``started``, which ``begin`` enters: a principal's flow
STAGES = {
    "initial": "idle",
    "stages": [
        {"name": "idle", "transitions": [{"on": "begin", "to": "started"}]},
        {"name": "started"},
    ],
    "tool_stages": {"finish": ["started"]},
}
HAPROXY_HINT = "install it with `apt-get update && apt-get install -y haproxy`"
#: the gateway's answer to a reload: applied, or refused with the reason
ANSWER = re.compile(r"config (reloaded|reload refused) \(")
NGINX_HINT = "install it with `apt-get update && apt-get install -y nginx-light`"


def replica_config(tmp: Path, store: str, **toolgate: Any) -> Path:
    """One config for every replica: the replica's name comes from its environment."""
    config = {
        "mcpServers": {
            "replica": {
                "command": sys.executable,
                "args": [str(SERVERS / "gw_replica.py"), "--name", "${TOOLGATE_REPLICA}"],
            }
        },
        "toolgate": {
            "store": store,
            "stages": STAGES,
            "identity": {
                "default": {"id": "local", "trust": "declared", "scope": ["*"]},
                "tokens": {
                    sha256(ALICE_TOKEN): {"id": "alice", "trust": "verified", "scope": ["*"]},
                    sha256(BOB_TOKEN): {"id": "bob", "trust": "declared", "scope": ["*"]},
                },
            },
            "events": {"logging": False},
            **toolgate,
        },
    }
    path = tmp / "toolgate.json"
    path.write_text(json.dumps(config, indent=2))
    return path


def _get(url: str, headers: Mapping[str, str] | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            status: int = response.status
            return status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


@dataclass
class Replica:
    """One ``toolgate serve`` process; a replacement reuses its name and port."""

    name: str
    config: Path
    log: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The replica's own MCP endpoint, past the balancer."""
        return f"http://{self.address}/mcp"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        """Start and return once ``/readyz`` answers 200."""
        argv = [*toolgate_argv(), "serve", str(self.config), "--transport", "http"]
        argv += ["--port", str(self.port), "--allow-host", PUBLIC_HOST]
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=gateway_env(TOOLGATE_REPLICA=self.name),
            )
        self.wait_ready()

    def wait_ready(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                raise RuntimeError(f"replica {self.name} exited early:\n{self.tail()}")
            if _listening(self.port) and self.readyz() == 200:
                return
            time.sleep(0.05)
        raise RuntimeError(f"replica {self.name} was not ready in {timeout}s:\n{self.tail()}")

    def readyz(self) -> int:
        return _get(f"http://{self.address}/readyz")[0]

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""

    def kill(self) -> None:
        """SIGKILL: the process dies with whatever it was doing."""
        if self.running:
            assert self.proc is not None
            self.proc.kill()
            self.proc.wait(timeout=10)

    def signal(self, signum: int) -> None:
        if self.running:
            assert self.proc is not None
            self.proc.send_signal(signum)

    def reload(self, timeout: float = 30.0) -> str:
        """SIGHUP, then the gateway's log line saying it applied (or refused) the file."""
        said = self.reloads()
        self.signal(signal.SIGHUP)
        deadline = time.monotonic() + timeout
        while len(answers := self.reloads()) == len(said):
            if time.monotonic() > deadline:
                raise RuntimeError(f"replica {self.name} did not reload:\n{self.tail()}")
            time.sleep(0.05)
        return answers[-1]

    def reloads(self) -> list[str]:
        lines = self.log.read_text(errors="replace").splitlines() if self.log.exists() else []
        # The answer lines only: "catalog synced after the config reload ..." is logged
        # by the same reload, sometimes before its answer.
        return [line for line in lines if ANSWER.search(line)]

    def wait(self, timeout: float = 30.0) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout=timeout)

    def stop(self) -> None:
        if self.running:
            assert self.proc is not None
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


@dataclass
class Balancer:
    """``haproxy -f deploy/haproxy.cfg -db``, every address from the environment."""

    replicas: list[Replica]
    directory: Path
    config: Path = DEPLOY / "haproxy.cfg"
    port: int = field(default_factory=free_port)
    #: the config's server lines; those beyond ``replicas`` get a port nobody listens on
    servers: int = 3
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def admin(self) -> Path:
        return self.directory / "haproxy.sock"

    @property
    def log(self) -> Path:
        return self.directory / "haproxy.log"

    def environment(self) -> dict[str, str]:
        env = {
            **os.environ,
            "TOOLGATE_LB_BIND": f"127.0.0.1:{self.port}",
            "TOOLGATE_LB_ADMIN": str(self.admin),
            "TOOLGATE_HOST": PUBLIC_HOST,
        }
        for number in range(1, self.servers + 1):
            replica = self.replicas[number - 1] if number <= len(self.replicas) else None
            address = replica.address if replica else f"127.0.0.1:{free_port()}"
            env[f"TOOLGATE_REPLICA_{number}"] = address
        return env

    def start(self) -> None:
        binary = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin")
        if binary is None:
            raise RuntimeError(f"haproxy binary not found on PATH: {HAPROXY_HINT}")
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [binary, "-f", str(self.config), "-db"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.environment(),
            )
        deadline = time.monotonic() + 10
        while not (_listening(self.port) and self.admin.exists()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"haproxy did not start:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.02)

    def command(self, line: str) -> str:
        """One command on HAProxy's runtime API (its stats socket)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(2)
            sock.connect(str(self.admin))
            sock.sendall(line.encode() + b"\n")
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def states(self) -> dict[str, bool]:
        """Each server's name and whether HAProxy holds it up (operational state 2)."""
        states = {}
        for line in self.command("show servers state toolgate").splitlines():
            fields = line.split()
            if len(fields) > 5 and fields[1] == "toolgate":
                states[fields[3]] = fields[5] == "2"
        return states

    def wait_states(self, up: Mapping[str, bool], timeout: float = 15.0) -> None:
        """Wait until the named servers (``gw1``...) are up or down as given."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            states = self.states()
            if all(states.get(name) == want for name, want in up.items()):
                return
            time.sleep(0.05)
        raise RuntimeError(f"haproxy servers {self.states()} never reached {dict(up)}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


NGINX_SERVERS = ("10.0.0.11:8765", "10.0.0.12:8765", "10.0.0.13:8765")


@dataclass
class Nginx:
    """nginx on ``deploy/nginx.conf``, its replica addresses and port put in its text
    (nginx reads no environment): the rest of the file runs as shipped."""

    replicas: list[Replica]
    directory: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @staticmethod
    def argv(config: Path, directory: Path, *extra: str) -> list[str]:
        binary = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin")
        if binary is None:
            raise RuntimeError(f"nginx binary not found: {NGINX_HINT}")
        settings = f"pid {directory / 'nginx.pid'}; daemon off;"
        return [binary, "-c", str(config), "-p", str(directory), "-e", "stderr", "-g", settings]

    def start(self) -> None:
        text = (DEPLOY / "nginx.conf").read_text()
        addresses = [r.address for r in self.replicas]
        addresses += [f"127.0.0.1:{free_port()}" for _ in NGINX_SERVERS[len(addresses) :]]
        for shipped, address in zip(NGINX_SERVERS, addresses, strict=True):
            assert f"server {shipped} " in text, shipped
            text = text.replace(f"server {shipped} ", f"server {address} ")
        assert "listen 8080;" in text
        text = text.replace("listen 8080;", f"listen 127.0.0.1:{self.port};")
        config = self.directory / "nginx.conf"
        config.write_text(text)
        log = self.directory / "nginx.log"
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                self.argv(config, self.directory), stdout=out, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + 10
        while not _listening(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"nginx did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.02)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


@dataclass
class ReplicaSet:
    """N replicas on one Redis behind one HAProxy; ``gw1`` is ``replicas[0]``."""

    replicas: list[Replica]
    balancer: Balancer

    @property
    def url(self) -> str:
        return self.balancer.url

    def server(self, replica: Replica) -> str:
        """The replica's server name in HAProxy's config."""
        return f"gw{self.replicas.index(replica) + 1}"

    def by_name(self, name: str) -> Replica:
        return next(r for r in self.replicas if r.name == name)

    def all_up(self) -> None:
        """Restart what is not running; return once HAProxy holds every replica up (and
        the config's spare server lines, which point at no replica, down)."""
        for replica in self.replicas:
            if not replica.running:
                replica.start()
        states = {f"gw{n}": False for n in range(1, self.balancer.servers + 1)}
        states.update({self.server(r): True for r in self.replicas})
        self.balancer.wait_states(states)

    def reload(self) -> None:
        """Reload every replica (SIGHUP), one after another; each must apply the file."""
        for replica in self.replicas:
            said = replica.reload()
            assert "config reloaded" in said, said

    def stop(self) -> None:
        self.balancer.stop()
        with ThreadPoolExecutor(len(self.replicas)) as pool:
            list(pool.map(Replica.stop, self.replicas))


@dataclass
class ReplicaSetup:
    """What ``start_replicas`` needs: a temp dir, a Redis, and config overrides."""

    directory: Path
    store: str
    count: int = 2
    toolgate: dict[str, Any] = field(default_factory=dict)


def start_replicas(setup: ReplicaSetup) -> ReplicaSet:
    config = replica_config(setup.directory, setup.store, **setup.toolgate)
    replicas = [
        Replica(f"r{n}", config, setup.directory / f"r{n}.log") for n in range(1, setup.count + 1)
    ]
    balancer = Balancer(replicas, setup.directory)
    replica_set = ReplicaSet(replicas, balancer)
    try:
        with ThreadPoolExecutor(len(replicas)) as pool:
            list(pool.map(Replica.start, replicas))
        balancer.start()
        replica_set.all_up()
    except BaseException:
        replica_set.stop()
        raise
    return replica_set


@pytest.fixture(scope="module")
def replica_set(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplicaSet]:
    """Two replicas on their own ``redis-server``, behind HAProxy."""
    tmp = tmp_path_factory.mktemp("replicas")
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail(f"redis-server binary not found on PATH: {INSTALL_HINT}", pytrace=False)
    redis = RedisServer(binary, free_port(), tmp)
    try:
        redis.start()
        replica_set = start_replicas(ReplicaSetup(tmp, redis.url))
    except (OSError, RuntimeError) as exc:
        redis.stop()
        pytest.fail(f"the replicas could not start: {exc}", pytrace=False)
    try:
        yield replica_set
    finally:
        replica_set.stop()
        redis.stop()
