"""ladder's pure rating engine: rulesets, rating maths, fair-play verdicts, network tokens.

Sources: SPEC section 2 and seeds 002 (Gammon42), 003 (FIBS formula) and 004 (ProStriker Elo).
The engine imports only the standard library and does no I/O, so the worker can call it from
anywhere and the unit tests need nothing running. ``rate``/``preview`` dispatch on the ruleset;
the per-ruleset functions live in the ``gammon42``, ``fibs`` and ``prostriker`` modules.
"""

from engine import fibs, gammon42, prostriker
from engine.fairplay import (
    FILTERS,
    MODES,
    FairPlayConfig,
    FairPlayFacts,
    Filter,
    Reason,
    verdict,
)
from engine.gammon42 import CUBE_VALUES, cube_coefficient
from engine.network import network_token
from engine.rating import display_rating, is_provisional, preview, rate
from engine.rounding import round_half_away
from engine.rulesets import RULESET_KINDS, FibsRules, Gammon42Rules, ProStrikerRules, Ruleset
from engine.types import Game, PlayerState, Preview, RatingChange, SideChange

__all__ = [
    "CUBE_VALUES",
    "FILTERS",
    "MODES",
    "RULESET_KINDS",
    "FairPlayConfig",
    "FairPlayFacts",
    "FibsRules",
    "Filter",
    "Gammon42Rules",
    "Game",
    "PlayerState",
    "Preview",
    "ProStrikerRules",
    "RatingChange",
    "Reason",
    "Ruleset",
    "SideChange",
    "cube_coefficient",
    "display_rating",
    "fibs",
    "gammon42",
    "is_provisional",
    "network_token",
    "preview",
    "prostriker",
    "rate",
    "round_half_away",
    "verdict",
]
