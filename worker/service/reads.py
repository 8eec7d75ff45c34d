"""What the read side refuses: the errors and the identifier rule both read models share.

The leaderboards (``worker.boards.reader``) and the audit-store history
(``worker.store.history``) raise these, so the CLI and the API map them to one answer each.
"""

from __future__ import annotations

import unicodedata

MAX_ID_LENGTH = 128


class InvalidArgument(ValueError):
    """A parameter that can never be satisfied: bad board name, size, cube, ..."""


class UnknownPlayer(LookupError):
    """The player is not on the board, or has no card on the ladder."""


def is_identifier(value: str) -> bool:
    """Whether ``value`` could be a player id or season name (SPEC 3: 1-128 characters)."""
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_ID_LENGTH or value.isspace():
        return False
    return not any(unicodedata.category(c) in ("Cc", "Cs") for c in value)
