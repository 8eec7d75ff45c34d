"""Gammon42 Elo against every table and worked example in seed 002 (SPEC 2.1)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import gammon42
from engine.gammon42 import cube_coefficient, expected_score, k_for, rate
from engine.rounding import round_half_away
from engine.rulesets import Gammon42Rules
from engine.types import Game, PlayerState

RULES = Gammon42Rules()
BASE = 1500.0
LIGHT = 0  # ranked games this week: K 32
HEAVY = 60  # ranked games this week: K 16


def change(
    winner: float,
    loser: float,
    *,
    cube: int = 1,
    winner_games: int = 0,
    loser_games: int = 0,
    rules: Gammon42Rules = RULES,
) -> tuple[float, float]:
    result = rate(
        rules,
        PlayerState(winner, recent_ranked_games=winner_games),
        PlayerState(loser, recent_ranked_games=loser_games),
        Game(cube=cube),
    )
    return result.winner.delta, result.loser.delta


@pytest.mark.parametrize(
    ("gap", "percent"),
    [
        (0, "50.0"),
        (50, "52.4"),
        (100, "54.8"),
        (150, "57.1"),
        (200, "59.5"),
        (300, "64.0"),
        (400, "68.3"),
        (500, "72.3"),
    ],
)
def test_favourites_expected_win_rate_matches_the_step_1_table(gap: int, percent: str) -> None:
    """Seed 002, step 1 table: the favourite's expected win rate by rating gap (÷1200)."""
    assert percent == f"{expected_score(BASE + gap, BASE, RULES.divisor) * 100:.1f}"


@pytest.mark.parametrize(
    ("gap", "favourite_wins", "underdog_wins"),
    [
        (0, (16, -16), (16, -16)),
        (100, (14, -14), (18, -18)),
        (200, (13, -13), (19, -19)),
        (300, (12, -12), (20, -20)),
        (400, (10, -10), (22, -22)),
    ],
)
def test_changes_at_k32_match_the_step_2_gap_table(
    gap: int, favourite_wins: tuple[int, int], underdog_wins: tuple[int, int]
) -> None:
    """Seed 002, step 2 table: winner / loser change by gap, K 32, cube 1."""
    assert favourite_wins == change(BASE + gap, BASE)
    assert underdog_wins == change(BASE, BASE + gap)


@pytest.mark.parametrize(
    ("gap", "games", "favourite_wins", "favourite_loses"),
    [
        (0, LIGHT, 16, -16),
        (150, LIGHT, 14, -18),
        (300, LIGHT, 12, -20),
        (0, HEAVY, 8, -8),
        (150, HEAVY, 7, -9),
        (300, HEAVY, 6, -10),
    ],
)
def test_favourites_changes_match_the_step_3_k_table(
    gap: int, games: int, favourite_wins: int, favourite_loses: int
) -> None:
    """Seed 002, step 3 table: the favourite's win / loss at K 32 and K 16 (both players)."""
    assert favourite_wins == change(BASE + gap, BASE, winner_games=games, loser_games=games)[0]
    assert favourite_loses == change(BASE, BASE + gap, winner_games=games, loser_games=games)[1]


@pytest.mark.parametrize(
    ("cube", "coefficient", "at_k32", "at_k16"),
    [
        (1, "1.00", 16, 8),
        (2, "1.17", 19, 9),
        (4, "1.33", 21, 11),
        (8, "1.50", 24, 12),
        (16, "1.67", 27, 13),
        (32, "1.83", 29, 15),
        (64, "2.00", 32, 16),
    ],
)
def test_cube_changes_match_the_cube_table(
    cube: int, coefficient: str, at_k32: int, at_k16: int
) -> None:
    """Seed 002, cube table: coefficient and ±change for two players at 1500."""
    assert coefficient == f"{cube_coefficient(cube):.2f}"
    assert (at_k32, -at_k32) == change(BASE, BASE, cube=cube)
    assert (at_k16, -at_k16) == change(BASE, BASE, cube=cube, winner_games=HEAVY, loser_games=HEAVY)


@pytest.mark.parametrize(
    ("version", "divisor", "percent", "win", "loss"),
    [
        ("before-1.2.0", 400.0, "84.9", 5, -27),
        ("1.2.0", 800.0, "70.3", 9, -23),
        ("1.3.1", 1200.0, "64.0", 12, -20),
    ],
)
def test_300_point_favourite_matches_the_divisor_history_table(
    version: str, divisor: float, percent: str, win: int, loss: int
) -> None:
    """Seed 002, ÷400 / ÷800 / ÷1200 table: expected rate and K-32 win / loss at a 300 gap."""
    rules = Gammon42Rules(version=version, divisor=divisor, heavy_volume=version == "1.3.1")
    assert percent == f"{expected_score(BASE + 300, BASE, divisor) * 100:.1f}"
    assert win == change(BASE + 300, BASE, rules=rules)[0]
    assert loss == change(BASE, BASE + 300, rules=rules)[1]


