"""Where the shared data lives: ``../shared/data`` relative to the project root."""

from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = PROJECT_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        raise RuntimeError(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA
