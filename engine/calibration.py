"""Is the rating right? The calibration of stored forecasts and the spread of ratings.

Seed 002 tells how Gammon42 found its divisor: its strongest players won 57 to 58% of their
games where the curve expected about 60%, and half of the active players were within about
60 points of each other. These are the numbers that answer that question for any ladder:

- every rated game is seen from its *favourite's* side, the player with the higher expected
  score (at exactly 0.5, the winner's side): ``p`` is the favourite's expected score, ``y`` is
  1 if the favourite won, else 0;
- buckets of ``p`` in steps of 0.05 from 0.50: ``[0.50, 0.55)``, ..., ``[0.90, 0.95)``,
  ``[0.95, 1.00]`` (the last one closed), each with its games, mean ``p`` and observed rate
  of ``y``: a well-calibrated curve has the two equal;
- the Brier score ``mean((p - y)^2)`` and the log loss ``-mean(y ln p + (1 - y) ln(1 - p))``;
- the spread of ratings: p10, p25, p50, p75, p90 (linear interpolation between the two
  nearest ranks, numpy's default), the population standard deviation and the width of the
  central half, ``p75 - p25`` (seed 002's "within about 60 points").

The log loss of a forecast of exactly 0 or 1 that went wrong is infinite; the probability given
to what happened is clipped at ``1e-15`` (as scikit-learn does), so one certain forecast that
failed shows as a very large loss rather than breaking the report.
"""

import bisect
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final

__all__ = [
    "BUCKET_LOWS",
    "BUCKET_WIDTH",
    "Bucket",
    "Forecast",
    "Scores",
    "Spread",
    "Tally",
    "favourite",
    "percentile",
    "spread",
]

BUCKET_WIDTH: Final = 0.05
# Written as decimals so that 0.6 is the float 0.6: (0.6 - 0.5) / 0.05 is 1.9999999999999996.
BUCKET_LOWS: Final[tuple[float, ...]] = tuple(round(0.5 + BUCKET_WIDTH * i, 2) for i in range(10))
CLIP: Final = 1e-15
LAST_BUCKET: Final = len(BUCKET_LOWS) - 1


@dataclass(frozen=True, slots=True)
class Forecast:
    """One rated game from its favourite's side."""

    p: float  # the favourite's expected score, in [0.5, 1]
    y: int  # 1 if the favourite won, else 0


def favourite(winner_expected: float, loser_expected: float) -> Forecast:
    """The game from its favourite's side: the higher expected score; at a tie the winner's."""
    if loser_expected > winner_expected:
        return Forecast(loser_expected, 0)
    return Forecast(winner_expected, 1)


def bucket_index(p: float) -> int:
    """Which bucket ``p`` falls in: ``[low, low + 0.05)``, the last one ``[0.95, 1.00]``."""
    return min(max(bisect.bisect_right(BUCKET_LOWS, p) - 1, 0), LAST_BUCKET)


@dataclass(frozen=True, slots=True)
class Bucket:
    low: float
    high: float
    games: int
    mean_expected: float | None  # None for an empty bucket
    observed: float | None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Scores:
    """The calibration of a set of games; ``brier`` and ``log_loss`` are None for none."""

    games: int
    brier: float | None
    log_loss: float | None
    buckets: tuple[Bucket, ...]

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "buckets": [b.as_json() for b in self.buckets]}


@dataclass(slots=True)
class Tally:
    """Running sums for ``Scores``: games are added one at a time, in any order."""

    games: int = 0
    squared: float = 0.0
    loss: float = 0.0
    counts: list[int] = field(default_factory=lambda: [0] * len(BUCKET_LOWS))
    expected: list[float] = field(default_factory=lambda: [0.0] * len(BUCKET_LOWS))
    won: list[int] = field(default_factory=lambda: [0] * len(BUCKET_LOWS))

    def add(self, forecast: Forecast) -> None:
        self.add_expected(forecast.p, forecast.y)

    def add_game(self, winner_expected: float, loser_expected: float) -> None:
        """``add(favourite(winner_expected, loser_expected))``, without building the Forecast
        (a backtest adds two games for every event it replays)."""
        if loser_expected > winner_expected:
            self.add_expected(loser_expected, 0)
        else:
            self.add_expected(winner_expected, 1)

    def add_expected(self, p: float, y: int) -> None:
        """One game: the favourite's expected score ``p``, and 1 if the favourite won."""
        self.games += 1
        self.squared += (p - y) ** 2
        self.loss -= math.log(max(p, CLIP)) if y else math.log(max(1.0 - p, CLIP))
        i = bisect.bisect_right(BUCKET_LOWS, p) - 1  # bucket_index, inline
        i = 0 if i < 0 else LAST_BUCKET if i > LAST_BUCKET else i
        self.counts[i] += 1
        self.expected[i] += p
        self.won[i] += y

    def extend(self, forecasts: Iterable[Forecast]) -> "Tally":
        for forecast in forecasts:
            self.add(forecast)
        return self

    def scores(self) -> Scores:
        buckets = []
        for i, low in enumerate(BUCKET_LOWS):
            n = self.counts[i]
            high = BUCKET_LOWS[i + 1] if i + 1 < len(BUCKET_LOWS) else 1.0
            buckets.append(
                Bucket(
                    low,
                    high,
                    n,
                    self.expected[i] / n if n else None,
                    self.won[i] / n if n else None,
                )
            )
        n = self.games
        return Scores(
            n,
            self.squared / n if n else None,
            self.loss / n if n else None,
            tuple(buckets),
        )


@dataclass(frozen=True, slots=True)
class Spread:
    """How far apart the ratings are; every figure None when there are no players."""

    players: int
    p10: float | None
    p25: float | None
    p50: float | None
    p75: float | None
    p90: float | None
    stdev: float | None  # population standard deviation
    central_half: float | None  # p75 - p25

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ascending ``ordered``, by linear interpolation."""
    if not ordered:
        raise ValueError("percentile of no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q: must be within 0..1, got {q!r}")
    h = (len(ordered) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (h - lo) * (ordered[hi] - ordered[lo])


def spread(ratings: Iterable[float]) -> Spread:
    ordered = sorted(ratings)
    n = len(ordered)
    if n == 0:
        return Spread(0, None, None, None, None, None, None, None)
    mean = math.fsum(ordered) / n
    stdev = math.sqrt(math.fsum((r - mean) ** 2 for r in ordered) / n)
    p25, p75 = percentile(ordered, 0.25), percentile(ordered, 0.75)
    return Spread(
        n,
        percentile(ordered, 0.10),
        p25,
        percentile(ordered, 0.50),
        p75,
        percentile(ordered, 0.90),
        stdev,
        p75 - p25,
    )
