"""Reading a player's story from the audit store: rating history and recent ranked games.

PostgreSQL is the system of record, so these reads go to it rather than to Redis. The
history is the ``rating_changes`` ledger, newest first, with the facts of the game (opponent,
result, cube, match length) joined from ``events`` where the change came from a game, and for
a draw or team game the player's row of ``game_players`` (its result ``draw`` or ``rank N of
M``, no opponent in a game of more than two players: ``worker.store.game_players.played``).

It reads as moderated (SPEC 6 "One history"): a game a void took back keeps its row, marked
``voided``, and counts nothing (``counted`` 0: its change is not applied); the void's
``correction`` row counts what it changed besides taking those games back (its delta plus
theirs), and each event's outcome is the one the one replay last derived for it
(``event_effects``). So the rows, in scoring order, add up: each one's ``running`` rating is
the one before it plus what it counts, and the newest is the player's current rating.

After ``ladder archive`` the rows before the ladder's boundary have left the log (their
months are tables of their own, for the operator to dump and drop): the history reads the
months left and says so (``archived``: "history before 2026-11 archived on 2026-12-03"), for
every reader that shows it (``ladder history``, ``ladder player``, the console's player page).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, func, or_, select
from sqlalchemy.engine import Engine

from schemas.errors import UnknownPlayer
from schemas.ids import is_identifier
from worker.store.game_players import played
from worker.store.tables import (
    checkpoint_players,
    checkpoints,
    event_effects,
    events,
    game_players,
    moderation_actions,
    players,
    rating_changes,
)


@dataclass(frozen=True)
class Change:
    """One row of a player's rating history; game fields are None for prizes and links."""

    event_id: str
    kind: str  # game, prize or link
    at: str  # when the change was applied (ISO 8601)
    rating_before: float
    rating_after: float
    delta: float
    k: float | None
    expected: float | None
    ended_at: str | None
    opponent: str | None  # None in a game of more than two players
    result: str | None  # win, loss, draw, or "rank N of M" (a team game: its team's place)
    cube: int | None
    match_length: int | None
    rank: int | None = None  # a draw's or team game's: the team's place (1 + teams ahead)
    teams: int | None = None  # a draw's or team game's: how many teams it had
    note: str | None = None  # a moderation row: what the operator did and why
    voided: bool = False  # a game a void took back: its change is not applied
    counted: float = 0.0  # what the row adds to the rating as moderated (see the module)
    running: float = 0.0  # the rating after the row, as moderated
    after: int = 0  # its place in scoring order: a game's number, an action's after_seq

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def history(engine: Engine, ladder: str, player: str, limit: int = 20) -> list[Change]:
    """The player's last ``limit`` rating changes, newest first; ``UnknownPlayer`` if none."""
    if not is_identifier(player):
        raise UnknownPlayer(f"no player {player!r} on {ladder}")
    if limit < 1:
        return []
    query = (
        select(
            rating_changes,
            events.c.ended_at,
            events.c.winner_id,
            events.c.loser_id,
            events.c.cube,
            events.c.match_length,
            events.c.seq,
            game_players.c.rank,
            game_players.c.teams,
            game_players.c.draw,
        )
        .select_from(
            rating_changes.outerjoin(
                events,
                and_(
                    events.c.ladder == rating_changes.c.ladder,
                    events.c.event_id == rating_changes.c.event_id,
                ),
            ).outerjoin(
                game_players,
                and_(
                    game_players.c.ladder == rating_changes.c.ladder,
                    game_players.c.event_id == rating_changes.c.event_id,
                    game_players.c.player_id == rating_changes.c.player_id,
                ),
            )
        )
        .where(rating_changes.c.ladder == ladder, rating_changes.c.player_id == player)
        .order_by(rating_changes.c.id.desc())
        .limit(limit)
    )
    known = select(players.c.player_id).where(
        players.c.ladder == ladder, players.c.player_id == player
    )
    with engine.connect() as conn:
        rows = list(conn.execute(query).mappings())
        if not rows and conn.execute(known).first() is None:
            raise UnknownPlayer(f"no player {player!r} on {ladder}")
        notes = _notes(conn, ladder, rows)
        outcomes = effects(conn, ladder, [r["event_id"] for r in rows if r["kind"] == "game"])
        taken = _taken_back(conn, ladder, player, notes)
    changes = [
        _change(row, player, notes.get(row["event_id"]), outcomes.get(row["event_id"]))
        for row in rows
    ]
    return _counted(changes, taken)


def _counted(changes: list[Change], taken: dict[str, float]) -> list[Change]:
    """Each row (newest first) with what it counts and the rating after it, as moderated:
    the newest ends at the current rating, and each older one is the next one's less what
    that one counts."""
    done = []
    running = changes[0].rating_after if changes else 0.0
    for change in changes:
        counted = 0.0 if change.voided else change.delta + taken.get(change.event_id, 0.0)
        done.append(replace(change, counted=counted, running=running))
        running -= counted
    return done


def _taken_back(
    conn: Any, ladder: str, player: str, notes: dict[str, tuple[str, int]]
) -> dict[str, float]:
    """Per void shown (``moderation:<n>``), the sum of the player's changes in the games it
    voided: its correction row took those back as well as changing what it changed."""
    numbers = {int(key[len(MODERATION) :]): key for key in notes}
    if not numbers:
        return {}
    voided = and_(
        event_effects.c.ladder == ladder,
        event_effects.c.outcome == VOIDED,
        event_effects.c.action_id.in_(sorted(numbers)),
    )
    query = (
        select(event_effects.c.action_id, func.sum(rating_changes.c.delta))
        .select_from(
            event_effects.join(
                rating_changes,
                and_(
                    rating_changes.c.ladder == event_effects.c.ladder,
                    rating_changes.c.event_id == event_effects.c.event_id,
                ),
            )
        )
        .where(voided, rating_changes.c.player_id == player, rating_changes.c.kind == "game")
        .group_by(event_effects.c.action_id)
    )
    return {numbers[int(action)]: float(total) for action, total in conn.execute(query)}


