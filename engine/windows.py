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
        return (ladder, *sorted((a, b)))  # type: ignore[return-value]

    def add_ranked(self, ladder: str, player_id: str, ended_at: datetime) -> None:
        bisect.insort(self._ranked[(ladder, player_id)], ended_at)

    def add_rated_pair(self, ladder: str, a: str, b: str, ended_at: datetime) -> None:
        bisect.insort(self._rated_pairs[self._pair(ladder, a, b)], ended_at)

    def ranked_games(self, ladder: str, player_id: str, before: datetime, hours: int) -> int:
        """Ranked games of the player that ended in the ``hours`` before ``before``."""
        return _count(self._ranked.get((ladder, player_id), []), before, hours)

    def rated_pair_games(self, ladder: str, a: str, b: str, before: datetime, hours: int) -> int:
        """Rated games between the two players that ended in the ``hours`` before ``before``."""
        return _count(self._rated_pairs.get(self._pair(ladder, a, b), []), before, hours)


def _count(times: list[datetime], before: datetime, hours: int) -> int:
    start = bisect.bisect_left(times, before - timedelta(hours=hours))
    end = bisect.bisect_left(times, before)
    return max(end - start, 0)
