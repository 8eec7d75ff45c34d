"""A player's card as every entry point shows it: the Redis card with the ban's start.

The card's numbers come from the player hash (``worker.boards.reader.card``); a banned
player's card also says since when, which the moderation log in PostgreSQL holds
(``worker.store.history.banned_since``), so the JSON card, ``ladder player`` and the console
say the same, in the same lines (``facts``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from sqlalchemy.engine import Engine

from engine import display_rating
from worker.boards import reader
from worker.ladders import LadderConfig
from worker.store import history


def card(redis: reader.Client, engine: Engine, ladder: str, player: str) -> reader.Card:
    """The player's card; ``UnknownPlayer`` if the ladder has no player hash for them."""
    found = reader.card(redis, ladder, player)
    if not found.banned:
        return found
    return replace(found, banned_since=history.banned_since(engine, ladder, player))


def facts(
    ladder_config: LadderConfig, found: reader.Card, when: Callable[[str | None], str]
) -> list[tuple[str, str]]:
    """The card's lines, label and value, as ``ladder player`` and the console show them:
    the ladder's own lines (the deviation and the board's score where the ruleset keeps them,
    experience where it keeps one, boosted points where the ladder has that board) and the
    link and ban where there are; ``when`` writes a time."""
    rules = ladder_config.current
    lines = [
        ("Rating", display_rating(rules, found.rating)),
        ("Rank", f"#{found.rank}" if found.rank is not None else "not on the leaderboard"),
    ]
    start = rules.start_deviation
    if start is not None:  # keeps_deviation: glicko2, openskill; a new player's stands
        deviation = start if found.deviation is None else found.deviation
        lines.insert(1, ("Deviation", f"± {display_rating(rules, deviation)}"))
        score = rules.board_score(found.rating, found.deviation)
        if score != found.rating:
            lines.insert(2, ("Board score", display_rating(rules, score)))
    lines.append(("Rated games", str(found.games)))
    if ladder_config.current.experience:
        lines.append(("Experience", str(found.experience)))
    if ladder_config.boosted_board:
        lines.append(("Boosted points", str(found.boosted)))
    lines.append(("Last game", when(found.last_game_at)))
    if found.linked_to:
        lines.append(("Linked to", found.linked_to))
    if found.banned:
        lines.append(("Banned", f"since {when(found.banned_since)}"))
    return lines
