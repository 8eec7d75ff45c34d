"""The store side of moderation: the action log, changed outcomes, the ladder lock, the log read.

Every function takes a connection of the caller's transaction (except the streams, which read
through their own), so one action's rows commit together or not at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, insert, or_, select, text, update
from sqlalchemy.engine import Connection

from engine import Action, Player
from engine.player import stored_player
from engine.replay import RECORDED_KINDS
from worker.store.locks import LOCK_LADDER
from worker.store.log import STORED_LEDGER
from worker.store.statements import PLAYER_ROW, UNPROJECTED, chunks, write_batch
from worker.store.tables import (
    event_effects,
    events,
    game_players,
    moderation_actions,
    players,
    rating_changes,
)
from worker.store.windowcache import COUNT_ACTION

CHUNK = 5000
VOIDED = "voided"
RECORDED = sorted(str(kind) for kind in RECORDED_KINDS)  # rows that are the action itself


def lock_ladder(conn: Connection, ladder: str) -> None:
    """Hold the ladder for a moderation action until its transaction ends: its advisory lock
    exclusively (``worker.store.locks``: the batches of the ladder in flight commit
    first, new ones wait at their claim; other ladders are not touched), then every player
    of it, in the order workers lock them (``claim_players``: sorted keys, code-point
    order), a player a batch created just before included. The ladder counts one more action
    (``windowcache.COUNT_ACTION``): a worker's windows kept in memory are read again."""
    conn.exec_driver_sql(LOCK_LADDER, {"ladder": ladder})
    conn.exec_driver_sql(COUNT_ACTION, {"ladders": [ladder]})
    query = (
        select(players.c.player_id)
        .where(players.c.ladder == ladder)
        .order_by(players.c.player_id.collate("C"))
        .with_for_update()
    )
    for _ in conn.execute(query):
        pass


def stored_ladders(conn: Connection) -> list[str]:
    """The ladders that have players on this database: one index probe per ladder (a skip
    scan of the players' key), not a read of every player."""
    query = text(
        "WITH RECURSIVE found AS ("
        " SELECT min(ladder) AS ladder FROM players"
        " UNION ALL SELECT (SELECT min(ladder) FROM players WHERE ladder > found.ladder)"
        " FROM found WHERE found.ladder IS NOT NULL)"
        " SELECT ladder FROM found WHERE ladder IS NOT NULL"
    )
    return list(conn.execute(query).scalars())


def last_seq(conn: Connection, ladder: str) -> int:
    """The scoring number of the ladder's last stored event (0 when it has none)."""
    found = conn.execute(select(func.max(events.c.seq)).where(events.c.ladder == ladder)).scalar()
    return int(found or 0)


def find_events(
    conn: Connection, ladder: str, event_ids: Iterable[str]
) -> dict[str, tuple[str, int]]:
    """The stored events among ``event_ids``: id -> (type, scoring number)."""
    found: dict[str, tuple[str, int]] = {}
    for part in chunks(sorted(set(event_ids))):
        query = select(events.c.event_id, events.c.type, events.c.seq).where(
            events.c.ladder == ladder, events.c.event_id.in_(list(part))
        )
        found.update((eid, (kind, int(seq))) for eid, kind, seq in conn.execute(query))
    return found


def games_since(conn: Connection, ladder: str, player_id: str, since: datetime) -> list[str]:
    """The player's games that ended at or after ``since``: as winner or loser (a 1v1 win, a
    draw), or as a player of a draw or team game (``game_players``)."""
    seated = select(game_players.c.event_id).where(
        game_players.c.ladder == ladder,
        game_players.c.player_id == player_id,
        game_players.c.ended_at >= since,
    )
    query = (
        select(events.c.event_id)
        .where(
            events.c.ladder == ladder,
            events.c.type == "game.finished",
            events.c.ended_at >= since,
            or_(
                events.c.winner_id == player_id,
                events.c.loser_id == player_id,
                events.c.event_id.in_(seated),
            ),
        )
        .order_by(events.c.seq)
    )
    return list(conn.execute(query).scalars())


