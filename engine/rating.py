"""One entry point for every ruleset: rate a game, preview one, flag and display a rating.

Sources: SPEC 2 (one ruleset per ladder), SPEC 4 (the rating preview: "what would this game do
to my rating") and seed 003's calculator, which shows the win chance and both outcomes.
Each ruleset answers for itself (``engine.rulesets``), so adding one touches neither this
module nor the worker.
"""

import math
from decimal import ROUND_HALF_UP, Decimal

from engine.rounding import round_half_away
from engine.rulesets import Ruleset
from engine.types import Game, PlayerState, Preview, RatingChange

__all__ = ["display_rating", "is_provisional", "preview", "rate"]


def rate(rules: Ruleset, winner: PlayerState, loser: PlayerState, game: Game) -> RatingChange:
    """Score one rated game under ``rules``."""
    return rules.rate(winner, loser, game)


def preview(rules: Ruleset, a: PlayerState, b: PlayerState, game: Game) -> Preview:
    """Return a's win probability and a's change for a win and for a loss against b."""
    if_a_wins = rate(rules, a, b, game)
    if_a_loses = rate(rules, b, a, game)
    return Preview(
        win_probability=if_a_wins.winner.expected,
        if_win=if_a_wins.winner.delta,
        if_lose=if_a_loses.loser.delta,
    )


def is_provisional(rules: Ruleset, player: PlayerState) -> bool:
    """Return whether the rating carries the provisional flag (only FIBS has one, SPEC 2.2)."""
    return rules.provisional(player)


def display_change(rules: Ruleset, delta: float) -> str:
    """A rating change as players see it: ``display_rating`` with its sign (``+16``, ``-19``,
    ``0``)."""
    shown = display_rating(rules, delta)
    return shown if shown.startswith("-") or shown in ("0", "0.0") else f"+{shown}"


def display_rating(rules: Ruleset, rating: float) -> str:
    """Format a rating (or a change) as players see it, with the ruleset's ``decimals``
    (FIBS one decimal, others whole).

    Both round half away from zero, like the stored whole-number ratings. FIBS goes through
    ``Decimal`` because ``Decimal(float)`` is exact, whereas ``f"{x:.1f}"`` rounds ties to even
    and ``round_half_away(x * 10)`` would round twice.
    """
    if not math.isfinite(rating):
        raise ValueError(f"rating: must be a finite number, got {rating!r}")
    if rules.decimals:
        shown = Decimal(rating).quantize(Decimal(1).scaleb(-rules.decimals), rounding=ROUND_HALF_UP)
        return f"{shown.copy_abs() if shown.is_zero() else shown:f}"
    return str(round_half_away(rating))
