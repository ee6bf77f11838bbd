"""Session state and the stores that keep it.

``base`` owns ``SessionState`` and the narrow ``StateStore`` interface the core needs;
``listing`` the ``SessionListing`` interface operators read; ``memory``, ``sqlite`` and
``redis`` implement both; ``open`` picks one from a URL
(and judges a URL's form, ``check_store_url``). Base layer: imports nothing above.
"""

from toolgate.state.base import SessionState, StateStore
from toolgate.state.listing import SessionInfo, SessionListing
from toolgate.state.memory import MemoryStore
from toolgate.state.open import check_store_url, is_store_path, open_store

__all__ = [
    "MemoryStore",
    "SessionInfo",
    "SessionListing",
    "SessionState",
    "StateStore",
    "check_store_url",
    "is_store_path",
    "open_store",
]
