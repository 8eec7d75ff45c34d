"""engine.glicko2.rate_win: a 1v1 win written out is ``rate_teams`` to the bit.

A replay rates a million 1v1 wins through ``Glicko2Rules.rate``; a stored glicko2 ladder and
its replay must agree to the bit, whichever path rated a game, so the written-out path is
compared with the general one on random, extreme and new players, and refuses what it
refuses.
"""

import random

import pytest

from engine.glicko2 import rate_teams, rate_win
from engine.rulesets import Glicko2Rules
from engine.types import PlayerState


def general(winner, loser, tau):
    (won,), (lost,) = rate_teams([[winner], [loser]], [1, 2], [[1.0], [1.0]], tau)
    return won, lost


def test_random_and_extreme_games_agree_to_the_bit():
    """3,000 random games, tau varied, and games between players far apart."""
    rng = random.Random(13)
    cases = [((1500.0, 350.0, 0.06), (1500.0, 350.0, 0.06), 0.5)]
    for _ in range(3000):
        cases.append(
            (
                (rng.gauss(1500, 300), rng.uniform(30, 350), rng.uniform(0.03, 0.1)),
                (rng.gauss(1500, 300), rng.uniform(30, 350), rng.uniform(0.03, 0.1)),
                rng.choice([0.3, 0.5, 1.2]),
            )
        )
    cases.append(((4000.0, 30.0, 0.06), (-2000.0, 30.0, 0.06), 0.5))  # certain to the bit
    cases.append(((-2000.0, 30.0, 0.06), (4000.0, 30.0, 0.06), 0.5))
    for winner, loser, tau in cases:
        assert rate_win(winner, loser, tau) == general(winner, loser, tau), (winner, loser)


def test_the_ruleset_rates_a_win_as_its_rate_match():
    """Glicko2Rules.rate (the written-out path) equals rate_match of two teams of one, the
    deviations grown by the idle days first."""
    rules = Glicko2Rules(tau=0.4)
    rng = random.Random(3)
    for _ in range(500):

        def state() -> PlayerState:
            deviation = rng.choice([None, rng.uniform(40, 340)])
            volatility = None if deviation is None else rng.uniform(0.04, 0.08)
            return PlayerState(
                rng.gauss(1500, 200), 5, 5, 0, deviation, volatility, rng.uniform(0, 90)
            )

        a, b = state(), state()
        (won,), (lost,) = rules.rate_match(((a,), (b,)), (1, 2), ((1.0,), (1.0,)))
        change = rules.rate(a, b, None)  # type: ignore[arg-type]
        assert (change.winner, change.loser, change.coefficient) == (won, lost, 1.0)


@pytest.mark.parametrize(
    ("winner", "loser", "tau"),
    [
        ((float("nan"), 350.0, 0.06), (1500.0, 350.0, 0.06), 0.5),
        ((1500.0, 0.0, 0.06), (1500.0, 350.0, 0.06), 0.5),
        ((1500.0, 350.0, 0.06), (1500.0, 350.0, -0.1), 0.5),
        ((1500.0, 350.0, 0.06), (1500.0, 350.0, 0.06), 0.0),
    ],
)
def test_refuses_what_rate_teams_refuses(winner, loser, tau):
    """The same ValueError as the general path."""
    with pytest.raises(ValueError) as general_error:
        general(winner, loser, tau)
    with pytest.raises(ValueError) as written_error:
        rate_win(winner, loser, tau)
    assert str(written_error.value) == str(general_error.value)
