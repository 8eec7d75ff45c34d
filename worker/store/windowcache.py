"""A worker's windows kept in memory: each player's ranked games since a time, so that a batch
of a busy ladder reads from the audit log only the players it has not scored lately.

Which windows (``engine.needs.WindowAsk``): a ladder whose rules count the K window's ranked
games, and whose pair limit reads no game the K window's read does not (``folds_pairs``);
any other ask is read from the log each batch (``worker.store.windows``).

What an entry holds: every ranked game of one player, not voided, that ended at or after
its ``since``, as the log held them (the rated ones with their opponent), read by the same
index scans as ``windows.reads`` with no upper end (a game stored earlier may have ended after
this batch's games). The games an archive took out of the log are never held: each batch reads
those its windows count from the ladder's checkpoint (``windows.archived``), whether its
players' games come from memory or from the log, and the two never share a game.

When it is true: ``ladder_writes`` counts, per ladder, the transactions that changed what a
window reads; every batch that stores a ladder's events adds one (``write_batch``), and so
does every operator action on it (``moderation.lock_ladder``; ``ladder archive``), in the
transaction that makes the change. A batch reads the count once its players are locked, in
the claim's round trip (``claim_players``). Its own players' entries read then are exact: a
game of a locked player was committed before the lock was granted, and no other game of
theirs can be until this batch commits. Every other entry is exact only if nobody else wrote
the ladder since this worker last did, that is if the count is the one this worker's own
last commit left. If it is not, the entries the batch took from memory are read again in a
second round trip (still under the locks) and the ladder turns cold. At its commit the batch
adds its own count; if that makes exactly one more than it read, nobody wrote in between,
and the batch's own ranked games join the entries; else the ladder turns cold.

A cold ladder keeps no entries: its batches read their windows as a worker without memory
does (``windows.reads``), and the count beside them. A cold batch's claim that finds the
count where this worker's last commit left it makes the next batch read all its players into
memory, and the ladder is warm again. So a worker alone on a ladder reads the log only for
players new to it, and workers that take turns on one ladder read it as before, plus the
count.
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
#: At most this many players' entries per ladder (beyond it, the ladder's are dropped): a
#: player with a week of games holds a few kilobytes.
LIMIT = 100_000


def cached(ask: WindowAsk) -> bool:
    """The ask's windows may be kept in memory (see the module's text)."""
    return ask.ranked_hours is not None and (not ask.pairs or folds_pairs(ask))


class _Entry:
    """One player's ranked games that ended at or after ``since``: their ends in order, and
    the rated ones' opponents and ends (``others[i]`` ended at ``ends[i]``). Three lists
    grown in place: a batch's games allocate nothing the collector must walk again (a tuple
    rebuilt per game, or a list per opponent, made the collector's time 1.0 -> 1.5-1.8 s on
    60,000 hot games)."""

    __slots__ = ("since", "ranked", "others", "ends")

    def __init__(
        self, since: datetime, ranked: list[datetime], others: list[str], ends: list[datetime]
    ) -> None:
        self.since = since
        self.ranked = ranked
        self.others = others
        self.ends = ends

    def cut(self, since: datetime) -> None:
        """Forget the games that ended before ``since``."""
        del self.ranked[: bisect.bisect_left(self.ranked, since)]
        kept = [(o, at) for o, at in zip(self.others, self.ends, strict=True) if at >= since]
        self.others = [o for o, _ in kept]
        self.ends = [at for _, at in kept]
        self.since = since

    def add(self, ended_at: datetime, other: str | None, rated: bool) -> None:
        """One more ranked game."""
        ranked = self.ranked
        if not ranked or ranked[-1] <= ended_at:
            ranked.append(ended_at)
        else:
            bisect.insort(ranked, ended_at)
        if rated and other is not None:
            self.others.append(other)
            self.ends.append(ended_at)

    def against(self, other: str) -> list[datetime]:
        """The ends of the rated games against ``other``."""
        others = self.others
        if other not in others:  # the usual case: a scan in C
            return []
        return [at for o, at in zip(others, self.ends, strict=True) if o == other]


class _Ladder:
    """One ladder's entries and the count of its writes at this worker's last commit (None:
    not known). ``warm``: the entries hold at that count. Cold, a batch reads its windows as
    a worker without memory does; a cold batch's claim that finds the count unchanged since
    this worker's commit makes the next batch read all its players into memory (``fill``):
    workers that take turns on one ladder stay cold, and pay for the count alone."""

    __slots__ = ("writes", "entries", "warm", "fill")

    def __init__(self) -> None:
        self.writes: int | None = None
        self.entries: dict[str, _Entry] = {}
        self.warm = False
        self.fill = False

    def cool(self, writes: int | None) -> None:
        self.writes = writes
        self.entries = {}
        self.warm = self.fill = False


class WindowCache:
    """One worker's entries, per ladder of one database (see the module's text)."""

    def __init__(self) -> None:
        self._ladders: dict[str, _Ladder] = {}

    def use(self, asks: Sequence[WindowAsk], now: datetime) -> CacheUse:
        """A batch's use of the entries for ``asks`` (each ``cached``), processed at
        ``now``: the reads it sends with its claim (``CacheUse.reads``; the asks of its
        ladders that are cold, ``CacheUse.cold``, are read as without memory)."""
        return CacheUse(self, asks, now)

    def ladder(self, name: str) -> _Ladder:
        found = self._ladders.get(name)
        if found is None:
            found = self._ladders[name] = _Ladder()
        return found

    def written(self, claimed: Mapping[str, int], counts: Mapping[str, int], rows: Any) -> None:
        """A batch committed: ``counts``, each ladder's count after the batch's own
        (``COUNT_WRITES``); ``claimed``, the counts the batch read at its claim for the ladders
        whose windows it asked; ``rows``, its audit rows (dicts keyed by column)."""
        grown: set[str] = set()
        for ladder, count in counts.items():
            state = self._ladders.get(ladder)
            if state is None:
                continue
            if not state.warm:  # cold: its claim decided whether the next batch fills
                state.writes, state.entries = count, {}
            elif ladder in claimed and count == claimed[ladder] + 1:
                state.writes = count
                grown.add(ladder)
            else:  # another commit came between the claim and this one
                state.cool(count)
        if not grown:
            return
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
        self.now = now
        self.claimed: dict[str, int] = {}  # each ladder's count, read at the claim
        self.asks: list[WindowAsk] = []  # those answered from memory
        self.cold: list[WindowAsk] = []  # those read as without memory
        self._served: dict[str, list[str]] = {}  # per ladder, the players taken from memory
        self._filled: dict[str, dict[str, _Entry]] = {}  # per ladder, the players read
        self._ladders = sorted({ask.ladder for ask in asks})
        asked: dict[str, list[str]] = {}
        for ask in asks:
            state = cache.ladder(ask.ladder)
            if len(state.entries) > LIMIT:
                state.cool(state.writes)
            if not (state.warm or state.fill):
                self.cold.append(ask)
                continue
            self.asks.append(ask)
            since = ask.since
            served, read = [], []
            entries = state.entries if state.warm else {}
            for pid in ask.ranked_ids:
                entry = entries.get(pid)
                if entry is None or entry.since > since:
                    read.append(pid)
                    continue
                if entry.since < since - _PRUNE_AFTER:
                    entry.cut(since)
                served.append(pid)
            self._served[ask.ladder] = served
            asked[ask.ladder] = read
        self.reads: list[Read[Any]] = [
            Read(_READ_WRITES, {"ladders": self._ladders}, self._counted)
        ]
        fill = self._fill(asked)
        if fill is not None:
            self.reads.append(fill)

    def _counted(self, rows: Sequence[Any]) -> None:
        counts = counts_of(rows)
        self.claimed = {ladder: counts.get(ladder, 0) for ladder in self._ladders}

    def _fill(self, asked: Mapping[str, Sequence[str]]) -> Read[None] | None:
        """The read of ``asked`` (per ladder, the players) from the log, into ``_filled``."""
        asks = [ask for ask in self.asks if asked.get(ask.ladder)]
        if not asks:
            return None
        since = {ask.ladder: ask.since for ask in asks}

        def made(rows: Sequence[Any]) -> None:
            for ladder, pid, times, others, ends in rows:
                entry = _Entry(since[ladder], sorted(times), others or [], ends or [])
                self._filled[ladder][pid] = entry

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
            filled = self._filled.setdefault(ask.ladder, {})
            for pid in asked[ask.ladder]:  # a player with no game in the window has no row
                filled[pid] = _Entry(since[ask.ladder], [], [], [])
        return Read(_PG_FILL, {"asks": compact(document), **bounds}, made)

    def again(self) -> list[Read[Any]]:
        """Once the claim's reads are in: the players taken from memory of a ladder someone
        else wrote since this worker's last commit, to be read from the log after all (empty
        when there are none); the ladder's other entries are dropped, and it turns cold once
        this batch commits. A cold ladder whose count nobody else changed fills next time."""
        stale: dict[str, list[str]] = {}
        for ask in self.cold:
            state = self.cache.ladder(ask.ladder)
            state.fill = state.writes == self.claimed[ask.ladder]
        for ladder, served in self._served.items():
            state = self.cache.ladder(ladder)
            if state.warm and state.writes != self.claimed[ladder]:
                stale[ladder] = served
                self._served[ladder] = []
            elif not state.warm:  # filled: its entries are this batch's players
                state.entries = {}
            state.warm, state.fill = ladder not in stale, False
            state.writes = self.claimed[ladder]
        fill = self._fill(stale)
        return [] if fill is None else [fill]

    def facts(self, facts: WindowFacts) -> None:
        """The windows of every player asked from memory into ``facts``; the entries read
        from the log join the cache."""
        for ask in self.asks:
            state = self.cache.ladder(ask.ladder)
            # a ladder found stale at the claim keeps none: this batch's entries, for it alone
            entries = state.entries if state.warm else {}
            entries.update(self._filled.get(ask.ladder, {}))
            ladder = ask.ladder
            for pid in ask.ranked_ids:
                ranked = entries[pid].ranked
                if ranked:
                    facts.ranked_lists.append((ladder, pid, ranked))
            pairs = facts.rated_pairs
            for a, b in ask.pairs:
                for at in entries[a].against(b):
                    pairs.append((ladder, a, b, at))


def counts_of(rows: Iterable[Any]) -> dict[str, int]:
    """``COUNT_WRITES``'s (or the claim's read of the counts') rows as {ladder: count}."""
    return {ladder: int(n) for ladder, n in rows}
