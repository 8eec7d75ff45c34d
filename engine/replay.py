"""Replay: a ladder rebuilt from its log, to prove that every stored number follows the rules.

The log is the audit store read in scoring order: each stored event, with the moment it was
processed (it places events without ``ended_at`` in time and chooses their ruleset version,
as it did live), and the ledger's *recorded* actions, whose new rating is the record itself
rather than something an event derives (a season's reset today; an operator's adjustment
or correction, or an imported rating, are one more case of ``recorded``).

A replay keeps the players, links, settled tournaments and window counts of one ladder; it
forgets event ids as it goes (stored ids are unique), so it holds no per-event state beyond
the window timestamps.
"""

from collections.abc import Callable
from datetime import datetime

from engine.ladder import Decision, Event, LadderState, LedgerChange, Policy, apply, when
from engine.reasons import LedgerKind
from engine.rulesets import Ruleset

__all__ = ["RECORDED_KINDS", "Replay"]

# Ledger kinds whose rows are the action itself (not derived from an event).
RECORDED_KINDS = frozenset({LedgerKind.SEASON, LedgerKind.IMPORT})


class Replay:
    def __init__(self, policy: Policy, rules_at: Callable[[datetime], Ruleset]) -> None:
        self.policy = policy
        self.rules_at = rules_at
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
                # The start of an imported player's history: listed at the rating it records
                # (games, experience and flags come with it: see ``worker.ops.importer``).
                derived = self._set(ladder, change, change.after, at, claim=True)
                self.state.players[(ladder, change.player_id)].listed = True
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
