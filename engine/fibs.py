"""The FIBS rating formula for backgammon matches.

Source: seed 003 ("So funktioniert die Wertung") and SPEC 2.2. For an N-point match between
A and B:

    P(A wins) = 1 - 1 / (10^((A - B) * sqrt(N) / 2000) + 1)
    V         = 4 * sqrt(N)
    winner    + V * (1 - P)       loser  - V * P       (P from each player's own side)

Until a player's experience (the total length of their rated matches) reaches 400, their change
is multiplied by max(1, 5 - experience / 100), using their own experience before the match.
Some FIBS write-ups add the current match's length first; ``FibsRules.count_current_match``
selects that variant (off by default, SPEC 2.2). Ratings are stored unrounded and shown with
one decimal.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from engine.curves import pow10
from engine.types import Game, PlayerState, RatingChange, side_change

if TYPE_CHECKING:  # the ruleset type names its formulas (engine.rulesets)
    from engine.rulesets import FibsRules

__all__ = [
    "is_provisional",
    "is_public_eligible",
    "match_value",
    "multiplier",
    "rate",
    "win_probability",
]


def win_probability(a: float, b: float, match_length: int, divisor: float) -> float:
    """Return the probability that A beats B in an ``match_length``-point match."""
    return 1.0 - 1.0 / (pow10((a - b) * math.sqrt(match_length) / divisor) + 1.0)


def match_value(n: int, rules: FibsRules) -> float:
    """Return V, what an N-point match is worth: ``4 * sqrt(N)``."""
    if n < 1:
        raise ValueError(f"match_length: must be >= 1, got {n!r}")
    return rules.value_factor * math.sqrt(n)


def multiplier(experience: int, match_length: int, rules: FibsRules) -> float:
    """Return the newcomer multiplier: ``max(1, 5 - experience / 100)`` below 400 experience."""
    if rules.count_current_match:
        experience += match_length
    if experience >= rules.newcomer_limit:
        return 1.0
    return max(1.0, rules.newcomer_max - experience / rules.newcomer_step)


def rate(rules: FibsRules, winner: PlayerState, loser: PlayerState, game: Game) -> RatingChange:
    """Score one rated match; changes are not rounded (seed 003 shows one decimal)."""
    n = game.match_length
    value = match_value(n, rules)
    winner_multiplier = multiplier(winner.experience, n, rules)
    loser_multiplier = multiplier(loser.experience, n, rules)
    winner_p = win_probability(winner.rating, loser.rating, n, rules.divisor)
    # The loser's own chance of winning. Taking it as 1 - P(winner) rather than recomputing
    # keeps the formula exactly antisymmetric at equal experience.
    loser_p = 1.0 - winner_p
    winner_delta = value * (1.0 - winner_p) * winner_multiplier
    # "+ 0.0" turns -0.0 (a certain loss) into 0.0 so nothing ever displays "-0.0".
    loser_delta = -(value * loser_p * loser_multiplier) + 0.0
    return RatingChange(
        side_change(winner, winner_delta, winner_multiplier, winner_p),
        side_change(loser, loser_delta, loser_multiplier, loser_p),
        1.0,
    )


def is_provisional(experience: int, rules: FibsRules) -> bool:
    """Return whether a rating is still provisional (experience below 50, seed 003 section 04)."""
    return experience < rules.provisional_below


def is_public_eligible(
    email_verified: bool, display_name_chosen: bool, experience: int, rules: FibsRules
) -> bool:
    """Return whether a player may appear on the public list (seed 003 section 05)."""
    return email_verified and display_name_chosen and experience >= rules.public_min_experience
