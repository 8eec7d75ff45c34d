"""What must hold after any run, however many workers died: checked against the real stores."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import cast

from redis import Redis
from sqlalchemy import create_engine, select

from worker.store.tables import events, players, rating_changes

Scores = list[tuple[str, float]]  # ZRANGE ... WITHSCORES on a decoding client


def check_stores(
    database_url: str, redis_url: str, event_ids: set[tuple[str, str]]
) -> dict[str, int]:
    """Assert exactly-once, continuous ledgers and Redis equal to PostgreSQL; return figures."""
    engine = create_engine(database_url)
    redis = Redis.from_url(redis_url, decode_responses=True)
    try:
        with engine.connect() as conn:
            audited = [
                (r.ladder, r.event_id)
                for r in conn.execute(select(events.c.ladder, events.c.event_id))
            ]
            ledger = (
                conn.execute(select(rating_changes).order_by(rating_changes.c.id)).mappings().all()
            )
            stored = conn.execute(select(players)).mappings().all()
        # exactly once: every published event has one audit row, and nothing else has one
        assert len(audited) == len(set(audited)), "an event was applied twice"
        assert event_ids == set(audited), (
            f"missing {len(event_ids - set(audited))}, unexpected {len(set(audited) - event_ids)}"
        )
        # continuity: per player, each rating_before is the previous rating_after
        last: dict[tuple[str, str], float] = {}
        breaks = []
        for row in ledger:
            key = (row["ladder"], row["player_id"])
            if key in last and not math.isclose(last[key], row["rating_before"], abs_tol=1e-9):
                breaks.append((key, last[key], row["rating_before"], row["event_id"]))
            last[key] = row["rating_after"]
        assert [] == breaks, f"audit chain breaks: {breaks[:5]}"
        by_key = {(p["ladder"], p["player_id"]): p for p in stored}
        for key, after in last.items():
            assert math.isclose(by_key[key]["rating"], after, abs_tol=1e-9), key
        # Redis equals PostgreSQL
        boards: dict[str, dict[str, float]] = defaultdict(dict)
        for (ladder, pid), p in by_key.items():
            if p["listed"] and not p["linked_to"] and not p["banned"]:
                boards[ladder][pid] = p["rating"]
            card = redis.hgetall(f"ladder:{{{ladder}}}:player:{pid}")
            assert str(p["version"]) == card.get("version"), (ladder, pid, p["version"], card)
        for ladder in {k[0] for k in by_key}:
            actual = dict(
                cast(Scores, redis.zrange(f"ladder:{{{ladder}}}:rating", 0, -1, withscores=True))
            )
            assert boards[ladder].keys() == actual.keys(), ladder
            for pid, rating in boards[ladder].items():
                assert math.isclose(rating, actual[pid], abs_tol=1e-9), (ladder, pid)
        return {"events": len(audited), "ledger_rows": len(ledger), "players": len(stored)}
    finally:
        engine.dispose()
        redis.close()
