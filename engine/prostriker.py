"""ProStriker: classic Elo with K tiers by rated games.

Source: seed 004 ("Wie die Rangliste funktioniert") and SPEC 2.3:

    expected_A = 1 / (1 + 10^((B - A) / 400))
    change     = round_half_away(K * (result - expected))
    K          = 40 below 30 rated games, 24 for 30-199, 16 from 200; no floor or ceiling

Each player uses their own K. The seed does not state the rounding, but its worked example
lands on whole ratings (1212 / 1388, 1196 / 1404), so SPEC 2.3 rounds half away from zero.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine import elo
from engine.elo import expected_score
from engine.types import Game, PlayerState, RatingChange

if TYPE_CHECKING:  # the ruleset type names its formulas (engine.rulesets)
    from engine.rulesets import ProStrikerRules

__all__ = ["expected_score", "k_for", "rate"]


def k_for(rated_games: int, rules: ProStrikerRules) -> int:
    """Return the K for a player with ``rated_games`` rated games so far (seed 004's tiers)."""
    for games_below, k in rules.k_tiers:
        if rated_games < games_below:
            return k
    return rules.k_established


def rate(
    rules: ProStrikerRules, winner: PlayerState, loser: PlayerState, game: Game
) -> RatingChange:
    """Score one rated game; ``game`` carries nothing ProStriker uses (no cube, no match)."""
    del game  # same signature as the other rulesets, so dispatch stays uniform
    winner_k = k_for(winner.rated_games, rules)
    loser_k = k_for(loser.rated_games, rules)
    return elo.elo_change(
        winner,
        loser,
        winner_k=winner_k,
        loser_k=loser_k,
        divisor=rules.divisor,
    )
