"""The shipped balancer and Kubernetes files agree with the gateway's own settings.

``deploy/haproxy.cfg`` and ``deploy/nginx.conf`` run in ``tests/test_replicas.py``; here
their timings are read against the config model's defaults (a session forgotten by the
balancer before the gateway forgets it, a kept-alive connection the gateway closes under
the balancer), and ``deploy/kubernetes.yaml`` is parsed: its ConfigMap is a valid gateway
config, its probes reach the ports and paths the gateway serves with a Host it accepts,
and its grace period outlasts the preStop pause and the drain.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from toolgate.gateway.config.model import HttpConfig, ToolgateConfig, parse_config
from toolgate.gateway.ingress.guard import LOCAL_NAMES

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def seconds(value: str) -> float:
    """An HAProxy or nginx duration (``500ms``, ``4s``, ``1h``) in seconds."""
    match = re.fullmatch(r"(\d+)(ms|s|m|h|d)?", value)
    assert match, f"not a duration: {value!r}"
    return int(match.group(1)) * UNITS[match.group(2) or "s"]


def directives(path: Path) -> list[list[str]]:
    """Each line's words, comments and blank lines left out."""
    lines = (line.split("#", 1)[0].strip().rstrip(";") for line in path.read_text().splitlines())
    return [line.split() for line in lines if line]


def directive(path: Path, *words: str) -> list[str]:
    """The rest of the one line that starts with ``words``."""
    found = [d[len(words) :] for d in directives(path) if tuple(d[: len(words)]) == words]
    assert len(found) == 1, f"{path.name}: {' '.join(words)!r} appears {len(found)} times"
    return found[0]


# -- HAProxy and nginx ----------------------------------------------------------------------


def test_haproxy_remembers_a_session_as_long_as_the_gateway_does() -> None:
    table = directive(DEPLOY / "haproxy.cfg", "stick-table")
    expire = seconds(table[table.index("expire") + 1])
    assert expire >= ToolgateConfig().idle_ttl


def test_haproxy_gives_a_request_head_as_long_as_the_gateway_does() -> None:
    (timeout,) = directive(DEPLOY / "haproxy.cfg", "timeout", "http-request")
    assert seconds(timeout) == HttpConfig().header_timeout


def test_nginx_closes_an_idle_replica_connection_before_the_gateway_would() -> None:
    (timeout,) = directive(DEPLOY / "nginx.conf", "keepalive_timeout")
    assert seconds(timeout) < HttpConfig().keep_alive_timeout


def test_both_balancers_wait_on_a_silent_stream_for_the_same_hour() -> None:
    haproxy, nginx = DEPLOY / "haproxy.cfg", DEPLOY / "nginx.conf"
    waits = {
        "haproxy server": directive(haproxy, "timeout", "server")[0],
        "haproxy client": directive(haproxy, "timeout", "client")[0],
        "nginx read": directive(nginx, "proxy_read_timeout")[0],
        "nginx send": directive(nginx, "proxy_send_timeout")[0],
    }
    assert {name: seconds(v) for name, v in waits.items()} == dict.fromkeys(waits, 3600.0)


# -- Kubernetes ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def manifest() -> dict[str, dict[str, Any]]:
    """The manifest's objects by kind."""
    documents = [d for d in yaml.safe_load_all((DEPLOY / "kubernetes.yaml").read_text()) if d]
    return {d["kind"]: d for d in documents}


def container(manifest: dict[str, dict[str, Any]]) -> dict[str, Any]:
    (only,) = manifest["Deployment"]["spec"]["template"]["spec"]["containers"]
    found: dict[str, Any] = only
    return found


def option(args: list[str], name: str) -> list[str]:
    return [args[i + 1] for i, arg in enumerate(args) if arg == name]


def test_the_manifests_config_map_is_a_valid_gateway_config_on_redis(
    manifest: dict[str, dict[str, Any]],
) -> None:
    data = json.loads(manifest["ConfigMap"]["data"]["toolgate.json"])
    config = parse_config(data)
    assert config.toolgate.store.startswith("redis://")
    mount = container(manifest)["volumeMounts"][0]["mountPath"]
    assert container(manifest)["args"][:2] == ["serve", f"{mount}/toolgate.json"]


def test_the_probes_reach_the_gateways_port_and_paths_with_a_host_it_accepts(
    manifest: dict[str, dict[str, Any]],
) -> None:
    spec = container(manifest)
    args = spec["args"]
    (port,) = spec["ports"]
    assert option(args, "--port") == [str(port["containerPort"])]
    assert option(args, "--host") == ["0.0.0.0"]
    accepted = {*LOCAL_NAMES, *option(args, "--allow-host")}
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        get = spec[probe]["httpGet"]
        assert (get["path"], get["port"]) == (path, port["name"])
        hosts = [h["value"] for h in get["httpHeaders"] if h["name"].lower() == "host"]
        assert hosts and set(hosts) <= accepted, (probe, hosts)
    service = manifest["Service"]["spec"]
    assert service["ports"][0]["targetPort"] == port["name"]
    assert service["selector"] == manifest["Deployment"]["spec"]["selector"]["matchLabels"]


def test_the_grace_period_outlasts_the_prestop_pause_and_the_drain(
    manifest: dict[str, dict[str, Any]],
) -> None:
    pod = manifest["Deployment"]["spec"]["template"]["spec"]
    pause = container(manifest)["lifecycle"]["preStop"]["sleep"]["seconds"]
    config = parse_config(json.loads(manifest["ConfigMap"]["data"]["toolgate.json"]))
    drain = config.toolgate.http.drain_timeout
    assert pod["terminationGracePeriodSeconds"] > pause + drain
    readiness = container(manifest)["readinessProbe"]
    # a draining replica is found unready well within its drain
    assert readiness["periodSeconds"] * readiness["failureThreshold"] < drain
    # a session is kept on its client's replica as long as the gateway keeps it
    affinity = manifest["Service"]["spec"]["sessionAffinityConfig"]["clientIP"]
    assert affinity["timeoutSeconds"] >= config.toolgate.idle_ttl


# -- the guide quotes the files --------------------------------------------------------------


GUIDE = DEPLOY.parent / "docs" / "guides" / "replicas.md"


@pytest.mark.parametrize(("lang", "shipped"), [("haproxy", "haproxy.cfg"), ("nginx", "nginx.conf")])
def test_every_line_the_guide_quotes_is_in_the_shipped_file(lang: str, shipped: str) -> None:
    text = GUIDE.read_text()
    blocks = re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)
    assert blocks
    lines = {line.strip() for line in (DEPLOY / shipped).read_text().splitlines()}
    quoted = [line.strip() for block in blocks for line in block.splitlines() if line.strip()]
    assert [line for line in quoted if line not in lines] == []
