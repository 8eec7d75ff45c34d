"""The windows a batch counts (``engine.Windows``): one ladder's ranked games and rated pairs
before its games, read from the audit log in the batch's transaction
(``statements.after_reads``).

The audit log is partitioned by month of ``processed_at`` (``worker.store.partitions``); the
reads bound it too, so each reads the partitions of the window's months only, not every
month the log holds: a game is stored when it is processed, never more than
``schemas.parse``'s 5 minutes before its ``ended_at``, so a game that ended at or after a
window's start was processed after it, less a margin (``PROCESSED_MARGIN``). Each read also
bounds ``processed_at`` by parameters, the earliest window's start less the margin and the
batch's time plus the margin: the planner then leaves every other month's partition out of the plan
(a bound read from the asks document is known only as the read runs, and every month's
partition was planned in every batch: with a year of months, 1.3-1.7 ms of planning a batch
where 0.35-0.43 ms is left, measured).

Archived games (``ladder archive``) are no longer in the log, but the windows after the
boundary count them (SPEC 2.1 counts every ranked game in the week, 2.4 every rated game of the
pair in the day), as verify's replay from the checkpoint does: the checkpoint keeps the games
still inside a window (``checkpoints.Checkpoint.ranked``, ``rated_pairs``), and ``archived``
reads those of the asked players and pairs from it, beside the log's (the two are disjoint:
the log holds the events processed from the boundary on, the checkpoint those before it).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from engine import Windows
from engine.needs import WindowAsk
from worker.jsontext import compact
from worker.store.driver import Read
from worker.store.partitions import month_of

# A game is never processed this long before it ended (the parser refuses an ``ended_at``
# over 5 minutes ahead of the worker's clock; a day covers clocks that differ).
PROCESSED_MARGIN = timedelta(days=1)
_MARGIN = f"interval '{PROCESSED_MARGIN.days} days'"


class WindowFacts(NamedTuple):
    """A batch's windows as the store found them, for ``engine.Windows``."""

    ranked: list[tuple[str, str, datetime]]  # ladder, player, ended_at: one ranked game each
    # ladder, player, at, n: n ranked games inside every window the batch counts (its
    # ``WindowAsk.core``), entered as ended at the core's start, where every window holds them
    ranked_counts: list[tuple[str, str, datetime, int]]
    rated_pairs: list[tuple[str, str, str, datetime]]  # ladder, winner, loser, ended_at
    # ladder, player, the ended_at of ranked games in order: all of the player's in memory
    # (``worker.store.windowcache``), or the archived ones of a checkpoint (``archived``)
    ranked_lists: list[tuple[str, str, Sequence[datetime]]]

    def windows(self) -> Windows:
        """The engine's windows from what the store found."""
        out = Windows()
        for ladder, player_id, times in self.ranked_lists:
            out.add_ranked_times(ladder, player_id, times)
        for ladder, player_id, ended_at in self.ranked:
            out.add_ranked(ladder, player_id, ended_at)
        for ladder, player_id, at, n in self.ranked_counts:
            out.add_ranked_many(ladder, player_id, at, n)
        for ladder, winner_id, loser_id, ended_at in self.rated_pairs:
            out.add_rated_pair(ladder, winner_id, loser_id, ended_at)
        return out


# The windows (``WindowAsk``), all ladders at once, each asking ladder's ids and pairs in one
# JSON document: one string to send however many players ask, where arrays cost the driver a
# dump per element. Per player and side, one range scan of the (ladder, winner_id|loser_id,
# ended_at) index. The ranked games inside every window of the batch (the ask's core) come
# back as a count; only those near the windows' edges come back as times: on one busy ladder
# a player's week of games is one row, not one row per game.
# Moderation: in a ladder with any moderation effect (checked once per ladder), a game counts
# as its latest effect left it: voided ones in no window, re-rated ones as re-rated; the
# effects are never looked up in any other ladder. A void locks every player of its ladder
# while it writes them, so what this reads after the claim cannot change before the commit.
_PG_ASKS = """
FROM json_to_recordset(%(asks)s::json) AS a(ladder text, since timestamptz, core_since
     timestamptz, core_until timestamptz, until timestamptz, ids json, pairs json,
     pair_since timestamptz)
CROSS JOIN LATERAL (
  SELECT EXISTS (SELECT 1 FROM event_effects WHERE ladder = a.ladder) AS moderated) AS m
"""
# A game's outcome as moderation left it (its latest effect), looked up only in a moderated
# ladder; computed once per row (``OFFSET 0`` keeps the planner from copying it into each
# place that reads it).
_PG_OUTCOME = """CASE WHEN m.moderated THEN coalesce((SELECT f.outcome FROM event_effects f
    WHERE f.ladder = a.ladder AND f.event_id = g.event_id ORDER BY f.action_id DESC LIMIT 1),
  g.outcome) ELSE g.outcome END"""
