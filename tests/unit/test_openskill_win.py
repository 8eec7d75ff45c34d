"""engine.openskill.rate_win: a 1v1 win written out is ``rate`` and ``predict_win`` to the bit.

A replay rates a million 1v1 wins through ``OpenSkillRules.rate``; a stored openskill ladder
and its replay must agree to the bit, whichever path rated a game, so the written-out path
is compared with the general one on random, extreme and default players, model constants
varied, and refuses what it refuses.
"""

import random

import pytest

from engine.openskill import Model, predict_win, rate, rate_win
from engine.rulesets import OpenSkillRules
from engine.types import PlayerState


def general(model: Model, winner: tuple[float, float], loser: tuple[float, float]) -> tuple:
    (won,), (lost,) = rate(model, [[winner], [loser]], [1, 2])
    return won, lost, predict_win(model, [[winner], [loser]])[0]


def cases() -> list[tuple[Model, tuple[float, float], tuple[float, float]]]:
    rng = random.Random(11)
    made = [(Model(), (25.0, 25 / 3), (25.0, 25 / 3))]
    for _ in range(3000):
        model = rng.choice(
            [Model(), Model(tau=0.0), Model(beta=rng.uniform(0.5, 9), kappa=rng.uniform(1e-6, 0.1))]
        )
        made.append(
            (
                model,
                (rng.gauss(25, 8), rng.uniform(0.01, 10)),
                (rng.gauss(25, 8), rng.uniform(0.01, 10)),
            )
        )
    made.append((Model(), (400.0, 0.5), (-400.0, 0.5)))  # a near-certain result
    made.append((Model(), (-400.0, 0.5), (400.0, 0.5)))  # a near-impossible one
    made.append((Model(), (0.0, 1e-9), (-0.0, 1e-9)))
    return made


@pytest.mark.parametrize(("model", "winner", "loser"), cases()[:1])
def test_a_default_game(model, winner, loser):
    """Two new players: both moves and the even chance, exactly the general path's."""
    assert rate_win(model.beta, model.kappa, model.tau, winner, loser) == general(
        model, winner, loser
    )


def test_random_and_extreme_games_agree_to_the_bit():
    """3,000 random games under varied constants, and three extreme ones."""
    for model, winner, loser in cases():
        found = rate_win(model.beta, model.kappa, model.tau, winner, loser)
        assert found == general(model, winner, loser), (model, winner, loser)


def test_the_ruleset_rates_a_win_as_its_rate_match():
    """OpenSkillRules.rate (the written-out path) equals rate_match of two teams of one."""
    rules = OpenSkillRules(beta=4.0, tau=0.1)
    rng = random.Random(5)
    for _ in range(500):
        a = PlayerState(rng.gauss(25, 5), 3, 3, 0, rng.choice([None, rng.uniform(0.5, 8)]))
        b = PlayerState(rng.gauss(25, 5), 3, 3, 0, rng.choice([None, rng.uniform(0.5, 8)]))
        (won,), (lost,) = rules.rate_match(((a,), (b,)), (1, 2), ((1.0,), (1.0,)))
        change = rules.rate(a, b, None)  # type: ignore[arg-type]
        assert (change.winner, change.loser, change.coefficient) == (won, lost, 1.0)


@pytest.mark.parametrize(
    ("winner", "loser"),
    [((float("nan"), 1.0), (25.0, 1.0)), ((25.0, 0.0), (25.0, 1.0)), ((25.0, 1.0), (1e300, 1.0))],
)
def test_refuses_what_rate_refuses(winner, loser):
    """The same ValueError as the general path: not finite, sigma <= 0, exp out of range."""
    with pytest.raises(ValueError) as general_error:
        general(Model(), winner, loser)
    with pytest.raises(ValueError) as written_error:
        rate_win(25 / 6, 0.0001, 25 / 300, winner, loser)
    assert str(written_error.value) == str(general_error.value)
