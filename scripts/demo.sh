#!/usr/bin/env bash
# The demo gateway on embedded defaults: creates the virtualenv on first run, then
# runs `toolgate demo` (pass --transport http, --tour, ... through).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/bootstrap.sh run >&2
# Offline machines: count tokens with the o200k vocabulary shipped beside the project,
# when it is there (elsewhere tiktoken's own cache is used, or chars/4).
if [ -z "${TOOLGATE_TOKENIZER_DIR:-}" ] && [ -f ../shared/data/tokenizers/o200k_base.tiktoken ]; then
    export TOOLGATE_TOKENIZER_DIR="$(cd ../shared/data/tokenizers && pwd)"
fi
exec .venv/bin/toolgate demo "$@"
