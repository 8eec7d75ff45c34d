"""A worker's windows kept in memory: each player's ranked games since a time, so that a batch
of a busy ladder reads from the audit log only the players it has not scored, and the games
other workers stored since its last read.

Which windows (``engine.needs.WindowAsk``): a ladder whose rules count the K window's ranked
games, and whose pair limit reads no game the K window's read does not (``folds_pairs``);
any other ask is read from the log each batch (``worker.store.windows``).

What an entry holds: every ranked game of one player, not voided, that ended at or after
its ``since``, as the log held them (the rated ones with their opponent), read by the same
index scans as ``windows.reads`` with no upper end (a game stored earlier may have ended after
this batch's games). The games an archive took out of the log are never held: each batch reads
those its windows count from the ladder's checkpoint (``windows.archived``), whether its
players' games come from memory or from the log, and the two never share a game.

When it is true: a ladder's entries are exact at a *mark*, read in one statement: the last
scoring number (``seq``) taken, so no event stored has a higher one, and two counts of
``ladder_writes``: ``stored``, the audit rows worker batches stored (each batch adds its own
in its transaction, ``COUNT_WRITES``), and ``actions``, the operator actions (each moderation
action, season close, erase and archive adds one in its transaction, ``COUNT_ACTION``). A
batch's claim, once its players are locked, reads the ladder's mark again and, in the same
statement, every event stored after the old mark's number (the scoring-order index). If no
action came and ``stored`` moved by exactly the rows read, the entries had every game but
those, and those join them: two workers taking turns on a ladder each read the other's games,
not their players' windows. Otherwise (an action; a batch that took its numbers before the
mark and committed after it) the entries taken from memory are read from the log again in a
second round trip, the others are dropped, and the batch's players alone are kept: they are
locked, so nobody else's game of theirs can commit before this batch does. A ladder new to
the worker reads all its players. At its commit the batch's ``COUNT_WRITES`` returns the
ladder's ``writes`` (every transaction counts one): exactly one more than at its claim,
nobody committed in between, and the batch's own games join the entries, at a mark of its
own last number; else the mark stays its claim's, and the next claim reads the batch's own
games with the others.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final, NamedTuple

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

#: A worker batch's write of each ladder of ``%(ladders)s`` (text[]), with the audit rows it
#: stored of each (``%(rows)s``, bigint[]), each row taken in sorted order (two transactions
#: counting the same ladders cannot deadlock); after it, the ladder's counts and the last
#: scoring number this session took (the batch's own last: its rows were stored before).
COUNT_WRITES: Final = """
INSERT INTO ladder_writes AS w (ladder, writes, stored)
SELECT l, 1, n FROM unnest(%(ladders)s::text[], %(rows)s::bigint[]) AS c(l, n) ORDER BY l
ON CONFLICT (ladder) DO UPDATE SET writes = w.writes + 1, stored = w.stored + excluded.stored
RETURNING w.ladder, w.writes, w.stored, currval('events_seq_seq')
"""
#: An operator action on each ladder of ``%(ladders)s``: one more write and one more action.
COUNT_ACTION: Final = """
INSERT INTO ladder_writes AS w (ladder, writes, actions)
SELECT l, 1, 1 FROM unnest(%(ladders)s::text[]) AS l ORDER BY l
ON CONFLICT (ladder) DO UPDATE SET writes = w.writes + 1, actions = w.actions + 1
"""
# Per ladder (``after``: the scoring number of the worker's mark, NULL where it keeps none):
# its counts, the last scoring number taken (the new mark's: no event stored has a higher
# one) and the events stored after ``after``, counted, and the ranked games among them not
# voided, in one statement (one snapshot). A game stored after a mark was processed at most
# a day before the batch's earliest window, less the margin. The scoring numbers bounded on
# both sides: the planner takes a range it cannot see for a small one (one side alone, for a
# third of the ladder, and it read the month whole).
_RANKED = "e.type = 'game.finished' AND e.mode = 'ranked' AND e.outcome <> 'voided'"
_PG_MARK: Final = f"""
SELECT a.ladder, coalesce(w.writes, 0), coalesce(w.stored, 0), coalesce(w.actions, 0), s.last,
  d.n, d.winners, d.losers, d.ends, d.rated
