"""The ladder's log run through a ``Replay`` in pieces, as a void runs it (``moderation``):
most of it before the ladder is locked, then under the lock only the events stored since; with
the receipts the re-rated ladder gives the events whose Redis copy may still be kept.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from redis import Redis
from redis.exceptions import RedisError
from sqlalchemy.engine import Engine

from engine import Action, Decision, PlayerState, Replay, Ruleset, Season, is_provisional
from engine.ladder import Event, when
from schemas import receipt_bodies as receipts
from schemas.receipt import Receipt
from worker import gcpause
from worker.boards.receipts import ReceiptSink, encode, refresh, unsettled
from worker.ladders import LadderConfig
from worker.ops.progress import Progress
from worker.store import moderation as store
from worker.store import replays
from worker.store.log import (
    RECEIPT_LEDGER,
    AuditRow,
    Recorded,
    audit_rows,
    event_of,
    first_processed_since,
    history,
    stream_log,
)
from worker.store.replays import History

RECEIPT_CHUNK = 1000  # receipts compared with their kept copies in one MGET


class LogReplay:
    """The ladder's log run through ``target`` in pieces: most of it before the ladder is
    locked (workers score on meanwhile), then under the lock only the events stored since."""

    def __init__(
        self,
        engine: Engine,
        told: History,
        target: Replay,
        *,
        progress: Progress | None = None,
        receipts_since: datetime | None = None,
        voiding: frozenset[str] = frozenset(),
        every: bool = False,
        kept: Redis | None = None,
    ) -> None:
        """``target``: a replay of ``told`` started where it starts (``told.replay``);
        ``voiding``: the games from the first of which the receipts change (``every``: every
        event's may, a rerate's)."""
        self.engine, self.ladder, self.target, self.progress = engine, told.ladder, target, progress
        self.pending = told.steps  # the actions and season closes, in the order taken
        self.recorded = told.recorded_entries  # the imports, oldest first
        self.seq = told.start.after_seq  # the scoring number of the last event run
        self.count = 0
        # The receipt, as re-rated, of every event from the first one ``voiding`` (none before
        # it changes) that was processed since ``receipts_since`` (the ones whose Redis copy
        # may still be kept): at most LADDER_RECEIPT_TTL's worth, each as its JSON text.
        self.receipts_since, self.voiding = receipts_since, voiding
        self.receipts: list[tuple[str, str]] = []  # (event id, receipt)
        self._collecting = every
        # ``kept``: the Redis holding the copies. Each chunk of receipts is then compared
        # with them as the replay goes (``unsettled``), and only those a refresh may write
        # are held: after an earlier void every receipt is made, and holding them all took
        # 1.1 GiB for 1,000,000 events.
        self.kept = kept
        self._unchecked: list[tuple[str, str]] = []
        # With no earlier void, every kept copy is the receipt the event got when it was
        # scored, which its audit and ledger rows record (the ledger keeps each player's games
        # and provisional flag as the receipt showed them): an event the ladder as it should be
        # scores exactly so has a true copy already, and only the others are kept. After an
        # earlier void a copy may hold that void's numbers instead, so every receipt is kept
        # and ``refresh`` compares with the copies themselves.
        self.against_ledger = receipts_since is not None and not any(
            a.voided or a.kind == "rerate" for a in told.actions
        )

    def run(self) -> None:
        """Every event stored after the last one run, in scoring order."""
        with gcpause.paused():
            self._run()

    def _run(self) -> None:
        ladder, target, engine = self.ladder, self.target, self.engine
        log: Iterable[tuple[AuditRow, Sequence[Any]]]
        window = None
        if self.against_ledger and self.receipts_since is not None:
            # The ledger is read only where a receipt may still be kept.
            window = first_processed_since(engine, ladder, self.receipts_since, self.seq)
        if window is None:
            log = ((row, []) for row in audit_rows(engine, ladder, after=self.seq))
        else:
            log = itertools.chain(
                ((row, []) for row in audit_rows(engine, ladder, self.seq, window - 1)),
                stream_log(engine, ladder, window - 1, ledger_columns=RECEIPT_LEDGER),
            )
        for entry in history(log, self.recorded, self.pending, tail=False):
            if isinstance(entry, Action | Season):
                self.pending.pop(0)
                if isinstance(entry, Season):
                    target.season(ladder, entry)
                else:
                    target.action(ladder, entry)
                continue
            if isinstance(entry, Recorded):
                self.recorded.pop(0)
                target.recorded(ladder, entry.change, entry.at)
                continue
            row, ledger = entry.row, entry.ledger
            outcome, reason, processed_at, seq = row.outcome, row.reason, row.processed_at, row.seq
            event = event_of(row)
            decision = target.event(event, processed_at, (outcome, reason))
            if self.receipts_since is not None:
                self._collecting = self._collecting or event.event_id in self.voiding
                if self._collecting and processed_at >= self.receipts_since:
                    rules = target.rules_at(when(event, processed_at))
                    if not (self.against_ledger and self._as_scored(row, decision, ledger, rules)):
                        made = self._receipt(row, event, decision, processed_at)
                        self._unchecked.append((event.event_id, encode(made)))
                        if len(self._unchecked) >= RECEIPT_CHUNK:
                            self._settle()
            self.seq = seq
            self.count += 1
            if self.progress is not None and self.count % 1000 == 0:
                self.progress.advance(1000)
        self._settle()

    def _settle(self) -> None:
        """Hold the receipts made since the last call that a refresh may write. With Redis
        away, all of them from then on, without asking it again (the refresh after the
        commit then says it could not write them)."""
        part, self._unchecked = self._unchecked, []
        if self.kept is not None and part:
            try:
                part = unsettled(self.kept, part)
            except RedisError:
                self.kept = None
        self.receipts += part

    def _as_scored(
        self,
        row: AuditRow,
        decision: Decision | None,
        ledger: Sequence[Any],
        rules: Ruleset,
    ) -> bool:
        """Whether ``decision`` is what the event's receipt said when it was scored: the same
        outcome, reason and ruleset version, and each ledger row the same with the same
        games and provisional flag right after it (``receipts.players_after``)."""
        if decision is None:
            return False  # voided now
        reason = None if decision.reason is None else str(decision.reason)
        if (decision.outcome, reason, decision.ruleset_version) != (
            row.outcome,
            row.reason,
            row.version,
        ):
            return False
        changes = decision.changes
        if len(changes) != len(ledger):
            return False
        players = self.target.players
        for change, kept in zip(changes, ledger, strict=True):
            if tuple(kept[:7]) != (
                change.player_id,
                change.kind,
                change.before,
                change.after,
                change.delta,
                change.k,
                change.expected,
            ):
                return False
            player = players[(decision.ladder, change.player_id)]
            state = PlayerState(player.rating, player.rated_games, player.experience)
            if (kept.games, kept.provisional) != (player.rated_games, is_provisional(rules, state)):
                return False  # also when the row does not know them (NULL)
        return True

    def _receipt(
        self, row: AuditRow, event: Event, decision: Decision | None, processed_at: datetime
    ) -> Receipt:
        """The event's receipt as the ladder as it should be scores it (``None``: voided)."""
        if decision is None:
            return receipts.voided(row.event_id, self.ladder, event.type, row.version, processed_at)
        rules = self.target.rules_at(when(event, processed_at))
        return receipts.scored(decision, self.target.players, rules, processed_at)

    def finish(self) -> None:
        """The season resets, imports and actions after the last event."""
        for entry in history((), self.recorded, self.pending):
            if isinstance(entry, Action):
                self.target.action(self.ladder, entry)
            elif isinstance(entry, Season):
                self.target.season(self.ladder, entry)
            elif isinstance(entry, Recorded):
                self.target.recorded(self.ladder, entry.change, entry.at)
        self.recorded, self.pending = [], []
        if self.progress is not None:
            self.progress.advance(self.count % 1000)


def refresh_receipts(engine: Engine, ladder_config: LadderConfig, sink: ReceiptSink) -> int:
    """Make the kept receipts of a ladder with voids true again: the refresh a void makes
    after its commit (``worker.ops.void``), run for every void of the ladder at once. It is
    the repair of a void whose Redis write failed: the ladder's log is replayed with every
    voided game skipped, from the first voided game on the receipts of the events processed
    within ``LADDER_RECEIPT_TTL`` are compared with their kept copies, and those that differ
    are rewritten (expiry kept). Returns how many; 0 on a ladder with no void. A Redis error
    is raised."""
    ladder = ladder_config.name
    with engine.connect() as conn:
        voided = store.voided(conn, ladder)
        if not voided:
            return 0
        told = replays.load(conn, ladder)
    should = told.replay(
        ladder_config.policy, ladder_config.rules_at, frozenset(voided), track=True
    )
    log = LogReplay(
        engine,
        told,
        should,
        receipts_since=datetime.now(UTC) - timedelta(seconds=sink.ttl),
        voiding=frozenset(voided),
        kept=sink.redis,
    )
    log.run()
    log.finish()
    return refresh(sink.redis, log.receipts)
