"""Switch a ladder's ruleset by exact replay: ``ladder rerate``.

A version of the ladder's configuration may name another ruleset from its ``effective_from``
(``LadderConfig.switch``): workers score the games from then on under it. ``rerate`` re-rates
the history before it too, exactly: the log is replayed from its first event with every event
rated by the rules in force at the switch or later (``engine.replay.switched``), bans,
adjustments, season closes and voids where they fell, as a void replays it. Each player whose
state differs gets the state it should have and one ``correction`` ledger row; each event
whose outcome changes, an ``event_effects`` row; the kept receipts, what the re-rating made
of their event. It is a moderation action of its own (``rerate``), so every later replay
(``ladder verify``, a void, the readers) knows the ladder was re-rated there.

Refused, with nothing changed: a ladder with no switch, or whose switch is not in force yet;
one already re-rated under it; one whose first months are archived (the log must be whole);
and one whose imports or adjustments hold numbers on another scale than the new ruleset's
(they would be read as its own).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from redis import Redis
from redis.cluster import RedisCluster
from sqlalchemy.engine import Connection, Engine

from engine import Action, Replay, voided_by
from engine.replay import rerate as derive
from worker.boards.receipts import ReceiptSink
from worker.ladders import LadderConfig, RulesVersion
from worker.ops.logreplay import LogReplay
from worker.ops.moderation import ModerationError, Report, project, record_rerating
from worker.ops.progress import Progress
from worker.ops.void import moved, refresh_after
from worker.store import moderation as store
from worker.store import replays


def rerate(
    engine: Engine,
    redis: Redis | RedisCluster | None,
    ladder_config: LadderConfig,
    reason: str,
    by: str,
    *,
    receipt_sink: ReceiptSink | None,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> Report:
    """Re-rate the ladder's history under its switch (``ModerationError``: refused).

    With ``receipt_sink`` (receipts on), the kept receipts the re-rating changed are made true
    after the commit; ``None``: receipts are off."""
    started = time.perf_counter()
    ladder = ladder_config.name
    switch = _switch(ladder_config, datetime.now(UTC))
    since = kept = None
    if receipt_sink is not None and not dry_run:
        since = datetime.now(UTC) - timedelta(seconds=receipt_sink.ttl)
        kept = receipt_sink.redis

    def replaying(told: replays.History) -> tuple[Replay, LogReplay]:
        """The ladder re-rated under the switch, and the log to run through it."""
        taken = Action(0, "rerate", switch.effective_from, 0, since=switch.effective_from)
        should = told.replay(
            ladder_config.policy,
            ladder_config.rules_at,
            voided_by(told.actions),
            track=True,
            rerating=taken,
        )
        log = LogReplay(
            engine, told, should, progress=progress, receipts_since=since, every=True, kept=kept
        )
        return should, log

    with engine.connect() as conn:
        told = _history(conn, ladder_config, switch)
    should, log = replaying(told)
    log.run()
    report = Report(ladder, "rerate", dry_run=dry_run, note=_note(switch))
    with engine.begin() as conn:
        store.lock_ladder(conn, ladder)
        now = datetime.now(UTC)
        # Read before the events since are run: a player a worker creates from here on (only
        # new players are not locked) is in neither, and is left alone.
        current = store.load_players(conn, ladder)
        told_now = _history(conn, ladder_config, switch, earlier=told)
        if moved(told, told_now) or store.count_through(conn, ladder, log.seq) != log.count:
            # An action, a season close, an import or an event stored out of order since: the
            # events since cannot simply be added, so the log is run again, under the lock.
            should, log = replaying(told_now)
        log.run()
        log.finish()
        report.replayed = log.count
        done = derive(
            ladder,
            current=current,
            should=should.players,
            verdicts=should.verdicts,
            effective=store.effective(conn, ladder),
            rules=ladder_config.rules_at(now),
            at=now,
        )
        report.players = [(p.player_id, current[p.key].rating, p.rating) for p in done.players]
        report.effects = len(done.effects)
        if dry_run:
            report.seconds = time.perf_counter() - started
            return report
        details = {
            "since": switch.effective_from.isoformat(),
            "ruleset": switch.rules.kind,
            "version": switch.rules.version,
        }
        report.action = record_rerating(conn, ladder, "rerate", reason, by, now, details, done)
    projected = project(engine, redis, ladder_config, done.players, report, receipts=receipt_sink)
    if projected and receipt_sink is not None:
        refresh_after(receipt_sink, log.receipts, report)
    report.seconds = time.perf_counter() - started
    return report


def _switch(ladder_config: LadderConfig, now: datetime) -> RulesVersion:
    """The ladder's switch, in force (``ModerationError``: none, or not yet)."""
    ladder, switch = ladder_config.name, ladder_config.switch
    if switch is None:
        raise ModerationError(
            f"no version of {ladder} names another ruleset: add a [[ladders.{ladder}.versions]] "
            'entry with ruleset = "..." and its effective_from'
        )
    if switch.effective_from > now:
        raise ModerationError(
            f"the switch of {ladder} to {switch.rules.kind} ({switch.rules.version}) takes "
            f"effect at {switch.effective_from.isoformat()}: rerate once it is in force"
        )
    return switch


def _history(
    conn: Connection,
    ladder_config: LadderConfig,
    switch: RulesVersion,
    earlier: replays.History | None = None,
) -> replays.History:
    """The ladder's whole history, refused (``ModerationError``) where it cannot be re-rated
    under ``switch``."""
    ladder = ladder_config.name
    told = replays.load(conn, ladder, earlier=earlier)
    point = told.start.checkpoint
    if point is not None:
        raise ModerationError(
            f"the months of {ladder} before {point.before.isoformat()} are archived: a rerate "
            "replays the whole log"
        )
    since = switch.effective_from
    for action in told.actions:
        if action.kind == "rerate" and action.since == since:
            raise ModerationError(
                f"{ladder} was re-rated under {switch.rules.kind} ({switch.rules.version}) "
                f"already (moderation action {action.number})"
            )
    old = ladder_config.versions[ladder_config.versions.index(switch) - 1].rules
    new = switch.rules
    if (old.start, old.odds_unit) != (new.start, new.odds_unit):
        imports = len(told.recorded_entries)
        adjusted = sum(1 for a in told.actions if a.kind == "adjust")
        if imports or adjusted:
            raise ModerationError(
                f"{ladder} holds {_plural(imports, 'import')} and "
                f"{_plural(adjusted, 'adjustment')} on {old.kind}'s scale, which "
                f"{new.kind} would read as its own: re-import and adjust after the rerate"
            )
    return told


def _note(switch: RulesVersion) -> str:
    rules = switch.rules
    return (
        f"every game re-rated under {rules.kind} ({rules.version}), the rules in force from "
        f"{switch.effective_from.isoformat()}"
    )


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"
