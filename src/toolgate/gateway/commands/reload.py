"""``toolgate reload``: ask a running gateway to read its config file again.

POSTs to the gateway's ``/admin/reload`` with an operator token (the SHA-256 of which is
in ``toolgate.dashboard.tokens``), read from ``TOOLGATE_OPERATOR_TOKEN`` or a file, never
from the command line and never printed; prints the report. Exit status 0 applied, 1
refused (the problems on stderr, as ``toolgate check`` words them), 2 not reached, not
allowed, or answered with no reload report (the outcome unknown). Edge layer: the
standard library's HTTP client only.
"""

from __future__ import annotations

import http.client
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, TextIO

PATH = "/admin/reload"
TOKEN_ENV = "TOOLGATE_OPERATOR_TOKEN"
URL_ENV = "TOOLGATE_URL"
DEFAULT_URL = "http://127.0.0.1:8765"


def endpoint(url: str) -> str:
    """The reload endpoint of a gateway at ``url`` (its root, or its ``/mcp`` URL)."""
    base = url.rstrip("/").removesuffix("/mcp")
    return base if base.endswith(PATH) else base + PATH


def is_http_url(url: str) -> bool:
    """``url`` names an HTTP server: an ``http`` or ``https`` scheme, a host and, if
    any, a port in range."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range or not a number
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def operator_token(token_file: str | None) -> str | None:
    if token_file is not None:
        return Path(token_file).read_text(encoding="utf-8").strip() or None
    return os.environ.get(TOKEN_ENV, "").strip() or None


def _post(url: str, token: str, timeout: float) -> tuple[int, dict[str, Any] | None, str]:
    """``(status, the JSON object answered or None, the answer's text)``."""
    request = urllib.request.Request(
        url, data=b"", method="POST", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, body = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read()
    text = body.decode("utf-8", "replace")
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    return status, data if isinstance(data, dict) else None, text


def _is_report(status: int, data: dict[str, Any] | None) -> bool:
    """The answer is a reload's report: 200 applied or 422 refused, as the gateway's
    endpoint answers; anything else (a proxy's error page, another server) is not."""
    if data is None or not isinstance(data.get("applied"), bool):
        return False
    return (status, data["applied"]) in ((200, True), (422, False))


def _print_report(data: dict[str, Any], out: TextIO) -> None:
    print(f"reloaded {data.get('config', '')}", file=out)
    for label, key in (
        ("changed", "changed"),
        ("backends added", "added_backends"),
        ("backends removed", "removed_backends"),
        ("backends reconnected", "reconnected_backends"),
        ("groups added", "added_groups"),
        ("groups removed", "removed_groups"),
    ):
        if data.get(key):
            print(f"  {label}: {', '.join(data[key])}", file=out)
    print(
        f"  {data.get('tools', 0)} tools; a removed group left "
        f"{data.get('sessions_changed', 0)} stored session(s)",
        file=out,
    )
    if data.get("sessions_ended"):
        print(
            f"  {data['sessions_ended']} live session(s) ended: no token names their principal",
            file=out,
        )
    for w in data.get("warnings", []):
        print(f"  warning: {w}", file=out)


def _excerpt(text: str) -> str:
    """The start of an answer, on one line, for a message."""
    line = " ".join(text.split())
    return repr(line[:120] + ("..." if len(line) > 120 else "")) if line else "an empty answer"


def run_reload(
    url: str | None = None,
    *,
    token_file: str | None = None,
    as_json: bool = False,
    timeout: float = 120.0,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    given, source = (url, "--url") if url else (os.environ.get(URL_ENV), URL_ENV)
    if given and not is_http_url(given):
        print(f"toolgate: {source} must be an http:// or https:// URL, not {given!r}", file=err)
        return 2
    target = endpoint(given or DEFAULT_URL)
    try:
        token = operator_token(token_file)
    except OSError as exc:
        print(f"toolgate: cannot read the token file {token_file}: {exc.strerror}", file=err)
        return 2
    except UnicodeDecodeError:
        print(f"toolgate: the token file {token_file} is not UTF-8 text", file=err)
        return 2
    if token is None:
        print(
            f"toolgate: no operator token: set {TOKEN_ENV} or give --token-file "
            "(its SHA-256 is in toolgate.dashboard.tokens)",
            file=err,
        )
        return 2
    try:
        status, data, text = _post(target, token, timeout)
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", None) or str(exc) or type(exc).__name__
        print(f"toolgate: cannot reach {target}: {reason}", file=err)
        return 2
    if status in (401, 403, 404, 421):
        error = data.get("error") if data is not None else None
        name = urllib.parse.urlsplit(target).netloc
        why = error or {
            404: "no such endpoint (no operator token configured?)",
            421: f"the gateway does not serve the host name {name!r}; nothing reloaded "
            "(run toolgate reload on its host, or add the name to its --allow-host)",
        }.get(status, _excerpt(text))
        print(f"toolgate: {target} answered {status}: {why}", file=err)
        return 2
    if data is None or not _is_report(status, data):
        error = data.get("error") if data is not None else None
        print(
            f"toolgate: {target} answered {status}, not a reload report: "
            f"{error or _excerpt(text)}; whether the config was reloaded is not known "
            "(the gateway's log says)",
            file=err,
        )
        return 2
    if as_json:
        print(json.dumps(data, indent=2), file=out)
    if status == 200 and data.get("applied"):
        if not as_json:
            _print_report(data, out)
        return 0
    lines = [*data.get("problems", []), *(f"{k}: needs a restart" for k in data.get("restart", []))]
    if not lines:
        lines = [f"{target} answered {status}: refused"]
    for line in lines:
        print(line, file=err)
    print(f"toolgate: reload refused: {len(lines)} problem(s); the running config stays", file=err)
    return 1


__all__ = ["PATH", "endpoint", "run_reload"]
