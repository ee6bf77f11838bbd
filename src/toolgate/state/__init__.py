"""Session state and the stores that keep it.

``base`` owns ``SessionState`` and the narrow ``StateStore`` interface the core needs;
``listing`` the ``SessionListing`` interface operators read; ``memory``, ``sqlite`` and
``redis`` implement both; ``open`` picks one from a URL. Base layer: imports nothing above.
"""

from toolgate.state.base import SessionState, StateStore
from toolgate.state.listing import SessionInfo, SessionListing
from toolgate.state.memory import MemoryStore
from toolgate.state.open import is_store_path, open_store

__all__ = [
    "MemoryStore",
    "SessionInfo",
    "SessionListing",
    "SessionState",
    "StateStore",
    "is_store_path",
    "open_store",
]
