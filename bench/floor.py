"""The floor: the least work the benchmark's events need, written plainly with psycopg and
redis-py and no code of ladder's, so ``make bench`` can say how far ladder is above it.

One process, in a loop until the inbox is empty: pop up to 1,000 events from the Redis list
(``LPOP`` with a count), ``json.loads`` each, then one PostgreSQL transaction per batch
(synchronous commit as the server has it) that

- skips event ids it already holds (exactly-once),
- creates the players it has not seen and locks every player of the batch in id order,
- reads the window rows: each player's rated games in the last 7 days and each pair's games
  in the last 24 hours, as of the batch's games,
- scores the games with Elo (gammon42's ÷1200 curve, K 32; fibs and prostriker games too,
  the same way: the floor does not model their rules, only their cost),
- ``COPY``s the audit rows (one per event, the payload kept) and the ledger rows (one per
  rating change), and updates the players;

then one Redis pipeline of ``ZADD`` (the rating board) and ``HSET`` (the player's card).
Invalid JSON and events missing their ids are pushed onto a dead-letter list.

Run: ``python -m bench.floor REDIS_URL DATABASE_URL``; prints one JSON object with the
events, the seconds from the first pop to the last write, and events/s. It makes its own
tables (``floor_*``) in the database it is given.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime, timedelta
from typing import Any

import psycopg
from redis import Redis

INBOX = "ladder:inbox"
DEAD = "floor:dead"
BATCH = 1_000
START = 1500.0
K = 32.0
DIVISOR = 1200.0
WEEK = timedelta(days=7)
DAY = timedelta(hours=24)

SCHEMA = """
CREATE TABLE IF NOT EXISTS floor_players (
    ladder text NOT NULL, player_id text NOT NULL, rating double precision NOT NULL,
    games integer NOT NULL, last_game_at timestamptz, PRIMARY KEY (ladder, player_id));
CREATE TABLE IF NOT EXISTS floor_events (
    ladder text NOT NULL, event_id text NOT NULL, type text NOT NULL, outcome text NOT NULL,
    ended_at timestamptz, winner text, loser text, payload jsonb NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (ladder, event_id));
CREATE INDEX IF NOT EXISTS floor_events_winner ON floor_events (ladder, winner, ended_at);
CREATE INDEX IF NOT EXISTS floor_events_loser ON floor_events (ladder, loser, ended_at);
CREATE TABLE IF NOT EXISTS floor_ledger (
    ladder text NOT NULL, player_id text NOT NULL, event_id text NOT NULL,
    before double precision NOT NULL, after double precision NOT NULL);
"""

WINDOW = """
SELECT p, count(*) FROM (
    SELECT winner AS p FROM floor_events
     WHERE ladder = %(l)s AND winner = ANY(%(ids)s) AND ended_at > %(since)s
       AND outcome = 'rated'
    UNION ALL
    SELECT loser FROM floor_events
     WHERE ladder = %(l)s AND loser = ANY(%(ids)s) AND ended_at > %(since)s
       AND outcome = 'rated') s
GROUP BY p
"""
PAIRS = """
SELECT least(winner, loser), greatest(winner, loser), count(*) FROM floor_events
 WHERE ladder = %(l)s AND winner = ANY(%(ids)s) AND ended_at > %(since)s
