"""A real OpenID provider for the OAuth tests: ``openid_provider`` (module scope).

Runs panva's ``oidc-provider`` (npm, installed into ``.tools/oidc`` on first use by
``npm_servers.npm_installed``) through ``tests/servers/oidc_provider.mjs`` on a free
127.0.0.1 port. It issues JWT access tokens by the client_credentials grant; ``restart``
rotates its signing keys. FAILS (never skips) when Node or npm is missing. Imports the
stdlib, pytest, httpx and PyJWT (for generating RSA keys as JWKs); nothing from toolgate.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from _fixtures.mcp_servers import free_port
from _fixtures.npm_servers import npm_installed

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "servers" / "oidc_provider.mjs"
TOOLS = ROOT / ".tools" / "oidc"
MODULE = TOOLS / "node_modules" / "oidc-provider" / "lib" / "index.js"
SCOPES = ["tools:notes", "tools:math", "tools:default"]


def rsa_jwk(kid: str) -> dict[str, Any]:
    """A fresh private RSA signing key as a JWK."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk: dict[str, Any] = RSAAlgorithm.to_jwk(key, as_dict=True)
    return {**jwk, "kid": kid, "use": "sig", "alg": "RS256"}


def ensure_module() -> Path:
    """oidc-provider's entry point, installed with npm when it is not there yet."""
    if shutil.which("node") is None:
        pytest.fail("node is needed for the OpenID provider tests", pytrace=False)
    npm_installed(TOOLS, MODULE.exists, "oidc-provider@9")
    return MODULE


@dataclass
class Client:
    client_id: str
    scope: str
    ttl: int = 300
    claims: dict[str, Any] = field(default_factory=dict)
    client_secret: str = "s3cret-of-the-client"


@dataclass
class OpenIDProvider:
    """One oidc-provider process; ``issuer`` may differ from its own URL (a stranger
    claiming the same issuer with keys of its own)."""

    directory: Path
    clients: Sequence[Client]
    port: int = field(default_factory=free_port)
    issuer: str = ""
    keys: list[dict[str, Any]] = field(default_factory=list)
    proc: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        self.issuer = self.issuer or self.url

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def jwks_url(self) -> str:
        return f"{self.url}/jwks"

    def start(self, keys: list[dict[str, Any]], sign_kid: str) -> None:
        self.keys = keys
        config = {
            "issuer": self.issuer,
            "port": self.port,
            "jwks": {"keys": keys},
            "sign_kid": sign_kid,
            "scopes": SCOPES,
            "clients": [c.__dict__ for c in self.clients],
        }
        path = self.directory / f"oidc-{self.port}.json"
        path.write_text(json.dumps(config))
        log = (self.directory / f"oidc-{self.port}.log").open("ab")
        self.proc = subprocess.Popen(
            ["node", str(SCRIPT), str(ensure_module()), str(path)],
            stdout=subprocess.PIPE,
            stderr=log,
            stdin=subprocess.DEVNULL,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if line.strip() != b"listening":
            self.stop()
            raise RuntimeError(f"oidc-provider did not start: {line!r}; see {log.name}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def restart(self, keys: list[dict[str, Any]], sign_kid: str) -> None:
        """Stop and start again on the same port with another key set (rotation)."""
        self.stop()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                self.start(keys, sign_kid)
                return
            except RuntimeError:  # the port may still be in TIME_WAIT for a moment
                time.sleep(0.2)
        self.start(keys, sign_kid)

    def token(self, client_id: str, resource: str, scope: str | None = None) -> str:
        """An access token by the client_credentials grant, for ``resource``."""
        client = next(c for c in self.clients if c.client_id == client_id)
        form = {
            "grant_type": "client_credentials",
            "client_id": client.client_id,
            "client_secret": client.client_secret,
            "resource": resource,
            "scope": scope if scope is not None else client.scope,
        }
        response = httpx.post(f"{self.url}/token", data=form, timeout=10)
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["token_type"].lower() == "bearer"
        token: str = body["access_token"]
        return token


CLIENTS = (
    Client("ci-agent", "tools:notes", claims={"toolgate_trust": "verified", "kind": "ci"}),
    Client("viewer", "tools:notes tools:math", claims={"toolgate_trust": "declared"}),
    Client("brief", "tools:notes", ttl=4),
)


@pytest.fixture(scope="module")
def openid_provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenIDProvider]:
    provider = OpenIDProvider(tmp_path_factory.mktemp("oidc"), CLIENTS)
    provider.start([rsa_jwk("key-1")], "key-1")
    try:
        yield provider
    finally:
        provider.stop()
