"""What ``ladder verify`` replays for a ladder with imported players.

An import row (ledger kind ``import``) holds the rating only; the games, experience, last game
and flags the import gave the player are in ``imported_players``. The replay applies the row
(``engine.replay.Replay.recorded``) and then gives the player those, so their later games
replay to the stored numbers.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.engine import Engine

from engine import LedgerChange, LedgerKind, Replay
from worker.ladders import LadderConfig
from worker.store import imports


class ImportingReplay(Replay):
    """A replay that gives an imported player, at their import row, the games, experience,
    last game and flags the import gave them (the ledger row holds the rating only)."""

    def __init__(self, engine: Engine, ladder_config: LadderConfig) -> None:
        super().__init__(ladder_config.policy, ladder_config.rules_at)
        self.profiles = imports.profiles(engine, ladder_config.name)

    def recorded(self, ladder: str, change: LedgerChange, at: datetime) -> LedgerChange:
        derived = super().recorded(ladder, change, at)
        if change.kind == LedgerKind.IMPORT:
            profile = self.profiles.get(change.player_id)
            if profile is not None:
                player = self.state.players[(ladder, change.player_id)]
                games, experience, last, email, name = profile
                player.rated_games = games
                player.experience = experience
                player.last_game_at = last
                player.email_verified = email
                player.display_name_chosen = name
        return derived


def replay_for(engine: Engine, ladder_config: LadderConfig) -> Replay:
    """The replay ``ladder verify`` runs for one ladder."""
    return ImportingReplay(engine, ladder_config)
