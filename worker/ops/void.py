"""Void games: the ladder re-rated exactly as if they had never been published.

A void is exact (``engine.replay``): the ladder's whole log is replayed with every voided
event skipped (bans, adjustments, season resets and imports where they fall; an imported
player with what the import gave them), and each player whose state differs from the stored
one gets the state it should have and a ``correction`` ledger row (before, after, delta); each
event whose outcome changes (the voided games, and later ones whose pair limit or K window the
void changed) gets an ``event_effects`` row. The audit rows themselves are never rewritten.
The long replay runs before the ladder is locked; under the lock only the events stored since
are run (``LogReplay``), or the whole log again if the log changed in a way that cannot be
added. After the commit the changed players are re-projected and the kept receipts the void
changed are rewritten (``refresh_after``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from redis import Redis
from redis.cluster import RedisCluster
from redis.exceptions import RedisError
from rq import Queue
from sqlalchemy.engine import Engine

from engine import Replay
from engine.replay import rerate
from worker import keys
from worker.boards.receipts import ReceiptSink, refresh
from worker.ladders import LadderConfig
from worker.ops.logreplay import LogReplay
from worker.ops.moderation import ModerationError, Report, project, record_rerating
from worker.ops.progress import Progress
from worker.queue import inflight
from worker.store import moderation as store
from worker.store import replays


def void(
    engine: Engine,
    redis: Redis | RedisCluster | None,
    ladder_config: LadderConfig,
    event_ids: Sequence[str],
    reason: str,
    by: str,
    *,
    receipt_sink: ReceiptSink | None,
    dry_run: bool = False,
    progress: Progress | None = None,
    details: dict[str, Any] | None = None,
) -> Report:
    """Void these games exactly; an unknown id is refused (``ModerationError``) before any.

    With ``receipt_sink`` (receipts on), the receipts the void changed are made true after the
    commit (``refresh_after``); ``None``: receipts are off. It has no default: a caller that left
    it out by mistake would leave those kept receipts stale, and ``ladder verify`` would say
    so."""
    started = time.perf_counter()
    ladder = ladder_config.name
    policy, rules_at = ladder_config.policy, ladder_config.rules_at
    since = None
    if receipt_sink is not None and not dry_run:
        since = datetime.now(UTC) - timedelta(seconds=receipt_sink.ttl)
    # Most of the replay runs before the lock, so workers are not kept waiting for it.
    with engine.connect() as conn:
        report, new, already = _chosen(conn, ladder, event_ids, dry_run)
        if not new:
            if not dry_run:  # already void: their players written again (heals a failed write)
                named = store.players_of(conn, ladder, event_ids)
                project(engine, redis, ladder_config, named, report, receipts=receipt_sink)
            report.seconds = time.perf_counter() - started
            return report
        told = replays.load(conn, ladder)
    kept = receipt_sink.redis if receipt_sink is not None and not dry_run else None

    def replaying(
        voided: set[str], new: list[str], told: replays.History
    ) -> tuple[Replay, LogReplay]:
        """The ladder as it should be with ``voided`` skipped, and the log to run through it."""
        should = told.replay(policy, rules_at, frozenset(voided), track=True)
        log = LogReplay(
            engine,
            told,
            should,
            progress=progress,
            receipts_since=since,
            voiding=frozenset(new),
            kept=kept,
        )
        return should, log

    should, log = replaying(already | set(new), new, told)
    log.run()
    with engine.begin() as conn:
        store.lock_ladder(conn, ladder)
        now = datetime.now(UTC)
        # Read before the events since are run: a player a worker creates from here on (only
        # new players are not locked) is in neither, and is left alone.
        current = store.load_players(conn, ladder)
        locked, new_now, already_now = _chosen(conn, ladder, event_ids, dry_run)
        told_now = replays.load(conn, ladder, earlier=told)
        if (
            (new_now, already_now) != (new, already)
            or moved(told, told_now)
            or (store.count_through(conn, ladder, log.seq) != log.count)
        ):
            # Another action, a season close, an import or an event stored out of order: the
            # events since cannot simply be added, so the log is run again, under the lock.
            report, new = locked, new_now
            if not new:
                report.seconds = time.perf_counter() - started
                return report
            should, log = replaying(already_now | set(new), new, told_now)
        log.run()
        log.finish()
        report.replayed = log.count
        effective = store.effective(conn, ladder)
        done = rerate(
            ladder,
            current=current,
            should=should.players,
            verdicts=should.verdicts,
            effective=effective,
            rules=ladder_config.rules_at(now),
            at=now,
        )
        report.done = new
        report.players = [(p.player_id, current[p.key].rating, p.rating) for p in done.players]
        report.effects = len(done.effects)
        if dry_run:
            report.seconds = time.perf_counter() - started
            return report
        made = {"voided": new, **(details or {})}
        report.action = record_rerating(conn, ladder, "void", reason, by, now, made, done)
    projected = project(engine, redis, ladder_config, done.players, report, receipts=receipt_sink)
    if projected and receipt_sink is not None:
        refresh_after(receipt_sink, log.receipts, report)
    report.seconds = time.perf_counter() - started
    return report


def refresh_after(sink: ReceiptSink, made: Sequence[tuple[str, str]], report: Report) -> None:
    """Make the kept receipts true after a void: ``ladder:receipt:<event_id>`` of the voided
    games and of every event the re-rating scored otherwise is rewritten to its receipt as
    re-rated.

    A receipt answers a game server's question "what did my event do?", and after a void the
    ladder is the one that never received the voided games (SPEC 5: moderation is recorded
    in the log; a void re-rates exactly): a voided game did nothing (outcome ``voided``, no
    players), and a later game did what the re-rating made of it, the numbers its players'
    ratings now follow from. So the keys are rewritten rather than deleted, keeping their
    expiry; a key already gone stays gone (``worker.boards.receipts.refresh``). The stream
    ``ladder:receipts`` and the wait lists are left as published: they are what was sent at
    the time. Only events processed within ``LADDER_RECEIPT_TTL`` can have a key, and none
    before the first voided game changes, so only those receipts are kept during the replay, as
    JSON text (memory bounded by one TTL of events, about 0.5 kB each), and the keys go in
    pipelined chunks. An erase renames receipts itself and an adjustment is its own
    ledger row, which no event's receipt holds; neither changes an event's numbers.

    A worker's batch committed before the void may not have written its receipts yet: the
    keys are rewritten once the batches in flight at the commit have written theirs
    (``worker.queue.inflight``, at most ``sink.settle_seconds``), so that no late write of a
    game the void changed leaves its old receipt; a batch still held then (its worker
    stopped?) is named in a warning, as the keys it writes later are.

    The void has committed: PostgreSQL is the record, so a Redis that cannot be reached now
    leaves the keys as they were (until they expire) and one warning line says so."""
    try:
        queue = Queue(keys.QUEUE_NAME, connection=sink.redis)
        held = inflight.wait(sink.redis, queue, sink.settle_seconds)
        report.receipts = refresh(sink.redis, made)
    except RedisError as exc:
        report.warning = (
            f"receipts not refreshed: Redis unreachable ({type(exc).__name__}); the void is "
            "committed, and the receipt keys it changed keep their old numbers until they expire"
        )
        return
    if held:
        many = len(held)
        report.warning = (
            f"{many} {'batch' if many == 1 else 'batches'} in flight did not finish within "
            f"{sink.settle_seconds:g} s (a worker stopped?): the receipts they write when they "
            "are recovered may not show the void; `ladder verify` names any"
        )


def _chosen(
    conn: Any, ladder: str, event_ids: Sequence[str], dry_run: bool
) -> tuple[Report, list[str], set[str]]:
    """The report so far, the games to void, and the ladder's voided games; an unknown id is
    refused (``ModerationError``) before anything is done."""
    report = Report(ladder, "void", dry_run=dry_run)
    found = store.find_events(conn, ladder, event_ids)
    unknown = [e for e in event_ids if e not in found]
    if unknown:
        raise ModerationError(f"no event {unknown[0]!r} on {ladder}")
    already = store.voided(conn, ladder)
    new: list[str] = []
    for event_id in dict.fromkeys(event_ids):
        kind, _ = found[event_id]
        if kind != "game.finished":
            report.refused[event_id] = f"not a game ({kind}): only games can be voided"
        elif event_id in already:
            report.refused[event_id] = "already void"
        else:
            new.append(event_id)
    return report, new, already


def moved(told: replays.History, now: replays.History) -> bool:
    """Whether the history changed besides new events: an action, a season close, an import
    or an archive since it was read."""
    before = (told.start.after_seq, told.actions, told.recorded, told.seasons)
    return before != (now.start.after_seq, now.actions, now.recorded, now.seasons)
