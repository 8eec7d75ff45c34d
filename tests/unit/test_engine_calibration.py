"""Calibration maths (engine.calibration), with numbers worked by hand.

The rule: "Every rated game is seen from its favourite's side (the player with the higher
expected score; at exactly 0.5, the winner's side) ... buckets of p in steps of 0.05 from 0.50
([0.50, 0.55), ..., [0.95, 1.00]) ... Brier score mean((p - y)^2) and log loss
-mean(y ln p + (1 - y) ln(1 - p)) ... p10, p50, p90, standard deviation, and the width of the
central half (p75 - p25)".
"""

import math

import pytest

from engine.calibration import (
    BUCKET_LOWS,
    Forecast,
    Tally,
    bucket_index,
    favourite,
    percentile,
    spread,
)


@pytest.mark.parametrize(
    ("winner", "loser", "p", "y"),
    [
        (0.5, 0.5, 0.5, 1),  # a coin flip is seen from the winner's side
        (0.7, 0.3, 0.7, 1),  # the favourite won
        (0.3, 0.7, 0.7, 0),  # the favourite lost
        (0.436, 0.564, 0.564, 0),  # fibs: seed 003's calculator, A the underdog, A wins
    ],
)
def test_a_game_is_seen_from_its_favourites_side(winner, loser, p, y):
    """The favourite is the higher expected score; at exactly 0.5, the winner."""
    assert favourite(winner, loser) == Forecast(p, y)


@pytest.mark.parametrize(
    ("p", "index"),
    [
        (0.5, 0),
        (0.5499999, 0),
        (0.55, 1),
        (0.6, 2),  # (0.6 - 0.5) / 0.05 is 1.9999999999999996 in floats: not bucket 1
        (0.7, 4),
        (0.8, 6),
        (0.9499, 8),
        (0.95, 9),
        (1.0, 9),  # the last bucket is closed: [0.95, 1.00]
    ],
)
def test_buckets_are_half_open_steps_of_five_hundredths(p, index):
    """[0.50, 0.55), ..., [0.90, 0.95), [0.95, 1.00]."""
    assert bucket_index(p) == index


def test_a_game_added_by_its_two_expected_scores_is_its_favourites_forecast():
    """``Tally.add_game(w, l)`` is ``Tally.add(favourite(w, l))`` to the last bit, the bucket
    edges and both ends included (the backtest's fast path)."""
    import random

    rng = random.Random(7)
    edges = [*BUCKET_LOWS, 0.5499999, 0.9499, 1.0, 0.0, 0.5]
    pairs = [(e, 1.0 - e) for e in edges] + [(1.0 - e, e) for e in edges]
    pairs += [(w, 1.0 - w) for w in (rng.random() for _ in range(2000))]
    by_forecast, by_game = Tally(), Tally()
    for winner, loser in pairs:
        by_forecast.add(favourite(winner, loser))
        by_game.add_game(winner, loser)
    assert by_game == by_forecast
    assert by_game.scores() == by_forecast.scores()
    for p in [*edges, *(rng.random() for _ in range(500))]:
        one = Tally()
        one.add_expected(p, 1)
        assert one.counts[bucket_index(p)] == 1, p


def test_bucket_bounds_are_the_decimals():
    """Ten buckets from 0.50, each 0.05 wide, bounds exactly as written."""
    assert BUCKET_LOWS == (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)


def test_brier_and_log_loss_worked_by_hand():
    """(0.5, won), (0.7, lost), (0.8, won): Brier (0.25 + 0.49 + 0.04) / 3 = 0.26, log loss
    -(ln 0.5 + ln 0.3 + ln 0.8) / 3 = (0.693147 + 1.203973 + 0.223144) / 3 = 0.706755"""
    scores = Tally().extend([Forecast(0.5, 1), Forecast(0.7, 0), Forecast(0.8, 1)]).scores()
    assert scores.games == 3
    assert scores.brier == pytest.approx(0.26, abs=1e-15)
    assert scores.log_loss == pytest.approx(0.706755, abs=1e-6)
    by_low = {b.low: b for b in scores.buckets}
    assert (by_low[0.5].games, by_low[0.5].mean_expected, by_low[0.5].observed) == (1, 0.5, 1.0)
    assert (by_low[0.7].games, by_low[0.7].observed) == (1, 0.0)
    assert (by_low[0.8].games, by_low[0.8].observed) == (1, 1.0)
    assert by_low[0.9].games == 0 and by_low[0.9].mean_expected is None
    assert scores.buckets[-1].high == 1.0


def test_a_bucket_reports_mean_forecast_and_observed_rate():
    """Four games at 0.60 and 0.64, three won: mean p 0.62, observed 0.75."""
    games = [Forecast(0.6, 1), Forecast(0.64, 1), Forecast(0.6, 0), Forecast(0.64, 1)]
    bucket = Tally().extend(games).scores().buckets[2]
    assert (bucket.low, bucket.high, bucket.games) == (0.6, 0.65, 4)
    assert bucket.mean_expected == pytest.approx(0.62)
    assert bucket.observed == 0.75


def test_a_certain_forecast_that_failed_is_a_large_finite_loss():
    """p = 1 and the favourite lost: ln(0) is clipped at 1e-15, so the loss is -ln(1e-15) = 34.54"""
    scores = Tally().extend([Forecast(1.0, 0)]).scores()
    assert scores.brier == 1.0
    assert scores.log_loss == pytest.approx(-math.log(1e-15), rel=1e-12)


def test_no_games_have_no_scores():
    """An empty window reports zero games and no Brier or log loss, not a division by zero."""
    scores = Tally().scores()
    assert (scores.games, scores.brier, scores.log_loss) == (0, None, None)
    assert all(b.games == 0 for b in scores.buckets)


def test_spread_worked_by_hand():
    """1400..1800 by 100: p10 1440, p25 1500, p50 1600, p75 1700, p90 1760, population
    standard deviation sqrt(100000 / 5) = 141.42..., central half 200."""
    found = spread([1800, 1400, 1600, 1500, 1700])
    assert found.players == 5
    assert (found.p10, found.p25, found.p50, found.p75, found.p90) == pytest.approx(
        (1440, 1500, 1600, 1700, 1760)
    )
    assert found.stdev == pytest.approx(math.sqrt(20000))
    assert found.central_half == pytest.approx(200)


def test_spread_of_one_and_of_none():
    """One player: every percentile is their rating and the spread is 0; none: all None."""
    one = spread([1523.5])
    assert (one.p10, one.p90, one.stdev, one.central_half) == (1523.5, 1523.5, 0.0, 0.0)
    assert spread([]).as_json() == {
        "players": 0,
        "p10": None,
        "p25": None,
        "p50": None,
        "p75": None,
        "p90": None,
        "stdev": None,
        "central_half": None,
    }


def test_percentile_refuses_nonsense():
    """A quantile outside 0..1, or of nothing, is a programming error."""
    with pytest.raises(ValueError):
        percentile([1.0], 1.5)
    with pytest.raises(ValueError):
        percentile([], 0.5)
