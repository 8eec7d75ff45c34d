"""A player's recent games from the audit store, rated or not, newest first.

``worker.store.history`` reads the ledger, so it holds rated games only; a player also wants
to see the games that did not count and why (SPEC 2.4: the audit row says which filter
decided). Each game is its audit row (``events``) with this player's ledger row joined when
the game changed their rating, read as moderated: the outcome the last void left it
(``voided`` for a game taken back, whose change is then not shown).

A player's games are the ones its audit row names them in as winner or loser (a 1v1 win, a
draw's two players) and the draws and team games ``game_players`` holds them in: a 1v1 win
reads ``win`` or ``loss`` against its opponent, a draw ``draw``, and another team game
``rank N of M`` (its team's place of M teams), with no opponent when it had more than two
players (``worker.store.game_players.played``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import and_, select, union
from sqlalchemy.engine import Engine

from schemas.ids import is_identifier
from worker.store.game_players import played
from worker.store.history import effects
from worker.store.tables import events, game_players, rating_changes


@dataclass(frozen=True)
class Game:
    event_id: str
    ended_at: str | None
    mode: str | None
    opponent: str | None  # the other player; None in a game of more than two
    result: str  # win, loss, draw, or "rank N of M" (a team game: its team's place of M teams)
    rank: int | None  # a draw's or team game's: the team's place (1 + teams ahead); else None
    teams: int | None  # a draw's or team game's: how many teams it had; else None
    outcome: str  # rated, unrated, or voided (as moderated: the last void's word on it)
    reason: str | None  # why it was unrated (engine.reasons.Reason)
    ruleset_version: str
    cube: int | None
    match_length: int | None
    delta: float | None  # None when the game did not change the rating
    rating_after: float | None
    expected: float | None
    seq: int  # its scoring number: the order the ladder took the games in

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def games(engine: Engine, ladder: str, player: str, limit: int = 50) -> list[Game]:
    """The player's last ``limit`` finished games on the ladder, newest first in scoring order
    (the order the ladder took them in, as ``worker.store.history`` reads the ledger: a game
    that arrived late is listed where it was scored, not where it ended)."""
    if not is_identifier(player) or limit < 1:
        return []
    mine = rating_changes.alias("mine")
    seat = game_players.alias("seat")
    # Each event once, found by an index: as winner, as loser, as a player of a draw or team
    # game (a draw's players are found both ways).
    theirs = union(
        *(
            select(events.c.event_id, events.c.processed_at).where(
                events.c.ladder == ladder, side == player
            )
            for side in (events.c.winner_id, events.c.loser_id)
        ),
        select(game_players.c.event_id, game_players.c.processed_at).where(
            game_players.c.ladder == ladder, game_players.c.player_id == player
        ),
    ).subquery("theirs")
    query = (
        select(
            events.c.event_id,
            events.c.ended_at,
            events.c.mode,
            events.c.winner_id,
            events.c.loser_id,
            events.c.outcome,
            events.c.reason,
            events.c.ruleset_version,
            events.c.cube,
            events.c.match_length,
            mine.c.delta,
            mine.c.rating_after,
            mine.c.expected,
            events.c.seq,
            seat.c.rank,
            seat.c.teams,
            seat.c.draw,
        )
        .select_from(
            theirs.join(
                events,
                and_(
                    events.c.ladder == ladder,
                    events.c.event_id == theirs.c.event_id,
                    events.c.processed_at == theirs.c.processed_at,
                ),
            )
            .outerjoin(
                mine,
                and_(
                    mine.c.ladder == events.c.ladder,
                    mine.c.event_id == events.c.event_id,
                    mine.c.player_id == player,
                    mine.c.kind == "game",
                ),
            )
            .outerjoin(
                seat,
                and_(
                    seat.c.ladder == events.c.ladder,
                    seat.c.event_id == events.c.event_id,
                    seat.c.player_id == player,
                ),
            )
        )
        .where(events.c.type == "game.finished")
        .order_by(events.c.seq.desc())
        .limit(limit)
    )
    with engine.connect() as conn:
        rows = list(conn.execute(query).mappings())
        moderated = effects(conn, ladder, [r["event_id"] for r in rows])
    found = []
    for row in rows:
        opponent, result = played(
            player, row["winner_id"], row["loser_id"], row["rank"], row["teams"], row["draw"]
        )
        outcome, reason = moderated.get(row["event_id"], (row["outcome"], row["reason"]))
        applied = outcome == "rated"  # a voided game's change was taken back
        found.append(
            Game(
                event_id=row["event_id"],
                ended_at=row["ended_at"].isoformat() if row["ended_at"] is not None else None,
                mode=row["mode"],
                opponent=opponent,
                result=result,
                rank=row["rank"],
                teams=row["teams"],
                outcome=outcome,
                reason=reason,
                ruleset_version=row["ruleset_version"],
                cube=row["cube"],
                match_length=row["match_length"],
                delta=row["delta"] if applied else None,
                rating_after=row["rating_after"] if applied else None,
                expected=row["expected"] if applied else None,
                seq=row["seq"],
            )
        )
    return found
