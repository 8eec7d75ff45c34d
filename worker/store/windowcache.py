"""A worker's windows kept in memory: each player's ranked games since a time, so that a batch
of a busy ladder reads from the audit log only the players it has not scored lately.

Which windows (``engine.needs.WindowAsk``): a ladder whose rules count the K window's ranked
games, and whose pair limit reads no game the K window's read does not (``folds_pairs``);
any other ask is read from the log each batch (``worker.store.windows``).

What an entry holds: every ranked game of one player, not voided, that ended at or after
its ``since``, as the log held them (the rated ones with their opponent), read by the same
index scans as ``windows.reads`` with no upper end (a game stored earlier may have ended after
this batch's games).

When it is true: ``ladder_writes`` counts, per ladder, the transactions that changed what a
window reads; every batch that stores a ladder's events adds one (``write_batch``), and so
does every operator action on it (``moderation.lock_ladder``; ``ladder archive``), in the
transaction that makes the change. A batch reads the count once its players are locked, in
the claim's round trip (``claim_players``). Its own players' entries read then are exact: a
game of a locked player was committed before the lock was granted, and no other game of
theirs can be until this batch commits. Every other entry is exact only if nobody else wrote
the ladder since this worker last did: the count is the one this worker's own last commit
left. If it is not, the entries the batch took from memory are read again in a second round
trip (still under the locks) and every other one is dropped. At its commit the batch adds its
own count; if that makes exactly one more than it read, nobody wrote in between, and the
batch's own ranked games join the entries; else the ladder's entries are dropped.

So a single worker on a ladder (or one whose batches do not interleave with others') reads
the log only for players new to it; workers that take turns on one ladder read it as before,
plus the count.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final

from engine.needs import WindowAsk
from worker.jsontext import compact
from worker.store.driver import Read
from worker.store.windows import (
    _LOSER_SIDE,
    _PG_ASKS,
    _PG_OUTCOME,
    _WINNER_SIDE,
    PROCESSED_MARGIN,
    WindowFacts,
    folds_pairs,
)

#: One more write of each ladder of ``%(ladders)s`` (text[]), each row taken in sorted order
#: (two transactions counting the same ladders cannot deadlock); the counts after it.
COUNT_WRITES: Final = """
INSERT INTO ladder_writes (ladder, writes)
SELECT l, 1 FROM unnest(%(ladders)s::text[]) AS l ORDER BY l
ON CONFLICT (ladder) DO UPDATE SET writes = ladder_writes.writes + 1
RETURNING ladder, writes
"""
_READ_WRITES: Final = "SELECT ladder, writes FROM ladder_writes WHERE ladder = ANY(%(ladders)s)"

# Per asked player, every ranked game not voided that ended at or after the ask's ``since``:
# their ends, and the rated ones' opponents and ends.
_PG_FILL: Final = f"""
SELECT a.ladder, k.id, array_agg(w.ended_at),
  array_agg(w.other) FILTER (WHERE w.outcome = 'rated'),
  array_agg(w.ended_at) FILTER (WHERE w.outcome = 'rated')
{_PG_ASKS}
CROSS JOIN LATERAL json_array_elements_text(a.ids) AS k(id)
CROSS JOIN LATERAL (
  SELECT g.ended_at, g.other, {_PG_OUTCOME} AS outcome
  FROM ({_WINNER_SIDE} UNION ALL {_LOSER_SIDE}) AS g
  OFFSET 0) AS w