GROUP BY 1, 2
"""


def _when(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _expected(a: float, b: float) -> float:
    return 1.0 / (1.0 + 10.0 ** ((b - a) / DIVISOR))


def _batch(conn: psycopg.Connection[Any], redis: Redis, raws: list[bytes]) -> int:
    events: list[dict[str, Any]] = []
    dead: list[bytes] = []
    for raw in raws:
        try:
            event = json.loads(raw)
            if not isinstance(event, dict) or not event.get("event_id") or not event.get("ladder"):
                raise ValueError("no ids")
        except ValueError:
            dead.append(raw)
            continue
        events.append(event)
    with conn.transaction():
        cur = conn.cursor()
        keys = [(e["ladder"], e["event_id"]) for e in events]
        cur.execute(
            "SELECT ladder, event_id FROM floor_events WHERE (ladder, event_id) IN "
            "(SELECT * FROM unnest(%s::text[], %s::text[]))",
            ([k[0] for k in keys], [k[1] for k in keys]),
        )
        seen = set(cur.fetchall())
        fresh: list[dict[str, Any]] = []
        for event, key in zip(events, keys, strict=True):
            if key not in seen:
                seen.add(key)
                fresh.append(event)
        games = [
            e
            for e in fresh
            if e.get("type") == "game.finished"
            and isinstance(e.get("winner"), dict)
            and isinstance(e.get("loser"), dict)
        ]
        ids = sorted(
            {(g["ladder"], g["winner"]["player_id"]) for g in games}
            | {(g["ladder"], g["loser"]["player_id"]) for g in games}
        )
        if ids:
            cur.execute(
                "INSERT INTO floor_players SELECT l, p, %s, 0, NULL "
                "FROM unnest(%s::text[], %s::text[]) AS u(l, p) ON CONFLICT DO NOTHING",
                (START, [i[0] for i in ids], [i[1] for i in ids]),
            )
            cur.execute(
                "SELECT ladder, player_id, rating, games FROM floor_players "
                "WHERE (ladder, player_id) IN (SELECT * FROM unnest(%s::text[], %s::text[])) "
                "ORDER BY ladder, player_id FOR UPDATE",
                ([i[0] for i in ids], [i[1] for i in ids]),
            )
        players = {(r[0], r[1]): [r[2], r[3], None] for r in cur.fetchall()} if ids else {}
        recent: dict[tuple[str, str], int] = {}
        pairs: dict[tuple[str, str, str], int] = {}
        ladders = sorted({g["ladder"] for g in games})
        for ladder in ladders:
            in_ladder = [p for (lad, p) in ids if lad == ladder]
            ends = [_when(g.get("ended_at")) for g in games if g["ladder"] == ladder]
            first = min((e for e in ends if e is not None), default=None)
            if first is None:
                continue
            cur.execute(WINDOW, {"l": ladder, "ids": in_ladder, "since": first - WEEK})
            recent.update({(ladder, p): n for p, n in cur.fetchall()})
            cur.execute(PAIRS, {"l": ladder, "ids": in_ladder, "since": first - DAY})
            pairs.update({(ladder, a, b): n for a, b, n in cur.fetchall()})
        audit: list[tuple[Any, ...]] = []
        ledger: list[tuple[Any, ...]] = []
        outcomes = {}
        for g in games:
            ladder = g["ladder"]
            w, lo = g["winner"]["player_id"], g["loser"]["player_id"]
            pair = (ladder, min(w, lo), max(w, lo))
            if w == lo or pairs.get(pair, 0) >= 5 or g.get("mode") != "ranked":
                outcomes[g["event_id"]] = "unrated"
                continue
            pairs[pair] = pairs.get(pair, 0) + 1
            pw, pl = players[(ladder, w)], players[(ladder, lo)]
            k = K / 2 if recent.get((ladder, w), 0) > 30 else K
            change = k * (1.0 - _expected(pw[0], pl[0]))
            ledger.append((ladder, w, g["event_id"], pw[0], pw[0] + change))
            ledger.append((ladder, lo, g["event_id"], pl[0], pl[0] - change))
            pw[0] += change
            pl[0] -= change
            pw[1] += 1
            pl[1] += 1
            pw[2] = pl[2] = g.get("ended_at")
            recent[(ladder, w)] = recent.get((ladder, w), 0) + 1
            recent[(ladder, lo)] = recent.get((ladder, lo), 0) + 1
            outcomes[g["event_id"]] = "rated"
        for e in fresh:
            winner = e["winner"] if isinstance(e.get("winner"), dict) else {}
            loser = e["loser"] if isinstance(e.get("loser"), dict) else {}
            audit.append(
                (
                    e["ladder"],
                    e["event_id"],
                    str(e.get("type")),
                    outcomes.get(e["event_id"], "applied"),
                    _when(e.get("ended_at")) if isinstance(e.get("ended_at"), str) else None,
                    winner.get("player_id"),
                    loser.get("player_id"),
                    json.dumps(e),
                )
            )
        with cur.copy(
            "COPY floor_events (ladder, event_id, type, outcome, ended_at, winner, loser, "
            "payload) FROM STDIN"
        ) as copy:
            for row in audit:
                copy.write_row(row)
        with cur.copy("COPY floor_ledger FROM STDIN") as copy:
            for row in ledger:
                copy.write_row(row)
        moved = [(key, value) for key, value in players.items() if value[2] is not None]
        if moved:
            cur.executemany(
                "UPDATE floor_players SET rating = %s, games = %s, last_game_at = %s "
                "WHERE ladder = %s AND player_id = %s",
                [(v[0], v[1], _when(v[2]), key[0], key[1]) for key, v in moved],
            )
    with redis.pipeline(transaction=False) as pipe:
        for (ladder, player_id), (rating, games_played, last) in moved:
            pipe.zadd(f"floor:{{{ladder}}}:rating", {player_id: rating})
            pipe.hset(
                f"floor:{{{ladder}}}:player:{player_id}",
                mapping={"rating": repr(rating), "games": games_played, "last_game_at": last},
            )
        if dead:
            pipe.rpush(DEAD, *dead)
        pipe.execute()
    return len(raws)


def run(redis_url: str, database_url: str) -> dict[str, Any]:
    redis = Redis.from_url(redis_url)
    with psycopg.connect(database_url) as conn:
        conn.execute(SCHEMA)
        conn.commit()
        done = 0
        first: float | None = None
        while True:
            raws = redis.lpop(INBOX, BATCH)
            if not raws:
                break
            if first is None:
                first = time.perf_counter()
            done += _batch(conn, redis, list(raws))  # type: ignore[arg-type]
        last = time.perf_counter()
    redis.close()
    seconds = max(last - (first or last), 1e-6)
    rate = round(done / seconds)
    return {"events": done, "seconds": round(seconds, 3), "events_per_second": rate}


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1], sys.argv[2])))