FROM unnest(%(ladders)s::text[], %(after)s::bigint[]) AS a(ladder, after)
CROSS JOIN (SELECT coalesce(pg_sequence_last_value('events_seq_seq'), 0) AS last) AS s
LEFT JOIN ladder_writes w ON w.ladder = a.ladder
CROSS JOIN LATERAL (
  SELECT count(*) AS n, array_agg(e.winner_id) FILTER (WHERE {_RANKED}) AS winners,
    array_agg(e.loser_id) FILTER (WHERE {_RANKED}) AS losers,
    array_agg(e.ended_at) FILTER (WHERE {_RANKED}) AS ends,
    array_agg(e.outcome = 'rated') FILTER (WHERE {_RANKED}) AS rated
  FROM events e WHERE e.ladder = a.ladder AND e.seq > a.after AND e.seq <= s.last
    AND e.processed_at >= %(earliest)s AND e.processed_at < %(latest)s) AS d
"""


class Counted(NamedTuple):
    """A ladder's counts after a batch's ``COUNT_WRITES``, and the batch's last scoring number."""

    writes: int
    stored: int
    seq: int


def count_writes(audit_rows: Sequence[Mapping[str, Any]]) -> Read[dict[str, Counted]] | None:
    """``COUNT_WRITES`` of a batch's audit rows (None when it has none), and its answer."""
    stored = Counter(row["ladder"] for row in audit_rows)
    if not stored:
        return None
    ladders = sorted(stored)
    params = {"ladders": ladders, "rows": [stored[ladder] for ladder in ladders]}

    def made(rows: Sequence[Any]) -> dict[str, Counted]:
        return {ladder: Counted(int(w), int(n), int(seq)) for ladder, w, n, seq in rows}

    return Read(COUNT_WRITES, params, made)


class _Mark(NamedTuple):
    """A ladder as the claim's ``_PG_MARK`` found it (its ``writes``: ``CacheUse.claimed``)."""

    stored: int
    actions: int
    seq: int
    read: int  # events stored after the worker's mark
    games: list[tuple[str | None, str | None, datetime, bool]]  # the ranked ones among them


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
    """One ladder's entries and the mark they are exact at (``warm``; see the module's text):
    its ``stored`` and ``actions`` counts and scoring number ``seq``."""

    __slots__ = ("stored", "actions", "seq", "entries", "warm")

    def __init__(self) -> None:
        self.stored = self.actions = self.seq = 0
        self.entries: dict[str, _Entry] = {}
        self.warm = False

    def cool(self) -> None:
        self.entries = {}
        self.warm = False

    def caught_up(self, mark: _Mark) -> bool:
        """The games stored after this ladder's mark join its entries, if they are all of
        them (no action, ``stored`` moved by as many rows as were read); else False."""
        if not self.warm or mark.actions != self.actions or mark.stored - self.stored != mark.read:
            return False
        for winner, loser, ended_at, rated in mark.games:
            _played(self.entries, winner, loser, ended_at, rated)
        return True


def _played(
    entries: Mapping[str, _Entry], winner: str | None, loser: str | None, at: datetime, rated: bool
) -> None:
    """One ranked game into the entries of its two players that hold games of its end."""
    if winner is not None and (entry := entries.get(winner)) is not None and at >= entry.since:
        entry.add(at, loser, rated)
    if loser is not None and (entry := entries.get(loser)) is not None and at >= entry.since:
        entry.add(at, winner, rated)