# A player's games as winner also give the pair games the batch asks about, when the ask
# folds them in (``pair_since`` set): each rated game is read once, from its winner's side.
# ``ORDER BY ended_at``: what the window index gives as it is, where the (ladder, seq) index
# would need a sort. Before a new database's first ANALYZE the planner takes both for one row
# and chose the (ladder, seq) one, a scan of the whole ladder per player (measured: 400 games
# stored, 60 a batch: 25.8 -> 1.7 ms).
_PG_RANKED_SIDE = """
  (SELECT event_id, ended_at, {other} AS other, outcome, {won} AS won FROM events
  WHERE ladder = a.ladder AND {side} = k.id AND ended_at >= a.since AND ended_at < a.until
    AND processed_at >= a.since - {margin}
    AND processed_at >= %(earliest)s AND processed_at < %(latest)s
    AND type = 'game.finished' AND mode = 'ranked'
  ORDER BY ended_at)
"""
_WINNER_SIDE = _PG_RANKED_SIDE.format(
    side="winner_id", other="loser_id", won="true", margin=_MARGIN
)
_LOSER_SIDE = _PG_RANKED_SIDE.format(
    side="loser_id", other="winner_id", won="false", margin=_MARGIN
)
_PG_PAIR_GAME = "w.won AND w.ended_at >= a.pair_since AND w.outcome = 'rated'"
_PG_RANKED = f"""
SELECT a.ladder, k.id,
  count(*) FILTER (WHERE w.ended_at >= a.core_since AND w.ended_at < a.core_until),
  array_agg(w.ended_at) FILTER (WHERE w.ended_at < a.core_since OR w.ended_at >= a.core_until),
  array_agg(w.other) FILTER (WHERE {_PG_PAIR_GAME}),
  array_agg(w.ended_at) FILTER (WHERE {_PG_PAIR_GAME})
{_PG_ASKS}
CROSS JOIN LATERAL json_array_elements_text(a.ids) AS k(id)
CROSS JOIN LATERAL (
  SELECT g.ended_at, g.other, g.won, {_PG_OUTCOME} AS outcome
  FROM ({_WINNER_SIDE} UNION ALL {_LOSER_SIDE}) AS g
  OFFSET 0) AS w
WHERE w.outcome <> 'voided'
GROUP BY a.ladder, k.id
"""
# ``pairs``: [winner, loser] in both orders, so each order is one index scan.
_PG_RATED_PAIRS = f"""
SELECT a.ladder, w.winner_id, w.loser_id, w.ended_at
{_PG_ASKS}
CROSS JOIN LATERAL json_array_elements(a.pairs) AS p(pair)
CROSS JOIN LATERAL (
  SELECT g.winner_id, g.loser_id, g.ended_at, {_PG_OUTCOME} AS outcome
  FROM (SELECT event_id, winner_id, loser_id, ended_at, outcome FROM events
        WHERE ladder = a.ladder AND winner_id = p.pair ->> 0 AND loser_id = p.pair ->> 1
          AND ended_at >= a.since AND ended_at < a.until AND type = 'game.finished'
          AND processed_at >= a.since - {_MARGIN}
          AND processed_at >= %(earliest)s AND processed_at < %(latest)s
          AND mode = 'ranked'
        ORDER BY ended_at) AS g
  OFFSET 0) AS w
WHERE w.outcome = 'rated'
"""


def reads(asks: Sequence[WindowAsk], facts: WindowFacts, now: datetime) -> list[Read[None]]:
    """The windows' reads (``statements.after_reads``) of a batch processed at ``now``; their
    rows go into ``facts``."""
    reads: list[Read[None]] = []
    if not asks:
        return reads
    bounds = {  # the months of the log a read may need (see the module's text)
        "earliest": min(ask.since for ask in asks) - PROCESSED_MARGIN,
        "latest": now + PROCESSED_MARGIN,  # a game stored by a worker whose clock is ahead
    }
    counted = [ask for ask in asks if ask.ranked_ids and ask.ranked_hours is not None]
    folded = {ask.ladder for ask in counted if folds_pairs(ask)}
    if counted:
        cores = {ask.ladder: ask.core for ask in counted}
        wanted = {ask.ladder: set(ask.pairs) for ask in counted}

        def ranked(rows: Sequence[Any]) -> None:
            for ladder, pid, n, times, others, ends in rows:
                if n:
                    facts.ranked_counts.append((ladder, pid, cores[ladder][0], n))
                if times:
                    facts.ranked.extend((ladder, pid, at) for at in times)
                if others:
                    pairs = wanted[ladder]
                    facts.rated_pairs.extend(
                        (ladder, pid, other, at)
                        for other, at in zip(others, ends, strict=True)
                        if (min(pid, other), max(pid, other)) in pairs
                    )

        document: list[dict[str, Any]] = [
            {
                "ladder": ask.ladder,
                "since": (ask.first - timedelta(hours=ask.ranked_hours[1])).isoformat(),
                "core_since": cores[ask.ladder][0].isoformat(),
                "core_until": cores[ask.ladder][1].isoformat(),
                "until": ask.last.isoformat(),
                "ids": sorted(set(ask.ranked_ids)),
                "pair_since": (ask.first - timedelta(hours=ask.pair_hours)).isoformat()
                if ask.ladder in folded
                else None,
            }
            for ask in counted
            if ask.ranked_hours is not None
        ]
        reads.append(Read(_PG_RANKED, {"asks": compact(document), **bounds}, ranked))
    paired = [ask for ask in asks if ask.pairs and ask.ladder not in folded]
    if paired:

        def pairs(rows: Sequence[Any]) -> None:
            facts.rated_pairs.extend((ladder, w, lo, at) for ladder, w, lo, at in rows)

        asked = [
            {
                "ladder": ask.ladder,
                "since": (ask.first - timedelta(hours=ask.pair_hours)).isoformat(),
                "until": ask.last.isoformat(),
                "pairs": sorted({(a, b) for a, b in ask.pairs} | {(b, a) for a, b in ask.pairs}),
            }
            for ask in paired
        ]
        reads.append(Read(_PG_RATED_PAIRS, {"asks": compact(asked), **bounds}, pairs))
    return reads


