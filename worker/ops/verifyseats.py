"""``ladder verify``'s check of ``game_players``: the rows of each draw and team game are the
ones its lived decision makes (``worker.store.game_players.rows``: each player as resolved,
its team's place, the teams, whether a draw, the audit row's times), and no row is of an
event the log does not hold as such a game.

The table is what every reader of "a player's games" reads beside the audit log (the games
list, the history, ``ban --void-since``, erase): a row missing, or left under an erased id,
would go unseen by the replay, which reads the payloads. The rows are read a chunk of games at
a time (one query per ``CHUNK`` draws and team games, none on a ladder of 1v1 wins), then
counted once against the rows the ladder holds from the history's start.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from engine import Decision
from engine.ladder import MatchFinished
from worker.store import game_players
from worker.store.tables import events
from worker.store.tables import game_players as table

CHUNK = 1000
_COLUMNS = ("player_id", "rank", "teams", "draw", "ended_at", "processed_at")
Seat = tuple[Any, ...]  # a row's _COLUMNS
Differ = Callable[[str, str | None, str, Any, Any], None]  # Mismatch's fields


class Seats:
    """Collects each draw's and team game's rows as its decision makes them; compares a
    chunk of games at a time with the stored rows (``finish`` compares the rest and counts
    the rows of events it did not see)."""

    def __init__(self, engine: Engine, ladder: str, differ: Differ) -> None:
        self.engine, self.ladder, self.differ = engine, ladder, differ
        self.made: dict[str, set[Seat]] = {}
        self.compared = 0  # rows found as made

    def event(self, event: object, decision: Decision, processed_at: datetime) -> None:
        """A stored event and its lived decision: a draw's or team game's rows are due."""
        if not decision.players or not isinstance(event, MatchFinished):
            return
        ranks = [team.rank for team in event.teams]
        rows = game_players.rows(
            self.ladder, event.event_id, decision.players, ranks, event.ended_at, processed_at
        )
        self.made[event.event_id] = {tuple(row[c] for c in _COLUMNS) for row in rows}
        if len(self.made) >= CHUNK:
            self.flush()

    def flush(self) -> None:
        part, self.made = self.made, {}
        if not part:
            return
        query = select(table.c.event_id, *(table.c[c] for c in _COLUMNS)).where(
            table.c.ladder == self.ladder, table.c.event_id.in_(sorted(part))
        )
        stored: dict[str, set[Seat]] = {event_id: set() for event_id in part}
        with self.engine.connect() as conn:
            for event_id, *columns in conn.execute(query):
                stored[event_id].add(tuple(columns))
        for event_id, made in part.items():
            kept = stored[event_id]
            self.compared += len(made & kept)
            for seat in sorted(kept - made, key=str):
                self.differ(event_id, seat[0], "game_players row", _shown(seat), None)
            for seat in sorted(made - kept, key=str):
                self.differ(event_id, seat[0], "game_players row", None, _shown(seat))

    def finish(self, since: datetime | None) -> None:
        """Compare the rest; then count the rows the ladder holds from ``since`` (None: all
        of them): more than were found as made, and those of an event the log does not hold
        as a draw or team game are named (the others were, game by game)."""
        self.flush()
        where = [table.c.ladder == self.ladder]
        if since is not None:
            where.append(table.c.processed_at >= since)
        with self.engine.connect() as conn:
            held = conn.execute(select(func.count()).select_from(table).where(*where)).scalar()
            if held == self.compared:
                return
            game = events.c.payload["teams"].isnot(None) | events.c.payload["players"].isnot(None)
            query = (
                select(table.c.event_id, table.c.player_id)
                .select_from(table)
                .outerjoin(
                    events,
                    (events.c.ladder == table.c.ladder) & (events.c.event_id == table.c.event_id),
                )
                .where(*where, events.c.event_id.is_(None) | ~game)
                .order_by(table.c.event_id, table.c.player_id)
            )
            orphans = conn.execute(query).all()
        for event_id, player_id in orphans:
            self.differ(event_id, player_id, "game_players row", "of no draw or team game", None)


def _shown(seat: Seat) -> dict[str, Any]:
    return dict(zip(_COLUMNS, seat, strict=True))
