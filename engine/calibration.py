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
- the hit rate ``mean(h)``, ``h`` = ``y`` when ``p > 0.5`` (the side forecast above even won:
  1, drew: 0.5, lost: 0) and 0.5 when ``p`` is exactly 0.5 (no side was forecast);
- rating inflation (``Inflation``): the mean rating of the players on the rating board at the
  end of each calendar month, the drift a month (the mean of the month-to-month differences of
  that mean) and that drift as a fraction of the board's standard deviation (a unit-free
  figure, so that ladders, or rulesets, of different scales compare);
- the spread of ratings: p10, p25, p50, p75, p90 (linear interpolation between the two
  nearest ranks, numpy's default), the population standard deviation and the width of the
  central half, ``p75 - p25`` (seed 002's "within about 60 points").

A draw is the observed score ``y = 0.5`` for both sides, the usual generalisation: Brier
``(p - 0.5)^2``, log loss ``-(0.5 ln p + 0.5 ln(1 - p))``. A game of teams (``Tally.add_teams``)
is seen through each team's expected score and the observed score it forecasts
(``first_share`` or ``mean_score``, as the ruleset's ``team_expected`` says): a game of two
teams once, from its favourite's side (as a 1v1 game); a game of three or more, once per team,
each the binary forecast "this team gets its observed score" seen from its likelier side, i.e.
``(1 - p, 1 - y)`` when ``p < 0.5`` (the same Brier and log loss, the bucket from 0.5 up).

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
    "Inflation",
    "Month",
    "Scores",
    "Spread",
    "Tally",
    "drift",
    "favourite",
    "first_share",
    "inflation",
    "mean_score",
    "month",
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
    y: float  # 1 if the favourite won, 0 if it lost, 0.5 for a draw


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
    """The calibration of a set of games; ``brier``, ``log_loss`` and ``hit_rate`` are None
    for none."""

    games: int
    brier: float | None
    log_loss: float | None
    buckets: tuple[Bucket, ...]
    hit_rate: float | None = None

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
    won: list[float] = field(default_factory=lambda: [0.0] * len(BUCKET_LOWS))
    hits: float = 0.0

    def add(self, forecast: Forecast) -> None:
        self.add_expected(forecast.p, forecast.y)

    def add_game(self, winner_expected: float, loser_expected: float) -> None:
        """``add(favourite(winner_expected, loser_expected))``, without building the Forecast
        (a backtest adds two games for every event it replays)."""
        if loser_expected > winner_expected:
            self.add_expected(loser_expected, 0)
        else:
            self.add_expected(winner_expected, 1)

    def add_expected(self, p: float, y: float) -> None:
        """One game: the favourite's expected score ``p``, and its observed score ``y`` (1 if
        the favourite won, 0 if it lost, 0.5 for a draw)."""
        self.games += 1
        self.squared += (p - y) ** 2
        if y == 1:
            self.loss -= math.log(max(p, CLIP))
        elif y == 0:
            self.loss -= math.log(max(1.0 - p, CLIP))
        else:
            self.loss -= y * math.log(max(p, CLIP)) + (1.0 - y) * math.log(max(1.0 - p, CLIP))
        self.hits += y if p > 0.5 else 0.5
        i = bisect.bisect_right(BUCKET_LOWS, p) - 1  # bucket_index, inline
        i = 0 if i < 0 else LAST_BUCKET if i > LAST_BUCKET else i
        self.counts[i] += 1
        self.expected[i] += p
        self.won[i] += y

    def add_teams(self, expected: Sequence[float], observed: Sequence[float]) -> None:
        """A game of teams: each team's expected score and the observed score it forecasts.
        Two teams are one forecast, from the favourite's side (the higher expected score; at a
        tie the side with the higher observed score); three or more are one forecast each,
        from the likelier side of ``p``: ``(1 - p, 1 - y)`` when ``p < 0.5``, or at exactly 0.5
        when ``y < 0.5``."""
        if len(expected) == 2:
            (p, q), (y, z) = expected, observed
            if q > p or (q == p and z > y):
                self.add_expected(q, z)
            else:
                self.add_expected(p, y)
            return
        for p, y in zip(expected, observed, strict=True):
            if p < 0.5 or (p == 0.5 and y < 0.5):
                self.add_expected(1.0 - p, 1.0 - y)
            else:
                self.add_expected(p, y)

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
            self.hits / n if n else None,
        )


def first_share(ranks: Sequence[int], team: int) -> float:
    """Whether ``team`` finished first: 1, or ``1 / k`` when ``k`` teams tied for first,
    else 0 (the outcome a chance to finish first forecasts)."""
    best = min(ranks)
    return 1.0 / ranks.count(best) if ranks[team] == best else 0.0


def mean_score(ranks: Sequence[int], team: int) -> float:
    """``team``'s mean score against every other team: 1 for each it finished ahead of, 0.5
    for each it tied with, 0 for each ahead of it (the outcome a mean expected score
    against the other teams forecasts)."""
    mine = ranks[team]
    scores = [
        1.0 if mine < other else 0.5 if mine == other else 0.0
        for k, other in enumerate(ranks)
        if k != team
    ]
    return math.fsum(scores) / len(scores)


@dataclass(frozen=True, slots=True)
class Month:
    """The rating board at the end of one calendar month: its players, their mean rating and
    its population standard deviation (None for an empty board)."""

    month: str  # "2026-10"
    players: int
    mean: float | None
    stdev: float | None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def month(label: str, ratings: Iterable[float]) -> Month:
    """The board of ``label`` from its players' ratings."""
    values = list(ratings)
    n = len(values)
    if n == 0:
        return Month(label, 0, None, None)
    mean = math.fsum(values) / n
    return Month(label, n, mean, math.sqrt(math.fsum((r - mean) ** 2 for r in values) / n))


def drift(means: Sequence[float]) -> float | None:
    """The mean of the month-to-month differences of ``means`` (None for fewer than two)."""
    if len(means) < 2:
        return None
    return math.fsum(b - a for a, b in zip(means, means[1:], strict=False)) / (len(means) - 1)


@dataclass(frozen=True, slots=True)
class Inflation:
    """The mean board rating month by month, its drift a month (in the ruleset's rating
    units) and that drift over the last month's board standard deviation."""

    months: tuple[Month, ...]
    drift: float | None
    stdev: float | None
    drift_in_sd: float | None

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "months": [m.as_json() for m in self.months]}


def inflation(months: Sequence[Month]) -> Inflation:
    """The drift of the months' means (a month with an empty board skipped) and its share
    of the last non-empty month's standard deviation."""
    kept = [m for m in months if m.mean is not None]
    moved = drift([m.mean for m in kept if m.mean is not None])
    sd = kept[-1].stdev if kept else None
    share = moved / sd if moved is not None and sd else None
    return Inflation(tuple(months), moved, sd, share)


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
