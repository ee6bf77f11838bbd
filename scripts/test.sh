#!/usr/bin/env bash
# The whole test suite on a fresh machine: virtualenv, dependencies, a redis-server
# from Debian's packages, then lint, format, types, import layers and pytest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/bootstrap.sh dev

need_pkgs=()
command -v redis-server >/dev/null 2>&1 || need_pkgs+=(redis-server)
# the store's failover tests run a primary, a replica and three sentinels
command -v redis-sentinel >/dev/null 2>&1 || need_pkgs+=(redis-sentinel)
# the dashboard and WebMCP tests drive Debian's Chromium (no downloaded browsers)
command -v chromium-headless-shell >/dev/null 2>&1 || command -v chromium >/dev/null 2>&1 \
    || need_pkgs+=(chromium-headless-shell)
# the OAuth tests run a real OpenID provider (npm's oidc-provider, installed on first use)
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || need_pkgs+=(nodejs npm)
# the replica tests run the shipped balancer configurations (deploy/) in real HAProxy and nginx
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || need_pkgs+=(haproxy)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need_pkgs+=(nginx-light)
if [ "${#need_pkgs[@]}" -gt 0 ]; then
    echo "installing ${need_pkgs[*]} from Debian's packages"
    if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

export PATH="$root/.venv/bin:$PATH"
echo "== ruff check";        ruff check src tests benchmarks examples
echo "== ruff format";       ruff format --check src tests benchmarks examples
echo "== mypy --strict src"; mypy --strict src
echo "== mypy tests";        mypy tests  # strict: settings in pyproject.toml
echo "== import layers";     lint-imports
# not -q: quiet mode hides the warnings that --strict counts, so a broken link passed
echo "== mkdocs --strict";   NO_MKDOCS_2_WARNING=1 mkdocs build --strict --site-dir "$(mktemp -d)"
# four workers (pytest-xdist), each taking whole files so a module's shared gateway starts
# once: the tests mostly wait on subprocesses they start (gateways, backends, balancers),
# so two cores are busier with four files at a time than with two (measured in one run
# on a loaded 2-core machine: 1,033 s with two workers, 689 s with four)
echo "== pytest";            python -m pytest -q -p no:cacheprovider -n 4 --dist loadfile "$@"
