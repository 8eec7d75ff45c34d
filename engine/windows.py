"""Sliding-window counts over ``ended_at``: K by weekly volume (SPEC 2.1), pair limits (2.4).

Part of the ladder state: a worker loads the windows its batch needs from the audit store,
a replay builds them from every event; both update them as events are scored in order, so no
event needs a query of its own.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any, TypeVar

K = TypeVar("K", bound=tuple[str, ...])


class Windows:
    def __init__(self) -> None:
        self._ranked: dict[tuple[str, str], list[datetime]] = defaultdict(list)
        self._rated_pairs: dict[tuple[str, str, str], list[datetime]] = defaultdict(list)
        # After ``fork`` both copies share their lists; each copies a list before it first
        # adds to it (``_own``), so a fork costs the keys, not the timestamps.
        self._forked = False
        self._owned: set[tuple[str, ...]] = set()

    def fork(self) -> Windows:
        """An independent copy: what either adds from here on the other does not see."""
        other = Windows()
        other._ranked = defaultdict(list, self._ranked)
        other._rated_pairs = defaultdict(list, self._rated_pairs)
        other._forked = self._forked = True
        self._owned = set()
        return other

    def _own(self, table: dict[Any, list[datetime]], key: tuple[str, ...]) -> list[datetime]:
        """The list under ``key``, this copy's own once it is shared with a fork."""
        times = table[key]
        if self._forked and key not in self._owned:
            times = table[key] = list(times)
            self._owned.add(key)
        return times

    @staticmethod
    def _pair(ladder: str, a: str, b: str) -> tuple[str, str, str]:
        return (ladder, a, b) if a <= b else (ladder, b, a)

    def add_ranked(self, ladder: str, player_id: str, ended_at: datetime) -> None:
        _add(self._own(self._ranked, (ladder, player_id)), ended_at)

    def add_ranked_many(self, ladder: str, player_id: str, ended_at: datetime, n: int) -> None:
        """``n`` ranked games of the player that ended at ``ended_at``."""
        times = self._own(self._ranked, (ladder, player_id))
        if not times or times[-1] <= ended_at:
            times.extend([ended_at] * n)
        else:
            at = bisect.bisect_right(times, ended_at)
            times[at:at] = [ended_at] * n

    def add_ranked_both(self, ladder: str, a: str, b: str, ended_at: datetime) -> None:
        """``add_ranked`` for both players of a game."""
        _add(self._own(self._ranked, (ladder, a)), ended_at)
        _add(self._own(self._ranked, (ladder, b)), ended_at)

    def add_rated_pair(self, ladder: str, a: str, b: str, ended_at: datetime) -> None:
        _add(self._own(self._rated_pairs, self._pair(ladder, a, b)), ended_at)

    def ranked_games_both(
        self, ladder: str, a: str, b: str, before: datetime, hours: int
    ) -> tuple[int, int]:
        """``ranked_games`` of both players of a game, the window's start computed once."""
        ranked = self._ranked
        start = before - _span(hours)
        return (
            _between(ranked.get((ladder, a)), start, before),
            _between(ranked.get((ladder, b)), start, before),
        )

    def ranked_games(self, ladder: str, player_id: str, before: datetime, hours: int) -> int:
        """Ranked games of the player that ended in the ``hours`` before ``before``."""
        times = self._ranked.get((ladder, player_id))
        return _between(times, before - _span(hours), before)

    def rated_pair_games(self, ladder: str, a: str, b: str, before: datetime, hours: int) -> int:
        """Rated games between the two players that ended in the ``hours`` before ``before``."""
        times = self._rated_pairs.get(self._pair(ladder, a, b))
        return _between(times, before - _span(hours), before)

    def since(self, start: datetime) -> Windows:
        """The games that ended at or after ``start``, as windows of their own (a checkpoint
        keeps these: an older game counts in no window of the games after it)."""
        kept = Windows()
        kept._ranked.update(_since(self._ranked, start))
        kept._rated_pairs.update(_since(self._rated_pairs, start))
        return kept

    def ranked_times(self) -> dict[tuple[str, str], list[datetime]]:
        """(ladder, player_id) -> the ended_at of each ranked game counted, in order."""
        return {key: list(times) for key, times in self._ranked.items()}

    def rated_pair_times(self) -> dict[tuple[str, str, str], list[datetime]]:
        """(ladder, a, b) with a <= b -> the ended_at of each rated game between them, in order."""
        return {pair: list(times) for pair, times in self._rated_pairs.items()}


_SPANS: dict[int, timedelta] = {}  # hours -> timedelta: built once, it costs microseconds


def _span(hours: int) -> timedelta:
    span = _SPANS.get(hours)
    if span is None:
        span = _SPANS[hours] = timedelta(hours=hours)
    return span


def _add(times: list[datetime], ended_at: datetime) -> None:
    # Events come mostly in time order: appending keeps the list sorted, as insort would.
    if not times or times[-1] <= ended_at:
        times.append(ended_at)
    else:
        bisect.insort(times, ended_at)


def _since(table: dict[K, list[datetime]], start: datetime) -> dict[K, list[datetime]]:
    found = ((key, times[bisect.bisect_left(times, start) :]) for key, times in table.items())
    return {key: recent for key, recent in found if recent}


def _between(times: list[datetime] | None, start: datetime, before: datetime) -> int:
    """Timestamps in ``[start, before)``: two binary searches, no scan."""
    if times is None:
        return 0
    end = bisect.bisect_left(times, before)
    return 0 if end == 0 else end - bisect.bisect_left(times, start, 0, end)
