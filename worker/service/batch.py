"""The service: applies a batch of raw events, in arrival order, in one transaction.

Failures::

    Exception
    +-- InvalidEvent            permanent: that event alone goes to the dead-letter queue
    |                           with its reason (``on_invalid``); the rest of the batch goes on
    +-- a conflict between      a deadlock, a serialization failure, a duplicate insert, a
    |   concurrent workers      link committed meanwhile: the batch is tried again here, up to
    |                           ``CONFLICT_RETRIES`` times, with a short back-off
    +-- anything else           raised to the job (``worker.entrypoints.worker.batches``): an
                                outage of PostgreSQL or Redis holds the batch in the worker
                                and tries it again for as long as the outage lasts; any other
                                failure splits the batch until the event that fails is
                                dead-lettered alone.
                                A batch tried again is harmless: an event id applied before is
                                a duplicate and changes nothing.

A batch is a unit of work around the engine, which holds every ladder rule
(``engine.ladder.apply``): validate every event and map it to its stored form and engine
event (``worker.service.intake``); then, for each PostgreSQL primary that holds some of the
batch's ladders (``worker.store.routes``; one, unless ladders are routed), in one
transaction on that primary read the links and the event ids applied before (with their
digests), ask the engine what else the batch needs (``engine.needs``), create the missing
players and lock every player in sorted key order and, in the same round trip, once they are
locked, read the links again (to check they did not move meanwhile), the ids applied
meanwhile, the window counts and the moderation marks; apply the engine's decision event by
event in memory; write audit rows, ledger rows, links, settled tournaments, the players of
draws and team games and players; commit; then dead-letter
the events the engine refused (an id applied before with other content, a game of a shape
the ladder's ruleset does not rate), and project every touched player
into Redis (version-guarded, so a late write from a slower worker never overwrites a newer
one).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, IntegrityError

from engine import Decision, LadderState, Outcome, Player, Policy, Ruleset, apply, needs
from engine.ladder import Event, when
from schemas import InvalidEvent
from schemas import receipt_bodies as receipts
from worker import failpoints, gcpause
from worker.boards.projection import Projection
from worker.ladders import Config
from worker.service.duplicate_receipts import in_order
from worker.service.intake import Intake, Prepared, Valid
from worker.service.outcomes import Processed, log_batch, refused
from worker.service.rows import Rows, text
from worker.store import partitions
from worker.store import statements as store
from worker.store.routes import Databases
from worker.store.statements import AfterClaim
from worker.store.windowcache import WindowCache

log = structlog.get_logger("ladder")

CONFLICT_RETRIES = 5


@dataclass(frozen=True)
class Settled:
    """A batch committed in PostgreSQL: its events' outcomes, the players it touched and its
    receipts, for Redis (``Service.project``); ``started``: when the batch began
    (``time.perf_counter``)."""

    outcomes: list[Processed]
    players: list[Player]
    receipts: list[receipts.ReceiptWrite]
    started: float
    # its ladders with a moderation action marked not projected, read in its transaction:
    # the newest such action of each (the worker heals them once Redis has answered)
    unprojected: dict[str, int] = field(default_factory=dict)


@dataclass
class _Decided:
    """The engine's decisions on a batch: the rows to write, each event's outcome, the events
    it dead-letters (with their ruleset), and each receipt in event order (a
    duplicate's decision in its place: its receipt repeats its original's)."""

    rows: Rows
    outcomes: list[Processed]
    refused: list[tuple[Valid, Decision, Ruleset]]
    receipts: list[receipts.ReceiptWrite | Decision]


@dataclass
class _Written:
    """What one batch transaction decided and wrote."""

    outcomes: list[Processed]
    players: list[Player]
    refused: list[tuple[Valid, Decision, Ruleset]]
    receipts: list[receipts.ReceiptWrite]
    unprojected: dict[str, int]


class Service:
    """A batch's unit of work: ``intake`` validates its events, ``databases`` hold its
    ladders' rows, ``projection`` writes its players and receipts to Redis."""

    def __init__(
        self,
        intake: Intake,
        databases: Databases,
        projection: Projection,
        *,
        receipt_ttl: int | None = None,
        window_cache: bool = True,
    ) -> None:
        """``receipt_ttl``: receipts are built, and kept that many seconds in Redis; None:
        LADDER_RECEIPTS=false (the ledger still records games and provisional flags).
        ``window_cache``: keep the windows of the players scored in memory, per database
        (``worker.store.windowcache``); False: every batch reads them from the log."""
        self.intake = intake
        self.config: Config = intake.config
        self.receipt_ttl = receipt_ttl
        self.databases = databases
        self.projection = projection
        self.policies: dict[str, Policy] = {n: c.policy for n, c in self.config.ladders.items()}
        self._windows: dict[Engine, WindowCache] | None = {} if window_cache else None

    # -- the batch ----------------------------------------------------------------------

    def process(
        self,
        raws: Iterable[str | bytes],
        on_invalid: Callable[[str | bytes, InvalidEvent], None],
    ) -> list[Processed]:
        """The batch, from its raw events to the boards and receipts in Redis."""
        settled = self.settle(raws, on_invalid)
        self.project(settled)
        return settled.outcomes

    def prepare(self, raws: Iterable[str | bytes]) -> Prepared:
        """The batch's events validated at the time now (``Intake.prepare``): no store is read
        or written."""
        return self.intake.prepare(raws, datetime.now(UTC))

    def settle(
        self,
        raws: Iterable[str | bytes] | Prepared,
        on_invalid: Callable[[str | bytes, InvalidEvent], None],
        *,
        meanwhile: Callable[[], None] | None = None,
    ) -> Settled:
        """The batch committed in PostgreSQL and its refusals dead-lettered; what Redis is to
        be told of it (``project``) comes back. ``raws``: its raw events, or them already
        validated (``prepare``). ``meanwhile``: called once, while the batch's last
        writes and its commit travel to PostgreSQL and back (work that needs neither store).
        The cyclic garbage collector is paused while it runs (``gcpause.paused``)."""
        with gcpause.paused():
            started = time.perf_counter()
            prepared = raws if isinstance(raws, Prepared) else self.prepare(raws)
            return self._settle(prepared, on_invalid, started, meanwhile)

    def _settle(
        self,
        prepared: Prepared,
        on_invalid: Callable[[str | bytes, InvalidEvent], None],
        started: float,
        meanwhile: Callable[[], None] | None,
    ) -> Settled:
        now = prepared.now
        outcomes: list[Processed] = []
        for raw, exc in prepared.invalid:
            on_invalid(raw, exc)
            outcomes.append(
                Processed(exc.event_id, exc.ladder, str(Outcome.DEAD_LETTERED), exc.reason)
            )
        valid = prepared.valid
        if not valid:
            if meanwhile is not None:
                meanwhile()
            return Settled(outcomes, [], [], started)
        written = self._apply_per_primary(valid, now, meanwhile)
        failpoints.hit("service.after_commit")
        for item, decision, rules in written.refused:
            refused(item, decision, rules, on_invalid)
        outcomes.extend(written.outcomes)
        return Settled(outcomes, written.players, written.receipts, started, written.unprojected)

    def project(self, settled: Settled) -> None:
        """Write a settled batch's players to the boards and its receipts (one Redis
        pipeline), then log the batch."""
        if settled.players or settled.receipts:
            self.projection.write(settled.players, self.config, settled.receipts)
        log_batch(settled.outcomes, (time.perf_counter() - settled.started) * 1000)

    def _apply_per_primary(
        self, items: list[Valid], now: datetime, meanwhile: Callable[[], None] | None
    ) -> _Written:
        """Each primary's part of the batch in its own transaction, one after the other.

        A part holds every event of its ladders, and a ladder's event ids, links, players and
        windows are all on its primary, so each part is whole on its own: a crash after some
        parts committed leaves those applied and the rest not; the batch tried again finds
        the committed parts' events already applied (duplicates, which change nothing)."""
        if not self.databases.routes:  # one primary: the batch's one transaction
            return self._apply_with_retries(self.databases.default, items, now, meanwhile)
        groups = self.databases.grouped(dict.fromkeys(item.event.ladder for item in items))
        if len(groups) == 1:
            return self._apply_with_retries(groups[0][0], items, now, meanwhile)
        parts: list[_Written] = []
        outcomes: dict[str, Iterator[Processed]] = {}  # each part's, in its events' order
        for index, (engine, ladders) in enumerate(groups):
            if index:
                failpoints.hit("service.between_primaries")
            named = set(ladders)
            part = self._apply_with_retries(
                engine,
                [item for item in items if item.event.ladder in named],
                now,
                meanwhile if index == len(groups) - 1 else None,
            )
            parts.append(part)
            outcomes.update(dict.fromkeys(ladders, iter(part.outcomes)))
        return _Written(
            [next(outcomes[item.event.ladder]) for item in items],  # the batch's order
            [p for w in parts for p in w.players],
            [r for w in parts for r in w.refused],
            [r for w in parts for r in w.receipts],
            {ladder: n for w in parts for ladder, n in w.unprojected.items()},
        )

    def _rules_for(self, now: datetime) -> Callable[[Event], Ruleset]:
        """Each event's ruleset version: the one in force at ``when(event, now)``."""
        ladders = self.config.ladders
        return lambda event: ladders[event.ladder].rules_at(when(event, now))

    def _apply_with_retries(
        self,
        engine: Engine,
        items: list[Valid],
        now: datetime,
        meanwhile: Callable[[], None] | None = None,
    ) -> _Written:
        """Conflicts between concurrent workers (deadlock, duplicate insert) are retried here;
        ``meanwhile`` runs in the first attempt that reaches its last writes."""
        pending = [meanwhile] if meanwhile is not None else []

        def once() -> None:
            if pending:
                pending.pop()()

        for attempt in range(CONFLICT_RETRIES):
            try:
                return self._apply(engine, items, now, once)
            except _Marked as exc:  # started again after that import or archive: it comes first
                if attempt == CONFLICT_RETRIES - 1:
                    raise
                now = max(datetime.now(UTC), exc.at + timedelta(microseconds=1))
                continue
            except (IntegrityError, _LinksMoved):
                if attempt == CONFLICT_RETRIES - 1:
                    raise
            except DBAPIError as exc:
                if not _is_conflict(exc) or attempt == CONFLICT_RETRIES - 1:
                    raise
            time.sleep(0.01 * (2**attempt))
        raise AssertionError("unreachable")

    def _apply(
        self, engine: Engine, items: list[Valid], now: datetime, meanwhile: Callable[[], None]
    ) -> _Written:
        """The batch on one primary: its state read and locked, the engine's decisions, the
        rows written and committed, the receipts made."""
        partitions.ready(engine, now)  # the audit log's partition for ``now``'s month
        cache = None if self._windows is None else self._windows.get(engine)
        if cache is None and self._windows is not None:
            cache = self._windows[engine] = WindowCache()
        with engine.begin() as conn:
            state, found = self._locked_state(conn, [item.event for item in items], now, cache)
            decided = self._decide(items, state, now)
            dirty = [p for p in state.players.values() if p.dirty]
            # A duplicate's receipt repeats its original's, read with the claim when it was
            # applied before; one of this batch's own events, or of one applied meanwhile, is
            # read after the batch's rows are written. Without one to read then, the receipts
            # come first and the commit goes with the writes.
            reads_back = self.receipt_ttl is not None and any(
                isinstance(r, Decision) and (r.ladder, r.event_id) not in found.originals
                for r in decided.receipts
            )
            made: list[receipts.ReceiptWrite] = []
            if not reads_back:
                if self.receipt_ttl is not None:
                    made = in_order(conn, decided.receipts, now, self.receipt_ttl, found.originals)
                failpoints.hit("service.before_commit")
            rows = decided.rows
            counts = store.write_batch(
                conn,
                rows.audit,
                rows.changes,
                dirty,
                rows.links,
                rows.tournaments,
                seat_rows=rows.seats,
                commit=not reads_back,
                meanwhile=meanwhile,
            )
            if reads_back and self.receipt_ttl is not None:  # reads_back implies receipts
                made = in_order(conn, decided.receipts, now, self.receipt_ttl, found.originals)
                failpoints.hit("service.before_commit")
        if cache is not None:  # committed: the batch's games join the windows in memory
            cache.written({} if found.cached is None else found.cached.claimed, counts, rows.audit)
        touched = [state.players[k] for k in sorted(state.touched)]
        return _Written(decided.outcomes, touched, decided.refused, made, found.unprojected)

    def _locked_state(
        self, conn: Any, events: list[Event], now: datetime, cache: WindowCache | None
    ) -> tuple[LadderState, AfterClaim]:
        """What the engine needs for ``events`` (``engine.needs``), read with their players
        created and locked, its windows from ``cache`` where it keeps them; and what else the
        reads once locked found (``AfterClaim``: the moderation actions of their ladders marked
        not projected, ``Settled.unprojected``; the cache's use)."""
        named = needs.named(events)
        keys = {(e.ladder, e.event_id) for e in events}
        links, seen = store.before_claim(conn, named, keys)
        wanted = needs.needs(events, self._rules_for(now), self.policies, links, seen)
        # a duplicate's receipt repeats its original's: read here when it was applied before
        originals = seen.keys() if self.receipt_ttl is not None else ()
        after = store.after_reads(
            named, wanted.tournaments, wanted.windows, keys - seen.keys(), now, cache, originals
        )
        players, results = store.claim_players(
            conn, wanted.starts, now, wanted.existing, then=after.reads
        )
        found = after.made(conn, results)
        if found.links != links:
            raise _LinksMoved()  # a link committed meanwhile: redo with the new lock set
        if found.marked is not None:
            raise _Marked(found.marked)
        state = LadderState(
            players=players,
            links=links,
            linked_accounts={ladder: set(p.values()) for ladder, p in links.items()},
            settled=found.settled,
            windows=found.windows,
            seen=seen | found.seen,
        )
        return state, found

    def _decide(self, items: list[Valid], state: LadderState, now: datetime) -> _Decided:
        """The engine's decision on each event in order, and the rows and receipts it makes."""
        decided = _Decided(Rows(now), [], [], [])
        rules_for = self._rules_for(now)
        at = now.isoformat()  # each receipt's processed_at
        for item in items:
            event = item.event
            rules = rules_for(event)
            decision = apply(event, state, rules, self.policies[event.ladder], now)
            if decision.recorded:
                after = receipts.players_after(decision, state.players, rules)
                decided.rows.add(decision, event, item.payload, rules.kind, after)
                if self.receipt_ttl is not None:
                    body = receipts.body(decision, after, at)
                    decided.receipts.append(
                        receipts.ReceiptWrite(decision.event_id, decision.ladder, body)
                    )
            elif decision.outcome == Outcome.DEAD_LETTERED:
                decided.refused.append((item, decision, rules))  # its receipt comes with its letter
            else:
                decided.receipts.append(decision)  # a duplicate: its original's, read later
            decided.outcomes.append(
                Processed(
                    event.event_id, event.ladder, str(decision.outcome), text(decision.reason)
                )
            )
        return decided


class _LinksMoved(Exception):
    """A link was committed between reading links and locking players."""


class _Marked(Exception):
    """An import of the batch's ladders taken ``at`` or after the batch's instant, or an archive
    whose boundary is just after ``at``, committed before the batch held its players
    (``worker.store.marks``): a replay would place the batch's events before the import, an
    archive's checkpoint would miss them, so the batch starts again at a later instant."""

    def __init__(self, at: datetime) -> None:
        super().__init__(at)
        self.at = at


def _is_conflict(exc: DBAPIError) -> bool:
    code = getattr(getattr(exc, "orig", None), "sqlstate", None)
    return code in {"40001", "40P01", "23505"}
