"""``game_players``: every player of every draw and team game, one row each (SPEC 7).

The audit row (``events``) names a game's players in ``winner_id`` and ``loser_id``: a 1v1
win's winner and loser, a draw's two players (first and second as sent), and nobody for a game
of more than two players. So every reader of "a player's games" (the games list, the history,
``ban --void-since``, the players of a void, ``verify --since``'s boundary, erase) also reads
this table. A row holds one player of a draw or team game as resolved (what its ledger rows
name; for an unrated game, the id as the ladder's links resolved it when it was scored), and:

- ``rank``: its team's finishing place, 1 + the number of teams that finished ahead of it, so
  tied teams share a place (ranks sent as 1, 1, 3 are places 1, 1, 3; ranks 10 and 20 are
  places 1 and 2);
- ``teams``: how many teams the game had; ``draw``: every team finished at one rank (a 1v1
  draw, or a team game all tied);
- ``ended_at`` and ``processed_at``: the audit row's.

A 1v1 win has no row here: the seed ladders' batches write exactly the rows they wrote before.
A batch writes these rows with its audit rows, in its transaction, on both of its write paths
(``worker.store.statements.write_batch``: in the JSON document, or by COPY).

**Archive.** The table is not partitioned. ``ladder archive`` deletes the rows of the events it
archives (``processed_at`` before the boundary) in the transaction that detaches their months
(``delete_archived``), so every row left is of an event still in the log; the readers join it
to ``events`` all the same. The players of archived games stay in the archived months' tables
(``archived_events_*``, in each payload), from which ``fill`` could make their rows again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, insert, text
from sqlalchemy.engine import Connection

from worker.store.tables import game_players

__all__ = ["delete_archived", "fill", "played", "rows"]


def rows(
    ladder: str,
    event_id: str,
    players: Iterable[tuple[str, int]],
    ranks: Sequence[int],
    ended_at: datetime,
    processed_at: datetime,
) -> list[dict[str, Any]]:
    """The rows of one draw or team game: ``players`` as the engine's decision names them
    (each id as resolved, with its team's rank as sent), ``ranks`` every team's rank as sent.
    An id named twice (an anonymous id beside the account it is linked to: ``self_play``) is
    one row, its first team's."""
    teams = len(ranks)
    draw = len(set(ranks)) == 1
    made: dict[str, dict[str, Any]] = {}
    for player_id, rank in players:
        if player_id in made:
            continue
        made[player_id] = {
            "ladder": ladder,
            "event_id": event_id,
            "player_id": player_id,
            "rank": 1 + sum(1 for r in ranks if r < rank),
            "teams": teams,
            "draw": draw,
            "ended_at": ended_at,
            "processed_at": processed_at,
        }
    return list(made.values())


def played(
    player: str,
    winner_id: str | None,
    loser_id: str | None,
    rank: int | None,
    teams: int | None,
    draw: bool | None,
) -> tuple[str | None, str]:
    """A game's opponent and result for ``player``, from its audit row's winner and loser and
    the player's row here (``rank`` None: there is none, a 1v1 win): a 1v1 win is a ``win`` or
    a ``loss``; a draw (every team at one rank) a ``draw``; another team game ``rank N of M``,
    its team's place of M teams. The opponent is the other player of a two-player game, and
    None in a game of more."""
    if rank is None:
        won = winner_id == player
        return (loser_id if won else winner_id), ("win" if won else "loss")
    opponent = None
    if winner_id is not None and loser_id is not None:
        opponent = loser_id if winner_id == player else winner_id
    return opponent, "draw" if draw else f"rank {rank} of {teams}"


# The draws and team games of the log, and each ladder's links with the scoring number of the
# event that made them (none: an archived event, scored before every event left).
_GAMES = """
SELECT ladder, event_id, seq, ended_at, processed_at, payload FROM events
WHERE type = 'game.finished'
    AND (payload -> 'teams' IS NOT NULL OR payload -> 'players' IS NOT NULL)
ORDER BY ladder, seq
"""
_LINKS = """
SELECT l.ladder, l.anonymous_id, l.account_id, e.seq FROM links l
LEFT JOIN events e ON e.ladder = l.ladder AND e.event_id = l.event_id
"""


def fill(conn: Connection, chunk: int = 1000) -> int:
    """Write the rows of every draw and team game in the log (migration 0012: the games scored
    before the table existed), each id resolved through the links made before the game in
    scoring order, as the engine resolved it; returns how many rows."""
    links: dict[tuple[str, str], tuple[str, int | None]] = {}  # an anonymous id links once
    for ladder, anonymous, account, seq in conn.execute(text(_LINKS)):
        links[ladder, anonymous] = (account, seq)

    def resolved(ladder: str, player_id: str, seq: int) -> str:
        account, made = links.get((ladder, player_id), (player_id, None))
        return account if made is None or made < seq else player_id

    written = 0
    pending: list[dict[str, Any]] = []
    for ladder, event_id, seq, ended_at, processed_at, payload in conn.execute(text(_GAMES)):
        if payload.get("teams") is not None:
            teams = [(t["rank"], [p["player_id"] for p in t["players"]]) for t in payload["teams"]]
        else:
            teams = [(1, [p["player_id"]]) for p in payload["players"]]
        named = [(resolved(ladder, pid, seq), rank) for rank, ids in teams for pid in ids]
        ranks = [rank for rank, _ in teams]
        pending += rows(ladder, event_id, named, ranks, ended_at, processed_at)
        if len(pending) >= chunk:
            conn.execute(insert(game_players), pending)
            written, pending = written + len(pending), []
    if pending:
        conn.execute(insert(game_players), pending)
    return written + len(pending)


def delete_archived(conn: Connection, before: datetime) -> int:
    """Delete the rows of the events processed before ``before`` (``ladder archive``, in the
    transaction that detaches their months); returns how many."""
    done = conn.execute(delete(game_players).where(game_players.c.processed_at < before))
    return int(done.rowcount or 0)
