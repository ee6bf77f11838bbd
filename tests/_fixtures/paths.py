"""Where the shared data lives: ``../shared/data`` relative to the project root; and a
test that must see no tokenizer vocabulary but the one it sets up."""

from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = PROJECT_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        raise RuntimeError(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture
def no_ambient_vocabulary(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The test sees only the vocabularies it sets up, never a developer's own cache
    (a module's autouse fixture asks for it, so it runs before those that set one up)."""
    monkeypatch.delenv("TOOLGATE_TOKENIZER_DIR", raising=False)
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    empty = tmp_path / "empty-tiktoken-cache"
    empty.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(empty))