def voided(conn: Connection, ladder: str) -> set[str]:
    query = select(event_effects.c.event_id).where(
        event_effects.c.ladder == ladder, event_effects.c.outcome == VOIDED
    )
    return set(conn.execute(query).scalars())


Verdict = tuple[str, str | None]


def effective(conn: Connection, ladder: str) -> dict[str, tuple[Verdict, Verdict]]:
    """Each event a void changed: id -> ((outcome, reason) now, (outcome, reason) stored)."""
    query = (
        select(
            event_effects.c.event_id,
            event_effects.c.outcome,
            event_effects.c.reason,
            events.c.outcome,
            events.c.reason,
        )
        .select_from(
            event_effects.join(
                events,
                and_(
                    events.c.ladder == event_effects.c.ladder,
                    events.c.event_id == event_effects.c.event_id,
                ),
            )
        )
        .where(event_effects.c.ladder == ladder)
        .order_by(event_effects.c.action_id)
    )
    found: dict[str, tuple[Verdict, Verdict]] = {}
    for eid, outcome, reason, kept, kept_reason in conn.execute(query):
        found[eid] = ((outcome, reason), (kept, kept_reason))
    return found


def actions(conn: Connection, ladder: str) -> list[dict[str, Any]]:
    query = (
        select(moderation_actions)
        .where(moderation_actions.c.ladder == ladder)
        .order_by(moderation_actions.c.id)
    )
    return [dict(row) for row in conn.execute(query).mappings()]


def action_of(row: dict[str, Any]) -> Action:
    """A stored ``moderation_actions`` row as the history's value."""
    details = row["details"] or {}
    return Action(
        number=int(row["id"]),
        kind=row["kind"],
        at=row["at"],
        after_seq=int(row["after_seq"]),
        voided=frozenset(details.get("voided", ())),
        player_id=row["target"] if row["kind"] in ("ban", "unban", "adjust", "erase") else None,
        delta=float(details.get("delta", 0.0)),
        since=datetime.fromisoformat(details["since"]) if row["kind"] == "rerate" else None,
    )


def history_actions(conn: Connection, ladder: str) -> list[Action]:
    """The ladder's moderation actions, oldest first, as the history's values."""
    return [action_of(row) for row in actions(conn, ladder)]


def action_rows(conn: Connection, ladder: str) -> dict[str, list[Sequence[Any]]]:
    """The ledger rows of moderation actions (``moderation:<n>``), by event id, in order."""
    query = (
        select(rating_changes.c.event_id, *(rating_changes.c[c] for c in STORED_LEDGER))
        .where(
            rating_changes.c.ladder == ladder,
            rating_changes.c.kind.in_(["adjustment", "correction"]),
        )
        .order_by(rating_changes.c.id)
    )
    found: dict[str, list[Sequence[Any]]] = {}
    for row in conn.execute(query):
        found.setdefault(row[0], []).append(tuple(row[1:]))
    return found


def action_effects(conn: Connection, ladder: str) -> dict[int, list[tuple[str, str, str | None]]]:
    query = (
        select(
            event_effects.c.action_id,
            event_effects.c.event_id,
            event_effects.c.outcome,
            event_effects.c.reason,
        )
        .where(event_effects.c.ladder == ladder)
        .order_by(event_effects.c.action_id, event_effects.c.event_id)
    )
    found: dict[int, list[tuple[str, str, str | None]]] = {}
    for action_id, eid, outcome, reason in conn.execute(query):
        found.setdefault(int(action_id), []).append((eid, outcome, reason))
    return found


@dataclass(frozen=True, slots=True)
class NewAction:
    """A moderation action to append: what was done, to whom, by whom and why, and where it
    falls in the history (after the stored event numbered ``after_seq``)."""

    ladder: str
    kind: str  # one of engine.replay.KINDS
    reason: str
    by: str
    at: datetime
    after_seq: int
    target: str | None = None  # the player of a ban, unban, adjustment or erase
    details: Mapping[str, Any] = field(default_factory=dict)
    projected: bool = False  # the action writes Redis itself (an erase)


