"""The identifier rule every reader shares: what can be a player id or a season name.

The leaderboards (``worker.boards.reader``), the audit-store history (``worker.store.history``)
and the game search (``worker.store.games``) refuse anything else before asking a store.
"""

from __future__ import annotations

import unicodedata

MAX_ID_LENGTH = 128


def is_identifier(value: str) -> bool:
    """Whether ``value`` could be a player id or season name (SPEC 3: 1-128 characters)."""
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_ID_LENGTH or value.isspace():
        return False
    return not any(unicodedata.category(c) in ("Cc", "Cs") for c in value)
