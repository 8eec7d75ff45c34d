"""A player's card as every entry point shows it: the Redis card with the ban's start.

The card's numbers come from the player hash (``worker.boards.reader.card``); a banned
player's card also says since when, which the moderation log in PostgreSQL holds
(``worker.store.history.banned_since``), so the JSON card, ``ladder player`` and the console
say the same.
"""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy.engine import Engine

from worker.boards import reader
from worker.store import history


def card(redis: reader.Client, engine: Engine, ladder: str, player: str) -> reader.Card:
    """The player's card; ``UnknownPlayer`` if the ladder has no player hash for them."""
    found = reader.card(redis, ladder, player)
    if not found.banned:
        return found
    return replace(found, banned_since=history.banned_since(engine, ladder, player))
