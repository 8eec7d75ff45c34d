"""A backtest's rating boards month by month, for rating inflation (``engine.calibration``).

Each side's board is taken at the end of each calendar month by ``ended_at`` (an event
without one: when it was processed), in the log's scoring order: when the first event of a
later month comes, the boards as they stand are that month's (a month without events has the
board of the month before); after the last event, the boards of its month. The candidate's
board is its replay's (``engine.ladder.on_rating_board``); the stored side's is each stored
player's rating as the ledger recorded it at the time (``Stored``): the rating after the
player's latest stored row (a game, a prize, a link, an import, a season's reset, an
adjustment or a void's correction), for the players with one who are neither banned nor
linked to an account. Months before the month of ``--from`` are not kept.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from engine import Player, PlayerKey
from engine.calibration import Month, month
from engine.ladder import on_rating_board

NEVER = datetime.min.replace(tzinfo=UTC)


def label(at: datetime) -> str:
    at = at.astimezone(UTC)
    return f"{at.year:04d}-{at.month:02d}"


def month_after(year: int, number: int) -> tuple[int, int]:
    return (year + 1, 1) if number == 12 else (year, number + 1)


@dataclass
class BoardMonths:
    """Both sides' boards at each month's end (``take`` before each event is applied)."""

    ladder: str
    first: str | None = None  # the first month kept ("YYYY-MM"), None: every one
    stored: list[Month] = field(default_factory=list)
    candidate: list[Month] = field(default_factory=list)
    # The stored rating of each player with a stored row so far.
    ratings: dict[str, float] = field(default_factory=dict)
    _month: tuple[int, int] | None = None
    _next: datetime = NEVER  # the start of the month after ``_month``

    def take(self, at: datetime, players: Mapping[PlayerKey, Player]) -> None:
        """Before an event of ``at``: when it is of a later month, the boards of the month
        (and of any month between without events) as they stand."""
        at = at.astimezone(UTC)
        if self._month is not None:
            year, number = self._month
            stored, candidate = self._boards(players)
            while (year, number) < (at.year, at.month):
                self._keep(f"{year:04d}-{number:02d}", stored, candidate)
                year, number = month_after(year, number)
        self._month = (at.year, at.month)
        year, number = month_after(at.year, at.month)
        self._next = datetime(year, number, 1, tzinfo=UTC)

    def due(self, at: datetime) -> bool:
        """Whether an event of ``at`` is of a later month than every one before it."""
        return at >= self._next

    def finish(self, players: Mapping[PlayerKey, Player]) -> None:
        """The boards of the last event's month, after it."""
        if self._month is not None:
            year, number = self._month
            self._keep(f"{year:04d}-{number:02d}", *self._boards(players))

    def _keep(self, shown: str, stored: Month, candidate: Month) -> None:
        if self.first is not None and shown < self.first:
            return
        self.stored.append(dataclasses.replace(stored, month=shown))
        self.candidate.append(dataclasses.replace(candidate, month=shown))

    def _boards(self, players: Mapping[PlayerKey, Player]) -> tuple[Month, Month]:
        ladder = self.ladder

        def kept(pid: str) -> bool:
            player = players.get((ladder, pid))
            return player is None or not (player.banned or player.linked_to)

        stored = month("", (r for pid, r in self.ratings.items() if kept(pid)))
        candidate = month("", (p.rating for p in players.values() if on_rating_board(p)))
        return stored, candidate
