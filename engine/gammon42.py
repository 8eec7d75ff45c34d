"""Gammon42 Elo with the doubling cube.

Source: seed 002 ("How ELO Rating Works in Gammon42", version 1.3.1) and SPEC 2.1. This module
follows the article's Go server code (``KFor``, ``CalculateChangeWithK``, ``expectedScore``)
step for step, in the same order of float operations, so that our numbers match theirs:

    expected = 1 / (1 + 10^((opponent - you) / divisor))
    change   = round_half_away(K * (result - expected) * coefficient)
    coefficient = 1 + log2(cube) / 6,  cube in {1, 2, 4, ..., 64}

Each player uses their own K (32, or 16 after a heavy ranked week), so the two changes differ
when the Ks do. Go's ratings are ints; ours are floats holding whole numbers, used as they are.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Final

from engine import elo
from engine.elo import expected_score  # Go ``expectedScore``
from engine.types import Game, PlayerState, RatingChange

if TYPE_CHECKING:  # the ruleset type names its formulas (engine.rulesets)
    from engine.rulesets import Gammon42Rules

__all__ = ["CUBE_VALUES", "cube_coefficient", "expected_score", "k_for", "rate"]

# Seed 002's cube table: 1 to 64. Anything else (3, 0, 128) is an invalid event (SPEC 3).
CUBE_VALUES: Final[frozenset[int]] = frozenset(2**i for i in range(7))

# "Each doubling adds one sixth of the way to the maximum" of 2.0 at cube 64.
_CUBE_DOUBLINGS_TO_MAX: Final = 6
_COEFFICIENTS: Final[dict[int, float]] = {
    cube: 1.0 + math.log2(cube) / _CUBE_DOUBLINGS_TO_MAX for cube in CUBE_VALUES
}


def cube_coefficient(cube: int) -> float:
    """Return the cube multiplier ``1 + log2(cube) / 6``; ``ValueError`` outside 1..64."""
    if isinstance(cube, bool) or cube not in _COEFFICIENTS:
        raise ValueError(f"cube: must be one of {sorted(CUBE_VALUES)}, got {cube!r}")
    return _COEFFICIENTS[cube]


def k_for(recent_ranked_games: int, rules: Gammon42Rules) -> int:
    """Return the K for a player with this many ranked games in the window (Go ``KFor``).

    Versions before 1.3.1 had no heavy-volume K, hence the ``heavy_volume`` switch.
    """
    if rules.heavy_volume and recent_ranked_games >= rules.heavy_games:
        return rules.heavy_k
    return rules.k


def rate(rules: Gammon42Rules, winner: PlayerState, loser: PlayerState, game: Game) -> RatingChange:
    """Score one ranked game (Go ``CalculateChangeWithK``)."""
    coefficient = cube_coefficient(game.cube)
    winner_k = k_for(winner.recent_ranked_games, rules)
    loser_k = k_for(loser.recent_ranked_games, rules)
    return elo.elo_change(
        winner,
        loser,
        winner_k=winner_k,
        loser_k=loser_k,
        divisor=rules.divisor,
        coefficient=coefficient,
    )