WHERE w.outcome <> 'voided'
GROUP BY a.ladder, k.id
"""

# Entries are cut to the batch's earliest window once they hold 3 days more than it needs.
_PRUNE_AFTER = timedelta(days=3)
#: At most this many players' entries per ladder (beyond it, the ladder's are dropped).
LIMIT = 250_000


def cached(ask: WindowAsk) -> bool:
    """The ask's windows are kept in memory (see the module's text)."""
    return ask.ranked_hours is not None and (not ask.pairs or folds_pairs(ask))


class _Entry:
    """One player's ranked games that ended at or after ``since``."""

    __slots__ = ("since", "ranked", "rated")

    def __init__(
        self, since: datetime, ranked: list[datetime], rated: dict[str, list[datetime]]
    ) -> None:
        self.since = since
        self.ranked = ranked  # in order
        self.rated = rated  # opponent -> the ended_at of each rated game against them

    def cut(self, since: datetime) -> None:
        """Forget the games that ended before ``since``."""
        self.ranked = self.ranked[bisect.bisect_left(self.ranked, since) :]
        rated = (
            (other, [at for at in times if at >= since]) for other, times in self.rated.items()
        )
        self.rated = {other: times for other, times in rated if times}
        self.since = since

    def add(self, ended_at: datetime, other: str, rated: bool) -> None:
        times = self.ranked
        if not times or times[-1] <= ended_at:
            times.append(ended_at)
        else:
            bisect.insort(times, ended_at)
        if rated:
            self.rated.setdefault(other, []).append(ended_at)


class _Ladder:
    """One ladder's entries and the count of its writes they hold at (None: not known)."""

    __slots__ = ("writes", "entries")

    def __init__(self) -> None:
        self.writes: int | None = None
        self.entries: dict[str, _Entry] = {}

    def drop(self) -> None:
        self.writes = None
        self.entries = {}


class WindowCache:
    """One worker's entries, per ladder of one database (see the module's text)."""

    def __init__(self) -> None:
        self._ladders: dict[str, _Ladder] = {}

    def use(self, asks: Sequence[WindowAsk], now: datetime) -> CacheUse:
        """A batch's use of the entries for ``asks`` (each ``cached``), processed at
        ``now``: the reads it sends with its claim (``CacheUse.reads``)."""
        return CacheUse(self, asks, now)

    def ladder(self, name: str) -> _Ladder:
        found = self._ladders.get(name)
        if found is None:
            found = self._ladders[name] = _Ladder()
        return found

    def written(self, claimed: Mapping[str, int], counts: Mapping[str, int], rows: Any) -> None:
        """A batch committed: ``counts``, each ladder's count after the batch's own
        (``COUNT_WRITES``); ``claimed``, the counts the batch read at its claim for the ladders
        whose entries it used; ``rows``, its audit rows (dicts keyed by column)."""
        grown = {
            ladder
            for ladder, count in counts.items()
            if ladder in claimed and count == claimed[ladder] + 1
        }
        for ladder, count in counts.items():
            state = self._ladders.get(ladder)
            if state is None:
                continue
            if ladder in grown:
                state.writes = count
            else:
                state.drop()
        for row in rows:
            ladder = row["ladder"]
            if ladder not in grown or row["type"] != "game.finished" or row["mode"] != "ranked":
                continue
            entries = self._ladders[ladder].entries
            winner, loser, ended_at = row["winner_id"], row["loser_id"], row["ended_at"]
            rated = row["outcome"] == "rated"
            if winner is not None and (entry := entries.get(winner)) is not None:
                entry.add(ended_at, loser, rated)
            if loser is not None and (entry := entries.get(loser)) is not None:
                entry.add(ended_at, winner, rated)


