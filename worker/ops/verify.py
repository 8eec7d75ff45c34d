"""Verify: re-derive a ladder from its audit store by replay and compare with what is stored.

The ladder's history (``worker.store.log.history``: the audit store in scoring order, each
event with its ledger rows, through a server-side cursor, with the recorded ledger rows and
the moderation actions where they fall) goes through the one replay as it was lived
(``engine.replay.Lived``), so memory holds the ladder's players and window counts, not its
history. Compared, field by field and bit for bit:

- each audit row's outcome, reason and ruleset version;
- each ledger row: player, kind, before, after, delta, K (or the fibs multiplier), expected;
- each moderation action's ledger rows (an adjustment, a void's corrections) and the outcomes
  it changed;
- each player's final row in PostgreSQL (rating, games, experience, flags, link, version,
  timestamps);
- the Redis boards and player hashes, against PostgreSQL (``worker.ops.reconcile``), which the
  step before proved equal to the replay.

A mismatch names the event (``None`` for a player's final state), the player, the field and
both values.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Collection, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, wait
from datetime import datetime
from typing import Any

from redis import Redis
from redis.cluster import RedisCluster
from sqlalchemy.engine import Engine

from engine import Action, Lived, Season
from engine.ladder import when
from schemas import receipt_bodies as receipts
from worker import gcpause
from worker.ladders import LadderConfig
from worker.ops import reconcile
from worker.ops.keptreceipts import KeptReceipts, made_receipt
from worker.ops.progress import Progress
from worker.ops.verifycompare import check_players, compare_change, compare_shown
from worker.ops.verifyreport import Advancing, LadderReport, Mismatch
from worker.ops.verifyseats import Seats
from worker.store import boundary, moderation, replays
from worker.store.log import RECEIPT_LEDGER, AuditRow, Logged, Recorded, count_events, event_of

PROGRESS_EVERY = 1000  # events between progress reports
Kept = tuple[Redis | RedisCluster, datetime]  # receipts' Redis, oldest processing kept


def replayed(engine: Engine, ladder: str, since: datetime | None = None) -> int:
    """The events ``verify`` replays of the ladder: every event of the log, or with ``since``
    the part from where that replay starts (``boundary.replayed``)."""
    if since is None:
        return count_events(engine, ladder)
    with engine.connect() as conn:
        return boundary.replayed(conn, ladder, moderation.history_actions(conn, ladder), since)


def unconfigured(engines: Sequence[Engine], configured: Collection[str]) -> list[str]:
    """The ladders with rows on these databases that ``configured`` does not name: verify
    cannot replay them (it has no rules for them), so it names them instead."""
    found: set[str] = set()
    for engine in engines:
        with engine.connect() as conn:
            found.update(moderation.stored_ladders(conn))
    return sorted(found - set(configured))


def verify_ladders(
    engine: Engine,
    redis: Redis | RedisCluster | None,
    ladder_configs: Sequence[LadderConfig],
    progress: Progress | None = None,
    processes: int | None = None,
    receipts: Kept | None = None,
    since: datetime | None = None,
) -> list[LadderReport]:
    """Verify each ladder; the ladders (independent of each other) are replayed in parallel,
    one process per CPU. Reports come back in the order of ``ladder_configs``. ``receipts``:
    the Redis the receipts are kept on and the oldest processing a kept one can be;
    ``since``: only the part of each log processed since then (``verify``)."""
    configs = list(ladder_configs)
    processes = processes or min(len(configs), os.cpu_count() or 1)
    if processes <= 1:
        reports = [verify(engine, redis, c, progress, receipts, since) for c in configs]
        if progress is not None:
            progress.finish(f"{sum(r.mismatch_count for r in reports)} mismatches")
        return reports
    global _SHARED
    context = multiprocessing.get_context("fork")
    done = context.Value("q", 0)
    _SHARED = (engine, redis, {c.name: c for c in configs}, done, receipts, since)
    try:
        with ProcessPoolExecutor(processes, mp_context=context, initializer=_child) as pool:
            futures = [pool.submit(_verify_shared, c.name) for c in configs]
            waiting = set(futures)
            while waiting:
                _, waiting = wait(waiting, timeout=0.1)
                if progress is not None:
                    progress.advance(int(done.value) - progress.done)
            reports = [f.result() for f in futures]
    finally:
        _SHARED = None
    if progress is not None:
        progress.finish(f"{sum(r.mismatch_count for r in reports)} mismatches")
    return reports


# What a forked verifier inherits: engine, Redis client, ladders by name, events done so far.
_SHARED: (
    tuple[
        Engine,
        Redis | RedisCluster | None,
        dict[str, LadderConfig],
        Any,
        Kept | None,
        datetime | None,
    ]
    | None
) = None


def _child() -> None:
    assert _SHARED is not None
    _SHARED[0].dispose(close=False)  # the parent's pooled connections stay the parent's


def _verify_shared(ladder: str) -> LadderReport:
    assert _SHARED is not None
    engine, redis, configs, done, receipts, since = _SHARED
    return verify(engine, redis, configs[ladder], _Share(done), receipts, since)


class _Share:
    """Adds this process's progress to the parent's counter."""

    def __init__(self, done: Any) -> None:
        self.done = done

    def advance(self, count: int) -> None:
        with self.done.get_lock():
            self.done.value += count


def verify(
    engine: Engine,
    redis: Redis | RedisCluster | None,
    ladder_config: LadderConfig,
    progress: Advancing | None = None,
    receipts: Kept | None = None,
    since: datetime | None = None,
) -> LadderReport:
    """Replay one ladder from PostgreSQL and compare; ``redis=None`` skips the boards, and
    ``receipts`` (Redis, since when) compares the receipts kept there (``keptreceipts``).

    ``since``: only the part of the log processed since then, replayed from the ladder's state
    at that instant as its log recorded it (``worker.store.boundary``); the players compared
    at the end are those the replay knows, their ``version`` not, their ``updated_at`` where
    the replay changed them. ``report.since`` says where it started (``None``: the ladder's
    first event or archive checkpoint).

    The boards are compared with PostgreSQL in a thread beside the replay: that comparison
    mostly waits for Redis and PostgreSQL, the replay mostly computes, and neither reads
    what the other derives. Its mismatches follow the replay's in the report. The kept
    receipts, from the first 1,000 on, are compared in a process beside the replay
    (``keptreceipts``); theirs come at the end of the replay's."""
    started = time.perf_counter()
    report = LadderReport(ladder_config.name)
    with ThreadPoolExecutor(1, thread_name_prefix="ladder-verify-boards") as boards:
        drift = None
        if redis is not None:
            drift = boards.submit(_boards, engine, redis, ladder_config)
        _replay(engine, ladder_config, report, progress, receipts, since)
        report.seconds = time.perf_counter() - started
        found: list[Mismatch] = []
        if drift is not None:
            found, report.redis_seconds = drift.result()
        for mismatch in found:
            report.differ(mismatch)
    if progress is not None:
        progress.advance(report.events % PROGRESS_EVERY)
    return report


