"""Dispatch by ruleset: rate, preview, the provisional flag and display (SPEC 2, SPEC 4)."""

import pytest

from engine import fibs, gammon42, prostriker
from engine.rating import display_rating, is_provisional, preview, rate
from engine.rulesets import FibsRules, Gammon42Rules, ProStrikerRules, Ruleset
from engine.types import Game, PlayerState

GAMMON42 = Gammon42Rules()
FIBS = FibsRules()
PROSTRIKER = ProStrikerRules()


@pytest.mark.parametrize(
    ("rules", "module"),
    [(GAMMON42, gammon42), (FIBS, fibs), (PROSTRIKER, prostriker)],
)
def test_rate_dispatches_to_the_rulesets_own_module(rules: Ruleset, module: object) -> None:
    """rate(rules, …) gives exactly what the ruleset's own module gives."""
    winner, loser, game = PlayerState(1450.0), PlayerState(1530.0), Game(cube=4, match_length=7)
    assert module.rate(rules, winner, loser, game) == rate(rules, winner, loser, game)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("rules", "a", "b", "game", "if_win", "if_lose"),
    [
        (GAMMON42, 1500.0, 1500.0, Game(), 16.0, -16.0),  # seed 002: +16 / −16
        (GAMMON42, 1800.0, 1500.0, Game(), 12.0, -20.0),  # seed 002: 300-point favourite
        (PROSTRIKER, 1200.0, 1400.0, Game(), 30.0, -10.0),  # K 40: 30.4 and 9.6
    ],
)
def test_preview_gives_whole_changes_for_a_win_and_a_loss(
    rules: Ruleset, a: float, b: float, game: Game, if_win: float, if_lose: float
) -> None:
    """The preview is a's change if a wins and if a loses."""
    shown = preview(rules, PlayerState(a), PlayerState(b), game)
    assert (if_win, if_lose) == (shown.if_win, shown.if_lose)


def test_preview_at_k16_matches_seed_004s_worked_example() -> None:
    """Seed 004: at 1200 vs 1400 and K 16, ≈ 24 %, +12 if you win, −4 if you lose."""
    you, them = PlayerState(1200.0, rated_games=200), PlayerState(1400.0, rated_games=200)
    shown = preview(PROSTRIKER, you, them, Game())
    assert ("0.24", 12.0, -4.0) == (f"{shown.win_probability:.2f}", shown.if_win, shown.if_lose)


def test_preview_win_probability_is_the_favourites_expected_score() -> None:
    """Seed 002 step 1: a 300-point favourite is expected to win 64.0 %."""
    shown = preview(GAMMON42, PlayerState(1800.0), PlayerState(1500.0), Game())
    assert "64.0" == f"{shown.win_probability * 100:.1f}"


@pytest.mark.parametrize(
    ("rules", "experience", "provisional"),
    [
        (FIBS, 0, True),
        (FIBS, 49, True),
        (FIBS, 50, False),
        (GAMMON42, 0, False),
        (PROSTRIKER, 0, False),
    ],
)
def test_only_fibs_ratings_are_ever_provisional(
    rules: Ruleset, experience: int, provisional: bool
) -> None:
    """SPEC 2.2: FIBS flags ratings below 50 experience; the other rulesets have no flag."""
    assert provisional == is_provisional(rules, PlayerState(1500.0, experience=experience))


@pytest.mark.parametrize(
    ("rules", "rating", "shown"),
    [
        (FIBS, 1500.0, "1500.0"),
        (FIBS, 1524.97088866, "1525.0"),
        (FIBS, 1480.6967, "1480.7"),
        (FIBS, 1512.25, "1512.3"),  # exact binary tie: away from zero, unlike f"{x:.1f}"
        (FIBS, -19.30325729, "-19.3"),
        (FIBS, -0.04, "0.0"),
        (GAMMON42, 1516.0, "1516"),
        (GAMMON42, 1500.5, "1501"),
        (PROSTRIKER, 1212.0, "1212"),
        (PROSTRIKER, -4.0, "-4"),
    ],
)
def test_display_shows_fibs_with_one_decimal_and_the_others_whole(
    rules: Ruleset, rating: float, shown: str
) -> None:
    """SPEC 2.2: FIBS displays one decimal; Gammon42 and ProStriker ratings are whole."""
    assert shown == display_rating(rules, rating)
