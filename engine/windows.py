"""Sliding-window counts over ``ended_at``: K by weekly volume (SPEC 2.1), pair limits (2.4).

Part of the ladder state: a worker loads the windows its batch needs from the audit store,
a replay builds them from every event; both update them as events are scored in order, so no
event needs a query of its own.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

K = TypeVar("K", bound=tuple[str, ...])


class Windows:
    """Each player's ranked games and each pair's rated games, by ``ended_at``.

    ``overlay`` makes a layer over these counts: it reads, for a key it has not taken, what
    the counts under it hold (including what they gain later), and keeps its own list of a
    key from the moment it ``take``s it (a copy as it is then) or adds to it. A replay of a
    void ahead so shares the lived replay's counts of every player it has not taken, without
    a copy and without counting the games it shares twice (``engine.replay.Lived``)."""

    def __init__(self, base: Windows | None = None) -> None:
        self._ranked: dict[tuple[str, str], list[datetime]] = {}
        self._rated_pairs: dict[tuple[str, str, str], list[datetime]] = {}
        self._base = base

    def overlay(self) -> Windows:
        """A layer over these counts (see the class)."""
        return Windows(self)

    def rebase(self, old: Windows, new: Windows) -> None:
        """A layer over ``old`` is over ``new`` from here on (``new`` holds what ``old``
        held, see ``absorbed``)."""
        if self._base is old:
            self._base = new

    def absorbed(self, other: Windows) -> Windows:
        """These counts with what ``other`` holds: the lists it keeps as its own when it is a
        layer over them (it is then this object), else ``other`` itself (counts of its own)."""
        if other._base is None:
            return other
        assert other._base is self, "a layer over other counts"
        self._ranked.update(other._ranked)
        self._rated_pairs.update(other._rated_pairs)
        return self

    def copy(self) -> Windows:
        """Counts of their own, equal to these."""
        kept = Windows()
        kept._ranked = {key: list(times) for key, times in self._merged("_ranked").items()}
        kept._rated_pairs = {
            key: list(times) for key, times in self._merged("_rated_pairs").items()
        }
        return kept

    def take(self, key: tuple[str, str]) -> None:
        """Keep the player's list (``(ladder, player_id)``) as this layer's own, before the
        counts under it change it."""
        if self._base is not None:
            self._own(self._ranked, key)

    def take_pair(self, ladder: str, a: str, b: str) -> None:
        """Keep the pair's list as this layer's own, before the counts under it change it."""
        if self._base is not None:
            self._own(self._rated_pairs, self._pair(ladder, a, b))

    def _find(self, table: str, key: Any) -> list[datetime] | None:
        """The list of ``key`` in ``table``, this layer's own or the counts' under it."""
        layer: Windows | None = self
        while layer is not None:
            times: list[datetime] | None = getattr(layer, table).get(key)
            if times is not None:
                return times
            layer = layer._base
        return None

    def _own(self, table: dict[Any, list[datetime]], key: Any) -> list[datetime]:
        """This layer's own list of ``key`` (a copy of the one under it, the first time)."""
        times = table.get(key)
        if times is None:
            name = "_ranked" if table is self._ranked else "_rated_pairs"
            under = self._base._find(name, key) if self._base is not None else None
            times = table[key] = list(under) if under else []
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

    def add_ranked_times(self, ladder: str, player_id: str, times: Sequence[datetime]) -> None:
        """The player's ranked games that ended at ``times``, in order (copied)."""
        own = self._own(self._ranked, (ladder, player_id))
        if own:
            for ended_at in times:
                _add(own, ended_at)
        else:
            own.extend(times)

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
        start = before - _span(hours)
        if self._base is None:
            ranked = self._ranked
            return (
                _between(ranked.get((ladder, a)), start, before),
                _between(ranked.get((ladder, b)), start, before),
            )
        return (
            _between(self._find("_ranked", (ladder, a)), start, before),
            _between(self._find("_ranked", (ladder, b)), start, before),
        )

    def ranked_games(self, ladder: str, player_id: str, before: datetime, hours: int) -> int:
        """Ranked games of the player that ended in the ``hours`` before ``before``."""
        times = self._find("_ranked", (ladder, player_id))
        return _between(times, before - _span(hours), before)

    def rated_pair_games(self, ladder: str, a: str, b: str, before: datetime, hours: int) -> int:
        """Rated games between the two players that ended in the ``hours`` before ``before``."""
        times = self._find("_rated_pairs", self._pair(ladder, a, b))
        return _between(times, before - _span(hours), before)

    def _merged(self, table: str) -> dict[Any, list[datetime]]:
        """Every key's list as this layer reads it."""
        chain: list[Windows] = []
        layer: Windows | None = self
        while layer is not None:
            chain.append(layer)
            layer = layer._base
        merged: dict[Any, list[datetime]] = {}
        for layer in reversed(chain):
            merged.update(getattr(layer, table))
        return merged

    def since(self, start: datetime) -> Windows:
        """The games that ended at or after ``start``, as windows of their own (a checkpoint
        keeps these: an older game counts in no window of the games after it)."""
        kept = Windows()
        kept._ranked.update(_since(self._merged("_ranked"), start))
        kept._rated_pairs.update(_since(self._merged("_rated_pairs"), start))
        return kept

    def ranked_times(self) -> dict[tuple[str, str], list[datetime]]:
        """(ladder, player_id) -> the ended_at of each ranked game counted, in order."""
        return {key: list(times) for key, times in self._merged("_ranked").items()}

    def rated_pair_times(self) -> dict[tuple[str, str, str], list[datetime]]:
        """(ladder, a, b) with a <= b -> the ended_at of each rated game between them, in order."""
        return {pair: list(times) for pair, times in self._merged("_rated_pairs").items()}


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
