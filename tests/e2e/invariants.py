"""What must hold after any run, however many workers died: checked against the real stores."""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

from redis import Redis
from sqlalchemy import create_engine, select

from worker.ladders import load_config
from worker.store.tables import events, game_players, players, rating_changes

Scores = list[tuple[str, float]]  # ZRANGE ... WITHSCORES on a decoding client


def check_stores(
    database_url: str,
    redis_url: str,
    event_ids: set[tuple[str, str]],
    config: Path | None = None,
) -> dict[str, int]:
    """Assert exactly-once, continuous ledgers, each game's ledger rows naming its players, and
    Redis equal to PostgreSQL; return figures. ``config`` is the ladder file the workers ran
    with (None: the shipped one): its rulesets say what a board ranks by (openskill's
    mu - k * sigma, the others' rating)."""
    ladders = load_config(config).ladders
    engine = create_engine(database_url)
    redis = Redis.from_url(redis_url, decode_responses=True)
    try:
        with engine.connect() as conn:
            audit = conn.execute(
                select(
                    events.c.ladder,
                    events.c.event_id,
                    events.c.type,
                    events.c.outcome,
                    events.c.winner_id,
                    events.c.loser_id,
                )
            ).all()
            ledger = (
                conn.execute(select(rating_changes).order_by(rating_changes.c.id)).mappings().all()
            )
            stored = conn.execute(select(players)).mappings().all()
            seated = conn.execute(
                select(game_players.c.ladder, game_players.c.event_id, game_players.c.player_id)
            ).all()
        audited = [(r.ladder, r.event_id) for r in audit]
        # exactly once: every published event has one audit row, and nothing else has one
        assert len(audited) == len(set(audited)), "an event was applied twice"
        assert event_ids == set(audited), (
            f"missing {len(event_ids - set(audited))}, unexpected {len(set(audited) - event_ids)}"
        )
        # each game's players: a 1v1's winner and loser, a draw's or team game's seats
        # (game_players); a rated game has one ledger row of kind game for each, and no other
        named: dict[tuple[str, str], set[str]] = defaultdict(set)
        for ladder, event_id, pid in seated:
            named[(ladder, event_id)].add(pid)
        assert set(named) <= set(audited), "players seated in a game with no audit row"
        for r in audit:
            named[(r.ladder, r.event_id)] |= {p for p in (r.winner_id, r.loser_id) if p}
        moved: dict[tuple[str, str], list[str]] = defaultdict(list)
        for row in ledger:
            if row["kind"] == "game":
                moved[(row["ladder"], row["event_id"])].append(row["player_id"])
        rated = {
            (r.ladder, r.event_id)
            for r in audit
            if r.type == "game.finished" and r.outcome == "rated"
        }
        wrong = [
            (key, sorted(named[key]), sorted(moved.get(key, [])))
            for key in rated | set(moved)
            if sorted(moved.get(key, [])) != (sorted(named[key]) if key in rated else [])
        ]
        assert [] == wrong[:5], f"{len(wrong)} games whose ledger rows are not of its players"
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
        # Redis equals PostgreSQL: each card's version (and deviation, where the ruleset keeps
        # one), and each board's score, the rating or what the ruleset ranks by
        boards: dict[str, dict[str, float]] = defaultdict(dict)
        for (ladder, pid), p in by_key.items():
            if p["listed"] and not p["linked_to"] and not p["banned"]:
                found = ladders.get(ladder)
                score = p["rating"]
                if found is not None:
                    score = found.current.board_score(p["rating"], p["deviation"])
                boards[ladder][pid] = score
            card = redis.hgetall(f"ladder:{{{ladder}}}:player:{pid}")
            assert str(p["version"]) == card.get("version"), (ladder, pid, p["version"], card)
            if p["deviation"] is not None:
                assert repr(float(p["deviation"])) == card.get("deviation"), (ladder, pid, card)
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


def streamed_receipts(
    redis: Redis, ladder: str, published: Iterable[str], gone: set[str]
) -> list[dict[str, Any]]:
    """The receipt stream's bodies, checked (SPEC 5: every event gets a receipt on
    ``ladder:receipts``): each event of ``published`` on ``ladder`` exactly one, but those
    of ``gone`` (the games of an erased player): at most one, naming no player (an unrated
    game's receipt names no player, and stays)."""
    entries = cast(list[tuple[str, dict[str, str]]], redis.xrange("ladder:receipts"))
    bodies = [json.loads(fields["receipt"]) for _, fields in entries]
    per_event = Counter(b["event_id"] for b in bodies if b.get("ladder") == ladder)
    assert {e: 1 for e in set(published) - gone} == {
        e: n for e, n in per_event.items() if e not in gone
    }
    assert [] == [b["event_id"] for b in bodies if b["event_id"] in gone and b["players"]]
    assert all(per_event[e] <= 1 for e in gone)
    return bodies
