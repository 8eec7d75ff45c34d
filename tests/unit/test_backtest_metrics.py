"""The metrics a backtest compares (engine.calibration), each case worked by hand.

The definitions (docs/calibration.md): "log loss -mean(y ln p + (1 - y) ln(1 - p)) ... Brier
mean((p - y)^2) ... a draw is the observed score y = 0.5 ... hit rate: h = y when p > 0.5, 0.5
when p is exactly 0.5 ... a game of two teams once, from its favourite's side; of three or more,
once per team, (1 - p, 1 - y) when p < 0.5 ... inflation: the mean rating of the players on the
rating board at the end of each calendar month, its drift a month (the mean of the
month-to-month differences) and that drift over the board's standard deviation".
"""

import math

import pytest

from engine.calibration import Month, Tally, drift, first_share, inflation, mean_score, month


def one(p: float, y: float) -> Tally:
    tally = Tally()
    tally.add_expected(p, y)
    return tally


@pytest.mark.parametrize(
    ("p", "y", "loss"),
    [
        (0.8, 1, -math.log(0.8)),  # -(1 ln 0.8 + 0 ln 0.2) = 0.223144
        (0.8, 0, -math.log(0.2)),  # -(0 ln 0.8 + 1 ln 0.2) = 1.609438
        (0.8, 0.5, -(0.5 * math.log(0.8) + 0.5 * math.log(0.2))),  # a draw: 0.916291
        (0.5, 0.5, math.log(2)),  # an even draw: -(0.5 ln 0.5 + 0.5 ln 0.5) = ln 2
        (0.75, 1 / 3, -(math.log(0.75) / 3 + 2 * math.log(0.25) / 3)),  # first shared by 3
    ],
)
def test_log_loss(p, y, loss):
    """log loss = -(y ln p + (1 - y) ln(1 - p)) for one game."""
    assert one(p, y).scores().log_loss == pytest.approx(loss, rel=1e-12)


@pytest.mark.parametrize(
    ("p", "y", "brier"),
    [
        (0.8, 1, 0.04),  # (0.8 - 1)^2
        (0.8, 0, 0.64),  # (0.8 - 0)^2
        (0.8, 0.5, 0.09),  # a draw: (0.8 - 0.5)^2
        (0.5, 0.5, 0.0),  # an even draw
    ],
)
def test_brier(p, y, brier):
    """Brier = (p - y)^2 for one game."""
    assert one(p, y).scores().brier == pytest.approx(brier, abs=1e-15)


@pytest.mark.parametrize(
    ("games", "hit_rate"),
    [
        ([(0.7, 1)], 1.0),  # the favourite won: a hit
        ([(0.7, 0)], 0.0),  # the favourite lost
        ([(0.7, 0.5)], 0.5),  # a draw: half a hit
        ([(0.5, 1)], 0.5),  # nobody forecast above 0.5: half, whoever won
        ([(0.7, 1), (0.6, 0), (0.5, 1), (0.9, 0.5)], 0.5),  # (1 + 0 + 0.5 + 0.5) / 4
    ],
)
def test_hit_rate(games, hit_rate):
    """hit rate = mean(h), h = y when p > 0.5, 0.5 when p = 0.5."""
    tally = Tally()
    for p, y in games:
        tally.add_expected(p, y)
    assert tally.scores().hit_rate == hit_rate


@pytest.mark.parametrize(
    ("games", "bucket", "count", "mean_p", "observed"),
    [
        ([(0.52, 1), (0.54, 0.5)], 0, 2, 0.53, 0.75),  # [0.50, 0.55): a win and a draw
        ([(0.6, 1), (0.64, 0)], 2, 2, 0.62, 0.5),  # [0.60, 0.65)
        ([(0.95, 1), (1.0, 1)], 9, 2, 0.975, 1.0),  # [0.95, 1.00], closed
    ],
)
def test_buckets(games, bucket, count, mean_p, observed):
    """Per bucket of p: games, mean p, observed mean of y."""
    tally = Tally()
    for p, y in games:
        tally.add_expected(p, y)
    found = tally.scores().buckets[bucket]
    assert (found.games, found.observed) == (count, observed)
    assert found.mean_expected == pytest.approx(mean_p)


