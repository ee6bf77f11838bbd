#!/usr/bin/env bash
# Creates .venv and installs toolgate with every extra it needs, once per change of
# pyproject.toml. Sourced by scripts/demo.sh and scripts/test.sh; safe to run again.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
py="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$py" -m venv .venv
fi
stamp=".venv/.toolgate-installed"
want="$(sha256sum pyproject.toml | cut -d' ' -f1)-${1:-run}"
if [ ! -f "$stamp" ] || ! grep -qx -- "$want" "$stamp"; then
    .venv/bin/python -m pip install --quiet --upgrade pip
    if [ "${1:-run}" = "dev" ]; then
        .venv/bin/python -m pip install --quiet -e ".[all,dev]"
    else
        .venv/bin/python -m pip install --quiet -e ".[all]"
    fi
    echo "$want" >> "$stamp"
fi