# The checkpoint's games in the windows (``archived``), all ladders at once: per ask, its
# ladder's checkpoint if its boundary is late enough to matter (an archived game was processed
# before the boundary, so it ended at most 5 minutes after it: ``PROCESSED_MARGIN`` covers
# that); a primary-key probe of ``checkpoints``, where a ladder without one, or with an older
# one, ends the read. Then each asked player's ranked games, a key of ``state -> 'ranked'``,
# and the rated games of the asked pairs (``pairs``: {a: [b, ...]}, a < b, as the checkpoint
# keeps them), found in one pass over ``state -> 'rated_pairs'``; the times inside the ask's
# windows only, in order. The checkpoint's games were decided by the replay that made it, each
# counted as it left it: an archived event is out of the log and out of moderation's reach.
_ARCHIVED_TIMES = """ARRAY(SELECT t.at::timestamptz FROM jsonb_array_elements_text({times}) AS t(at)
  WHERE t.at::timestamptz >= a.since AND t.at::timestamptz < a.until ORDER BY 1)"""
_PG_ARCHIVED = f"""
WITH a AS MATERIALIZED (
  SELECT a.ladder, a.since, a.until, a.ids, a.pairs::jsonb AS pairs,
    c.state -> 'ranked' AS ranked, c.state -> 'rated_pairs' AS rated
  FROM json_to_recordset(%(asks)s::json) AS a(ladder text, since timestamptz,
       until timestamptz, ids json, pairs json)
  JOIN checkpoints c ON c.ladder = a.ladder AND c.before > a.since - {_MARGIN})
SELECT a.ladder, k.id, NULL, {_ARCHIVED_TIMES.format(times="a.ranked -> k.id")}
FROM a CROSS JOIN LATERAL json_array_elements_text(a.ids) AS k(id)
WHERE a.ranked ? k.id
UNION ALL
SELECT a.ladder, e.pair ->> 0, e.pair ->> 1, {_ARCHIVED_TIMES.format(times="e.pair -> 2")}
FROM a CROSS JOIN LATERAL jsonb_array_elements(a.rated) AS e(pair)
WHERE (a.pairs -> (e.pair ->> 0)) ? (e.pair ->> 1)
"""


def archived(asks: Sequence[WindowAsk], facts: WindowFacts, now: datetime) -> list[Read[None]]:
    """The read of the archived games the windows of ``asks`` count (``_PG_ARCHIVED``) of a
    batch processed at ``now``; their times go into ``facts``. None when every window opens
    a margin after the latest boundary an archive can have recorded (``ladder archive``'s
    boundary is the first of a month no later than its own: that of ``now``, or of a clock a
    margin ahead): so a batch reads nothing more for most of a month, and in its first days
    (or for a game that ended long before it arrived) one probe of ``checkpoints`` per
    ladder, in the claim's round trip."""
    month = month_of(now + PROCESSED_MARGIN)
    latest = datetime(month.year, month.month, 1, tzinfo=UTC) + PROCESSED_MARGIN
    asked = [ask for ask in asks if ask.since < latest]
    if not asked:
        return []

    def found(rows: Sequence[Any]) -> None:
        for ladder, a, b, times in rows:
            if not times:
                continue
            if b is None:
                facts.ranked_lists.append((ladder, a, times))
            else:
                facts.rated_pairs.extend((ladder, a, b, at) for at in times)

    document: list[dict[str, Any]] = []
    for ask in asked:
        pairs: dict[str, list[str]] = {}
        for a, b in sorted(ask.pairs):
            pairs.setdefault(a, []).append(b)
        document.append(
            {
                "ladder": ask.ladder,
                "since": ask.since.isoformat(),
                "until": ask.last.isoformat(),
                "ids": sorted(set(ask.ranked_ids)),
                "pairs": pairs,
            }
        )
    return [Read(_PG_ARCHIVED, {"asks": compact(document)}, found)]


def folds_pairs(ask: WindowAsk) -> bool:
    """The ranked read of ``ask`` also finds its pairs' rated games: it reads every game of
    both players of each pair over the pair window (and more)."""
    if ask.ranked_hours is None or ask.pair_hours > ask.ranked_hours[1]:
        return False
    ids = set(ask.ranked_ids)
    return all(a in ids and b in ids for a, b in ask.pairs)
