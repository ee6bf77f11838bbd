"""Session state and the stores that keep it.

Owns ``SessionState`` and the async ``StateStore`` interface with its memory
implementation; SQLite and Redis live beside it. Base layer: imports nothing above it.
"""

from toolgate.state.base import SessionInfo, SessionState, StateStore, open_store
from toolgate.state.memory import MemoryStore

__all__ = ["MemoryStore", "SessionInfo", "SessionState", "StateStore", "open_store"]
