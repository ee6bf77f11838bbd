"""How long a toolgate process takes to end once its host is done with it.

A host stops a stdio server by closing its stdin, then (the MCP SDK's client) waits 2 s
before it sends SIGTERM. Measured here, from the moment stdin closes to the moment the
process is reaped, with the CPU the process (and the backends it waited for) spent:

- ``toolgate serve`` over stdio in front of the demo's tracker backend, after an
  ``initialize`` and a ``tools/list``;
- the tracker backend alone (``python -m toolgate.demo.tracker``), after ``initialize``.

Each runs as shipped (``toolgate.exiting.quick_exit`` before the interpreter ends) and
as before it (the same command with ``gc.freeze`` replaced by a no-op), alternately,
``RUNS`` times each; medians. Writes ``benchmarks/RESULTS.md`` between the ``exit``
markers.

Run: ``.venv/bin/python benchmarks/bench_exit.py``
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from search_eval import RESULTS, write_section  # noqa: E402

BEGIN, END = "<!-- exit:begin -->", "<!-- exit:end -->"
RUNS = 7
#: the command as before ``quick_exit``: the same code, with nothing frozen
NO_FREEZE = "import gc; gc.freeze = lambda: None; "
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench_exit", "version": "1"},
    },
}


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def gateway(config: Path, *, freeze: bool) -> list[str]:
    code = "import sys; from toolgate.cli import run; sys.argv[0] = 'toolgate'; run()"
    return [*python(("" if freeze else NO_FREEZE) + code), "serve", str(config)]


def backend(db: Path, *, freeze: bool) -> list[str]:
    code = f"from toolgate.demo.tracker import main; main(['--db', {str(db)!r}])"
    return python(("" if freeze else NO_FREEZE) + code)


def send(proc: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


def answer(proc: subprocess.Popen[bytes]) -> dict[str, object]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError(f"{proc.args!r} closed stdout before answering")
    reply: dict[str, object] = json.loads(line)
    return reply


def end_once(argv: Sequence[str], *, list_tools: bool) -> tuple[float, float]:
    """Seconds from stdin's close to the reap, and the CPU seconds of the whole run."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdin is not None
    send(proc, INITIALIZE)
    answer(proc)
    send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    if list_tools:
        send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        answer(proc)
    closed = time.perf_counter()
    proc.stdin.close()
    _, status, usage = os.wait4(proc.pid, 0)
    ended = time.perf_counter() - closed
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv!r} exited {proc.returncode}")
    return ended, usage.ru_utime + usage.ru_stime


#: how long the MCP SDK's host waits after closing stdin before it sends SIGTERM
HOST_GRACE = 2.0
SLOWEST: dict[bool, float] = {True: 0.0, False: 0.0}


def measure(name: str, argv_of: dict[bool, list[str]], *, list_tools: bool) -> list[str]:
    samples: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for _ in range(RUNS):
        for freeze in (False, True):  # alternately, so both meet the same load
            samples[freeze].append(end_once(argv_of[freeze], list_tools=list_tools))
    for freeze, runs in samples.items():
        SLOWEST[freeze] = max(SLOWEST[freeze], *(s[0] for s in runs))
    row = [name]
    for freeze in (False, True):
        ends = [s[0] for s in samples[freeze]]
        cpu = [s[1] for s in samples[freeze]]
        row += [f"{statistics.median(ends) * 1000:,.0f} ms", f"{max(ends) * 1000:,.0f} ms"]
        row.append(f"{statistics.median(cpu):.2f} s")
    return row


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "demo.db"
        configs = {}
        for freeze in (False, True):  # the backend as before, or as shipped, too
            command, *args = backend(db, freeze=freeze)
            configs[freeze] = Path(tmp) / f"toolgate-{freeze}.json"
            tracker = {"command": command, "args": args}
            configs[freeze].write_text(json.dumps({"mcpServers": {"tracker": tracker}}))
        rows = [
            measure(
                "`toolgate serve` (stdio) and its tracker backend",
                {f: gateway(configs[f], freeze=f) for f in (False, True)},
                list_tools=True,
            ),
            measure(
                "the tracker backend alone",
                {f: backend(db, freeze=f) for f in (False, True)},
                list_tools=False,
            ),
        ]
    load = os.getloadavg()[0]
    lines = [
        "From stdin's close to the reap, and the CPU of the whole run (the process and the "
        "backends it waited for): as before `toolgate.exiting.quick_exit` (the same "
        f"command, `gc.freeze` a no-op) and as shipped; medians of {RUNS} runs each, "
        f"alternating. Python {platform.python_version()}, {os.cpu_count()} CPUs, load "
        f"average {load:.1f} when measured (a shared machine). "
        "`.venv/bin/python benchmarks/bench_exit.py`.",
        "",
        "| process | end, before | slowest, before | CPU, before | end, quick exit "
        "| slowest, quick exit | CPU, quick exit |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
        f"Verdict: the slowest end was {SLOWEST[True] * 1000:,.0f} ms with the quick exit "
        f"and {SLOWEST[False] * 1000:,.0f} ms without it; a host waits "
        f"{HOST_GRACE:g} s before SIGTERM: "
        + ("met" if SLOWEST[True] < HOST_GRACE / 10 else "MISSED")
        + " (target: a tenth of that, 200 ms, on this machine).",
    ]
    body = "\n".join(lines)
    print(body)
    write_section(RESULTS, BEGIN, END, body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