@pytest.mark.parametrize(
    ("expected", "observed", "seen"),
    [
        ((0.3, 0.7), (1.0, 0.0), (0.7, 0.0)),  # two teams: the favourite's side, it lost
        ((0.6, 0.4), (0.5, 0.5), (0.6, 0.5)),  # a draw, from the favourite's side
        ((0.5, 0.5), (0.0, 1.0), (0.5, 1.0)),  # an even game: the winner's side
        ((0.5, 0.3, 0.2), (0.0, 1.0, 0.0), (0.5, 1.0, 0.7, 0.0, 0.8, 1.0)),  # three: each team
        ((0.6, 0.25, 0.15), (0.5, 0.5, 0.0), (0.6, 0.5, 0.75, 0.5, 0.85, 1.0)),  # a shared first
    ],
)
def test_team_games_are_seen_from_the_likelier_side(expected, observed, seen):
    """Two teams: one forecast, the favourite's; three or more: one per team, (1 - p, 1 - y)
    when p < 0.5 (at p = 0.5, when y < 0.5)."""
    tally, want = Tally(), Tally()
    tally.add_teams(expected, observed)
    for p, y in zip(seen[::2], seen[1::2], strict=True):
        want.add_expected(p, y)
    assert tally == want


@pytest.mark.parametrize(
    ("ranks", "team", "share"),
    [
        ([1, 2], 0, 1.0),  # won
        ([1, 2], 1, 0.0),  # lost
        ([1, 1], 0, 0.5),  # a draw: first shared by two
        ([1, 2, 2, 4], 0, 1.0),  # alone in first
        ([2, 1, 1, 1], 1, 1 / 3),  # first shared by three
        ([2, 1, 1, 1], 0, 0.0),  # not first
    ],
)
def test_first_share(ranks, team, share):
    """1 / (teams tied for first) for a team that finished first, else 0."""
    assert first_share(ranks, team) == share


@pytest.mark.parametrize(
    ("ranks", "team", "score"),
    [
        ([1, 2], 0, 1.0),  # beat the only other team
        ([1, 1], 1, 0.5),  # a draw
        ([1, 2, 3, 4], 1, 2 / 3),  # (0 + 1 + 1) / 3
        ([1, 2, 2, 4], 2, 0.5),  # (0 + 0.5 + 1) / 3
    ],
)
def test_mean_score(ranks, team, score):
    """The mean over the other teams of 1 (ahead), 0.5 (tied), 0 (behind)."""
    assert mean_score(ranks, team) == pytest.approx(score, abs=1e-15)


@pytest.mark.parametrize(
    ("means", "moved"),
    [
        ([1500.0], None),  # one month: no difference
        ([1500.0, 1510.0], 10.0),  # one difference
        ([1500.0, 1510.0, 1505.0, 1521.0], 7.0),  # (10 - 5 + 16) / 3
        ([25.0, 24.5, 24.0], -0.5),  # deflation
    ],
)
def test_drift(means, moved):
    """drift = the mean of the month-to-month differences of the mean board rating."""
    assert drift(means) == moved


def test_month_is_the_mean_and_population_sd_of_the_board():
    """1400, 1500, 1600: mean 1500, sd sqrt((100^2 + 0 + 100^2) / 3) = 81.6497."""
    found = month("2026-10", [1400.0, 1500.0, 1600.0])
    assert (found.month, found.players, found.mean) == ("2026-10", 3, 1500.0)
    assert found.stdev == pytest.approx(math.sqrt(20000 / 3), rel=1e-12)
    assert month("2026-11", []) == Month("2026-11", 0, None, None)


EMPTY = ("2026-11", None, None)  # a month whose board had nobody


@pytest.mark.parametrize(
    ("months", "moved", "sd", "share"),
    [
        ([("2026-10", 1500.0, 80.0), ("2026-11", 1508.0, 100.0)], 8.0, 100.0, 0.08),
        ([("2026-10", 25.0, 2.0), ("2026-11", 25.5, 2.5), ("2026-12", 26.5, 2.5)], 0.75, 2.5, 0.3),
        ([("2026-10", 1500.0, 0.0), ("2026-11", 1500.0, 0.0)], 0.0, 0.0, None),  # no spread
        ([("2026-10", 1500.0, 90.0), EMPTY, ("2026-12", 1510.0, 90.0)], 10.0, 90.0, 1 / 9),
    ],
)
def test_inflation(months, moved, sd, share):
    """drift over the last non-empty month's sd; an empty month is skipped."""
    found = inflation([Month(m, 0 if mean is None else 5, mean, s) for m, mean, s in months])
    assert found.drift == pytest.approx(moved)
    assert found.stdev == sd
    assert found.drift_in_sd == (None if share is None else pytest.approx(share))
