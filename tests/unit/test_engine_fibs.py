"""The FIBS match formula against seed 003's calculator, formula and rules (SPEC 2.2)."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.fibs import (
    is_provisional,
    is_public_eligible,
    match_value,
    multiplier,
    rate,
    win_probability,
)
from engine.rating import display_rating, preview
from engine.rulesets import FibsRules
from engine.types import Game, PlayerState

RULES = FibsRules()
COUNTING = FibsRules(count_current_match=True)


def test_the_calculator_example_matches_seed_003() -> None:
    """Seed 003 calculator: A − B = −100, N 5, experience 5 ⇒ 43.6 %, +25.0, −19.3, ×4.95."""
    you = PlayerState(1400.0, experience=5)
    opponent = PlayerState(1500.0, experience=5)
    shown = preview(RULES, you, opponent, Game(match_length=5))
    assert "43.6" == f"{shown.win_probability * 100:.1f}"
    assert ("25.0", "-19.3") == (
        display_rating(RULES, shown.if_win),
        display_rating(RULES, shown.if_lose),
    )
    assert 4.95 == multiplier(5, 5, RULES)


def test_the_calculator_changes_are_stored_unrounded() -> None:
    """SPEC 2.2: no rounding of the stored rating; the +25.0 is really 24.97…."""
    result = rate(
        RULES, PlayerState(1400.0, experience=5), PlayerState(1500.0), Game(match_length=5)
    )
    assert 24.97 == pytest.approx(result.winner.delta, abs=0.005)
    assert result.winner.after == 1400.0 + result.winner.delta


def test_an_even_5_point_match_between_experienced_equals_moves_each_by_about_4_5() -> None:
    """Seed 003: "Ein ausgeglichenes Match auf 5 … bewegt jede Wertung um etwa 4,5 Punkte"."""
    player = PlayerState(1500.0, experience=1000)
    result = rate(RULES, player, player, Game(match_length=5))
    assert ("4.47", "-4.47") == (f"{result.winner.delta:.2f}", f"{result.loser.delta:.2f}")
    assert result.winner.delta == 2 * math.sqrt(5)


@pytest.mark.parametrize(
    ("a", "b", "n", "p"),
    [
        (1500.0, 1500.0, 1, 0.5),
        (1500.0, 1500.0, 25, 0.5),
        (1400.0, 1500.0, 5, 0.4359938938576612),
        (3500.0, 1500.0, 1, 1 - 1 / 11),  # 10^(2000 / 2000) = 10
    ],
)
def test_win_probability_follows_the_formula(a: float, b: float, n: int, p: float) -> None:
    """Seed 003 section 03: P = 1 − 1 / (10^((A − B) × √N / 2000) + 1)."""
    assert p == pytest.approx(win_probability(a, b, n, RULES.divisor), rel=1e-12)


@pytest.mark.parametrize(("n", "value"), [(1, 4.0), (4, 8.0), (9, 12.0), (25, 20.0)])
def test_match_value_is_4_root_n(n: int, value: float) -> None:
    """Seed 003 section 03: V = 4 × √N."""
    assert value == match_value(n, RULES)


@pytest.mark.parametrize(
    ("experience", "expected"),
    [
        (0, 5.0),
        (5, 4.95),
        (100, 4.0),
        (300, 2.0),
        (399, 1.01),
        (400, 1.0),
        (1000, 1.0),
    ],
)
def test_newcomer_multiplier_falls_from_5_to_1_at_400(experience: int, expected: float) -> None:
    """Seed 003 section 04: max(1, 5 − experience / 100) until experience reaches 400."""
    assert expected == pytest.approx(multiplier(experience, 5, RULES))


@pytest.mark.parametrize(
    ("experience", "match_length", "default", "counting"),
    [
        (5, 5, 4.95, 4.9),
        (0, 1, 5.0, 4.99),
        (395, 5, 1.05, 1.0),
        (399, 1, 1.01, 1.0),
    ],
)
def test_count_current_match_adds_this_match_before_the_multiplier(
    experience: int, match_length: int, default: float, counting: float
) -> None:
    """SPEC 2.2 variant switch: off by default; on, experience 5 + N 5 gives 4.9, not 4.95."""
    assert default == pytest.approx(multiplier(experience, match_length, RULES))
    assert counting == pytest.approx(multiplier(experience, match_length, COUNTING))


def test_each_player_uses_their_own_multiplier() -> None:
    """A newcomer beating a veteran moves 5× as far as the veteran does."""
    result = rate(
        RULES, PlayerState(1500.0), PlayerState(1500.0, experience=400), Game(match_length=5)
    )
    assert (5.0, 1.0) == (result.winner.k, result.loser.k)
    assert result.winner.delta == pytest.approx(-5 * result.loser.delta)


@pytest.mark.parametrize(
    ("experience", "provisional"), [(0, True), (49, True), (50, False), (400, False)]
)
def test_ratings_are_provisional_below_50_experience(experience: int, provisional: bool) -> None:
    """Seed 003 section 04: "Unter 50 Erfahrung ist deine Wertung vorläufig"."""
    assert provisional == is_provisional(experience, RULES)


@pytest.mark.parametrize(
    ("email_verified", "display_name_chosen", "experience", "eligible"),
    [
        (True, True, 20, True),
        (True, True, 1000, True),
        (True, True, 19, False),
        (False, True, 1000, False),
        (True, False, 1000, False),
        (False, False, 0, False),
    ],
)
def test_public_list_needs_verified_email_chosen_name_and_20_experience(
    email_verified: bool, display_name_chosen: bool, experience: int, eligible: bool
) -> None:
    """Seed 003 section 05: verified e-mail, a chosen display name and at least 20 experience."""
    assert eligible == is_public_eligible(email_verified, display_name_chosen, experience, RULES)


ratings = st.floats(min_value=0.0, max_value=4000.0, allow_nan=False)
experiences = st.integers(min_value=0, max_value=1000)
lengths = st.integers(min_value=1, max_value=25)


@given(rating=ratings, experience=experiences, n=lengths)
def test_equal_players_move_by_equal_and_opposite_amounts(
    rating: float, experience: int, n: int
) -> None:
    """At equal ratings and experience the winner gains exactly what the loser drops."""
    player = PlayerState(rating, experience=experience)
    result = rate(RULES, player, player, Game(match_length=n))
    assert result.winner.delta == -result.loser.delta


@given(winner=ratings, loser=ratings, experience=experiences, n=lengths)
def test_changes_are_antisymmetric_at_equal_experience(
    winner: float, loser: float, experience: int, n: int
) -> None:
    """At equal experience the multipliers match, so the change is zero-sum at any ratings."""
    result = rate(
        RULES,
        PlayerState(winner, experience=experience),
        PlayerState(loser, experience=experience),
        Game(match_length=n),
    )
    assert result.winner.delta == -result.loser.delta


@given(
    winner=ratings,
    loser=ratings,
    winner_experience=experiences,
    loser_experience=experiences,
    n=lengths,
    counting=st.booleans(),
)
def test_the_winner_never_loses_and_the_loser_never_gains(
    winner: float,
    loser: float,
    winner_experience: int,
    loser_experience: int,
    n: int,
    counting: bool,
) -> None:
    """Winner gain ≥ 0 and loser loss ≤ 0, with any experience and either switch setting."""
    rules = COUNTING if counting else RULES
    result = rate(
        rules,
        PlayerState(winner, experience=winner_experience),
        PlayerState(loser, experience=loser_experience),
        Game(match_length=n),
    )
    assert result.winner.delta >= 0 >= result.loser.delta


def test_an_impossible_upset_neither_overflows_nor_shows_minus_zero() -> None:
    """A gap too large for a float power saturates like Go: the favourite's loss is 0.0."""
    result = rate(RULES, PlayerState(1e6), PlayerState(0.0), Game(match_length=25))
    assert (0.0, "0.0") == (result.winner.delta, display_rating(RULES, result.loser.delta))
