"""ladder's pure engine: the ladder rules, rulesets, rating maths, fair-play verdicts, replay.

Sources: SPEC section 2 and seeds 002 (Gammon42), 003 (FIBS formula) and 004 (ProStriker Elo).
The engine imports only the standard library and does no I/O, so the worker can call it from
anywhere and the unit tests need nothing running. Each ruleset (``rulesets``) answers for
itself; its formulas live in the ``gammon42``, ``fibs`` and ``prostriker`` modules.
``ladder.apply`` applies one event to the ladder state (links, prizes, boosted points, the
ledger) and ``replay.Replay`` runs a ladder's stored log through it again.
"""

from engine import fairplay, fibs, gammon42, needs, prostriker
from engine.fairplay import FairPlayConfig
from engine.gammon42 import CUBE_VALUES
from engine.ladder import Decision, LadderState, LedgerChange, Policy, apply
from engine.network import network_token
from engine.player import Player, PlayerKey
from engine.rating import display_change, display_rating, is_provisional, predict, preview
from engine.reasons import LedgerKind, Outcome, Reason
from engine.replay import Action, Imported, Lived, Replay, Season, in_order, voided_by
from engine.rulesets import RULESET_KINDS, FibsRules, Gammon42Rules, ProStrikerRules, Ruleset
from engine.types import Game, PlayerState
from engine.windows import Windows

__all__ = [
    "Action",
    "CUBE_VALUES",
    "Decision",
    "FairPlayConfig",
    "FibsRules",
    "Gammon42Rules",
    "Game",
    "Imported",
    "LadderState",
    "LedgerChange",
    "LedgerKind",
    "Lived",
    "Outcome",
    "Player",
    "PlayerKey",
    "PlayerState",
    "Policy",
    "ProStrikerRules",
    "Reason",
    "RULESET_KINDS",
    "Replay",
    "Ruleset",
    "Season",
    "Windows",
    "apply",
    "display_change",
    "display_rating",
    "fairplay",
    "fibs",
    "gammon42",
    "in_order",
    "is_provisional",
    "needs",
    "network_token",
    "predict",
    "preview",
    "prostriker",
    "voided_by",
]