def _boards(
    engine: Engine, redis: Redis | RedisCluster, ladder_config: LadderConfig
) -> tuple[list[Mismatch], float]:
    """The Redis boards and cards against PostgreSQL (``reconcile``), and the seconds taken."""
    started = time.perf_counter()
    drift = reconcile.check(engine, redis, ladder_config)
    found = [
        Mismatch(None, d.player, f"redis {d.key}", d.actual, d.expected)
        for kind in reconcile.KINDS
        for d in getattr(drift, kind)
    ]
    return found, time.perf_counter() - started


def _replay(
    engine: Engine,
    ladder_config: LadderConfig,
    report: LadderReport,
    progress: Advancing | None,
    receipts: Kept | None = None,
    since: datetime | None = None,
) -> None:
    """The ladder's history through the one replay as it was lived (``engine.replay.Lived``):
    each audit and ledger row compared with what the replay derives where it was made, each
    moderation action's rows and changed outcomes with what the action derives."""
    ladder = ladder_config.name
    # months archived: the replay starts at their checkpoint; since: at the instant
    at = None
    if since is not None:
        board = ladder_config.policy.boosted_board
        at = replays.Since(since, ladder_config.rules_at(since).start, board)
    told = replays.load(engine, ladder, since=at)
    if since is not None:
        report.since = told.begins
    with engine.connect() as conn:
        kept_rows = moderation.action_rows(conn, ladder) if told.actions else {}
        kept_effects = moderation.action_effects(conn, ladder) if told.actions else {}
    kept_seasons = told.season_rows
    replay = told.lived(ladder_config.policy, ladder_config.rules_at)

    def differ(*found: Any) -> None:
        report.differ(Mismatch(*found))

    kept = None
    if receipts is not None:
        kept = KeptReceipts(*receipts, differ, engine, ladder, told.begins)
    seats = Seats(engine, ladder, differ)
    with gcpause.paused():
        # every event after the start was processed at or after its checkpoint's instant
        # (``boundary.at`` and ``ladder archive`` refuse an instant where one was not), and
        # the recorded rows before that instant are in the checkpoint
        for entry in told.entries(engine, ledger=RECEIPT_LEDGER):
            if isinstance(entry, Logged):
                _check_event(replay, entry.row, entry.ledger, report, seats, kept)
                if progress is not None and report.events % PROGRESS_EVERY == 0:
                    progress.advance(PROGRESS_EVERY)
            elif isinstance(entry, Action):
                _check_action(replay, entry, kept_rows, kept_effects, report)
            elif isinstance(entry, Season):
                _check_season(replay, entry, kept_seasons.get(entry.event_id, []), report)
            else:
                _check_recorded(replay, ladder, entry, report)
        if kept is not None:
            kept.finish()
            report.kept_receipts = kept.compared
        seats.finish(told.begins if since is not None else None)
    check_players(engine, ladder, replay.state.players, report, since=since is not None)


