"""Verify a moderated ladder: the log as it was lived, each moderation action derived again.

``verify`` replays a ladder with moderation actions through ``engine.moderation.Lived``: every
event as the worker scored it; at each action (right after the event it followed) a ban, unban
or adjustment is applied and its ledger row compared; a void switches to the ladder replayed
with the voided games skipped, and its correction rows and changed outcomes are compared with
what is stored. The final players are then compared as for any ladder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine

from engine import Imported
from engine.moderation import Action, Lived
from worker.ladders import LadderConfig
from worker.ops.moderation import action_of, event_ref
from worker.store import moderation as store

if TYPE_CHECKING:
    from worker.ops.verify import LadderReport


class Moderated:
    """The lived replay of one ladder and the stored effects of its actions."""

    def __init__(
        self, engine: Engine, ladder_config: LadderConfig, imported: Mapping[str, Imported]
    ) -> None:
        ladder = ladder_config.name
        with engine.connect() as conn:
            self.actions: list[Action] = [action_of(r) for r in store.actions(conn, ladder)]
            self.rows = store.action_rows(conn, ladder)
            self.effects = store.action_effects(conn, ladder)
        self.lived = Lived(
            ladder, ladder_config.policy, ladder_config.rules_at, self.actions, imported
        )
        self.pending = list(self.actions)

    def before(self, seq: int | None, report: LadderReport) -> None:
        """Apply the actions taken before the event numbered ``seq`` (all, for ``None``)."""
        while self.pending and (seq is None or self.pending[0].after_seq < seq):
            self._apply(self.pending.pop(0), report)

    def _apply(self, action: Action, report: LadderReport) -> None:
        from worker.ops.verify import Mismatch, compare_change

        ref = event_ref(action.number)
        changes, effects = self.lived.action(action)
        kept = self.rows.get(ref, [])
        report.ledger_rows += len(kept)
        for index in range(max(len(kept), len(changes))):
            row: Sequence[Any] | None = kept[index] if index < len(kept) else None
            made = changes[index] if index < len(changes) else None
            compare_change(ref, row, made, report)
        stored = self.effects.get(action.number, [])
        derived = [(e.event_id, e.outcome, e.reason) for e in effects]
        if stored != derived:
            missing = sorted(set(derived) - set(stored))
            extra = sorted(set(stored) - set(derived))
            for item in missing:
                report.differ(Mismatch(ref, None, f"outcome of {item[0]}", None, item[1:]))
            for item in extra:
                report.differ(Mismatch(ref, None, f"outcome of {item[0]}", item[1:], None))


def moderated(
    engine: Engine, ladder_config: LadderConfig, imported: Mapping[str, Imported]
) -> Moderated | None:
    """The moderated replay of the ladder, or None when no action was ever taken on it."""
    found = Moderated(engine, ladder_config, imported)
    return found if found.actions else None