def add_action(conn: Connection, action: NewAction) -> int:
    """Append ``action``; it is marked not yet projected to Redis unless ``projected`` (an
    action that writes Redis itself): ``mark_projected`` takes the mark off."""
    result = conn.execute(
        insert(moderation_actions)
        .values(
            ladder=action.ladder,
            kind=action.kind,
            target=action.target,
            reason=action.reason,
            by=action.by,
            at=action.at,
            after_seq=action.after_seq,
            details=dict(action.details),
            projected_at=action.at if action.projected else None,
        )
        .returning(moderation_actions.c.id)
    )
    return int(result.scalar_one())


def unprojected(conn: Connection, ladders: Iterable[str]) -> dict[str, int]:
    """Each of these ladders with an action whose Redis projection is not done, and its
    newest such action (``UNPROJECTED``)."""
    rows = conn.exec_driver_sql(UNPROJECTED, {"ladders": list(ladders)})
    return {str(ladder): int(number) for ladder, number in rows}


def mark_projected(
    conn: Connection, ladder: str, through: int, at: datetime, *, only: bool = False
) -> int:
    """Take the mark off the ladder's actions numbered up to ``through`` (``only``: off that
    one alone); returns how many."""
    number = moderation_actions.c.id
    result = conn.execute(
        update(moderation_actions)
        .where(
            moderation_actions.c.ladder == ladder,
            moderation_actions.c.projected_at.is_(None),
            number == through if only else number <= through,
        )
        .values(projected_at=at)
    )
    return int(result.rowcount or 0)


def add_effects(
    conn: Connection, ladder: str, action_id: int, effects: Iterable[tuple[str, str, str | None]]
) -> None:
    rows = [
        {"ladder": ladder, "event_id": e, "action_id": action_id, "outcome": o, "reason": r}
        for e, o, r in effects
    ]
    for part in chunks(rows, CHUNK):
        conn.execute(insert(event_effects), list(part))


def write(conn: Connection, changes: list[dict[str, Any]], changed: Iterable[Player]) -> None:
    """Ledger rows (in order) and changed players, as a batch writes them."""
    write_batch(conn, [], changes, list(changed), [], [])


def load_players(conn: Connection, ladder: str) -> dict[tuple[str, str], Player]:
    """Every player of the ladder (within the caller's transaction, after its lock)."""
    query = select(*PLAYER_ROW).where(players.c.ladder == ladder)
    return {(row[0], row[1]): stored_player(row) for row in conn.execute(query)}


def load_one(conn: Connection, ladder: str, player_id: str) -> Player | None:
    query = select(*PLAYER_ROW).where(players.c.ladder == ladder, players.c.player_id == player_id)
    row = conn.execute(query).first()
    return None if row is None else stored_player(row)


def players_of(conn: Connection, ladder: str, event_ids: Iterable[str]) -> list[Player]:
    """The stored players the events name as winner or loser, or as a player of a draw or
    team game (``game_players``)."""
    ids: set[str] = set()
    for part in chunks(sorted(set(event_ids))):
        query = select(events.c.winner_id, events.c.loser_id).where(
            events.c.ladder == ladder, events.c.event_id.in_(list(part))
        )
        for winner, loser in conn.execute(query):
            ids.update(i for i in (winner, loser) if i is not None)
        seated = select(game_players.c.player_id).where(
            game_players.c.ladder == ladder, game_players.c.event_id.in_(list(part))
        )
        ids.update(conn.execute(seated).scalars())
    found = [load_one(conn, ladder, pid) for pid in sorted(ids)]
    return [p for p in found if p is not None]


def set_banned(conn: Connection, player: Player) -> None:
    conn.execute(
        update(players)
        .where(players.c.ladder == player.ladder, players.c.player_id == player.player_id)
        .values(banned=player.banned, version=player.version, updated_at=player.updated_at)
    )


def count_through(conn: Connection, ladder: str, seq: int) -> int:
    """How many of the ladder's events are numbered ``seq`` or lower."""
    query = select(func.count()).select_from(events)
    return int(
        conn.execute(query.where(events.c.ladder == ladder, events.c.seq <= seq)).scalar_one()
    )