def _check_action(
    replay: Lived,
    action: Action,
    kept_rows: dict[str, list[Sequence[Any]]],
    kept_effects: dict[int, list[tuple[str, str, str | None]]],
    report: LadderReport,
) -> None:
    """A moderation action's ledger rows and changed outcomes against what it derives."""
    ref = f"moderation:{action.number}"
    changes, effects = replay.action(action)
    # A void's corrections are written in player order, and an erase renames a player since:
    # compared by player, not by the order they were written in.
    changes = sorted(changes, key=lambda c: c.player_id)
    kept = sorted(kept_rows.get(ref, []), key=lambda r: str(r[0]))
    report.ledger_rows += len(kept)
    for index in range(max(len(kept), len(changes))):
        row = kept[index] if index < len(kept) else None
        made = changes[index] if index < len(changes) else None
        compare_change(ref, row, made, report)
    stored = kept_effects.get(action.number, [])
    derived = [(e.event_id, e.outcome, e.reason) for e in effects]
    if stored != derived:
        for item in sorted(set(derived) - set(stored)):
            report.differ(Mismatch(ref, None, f"outcome of {item[0]}", None, item[1:]))
        for item in sorted(set(stored) - set(derived)):
            report.differ(Mismatch(ref, None, f"outcome of {item[0]}", item[1:], None))


def _check_event(
    replay: Lived,
    row: AuditRow,
    stored: Sequence[Any],
    report: LadderReport,
    seats: Seats,
    kept: KeptReceipts | None = None,
) -> None:
    event_id, outcome, reason, version, processed_at = (
        row.event_id,
        row.outcome,
        row.reason,
        row.version,
        row.processed_at,
    )
    report.events += 1
    report.ledger_rows += len(stored)
    differed = report.mismatch_count
    try:
        event = event_of(row)
    except (KeyError, ValueError, TypeError) as exc:
        report.differ(Mismatch(event_id, None, "payload", type(exc).__name__, None))
        if kept is not None:
            kept.skip(row)
        return
    decision = replay.event(event, processed_at)
    seats.event(event, decision, processed_at)
    if (outcome, reason, version) != (decision.outcome, decision.reason, decision.ruleset_version):
        facts = (
            ("outcome", outcome, str(decision.outcome)),
            ("reason", reason, None if decision.reason is None else str(decision.reason)),
            ("ruleset_version", version, decision.ruleset_version),
        )
        for name, had, derived in facts:
            if had != derived:
                report.differ(Mismatch(event_id, None, name, had, derived))
    derived_rows = decision.changes
    shown = True  # every ledger row shows the games and provisional flag the replay has
    after = None  # the decision's changes with each player's games and flag right after it
    if len(stored) == len(derived_rows):
        for kept_row, made in zip(stored, derived_rows, strict=True):
            compare_change(event_id, kept_row, made, report)
        if stored:
            rules = replay.rules_at(when(event, processed_at))
            after = receipts.players_after(decision, replay.players, rules)
            shown = compare_shown(event_id, stored, after, report)
    else:
        shown = False
        for index in range(max(len(stored), len(derived_rows))):
            compare_change(
                event_id,
                stored[index] if index < len(stored) else None,
                derived_rows[index] if index < len(derived_rows) else None,
                report,
            )
    if kept is not None:
        # the kept receipt is the one the stored rows make where the replay's is the lived
        # decision's and they showed it; else the replay makes it
        moderated, by = replay.moderated
        as_stored = shown and moderated is decision and report.mismatch_count == differed
        if as_stored:
            kept.event(row, None)
        else:
            lived = after if moderated is decision else None
            kept.event(row, made_receipt(row, event, moderated, by, lived))


def _check_season(
    replay: Lived, season: Season, kept: list[Sequence[Any]], report: LadderReport
) -> None:
    """A season's reset rows against the reset its close derives where it fell (each
    player's row, in player order)."""
    changes = replay.season(season)
    kept = sorted(kept, key=lambda r: str(r[0]))
    report.ledger_rows += len(kept)
    for index in range(max(len(kept), len(changes))):
        row = kept[index] if index < len(kept) else None
        made = changes[index] if index < len(changes) else None
        compare_change(season.event_id, row, made, report)


def _check_recorded(replay: Lived, ladder: str, entry: Recorded, report: LadderReport) -> None:
    change = entry.change
    report.ledger_rows += 1
    derived = replay.recorded(ladder, change, entry.at)
    kept = (change.player_id, str(change.kind), *change[2:])  # as stored: the kind as text
    compare_change(entry.event_id, kept, derived, report)
