"""PostgreSQL adapter: everything the service reads and writes inside one batch transaction.

Concurrency: the service locks every player a batch touches with ``SELECT ... FOR UPDATE``
in one sorted order, so two games of one player never both start from the same old rating
and two workers cannot deadlock on player rows. Missing player rows are created first in
their own short transaction (sorted, ``ON CONFLICT DO NOTHING``) so that creating a row never
holds a lock while waiting for another.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import and_, bindparam, or_, select, tuple_, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from worker.db import events, links, players, rating_changes, tournaments

PlayerKey = tuple[str, str]  # (ladder, player_id)


@dataclass
class PlayerRecord:
    """A player's row, mutated in memory by the service and written back once per batch."""

    ladder: str
    player_id: str
    rating: float
    rated_games: int = 0
    experience: int = 0
    listed: bool = False
    boosted_points: int = 0
    email_verified: bool = False
    display_name_chosen: bool = False
    linked_to: str | None = None
    version: int = 0
    last_game_at: datetime | None = None
    updated_at: datetime | None = None
    dirty: bool = field(default=False, compare=False)

    @property
    def key(self) -> PlayerKey:
        return (self.ladder, self.player_id)

    def changed(self, at: datetime) -> None:
        self.version += 1
        self.updated_at = at
        self.dirty = True


PLAYER_COLUMNS = (
    "rating",
    "rated_games",
    "experience",
    "listed",
    "boosted_points",
    "email_verified",
    "display_name_chosen",
    "linked_to",
    "version",
    "last_game_at",
    "updated_at",
)


@dataclass(frozen=True)
class WindowGame:
    event_id: str
    winner_id: str
    loser_id: str
    ended_at: datetime
    rated: bool


def _insert(conn: Connection) -> Any:
    return sqlite.insert if conn.dialect.name == "sqlite" else postgresql.insert


def chunks(items: Sequence[Any], size: int = 500) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def ensure_players(engine: Engine, starts: dict[PlayerKey, float], now: datetime) -> None:
    """Create missing player rows (committed at once, in sorted order)."""
    if not starts:
        return
    rows = [
        {"ladder": ladder, "player_id": pid, "rating": starts[(ladder, pid)], "updated_at": now}
        for ladder, pid in sorted(starts)
    ]
    with engine.begin() as conn:
        # One cached statement run with executemany: a multi-row VALUES insert would be
        # compiled afresh by SQLAlchemy for every batch.
        conn.execute(_insert(conn)(players).on_conflict_do_nothing(), rows)


def lock_players(conn: Connection, keys: Iterable[PlayerKey]) -> dict[PlayerKey, PlayerRecord]:
    ordered = sorted(set(keys))
    found: dict[PlayerKey, PlayerRecord] = {}
    for part in chunks(ordered):
        query = (
            select(players)
            .where(tuple_(players.c.ladder, players.c.player_id).in_(list(part)))
            .order_by(players.c.ladder, players.c.player_id)
            .with_for_update()
        )
        for row in conn.execute(query).mappings():
            record = PlayerRecord(**{k: row[k] for k in ("ladder", "player_id", *PLAYER_COLUMNS)})
            found[record.key] = record
    return found


def load_players(conn: Connection, keys: Iterable[PlayerKey]) -> dict[PlayerKey, PlayerRecord]:
    """Read player rows without locking (for read-only projection rebuilds)."""
    found: dict[PlayerKey, PlayerRecord] = {}
    for part in chunks(sorted(set(keys))):
        query = select(players).where(tuple_(players.c.ladder, players.c.player_id).in_(list(part)))
        for row in conn.execute(query).mappings():
            record = PlayerRecord(**{k: row[k] for k in ("ladder", "player_id", *PLAYER_COLUMNS)})
            found[record.key] = record
    return found


def existing_events(conn: Connection, keys: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
    seen: set[tuple[str, str]] = set()
    for part in chunks(sorted(set(keys))):
        query = select(events.c.ladder, events.c.event_id).where(
            tuple_(events.c.ladder, events.c.event_id).in_(list(part))
        )
        seen.update((ladder, event_id) for ladder, event_id in conn.execute(query))
    return seen


def load_links(conn: Connection, ladder: str, ids: Iterable[str]) -> list[tuple[str, str]]:
    """(anonymous_id, account_id) links in which any of ``ids`` takes part, on either side."""
    ids = sorted(set(ids))
    found: list[tuple[str, str]] = []
    for part in chunks(ids):
        query = select(links.c.anonymous_id, links.c.account_id).where(
            links.c.ladder == ladder,
            or_(links.c.anonymous_id.in_(list(part)), links.c.account_id.in_(list(part))),
        )
        found.extend((a, b) for a, b in conn.execute(query))
    return found


def settled_tournaments(conn: Connection, keys: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
    keys = sorted(set(keys))
    if not keys:
        return set()
    query = select(tournaments.c.ladder, tournaments.c.tournament_id).where(
        tuple_(tournaments.c.ladder, tournaments.c.tournament_id).in_(keys)
    )
    return {(a, b) for a, b in conn.execute(query)}


def window_games(
    conn: Connection, ladder: str, ids: Iterable[str], since: datetime, until: datetime
) -> list[WindowGame]:
    """Ranked games of these players that ended in [since, until): for K and pair limits."""
    ids = sorted(set(ids))
    found: list[WindowGame] = []
    for part in chunks(ids):
        columns = (events.c.event_id, events.c.winner_id, events.c.loser_id, events.c.ended_at)
        query = select(*columns, events.c.outcome).where(
            events.c.ladder == ladder,
            events.c.type == "game.finished",
            events.c.mode == "ranked",
            events.c.ended_at >= since,
            events.c.ended_at < until,
            or_(events.c.winner_id.in_(list(part)), events.c.loser_id.in_(list(part))),
        )
        for event_id, winner, loser, ended_at, outcome in conn.execute(query):
            found.append(WindowGame(event_id, winner, loser, ended_at, outcome == "rated"))
    # A game whose two players fall in different chunks is read twice.
    return list({game.event_id: game for game in found}.values())


def write_batch(
    conn: Connection,
    audit_rows: list[dict[str, Any]],
    change_rows: list[dict[str, Any]],
    dirty: Iterable[PlayerRecord],
    link_rows: list[dict[str, Any]],
    tournament_rows: list[dict[str, Any]],
) -> None:
    if audit_rows:
        conn.execute(events.insert(), audit_rows)
    if change_rows:
        conn.execute(rating_changes.insert(), change_rows)
    if link_rows:
        conn.execute(links.insert(), link_rows)
    if tournament_rows:
        conn.execute(tournaments.insert(), tournament_rows)
    updates = [
        {
            "b_ladder": p.ladder,
            "b_player_id": p.player_id,
            **{c: getattr(p, c) for c in PLAYER_COLUMNS},
        }
        for p in dirty
    ]
    if updates:
        statement = (
            update(players)
            .where(
                and_(
                    players.c.ladder == bindparam("b_ladder"),
                    players.c.player_id == bindparam("b_player_id"),
                )
            )
            .values({c: bindparam(c) for c in PLAYER_COLUMNS})
        )
        conn.execute(statement, updates)
