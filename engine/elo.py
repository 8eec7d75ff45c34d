"""The Elo step shared by gammon42 (seed 002) and prostriker (seed 004).

change = K x (result - expected) x coefficient, each player with their own K, rounded half
away from zero. The loser's expectation is derived from the winner's (seed 002's Go code;
seed 004: "the two expectations add up to one"), which keeps equal-K games exactly zero-sum
even at a rounding tie.
"""

from engine.curves import pow10
from engine.rounding import round_half_away
from engine.types import PlayerState, RatingChange, side_change

__all__ = ["elo_change", "expected_score"]


def expected_score(player: float, opponent: float, divisor: float) -> float:
    """1 / (1 + 10^((opponent - player) / divisor))."""
    return 1.0 / (1.0 + pow10((opponent - player) / divisor))


def elo_change(
    winner: PlayerState,
    loser: PlayerState,
    *,
    winner_k: float,
    loser_k: float,
    divisor: float,
    coefficient: float = 1.0,
) -> RatingChange:
    expected_winner = expected_score(winner.rating, loser.rating, divisor)
    expected_loser = 1 - expected_winner
    winner_delta = round_half_away(winner_k * (1 - expected_winner) * coefficient)
    loser_delta = round_half_away(loser_k * (0 - expected_loser) * coefficient)
    return RatingChange(
        side_change(winner, winner_delta, winner_k, expected_winner),
        side_change(loser, loser_delta, loser_k, expected_loser),
        coefficient,
    )
