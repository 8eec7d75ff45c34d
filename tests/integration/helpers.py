"""Reading back what the pipeline wrote, from PostgreSQL and Redis."""

from __future__ import annotations

import argparse
from typing import Any

from sqlalchemy import select

from worker import keys
from worker.access import Access, Scope
from worker.store.tables import events, players, rating_changes


def board(rt: Any, ladder: str, kind: str = "rating") -> dict[str, float]:
    boards = {"rating": keys.rating, "public": keys.public, "boosted": keys.boosted}
    key = {**boards, "active": keys.active}[kind](ladder)
    return {m.decode(): s for m, s in rt.leaderboard_redis.zrange(key, 0, -1, withscores=True)}


def card(rt: Any, ladder: str, player_id: str) -> dict[str, str]:
    raw = rt.leaderboard_redis.hgetall(keys.player(ladder, player_id))
    return {k.decode(): v.decode() for k, v in raw.items()}


def audit(rt: Any, ladder: str | None = None) -> list[dict[str, Any]]:
    query = select(events).order_by(events.c.processed_at, events.c.event_id)
    if ladder:
        query = query.where(events.c.ladder == ladder)
    with rt.engine.connect() as conn:
        return [dict(row) for row in conn.execute(query).mappings()]


def ledger(rt: Any, ladder: str, player_id: str) -> list[dict[str, Any]]:
    query = (
        select(rating_changes)
        .where(rating_changes.c.ladder == ladder, rating_changes.c.player_id == player_id)
        .order_by(rating_changes.c.id)
    )
    with rt.engine.connect() as conn:
        return [dict(row) for row in conn.execute(query).mappings()]


def stored_players(rt: Any, ladder: str) -> dict[str, dict[str, Any]]:
    with rt.engine.connect() as conn:
        rows = conn.execute(select(players).where(players.c.ladder == ladder)).mappings()
        return {row["player_id"]: dict(row) for row in rows}


def outcome(rt: Any, ladder: str, event_id: str) -> tuple[str, str | None]:
    rows = [r for r in audit(rt, ladder) if r["event_id"] == event_id]
    assert len(rows) == 1, f"expected one audit row for {event_id}, found {len(rows)}"
    return rows[0]["outcome"], rows[0]["reason"]


# An app that answers every scope to anyone: for the tests of what the routes read.
EVERYONE = Access(public=frozenset(Scope))


def command(rt: Any, *argv: str) -> int:
    """Run one command the way ``ladder`` does (the read, moderation and operations ones),
    against this runtime."""
    from worker.entrypoints.cli import moderate, ops, read
    from worker.entrypoints.cli.main import dispatch

    parser = argparse.ArgumentParser(prog="ladder")
    commands = parser.add_subparsers(dest="command", required=True)
    read.register(commands)
    moderate.register(commands)
    ops.register(commands)
    return dispatch(rt, parser.parse_args(list(argv)))
