"""Replay: a ladder rebuilt from its log, to prove that every stored number follows the rules.

The log is the audit store read in scoring order: each stored event, with the moment it was
processed (it places events without ``ended_at`` in time and chooses their ruleset version,
as it did live), and the ledger's *recorded* actions, whose new rating is the record itself
rather than something an event derives (a season's reset today; an operator's adjustment
or correction, or an imported rating, are one more case of ``recorded``).

An import row holds the rating only; what else the import gave a player (games, experience,
last game, flags) is its ``Imported`` profile, which the replay is given and applies at that
row, so every replay (verify, a void's re-rating, a backtest) scores the imported player's
later games with the K and experience they were scored with live.

A replay keeps the players, links, settled tournaments and window counts of one ladder; it
forgets event ids as it goes (stored ids are unique), so it holds no per-event state beyond
the window timestamps.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from engine.ladder import Decision, Event, LadderState, LedgerChange, Policy, apply, when
from engine.reasons import LedgerKind
from engine.rulesets import Ruleset

__all__ = ["RECORDED_KINDS", "Imported", "Replay"]

# Ledger kinds whose rows are the action itself (not derived from an event).
RECORDED_KINDS = frozenset({LedgerKind.SEASON, LedgerKind.IMPORT})


@dataclass(frozen=True, slots=True)
class Imported:
    """What an import gave a player besides the rating its ledger row records."""

    games: int = 0
    experience: int = 0
    last_game_at: datetime | None = None
    email_verified: bool = False
    display_name_chosen: bool = False


class Replay:
    """``imported``: each imported player's profile (player id -> ``Imported``), applied at
    their import row; a player without one keeps what a new player has."""

    def __init__(
        self,
        policy: Policy,
        rules_at: Callable[[datetime], Ruleset],
        imported: Mapping[str, Imported] | None = None,
    ) -> None:
        self.policy = policy
        self.rules_at = rules_at
        self.imported: Mapping[str, Imported] = {} if imported is None else imported
        self.state = LadderState()

    def event(self, event: Event, processed_at: datetime) -> Decision:
        """Apply one stored event exactly as the worker did when it processed it."""
        rules = self.rules_at(when(event, processed_at))
        decision = apply(event, self.state, rules, self.policy, processed_at)
        self.state.seen.clear()
        self.state.touched.clear()
        return decision

    def recorded(self, ladder: str, change: LedgerChange, at: datetime) -> LedgerChange:
        """Apply a recorded rating change; returns it with ``before`` and ``delta`` as derived."""
        match change.kind:
            case LedgerKind.SEASON:
                # A season's reset sets the rating it records and bumps the version.
                return self._set(ladder, change, change.after, at, claim=True)
            case LedgerKind.IMPORT:
                # The start of an imported player's history: listed at the rating it records,
                # with the games, experience, last game and flags of their profile.
                derived = self._set(ladder, change, change.after, at, claim=True)
                player = self.state.players[(ladder, change.player_id)]
                player.listed = True
                profile = self.imported.get(change.player_id)
                if profile is not None:
                    player.rated_games = profile.games
                    player.experience = profile.experience
                    player.last_game_at = profile.last_game_at
                    player.email_verified = profile.email_verified
                    player.display_name_chosen = profile.display_name_chosen
                return derived
            case LedgerKind.ADJUSTMENT:
                # An operator's change: the delta is the record, the before is today's rating.
                rating = self.state.players[(ladder, change.player_id)].rating
                return self._set(ladder, change, rating + change.delta, at, delta=change.delta)
            case LedgerKind.CORRECTION:
                # A re-rating after a void sets the rating it records (as a season's reset);
                # the void's own replay has already moved the player's version.
                return self._set(ladder, change, change.after, at, bump=False)
            case _:
                raise ValueError(f"kind: {change.kind!r} is derived from events, not recorded")

    def _set(
        self,
        ladder: str,
        change: LedgerChange,
        after: float,
        at: datetime,
        *,
        delta: float | None = None,
        claim: bool = False,
        bump: bool = True,
    ) -> LedgerChange:
        """Set the player's rating to ``after``; ``claim`` creates them at the start first."""
        if claim:
            self.state.claim(ladder, change.player_id, self.rules_at(at).start, at)
        player = self.state.players[(ladder, change.player_id)]
        derived = LedgerChange(
            change.player_id,
            change.kind,
            player.rating,
            after,
            after - player.rating if delta is None else delta,
        )
        player.rating = after
        if bump:
            player.changed(at)
        return derived
