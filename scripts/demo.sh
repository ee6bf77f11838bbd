#!/usr/bin/env bash
# The demo gateway on embedded defaults: creates the virtualenv on first run, then
# runs `toolgate demo` (pass --transport http, --tour, ... through).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/bootstrap.sh run >&2
exec .venv/bin/toolgate demo "$@"