@dataclass(frozen=True)
class Archived:
    """Where a player's history as read begins: the ladder's archive boundary."""

    before: datetime  # the rows processed before it were archived
    made_at: datetime  # when

    def note(self) -> str:
        return f"history before {self.before:%Y-%m} archived on {self.made_at:%Y-%m-%d}"


def archived(engine: Engine, ladder: str, player: str) -> Archived | None:
    """The ladder's archive boundary when the player had a history before it (it is in the
    checkpoint), else None: everything of theirs is in the log."""
    query = (
        select(checkpoints.c.before, checkpoints.c.made_at)
        .select_from(
            checkpoints.join(
                checkpoint_players, checkpoint_players.c.ladder == checkpoints.c.ladder
            )
        )
        .where(checkpoints.c.ladder == ladder, checkpoint_players.c.player_id == player)
    )
    with engine.connect() as conn:
        found = conn.execute(query).first()
    return None if found is None else Archived(found[0], found[1])


VOIDED = "voided"


def effects(conn: Any, ladder: str, event_ids: list[str]) -> dict[str, tuple[str, str | None]]:
    """Each event's outcome and reason as the last void that changed it left them."""
    if not event_ids:
        return {}
    query = (
        select(event_effects.c.event_id, event_effects.c.outcome, event_effects.c.reason)
        .where(event_effects.c.ladder == ladder, event_effects.c.event_id.in_(event_ids))
        .order_by(event_effects.c.action_id)
    )
    return {eid: (outcome, reason) for eid, outcome, reason in conn.execute(query)}


def banned_since(engine: Engine, ladder: str, player: str) -> str | None:
    """When the player's ban in force began (ISO 8601), or None when they are not banned."""
    query = (
        select(moderation_actions.c.kind, moderation_actions.c.at)
        .where(
            moderation_actions.c.ladder == ladder,
            moderation_actions.c.target == player,
            moderation_actions.c.kind.in_(["ban", "unban", "erase"]),
        )
        .order_by(moderation_actions.c.id.desc())
        .limit(1)
    )
    with engine.connect() as conn:
        found = conn.execute(query).first()
    if found is None or found[0] == "unban":
        return None
    return str(found[1].isoformat())


def recent_ranked_games(
    engine: Engine, ladder: str, player: str, before: datetime, hours: int
) -> int:
    """Ranked games the player played in the ``hours`` before ``before`` (gammon42's K): as
    the engine's windows count them (``engine.ladder.counted``), games of two players (a 1v1
    win, a draw: the audit row's winner and loser); a game of more counts in no window."""
    if not is_identifier(player):
        return 0
    query = select(func.count()).where(
        events.c.ladder == ladder,
        events.c.type == "game.finished",
        events.c.mode == "ranked",
        events.c.ended_at >= before - timedelta(hours=hours),
        events.c.ended_at < before,
        or_(events.c.winner_id == player, events.c.loser_id == player),
    )
    with engine.connect() as conn:
        return int(conn.execute(query).scalar_one())


MODERATION = "moderation:"


def _notes(conn: Any, ladder: str, rows: list[Any]) -> dict[str, tuple[str, int]]:
    """``moderation:<n>`` -> ("game g-123 voided (cheating)", the action's after_seq) for the
    moderation rows shown."""
    numbers = {
        int(r["event_id"][len(MODERATION) :])
        for r in rows
        if r["kind"] in ("adjustment", "correction") and r["event_id"].startswith(MODERATION)
    }
    if not numbers:
        return {}
    query = select(moderation_actions).where(
        moderation_actions.c.ladder == ladder, moderation_actions.c.id.in_(sorted(numbers))
    )
    notes = {}
    for action in conn.execute(query).mappings():
        if action["kind"] == "void":
            ids = list((action["details"] or {}).get("voided", []))
            shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
            what = f"game{'s' if len(ids) > 1 else ''} {shown} voided"
        elif action["kind"] == "rerate":
            details = action["details"] or {}
            what = f"history re-rated under {details.get('ruleset')} {details.get('version')}"
        else:
            what = f"adjusted by {action['by']}"
        notes[f"{MODERATION}{action['id']}"] = (f"{what} ({action['reason']})", action["after_seq"])
    return notes


def _change(
    row: Any,
    player: str,
    note: tuple[str, int] | None = None,
    effect: tuple[str, str | None] | None = None,
) -> Change:
    game = row["kind"] == "game" and (row["winner_id"] is not None or row["rank"] is not None)
    opponent, result = (
        played(player, row["winner_id"], row["loser_id"], row["rank"], row["teams"], row["draw"])
        if game
        else (None, None)
    )
    return Change(
        event_id=row["event_id"],
        kind=row["kind"],
        at=row["at"].isoformat(),
        rating_before=row["rating_before"],
        rating_after=row["rating_after"],
        delta=row["delta"],
        k=row["k"],
        expected=row["expected"],
        ended_at=_iso(row["ended_at"]) if game else None,
        opponent=opponent,
        result=result,
        cube=row["cube"] if game else None,
        match_length=row["match_length"] if game else None,
        rank=row["rank"],
        teams=row["teams"],
        note=note[0] if note is not None else None,
        voided=effect is not None and effect[0] == VOIDED,
        after=(note[1] if note is not None else row["seq"]) or 0,
    )


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None