class CacheUse:
    """One batch's use of a ``WindowCache``: the players it reads from the log (``reads``,
    with the ladders' counts), those it takes from memory, and what it hands the engine."""

    def __init__(self, cache: WindowCache, asks: Sequence[WindowAsk], now: datetime) -> None:
        self.cache = cache
        self.asks = list(asks)
        self.now = now
        self.claimed: dict[str, int] = {}  # each ladder's count, read at the claim
        self._served: dict[str, list[str]] = {}  # per ladder, the players taken from memory
        self._filled: dict[str, dict[str, _Entry]] = {}  # per ladder, the players read
        asked: dict[str, list[str]] = {}
        for ask in self.asks:
            state = cache.ladder(ask.ladder)
            if len(state.entries) > LIMIT:
                state.drop()
            since = ask.since
            served, read = [], []
            for pid in ask.ranked_ids:
                entry = state.entries.get(pid) if state.writes is not None else None
                if entry is None or entry.since > since:
                    read.append(pid)
                    continue
                if entry.since < since - _PRUNE_AFTER:
                    entry.cut(since)
                served.append(pid)
            self._served[ask.ladder] = served
            asked[ask.ladder] = read
        self.reads: list[Read[Any]] = [
            Read(_READ_WRITES, {"ladders": sorted(asked)}, self._counted)
        ]
        fill = self._fill(asked)
        if fill is not None:
            self.reads.append(fill)

    def _counted(self, rows: Sequence[Any]) -> None:
        counts = {ladder: int(n) for ladder, n in rows}
        self.claimed = {ask.ladder: counts.get(ask.ladder, 0) for ask in self.asks}

    def _fill(self, asked: Mapping[str, Sequence[str]]) -> Read[None] | None:
        """The read of ``asked`` (per ladder, the players) from the log, into ``_filled``."""
        asks = [ask for ask in self.asks if asked.get(ask.ladder)]
        if not asks:
            return None
        since = {ask.ladder: ask.since for ask in asks}

        def made(rows: Sequence[Any]) -> None:
            for ladder, pid, times, others, ends in rows:
                rated: dict[str, list[datetime]] = {}
                for other, at in zip(others or (), ends or (), strict=True):
                    rated.setdefault(other, []).append(at)
                entry = _Entry(since[ladder], sorted(times), rated)
                self._filled.setdefault(ladder, {})[pid] = entry

        document = [
            {
                "ladder": ask.ladder,
                "since": since[ask.ladder].isoformat(),
                "until": "infinity",
                "ids": sorted(asked[ask.ladder]),
            }
            for ask in asks
        ]
        bounds = {
            "earliest": min(since.values()) - PROCESSED_MARGIN,
            "latest": self.now + PROCESSED_MARGIN,
        }
        for ask in asks:
            for pid in asked[ask.ladder]:  # a player with no game in the window has no row
                self._filled.setdefault(ask.ladder, {})[pid] = _Entry(since[ask.ladder], [], {})
        return Read(_PG_FILL, {"asks": compact(document), **bounds}, made)

    def again(self) -> list[Read[Any]]:
        """Once the claim's reads are in: the players taken from memory of a ladder someone
        else wrote since this worker's entries were made, to be read from the log after all
        (empty when there are none). The ladder's other entries are dropped."""
        stale: dict[str, list[str]] = {}
        for ladder, served in self._served.items():
            state = self.cache.ladder(ladder)
            if state.writes != self.claimed[ladder]:
                state.drop()
                stale[ladder] = served
                self._served[ladder] = []
            state.writes = self.claimed[ladder]
        fill = self._fill(stale)
        return [] if fill is None else [fill]

    def facts(self, facts: WindowFacts) -> None:
        """The windows of every asked player into ``facts``, from memory; the entries read
        from the log join the cache."""
        for ask in self.asks:
            state = self.cache.ladder(ask.ladder)
            state.entries.update(self._filled.get(ask.ladder, {}))
            entries = state.entries
            ladder = ask.ladder
            for pid in ask.ranked_ids:
                ranked = entries[pid].ranked
                if ranked:
                    facts.ranked_lists.append((ladder, pid, ranked))
            for a, b in ask.pairs:
                times = entries[a].rated.get(b)
                if times:
                    facts.rated_pairs.extend((ladder, a, b, at) for at in times)


def counts_of(rows: Iterable[Any]) -> dict[str, int]:
    """``COUNT_WRITES``'s rows as {ladder: count}."""
    return {ladder: int(n) for ladder, n in rows}
