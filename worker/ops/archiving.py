"""``ladder archive --before YYYY-MM``: detach the audit log's months before a boundary.

Each ladder with events (or recorded ledger rows) in those months gets a checkpoint
(``worker.store.checkpoints``): the one replay of its history up to the boundary, started from
its earlier checkpoint if it has one. The checkpoints are written, the ``game_players`` rows of
the archived events deleted (``worker.store.game_players``: the payloads of the archived events
still name those players) and the months' partitions of ``events`` and ``rating_changes``
detached in one transaction; a detached partition stays
in the database as a table of its own, ``archived_events_2025_11``, for the operator to dump
(``pg_dump -t``) and drop. ``event_ids`` keeps the archived ids, so an archived event sent
again is still a duplicate.

Before it reads the log, the archive marks every ladder with its boundary (``mark``,
``worker.store.marks``): a worker's batch validated before the boundary and stored after the
log was read would land in an archived month without being in its checkpoint; with the mark it
starts again at an instant on or after the boundary, and an import taken before the boundary
is refused at its commit.

Refused (nothing changed but the marks, which hold back only what is placed before the
boundary, already past): a boundary after the current month; a ladder with archived events
that is not configured; a ladder whose events on both sides of the boundary interleave in
scoring order (an event processed before the boundary scored after one processed after it,
which only a batch straddling the boundary's instant can do: archive a month earlier).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

from sqlalchemy import text
from sqlalchemy.engine import Engine

from worker import failpoints
from worker.ladders import Config, LadderConfig
from worker.store import checkpoints, game_players, marks, moderation, partitions, replays
from worker.store.locks import LOCK_BATCHES, LOCK_IMPORT_COMMITS, LOCK_LADDERS
from worker.store.log import event_of
from worker.store.windowcache import COUNT_ACTION


class ArchiveRefused(Exception):
    """The archive cannot be made as asked; nothing was changed."""


@dataclass(frozen=True)
class Archived:
    """What an archive did: each ladder's checkpoint and the tables it detached."""

    before: date
    checkpoints: list[checkpoints.Checkpoint]
    tables: list[str]


_ARCHIVED = """
SELECT ladder, max(seq), count(*) FROM events WHERE processed_at < :before GROUP BY ladder
"""
_RECORDED = "SELECT DISTINCT ladder FROM rating_changes WHERE at < :before"
_FIRST_AFTER = "SELECT min(seq) FROM events WHERE ladder = :ladder AND processed_at >= :before"


def archive(engine: Engine, config: Config, before: date, now: datetime | None = None) -> Archived:
    """Checkpoint every ladder at ``before`` (the first day of a month) and detach the months
    before it. Raises ``ArchiveRefused`` (nothing changed) when it cannot."""
    now = now or datetime.now(UTC)
    if before > partitions.month_of(now):
        raise ArchiveRefused(
            f"--before {before:%Y-%m} is after the current month: only past months are archived"
        )
    boundary = datetime(before.year, before.month, 1, tzinfo=UTC)
    mark(engine, config, boundary)
    failpoints.hit("archive.after_mark")  # killed here: the marks stay, nothing else is done
    with engine.connect() as conn:
        found = {
            str(r[0]): (int(r[1]), int(r[2]))
            for r in conn.execute(text(_ARCHIVED), {"before": boundary})
        }
        recorded = {str(r[0]) for r in conn.execute(text(_RECORDED), {"before": boundary})}
        for ladder, (last, _) in found.items():
            first = conn.execute(text(_FIRST_AFTER), {"ladder": ladder, "before": boundary})
            after = first.scalar()
            if after is not None and int(after) < last:
                raise ArchiveRefused(
                    f"ladder {ladder}: events processed before and after {before:%Y-%m} "
                    f"interleave in scoring order (event {after} after the boundary was scored "
                    f"before event {last}): archive an earlier month"
                )
    made: list[checkpoints.Checkpoint] = []
    for ladder in sorted(set(found) | recorded):
        ladder_config = config.ladder(ladder)
        if ladder_config is None:
            raise ArchiveRefused(
                f"ladder {ladder} has rows before {before:%Y-%m} but is not configured: "
                "its checkpoint needs its rules"
            )
        with engine.connect() as conn:
            rerated = [a for a in moderation.history_actions(conn, ladder) if a.kind == "rerate"]
        if rerated and rerated[-1].at >= boundary:
            raise ArchiveRefused(
                f"ladder {ladder} was re-rated on {rerated[-1].at:%Y-%m-%d} (moderation action "
                f"{rerated[-1].number}): archive the months before it together with its "
                f"own (--before a month after {rerated[-1].at:%Y-%m})"
            )
        last, count = found.get(ladder, (0, 0))
        made.append(checkpoint(engine, ladder_config, boundary, last, count))
    with engine.begin() as conn:
        # each ladder held as a moderation action holds it (``worker.store.locks``): a batch
        # reads its windows from the log and from the checkpoint (``windows.archived``) all
        # before the archive or all after it, never the log after and the checkpoint before
        archived = sorted(set(found) | recorded)
        conn.exec_driver_sql(LOCK_LADDERS, {"ladders": archived})
        for point in made:
            checkpoints.save(conn, point, now)
        game_players.delete_archived(conn, boundary)  # before the lock the detaching takes
        tables = partitions.detach(conn, before)
        # the ladders whose windows lose games: a worker's windows in memory are read again
        conn.exec_driver_sql(COUNT_ACTION, {"ladders": archived})
    return Archived(before, made, tables)


def mark(engine: Engine, config: Config, boundary: datetime) -> None:
    """Mark every ladder of the database and of ``config`` archived at ``boundary``
    (``worker.store.marks``), holding each as an import's commit would, then the database's
    batch key exclusively (``worker.store.locks``): the imports committing and the batches in
    flight, of every ladder, commit first; every later batch validated before the boundary, of
    whatever ladder, finds the mark and takes an instant on or after it; every later import
    taken before it is refused. Nothing placed before the boundary is stored after this
    returns, so the log the checkpoints read holds every row they must count."""
    with engine.begin() as conn:
        ladders = sorted(set(config.ladders) | set(moderation.stored_ladders(conn)))
        conn.exec_driver_sql(LOCK_IMPORT_COMMITS, {"ladders": ladders})
        conn.exec_driver_sql(LOCK_BATCHES)
        conn.exec_driver_sql(marks.ARCHIVED, {"ladders": ladders, "before": boundary})


def checkpoint(
    engine: Engine, ladder_config: LadderConfig, boundary: datetime, through: int, count: int
) -> checkpoints.Checkpoint:
    """The ladder's state after its events numbered through ``through`` (``count`` of them
    processed before ``boundary``) and its recorded rows and moderation actions before it, by
    the one replay as it was lived, started from the ladder's earlier checkpoint if any."""
    ladder = ladder_config.name
    # from the ladder's earlier checkpoint, if any: its actions and recorded rows before
    told = replays.load(engine, ladder, before=boundary)
    earlier = told.start.checkpoint
    through = max(through, told.start.after_seq)
    replay = told.lived(ladder_config.policy, ladder_config.rules_at)
    for logged in told.walk(replay, told.entries(engine, ledger=None, through=through)):
        replay.event(event_of(logged.row), logged.row.processed_at)
    total = count + (0 if earlier is None else earlier.events)
    return checkpoints.of_state(ladder, replay.state, boundary, through, total)