def test_a_200_point_favourite_under_divisor_400_expects_76_percent() -> None:
    """Seed 002 prose: "With 400, a 200-point favourite is expected to win 76% of the time"."""
    assert "76" == f"{expected_score(1700.0, BASE, 400.0) * 100:.0f}"


def test_two_players_at_1500_win_16_and_lose_16() -> None:
    """Seed 002 step 2: "The winner gets 32 × (1 − 0.5) = +16, the loser gets −16"."""
    assert (16, -16) == change(BASE, BASE)


def test_a_heavy_winner_gains_8_while_a_light_loser_drops_16() -> None:
    """Seed 002: 60 games vs 10 at equal ratings, the 60-game player wins +8, the other −16."""
    assert (8, -16) == change(BASE, BASE, winner_games=60, loser_games=10)


def test_a_light_winner_gains_16_while_a_heavy_loser_drops_8() -> None:
    """Seed 002: reversed, the 10-game player wins +16 and the 60-game player loses −8."""
    assert (16, -8) == change(BASE, BASE, winner_games=10, loser_games=60)


@pytest.mark.parametrize(("recent_ranked_games", "k"), [(0, 32), (49, 32), (50, 16), (300, 16)])
def test_k_drops_to_16_from_50_ranked_games_in_the_window(recent_ranked_games: int, k: int) -> None:
    """Seed 002 step 3: fewer than 50 games ⇒ K 32, 50 or more ⇒ K 16."""
    assert k == k_for(recent_ranked_games, RULES)


def test_k_ignores_weekly_volume_before_version_1_3_1() -> None:
    """Seed 002: the heavy-volume K arrived in 1.3.1; with the switch off K stays 32."""
    assert 32 == k_for(300, Gammon42Rules(version="1.2.0", divisor=800.0, heavy_volume=False))


def test_the_rating_change_records_k_expectation_and_new_ratings() -> None:
    """A RatingChange carries before, after, K, expected score and the cube coefficient."""
    result = rate(
        RULES,
        PlayerState(1600.0, recent_ranked_games=HEAVY),
        PlayerState(1500.0),
        Game(cube=8),
    )
    assert (1600.0, 1611.0, 11.0, 16.0) == (
        result.winner.before,
        result.winner.after,
        result.winner.delta,
        result.winner.k,
    )
    assert (1500.0, 1478.0, -22.0, 32.0) == (
        result.loser.before,
        result.loser.after,
        result.loser.delta,
        result.loser.k,
    )
    assert 1.5 == result.coefficient
    assert 1.0 == result.winner.expected + result.loser.expected


@pytest.mark.parametrize("cube", [3, 0, 128, -2, 6])
def test_cubes_outside_1_to_64_are_rejected(cube: int) -> None:
    """SPEC 2.1: cube ∈ {1, 2, 4, …, 64}; other values (3, 0, 128) are invalid events."""
    with pytest.raises(ValueError, match="cube"):
        cube_coefficient(cube)
    with pytest.raises(ValueError, match="cube"):
        change(BASE, BASE, cube=cube)


ratings = st.integers(min_value=0, max_value=4000).map(float)
cubes = st.sampled_from(sorted(gammon42.CUBE_VALUES))
volumes = st.integers(min_value=0, max_value=200)


@given(winner=ratings, loser=ratings, cube=cubes, games=volumes)
def test_equal_k_games_are_zero_sum(winner: float, loser: float, cube: int, games: int) -> None:
    """Seed 002: with the same K "the winner gains exactly what the loser drops"."""
    gain, loss = change(winner, loser, cube=cube, winner_games=games, loser_games=games)
    assert 0.0 == gain + loss


@given(winner=ratings, loser=ratings, cube=cubes, winner_games=volumes, loser_games=volumes)
def test_no_change_exceeds_k_times_the_cube_coefficient_rounded(
    winner: float, loser: float, cube: int, winner_games: int, loser_games: int
) -> None:
    """|change| ≤ K × coefficient rounded; K × coefficient itself is often not whole (18.67)."""
    result = rate(
        RULES,
        PlayerState(winner, recent_ranked_games=winner_games),
        PlayerState(loser, recent_ranked_games=loser_games),
        Game(cube=cube),
    )
    for side in (result.winner, result.loser):
        assert side.k is not None
        assert abs(side.delta) <= round_half_away(side.k * result.coefficient)


@given(winner=ratings, loser=ratings, cube=cubes, winner_games=volumes, loser_games=volumes)
def test_the_winner_never_loses_and_the_loser_never_gains(
    winner: float, loser: float, cube: int, winner_games: int, loser_games: int
) -> None:
    """result − expected is ≥ 0 for the winner and ≤ 0 for the loser, whatever the Ks."""
    gain, loss = change(
        winner, loser, cube=cube, winner_games=winner_games, loser_games=loser_games
    )
    assert gain >= 0 >= loss