class WindowCache:
    """One worker's entries, per ladder of one database (see the module's text)."""

    def __init__(self) -> None:
        self._ladders: dict[str, _Ladder] = {}

    def use(self, asks: Sequence[WindowAsk], now: datetime) -> CacheUse:
        """A batch's use of the entries for ``asks`` (each ``cached``, one a ladder),
        processed at ``now``: the reads it sends with its claim (``CacheUse.reads``)."""
        return CacheUse(self, asks, now)

    def ladder(self, name: str) -> _Ladder:
        found = self._ladders.get(name)
        if found is None:
            found = self._ladders[name] = _Ladder()
        return found

    def written(self, claimed: Mapping[str, int], counts: Mapping[str, Counted], rows: Any) -> None:
        """A batch committed: ``counts``, each ladder's after the batch's own
        (``count_writes``); ``claimed``, the ``writes`` the batch read at its claim for the
        ladders whose windows it asked; ``rows``, its audit rows (dicts keyed by column).
        Where nobody committed in between, its games join the entries."""
        grown: set[str] = set()
        for ladder, count in counts.items():
            state = self._ladders.get(ladder)
            if state is None or not state.warm or ladder not in claimed:
                continue
            if count.writes == claimed[ladder] + 1:
                state.stored, state.seq = count.stored, count.seq
                grown.add(ladder)
        for row in rows if grown else ():
            ladder = row["ladder"]
            if ladder not in grown or row["type"] != "game.finished" or row["mode"] != "ranked":
                continue
            if row["outcome"] != "voided":
                entries = self._ladders[ladder].entries
                rated = row["outcome"] == "rated"
                _played(entries, row["winner_id"], row["loser_id"], row["ended_at"], rated)


class CacheUse:
    """One batch's use of a ``WindowCache``: the players it reads from the log (``reads``,
    with the ladders' marks), those it takes from memory, and what it hands the engine."""

    def __init__(self, cache: WindowCache, asks: Sequence[WindowAsk], now: datetime) -> None:
        self.cache = cache
        self.now = now
        self.claimed: dict[str, int] = {}  # each ladder's writes, read at the claim
        self.asks = list(asks)
        self._marks: dict[str, _Mark] = {}
        self._served: dict[str, list[str]] = {}  # per ladder, the players taken from memory
        self._filled: dict[str, dict[str, _Entry]] = {}  # per ladder, the players read
        asked: dict[str, list[str]] = {}
        for ask in asks:
            state = cache.ladder(ask.ladder)
            if len(state.entries) > LIMIT:
                state.cool()
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
        ladders = sorted(self._served)
        states = [cache.ladder(ladder) for ladder in ladders]
        after = [state.seq if state.warm else None for state in states]
        params = {"ladders": ladders, "after": after, **self._bounds(self.asks)}
        self.reads: list[Read[Any]] = [Read(_PG_MARK, params, self._marked)]
        fill = self._fill(asked)
        if fill is not None:
            self.reads.append(fill)

    def _bounds(self, asks: Sequence[WindowAsk]) -> dict[str, datetime]:
        return {
            "earliest": min(ask.since for ask in asks) - PROCESSED_MARGIN,
            "latest": self.now + PROCESSED_MARGIN,
        }

    def _marked(self, rows: Sequence[Any]) -> None:
        for ladder, writes, stored, actions, seq, read, winners, losers, ends, rated in rows:
            games = list(zip(winners, losers, ends, rated, strict=True)) if ends else []
            self._marks[ladder] = _Mark(stored, actions, seq, read, games)
            self.claimed[ladder] = writes

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
        for ask in asks:
            filled = self._filled.setdefault(ask.ladder, {})
            for pid in asked[ask.ladder]:  # a player with no game in the window has no row
                filled[pid] = _Entry(since[ask.ladder], [], [], [])
        return Read(_PG_FILL, {"asks": compact(document), **self._bounds(asks)}, made)

    def again(self) -> list[Read[Any]]:
        """Once the claim's reads are in, each ladder at its claim's mark: the games stored
        since the worker's mark join its entries; where they may not be all (see the module's
        text), the players taken from memory are read from the log after all (the read
        returned, empty when there are none) and the ladder keeps this batch's players only."""
        stale: dict[str, list[str]] = {}
        for ladder, served in self._served.items():
            state = self.cache.ladder(ladder)
            mark = self._marks[ladder]
            if not state.caught_up(mark):
                if served:
                    stale[ladder] = served
                    self._served[ladder] = []
                state.entries = {}
            state.warm = True
            state.stored, state.actions, state.seq = mark.stored, mark.actions, mark.seq
        fill = self._fill(stale)
        return [] if fill is None else [fill]

    def facts(self, facts: WindowFacts) -> None:
        """The windows of every player asked into ``facts``; the entries read from the log
        join the cache."""
        for ask in self.asks:
            entries = self.cache.ladder(ask.ladder).entries
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
