"""ProStriker classic Elo against seed 004's worked example and K tiers (SPEC 2.3)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.prostriker import expected_score, k_for, rate
from engine.rulesets import ProStrikerRules
from engine.types import Game, PlayerState

RULES = ProStrikerRules()
ESTABLISHED = 200  # rated games: K 16


def test_the_underdogs_expected_score_is_about_0_24() -> None:
    """Seed 004 worked example: 1 / (1 + 10^((1400 − 1200) / 400)) ≈ 0.24."""
    assert "0.24" == f"{expected_score(1200.0, 1400.0, RULES.divisor):.2f}"


def test_a_400_point_favourite_wins_ten_games_in_eleven() -> None:
    """Seed 004: a 400-point gap means the stronger player wins about ten of eleven games."""
    assert 10 / 11 == pytest.approx(expected_score(1600.0, 1200.0, RULES.divisor))


@pytest.mark.parametrize(
    ("winner", "loser", "deltas", "afters"),
    [
        (1200.0, 1400.0, (12.0, -12.0), (1212.0, 1388.0)),  # "Sie gewinnen"
        (1400.0, 1200.0, (4.0, -4.0), (1404.0, 1196.0)),  # "Sie verlieren"
    ],
)
def test_the_worked_example_at_k16_matches_seed_004(
    winner: float,
    loser: float,
    deltas: tuple[float, float],
    afters: tuple[float, float],
) -> None:
    """Seed 004: 1200 vs 1400, K 16: win +12 ⇒ 1212 / 1388; lose −4 ⇒ 1196 / 1404."""
    result = rate(
        RULES,
        PlayerState(winner, rated_games=ESTABLISHED),
        PlayerState(loser, rated_games=ESTABLISHED),
        Game(),
    )
    assert deltas == (result.winner.delta, result.loser.delta)
    assert afters == (result.winner.after, result.loser.after)
    assert (16.0, 16.0) == (result.winner.k, result.loser.k)


@pytest.mark.parametrize(
    ("rated_games", "k"),
    [(0, 40), (29, 40), (30, 24), (199, 24), (200, 16), (5000, 16)],
)
def test_k_follows_the_tier_table(rated_games: int, k: int) -> None:
    """Seed 004 K table: below 30 ⇒ 40, 30–199 ⇒ 24, 200 or more ⇒ 16."""
    assert k == k_for(rated_games, RULES)


def test_each_player_uses_their_own_k() -> None:
    """Seed 004: points won equal points lost "unless the players have different K values"."""
    result = rate(RULES, PlayerState(1200.0), PlayerState(1200.0, rated_games=ESTABLISHED), Game())
    assert (20.0, -8.0) == (result.winner.delta, result.loser.delta)


ratings = st.integers(min_value=0, max_value=4000).map(float)
games = st.integers(min_value=0, max_value=500)


@given(winner=ratings, loser=ratings, rated_games=games)
def test_equal_k_games_are_zero_sum(winner: float, loser: float, rated_games: int) -> None:
    """Seed 004: the two expectations add to one, so with one K one's gain is the other's loss."""
    result = rate(
        RULES,
        PlayerState(winner, rated_games=rated_games),
        PlayerState(loser, rated_games=rated_games),
        Game(),
    )
    assert 0.0 == result.winner.delta + result.loser.delta


@given(winner=ratings, loser=ratings, winner_games=games, loser_games=games)
def test_changes_are_whole_and_bounded_by_k(
    winner: float, loser: float, winner_games: int, loser_games: int
) -> None:
    """Changes are whole numbers, the winner's in [0, K] and the loser's in [−K, 0]."""
    result = rate(
        RULES,
        PlayerState(winner, rated_games=winner_games),
        PlayerState(loser, rated_games=loser_games),
        Game(),
    )
    assert result.winner.delta.is_integer() and result.loser.delta.is_integer()
    assert result.winner.k is not None and result.loser.k is not None
    assert 0 <= result.winner.delta <= result.winner.k
    assert -result.loser.k <= result.loser.delta <= 0
