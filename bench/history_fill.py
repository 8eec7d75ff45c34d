"""Synthetic audit history generated in SQL: a log grown to millions of events without
publishing them one by one (the ``growth`` section of ``make bench``, and the plan tests).

Each game is an audit row of ``ladder`` between two of ``players`` history players (ids
``g<n>``, none of them a benchmark's hot players), ended at an even pace over the ``months``
before ``until`` and processed a second later, with its two ledger rows. The rows are made by
``INSERT ... SELECT generate_series`` in chunks, one transaction each, so the statement
trigger fills ``event_ids`` as the worker's own writes do. They do not replay to the stored
ratings (``verify`` finds them wrong): they are volume, not a ladder's history.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from worker.store import partitions

CHUNK = 500_000  # rows a transaction

_EVENTS = """
INSERT INTO events (ladder, event_id, type, outcome, reason, ruleset, ruleset_version, ended_at,
  processed_at, mode, winner_id, loser_id, cube, coefficient, match_length, payload, digest)
SELECT p.ladder, p.prefix || i, 'game.finished', 'rated', NULL, p.ruleset, 'history',
  t, t + interval '1 second', 'ranked', 'g' || (i * 7919 % p.players),
  'g' || ((i * 7919 + 1 + i % (p.players - 1)) % p.players), 1, 1.0, 1,
  jsonb_build_object('type', 'game.finished', 'event_id', p.prefix || i, 'ladder', p.ladder,
    'ended_at', t, 'mode', 'ranked'),
  md5(i::text) || md5(p.prefix || i)
FROM (SELECT CAST(:ladder AS text) AS ladder, CAST(:prefix AS text) AS prefix,
  CAST(:ruleset AS text) AS ruleset, CAST(:players AS bigint) AS players,
  CAST(:start AS timestamptz) AS start, CAST(:step AS bigint) AS step) AS p
CROSS JOIN LATERAL generate_series(CAST(:first AS bigint), CAST(:last AS bigint)) AS i
CROSS JOIN LATERAL (SELECT p.start + (i - 1) * p.step * interval '1 microsecond' AS t) AS s
"""
_LEDGER = """
INSERT INTO rating_changes (ladder, player_id, event_id, kind, rating_before, rating_after,
  delta, k, expected, at, games, provisional)
SELECT e.ladder, side.player_id, e.event_id, 'game', 1500, 1500 + side.delta, side.delta,
  24, 0.5, e.processed_at, 100, false
FROM events e CROSS JOIN LATERAL (VALUES (e.winner_id, 12.0::float8),
  (e.loser_id, -12.0::float8)) AS side(player_id, delta)
WHERE e.ladder = CAST(:ladder AS text) AND e.event_id >= CAST(:prefix AS text)
  AND e.event_id < CAST(:prefix AS text) || '~'
  AND e.processed_at >= CAST(:low AS timestamptz) AND e.processed_at < CAST(:high AS timestamptz)
"""


def fill(
    engine: Engine,
    ladder: str,
    ruleset: str,
    count: int,
    *,
    until: datetime | None = None,
    months: int = 12,
    players: int = 100_000,
    prefix: str = "h-",
    ledger: bool = True,
) -> None:
    """Add ``count`` synthetic games (and their ledger rows) to ``ladder``'s history."""
    until = until or datetime.now(UTC) - timedelta(days=1)
    start = until - timedelta(days=30 * months)
    step = int((until - start) / timedelta(microseconds=1) / max(count, 1))
    with engine.begin() as conn:
        first = partitions.month_of(start)
        made = [first]
        while made[-1] < partitions.month_of(until):
            made.append(partitions.next_month(made[-1]))
        partitions.create(conn, made)
    done = 0
    while done < count:
        last = min(done + CHUNK, count)
        low = start + timedelta(microseconds=step * done)
        high = start + timedelta(microseconds=step * last) + timedelta(seconds=2)
        with engine.begin() as conn:
            _chunk(conn, ladder, ruleset, prefix, done + 1, last, start, step, players)
            if ledger:
                conn.execute(
                    text(_LEDGER), {"ladder": ladder, "prefix": prefix, "low": low, "high": high}
                )
        done = last


def _chunk(
    conn: Connection,
    ladder: str,
    ruleset: str,
    prefix: str,
    first: int,
    last: int,
    start: datetime,
    step: int,
    players: int,
) -> None:
    conn.execute(
        text(_EVENTS),
        {
            "ladder": ladder,
            "ruleset": ruleset,
            "prefix": prefix,
            "first": first,
            "last": last,
            "start": start,
            "step": step,
            "players": players,
        },
    )
