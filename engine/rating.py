"""One entry point for every ruleset: rate a game, preview or predict one, flag and display a
rating.

Sources: SPEC 2 (one ruleset per ladder), SPEC 4 (the rating preview: "what would this game do
to my rating") and seed 003's calculator, which shows the win chance and both outcomes; SPEC 7
(``ladder predict``: "Win probability from the same model ... each side's expected score for a
proposed game (1v1 or teams) under the ladder's current ruleset, from the same function that
rates; the existing preview stays consistent with it").
Each ruleset answers for itself (``engine.rulesets``), so adding one touches neither this
module nor the worker.
"""

import math
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal

from engine.rounding import round_half_away
from engine.rulesets import Ruleset
from engine.types import Game, PlayerState, Preview, RatingChange

__all__ = ["display_rating", "is_provisional", "predict", "preview", "rate"]


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


def predict(
    rules: Ruleset, teams: Sequence[Sequence[PlayerState]], game: Game | None = None
) -> tuple[float, ...]:
    """Each team's expected score in a proposed game, in the order given, as rating it would
    record it (the ``expected`` of its ``SideChange``).

    A 1v1 (two teams of one) is ``rules.rate`` with the first player as the winner: the
    winner side's expected for the first, the loser side's for the second, so the first is
    exactly ``preview``'s win probability. Any other game (teams, a free-for-all) is
    ``rules.rate_match`` with every team at its own rank in the order given and every weight
    1, on a ruleset whose ``shapes`` has "teams"; a team's expected is the mean of its
    players' (openskill gives each player of a team the same: the team's chance to finish
    first; glicko2 each player's mean expected score against every other team). The expected
    is the model's before the game, whatever the result: the ranks are only there because
    rating needs one. ``game``: what else the ruleset reads (fibs: the match length).

    ``ValueError`` for fewer than two teams, a team without players, or a team game on a
    ruleset that does not rate team games (worded by ``Ruleset.rates_only``).
    """
    if len(teams) < 2:
        raise ValueError(f"teams: a game needs at least 2 teams, got {len(teams)}")
    for number, team in enumerate(teams, 1):
        if not team:
            raise ValueError(f"teams: team {number} has no players")
    if len(teams) == 2 and len(teams[0]) == len(teams[1]) == 1:
        change = rate(rules, teams[0][0], teams[1][0], Game() if game is None else game)
        return (change.winner.expected, change.loser.expected)
    if "teams" not in rules.shapes:
        raise ValueError(f"the {rules.kind} ruleset {rules.rates_only('teams')}")
    ranks = tuple(range(1, len(teams) + 1))
    weights = [[1.0] * len(team) for team in teams]
    done = rules.rate_match(teams, ranks, weights)
    return tuple(_mean([side.expected for side in team]) for team in done)


def _mean(values: Sequence[float]) -> float:
    """The mean, exactly the value itself when all are equal (openskill's team members)."""
    first = values[0]
    if all(value == first for value in values):
        return first
    return math.fsum(values) / len(values)


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
