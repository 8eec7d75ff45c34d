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
RECORDED_KINDS = frozenset({LedgerKind.SEASON})


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
                start = self.rules_at(at).start
                self.state.claim(ladder, change.player_id, start, at)
                player = self.state.players[(ladder, change.player_id)]
                derived = LedgerChange(
                    change.player_id,
                    change.kind,
                    player.rating,
                    change.after,
                    change.after - player.rating,
                )
                player.rating = change.after
                player.changed(at)
                return derived
            case LedgerKind.ADJUSTMENT:
                # An operator's change: the delta is the record, the before is today's rating.
                player = self.state.players[(ladder, change.player_id)]
                derived = LedgerChange(
                    change.player_id,
                    change.kind,
                    player.rating,
                    player.rating + change.delta,
                    change.delta,
                )
                player.rating = derived.after
                player.changed(at)
                return derived
            case LedgerKind.CORRECTION:
                # A re-rating after a void sets the rating it records (as a season's reset).
                player = self.state.players[(ladder, change.player_id)]
                derived = LedgerChange(
                    change.player_id,
                    change.kind,
                    player.rating,
                    change.after,
                    change.after - player.rating,
                )
                player.rating = change.after
                return derived
            case _:
                raise ValueError(f"kind: {change.kind!r} is derived from events, not recorded")
