"""Sliding-window counts over ``ended_at``: K by weekly volume (SPEC 2.1), pair limits (2.4).

Part of the ladder state: a worker loads the windows its batch needs from the audit store,
a replay builds them from every event; both update them as events are scored in order, so no
event needs a query of its own.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from datetime import datetime, timedelta


class Windows:
    def __init__(self) -> None:
        self._ranked: dict[tuple[str, str], list[datetime]] = defaultdict(list)
        self._rated_pairs: dict[tuple[str, str, str], list[datetime]] = defaultdict(list)

    @staticmethod
    def _pair(ladder: str, a: str, b: str) -> tuple[str, str, str]:
        return (ladder, a, b) if a <= b else (ladder, b, a)

    def add_ranked(self, ladder: str, player_id: str, ended_at: datetime) -> None:
        _add(self._ranked[(ladder, player_id)], ended_at)

    def add_rated_pair(self, ladder: str, a: str, b: str, ended_at: datetime) -> None:
        _add(self._rated_pairs[self._pair(ladder, a, b)], ended_at)

    def ranked_games(self, ladder: str, player_id: str, before: datetime, hours: int) -> int:
        """Ranked games of the player that ended in the ``hours`` before ``before``."""
        times = self._ranked.get((ladder, player_id))
        return 0 if times is None else _count(times, before, hours)

    def rated_pair_games(self, ladder: str, a: str, b: str, before: datetime, hours: int) -> int:
        """Rated games between the two players that ended in the ``hours`` before ``before``."""
        times = self._rated_pairs.get(self._pair(ladder, a, b))
        return 0 if times is None else _count(times, before, hours)


_SPANS: dict[int, timedelta] = {}  # hours -> timedelta, built once per window length


def _add(times: list[datetime], ended_at: datetime) -> None:
    # Events come mostly in time order: appending keeps the list sorted, as insort would.
    if not times or times[-1] <= ended_at:
        times.append(ended_at)
    else:
        bisect.insort(times, ended_at)


def _count(times: list[datetime], before: datetime, hours: int) -> int:
    """Timestamps in ``[before - hours, before)``: two binary searches, no scan."""
    end = bisect.bisect_left(times, before)
    if end == 0:
        return 0
    span = _SPANS.get(hours)
    if span is None:
        span = _SPANS[hours] = timedelta(hours=hours)
    return end - bisect.bisect_left(times, before - span, 0, end)
