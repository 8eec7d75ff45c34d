"""``verify --since``: the part of a ladder's log processed since an instant, replayed from the
state its log recorded at that instant (``worker.store.boundary``)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import event, func, select, update

from bench.history_fill import fill
from tests.conftest import drain, publish
from tests.events import game
from tests.integration.test_archive import (
    PLAYERS,
    _Clock,
    _lived,
    _month_of_games,
    _nodes,
    _plan,
)
from worker.ops.archiving import archive, checkpoint
from worker.ops.moderation import adjust
from worker.ops.verify import replayed, verify
from worker.store import boundary, log, partitions
from worker.store.checkpoints import WINDOW_DAYS
from worker.store.cursor import plan_for_every_row
from worker.store.tables import events, rating_changes
from worker.store.windows import PROCESSED_MARGIN

NOV = datetime(2026, 11, 1, tzinfo=UTC)


def _since(rt: Any, ladder: str, since: datetime) -> Any:
    return verify(rt.engine, rt.leaderboard_redis, rt.config.ladders[ladder], since=since)


def _row(rt: Any, processed: str, since: datetime) -> tuple[int, str, str]:
    """A ledger row of a game processed before (``processed="before"``) or after ``since``:
    its id, event id and player."""
    side = events.c.processed_at < since if processed == "before" else events.c.processed_at > since
    query = (
        select(rating_changes.c.id, rating_changes.c.event_id, rating_changes.c.player_id)
        .join(events, events.c.event_id == rating_changes.c.event_id)
        .where(rating_changes.c.ladder == "gammon42", rating_changes.c.kind == "game", side)
        .order_by(rating_changes.c.id)
        .limit(1)
    )
    with rt.engine.connect() as conn:
        found = conn.execute(query).one()
    return int(found[0]), str(found[1]), str(found[2])


def _tamper(rt: Any, row_id: int) -> None:
    with rt.engine.begin() as conn:
        conn.execute(
            update(rating_changes)
            .where(rating_changes.c.id == row_id)
            .values(rating_after=rating_changes.c.rating_after + 0.5)
        )


def test_the_state_the_log_recorded_is_the_replays_checkpoint(runtime, monkeypatch):
    """The checkpoint read from the log at an instant (no replay) holds what the one replay
    up to that instant holds, for every player the log names after it, their windows too; only
    the version and its time, which the log does not record, are left unset, and the events
    before the instant are not counted (the count is the archive's: none)."""
    _lived(runtime, _Clock(monkeypatch))
    for ladder in ("gammon42", "fibs"):
        cfg = runtime.config.ladders[ladder]
        with runtime.engine.connect() as conn:
            last, count = conn.execute(
                select(func.max(events.c.seq), func.count()).where(
                    events.c.ladder == ladder, events.c.processed_at < NOV
                )
            ).one()
            read = boundary.at(conn, ladder, NOV, cfg.rules_at(NOV).start, None)
        replayed = checkpoint(runtime.engine, cfg, NOV, int(last), int(count))
        named = {p.player_id for p in read.players}
        assert named, ladder
        by_id = {p.player_id: p for p in replayed.players}
        assert [
            replace(by_id[p.player_id], version=0, updated_at=None) for p in read.players
        ] == list(read.players)
        assert (read.after_seq, read.links, read.settled) == (
            replayed.after_seq,
            replayed.links,
            replayed.settled,
        )
        assert 0 == read.events
        assert read.ranked == {p: t for p, t in replayed.ranked.items() if t and p in named}
        assert read.rated_pairs == {
            (a, b): t for (a, b), t in replayed.rated_pairs.items() if t and {a, b} <= named
        }


def test_since_verifies_the_part_after_and_catches_a_row_tampered_there(runtime, monkeypatch):
    """A ladder with games before and after the instant verifies clean since it, replaying only
    the events after it; a ledger row altered after it is reported, one altered before it is
    (as documented) not looked at, while the whole verify reports both."""
    lived = _lived(runtime, _Clock(monkeypatch))
    report = _since(runtime, "gammon42", NOV)
    assert [] == report.mismatches
    assert report.events == len(lived["nov"]) + 1 and report.since == NOV
    whole = verify(runtime.engine, None, runtime.config.ladders["gammon42"])
    assert whole.events > report.events and whole.since is None

    early, early_event, early_player = _row(runtime, "before", NOV)
    _tamper(runtime, early)
    assert [] == _since(runtime, "gammon42", NOV).mismatches
    whole = verify(runtime.engine, None, runtime.config.ladders["gammon42"])
    assert (early_event, early_player, "rating_after") in {
        (m.event_id, m.player_id, m.field) for m in whole.mismatches
    }

    late, late_event, late_player = _row(runtime, "after", NOV)
    _tamper(runtime, late)
    found = _since(runtime, "gammon42", NOV).mismatches
    assert (late_event, late_player, "rating_after") in {
        (m.event_id, m.player_id, m.field) for m in found
    }


def test_since_before_the_start_is_the_whole_verify(runtime, monkeypatch):
    lived = _lived(runtime, _Clock(monkeypatch))
    report = _since(runtime, "gammon42", datetime(2020, 1, 1, tzinfo=UTC))
    whole = verify(runtime.engine, None, runtime.config.ladders["gammon42"])
    assert [] == report.mismatches and report.since is None
    assert report.events == whole.events == sum(len(lived[m]) for m in ("sep", "oct", "nov")) + 1


def test_since_after_an_archive_starts_from_the_checkpoint_and_the_log_after_it(
    runtime, monkeypatch
):
    """After ``ladder archive`` the instant's state is the checkpoint plus what the log
    recorded between them; an instant before the checkpoint is the whole verify (from it)."""
    lived = _lived(runtime, _Clock(monkeypatch))
    archive(runtime.engine, runtime.config, date(2026, 11, 1))
    later = datetime(2026, 11, 29, 12, tzinfo=UTC)
    report = _since(runtime, "gammon42", later)
    assert [] == report.mismatches and report.since == later
    assert report.events < len(lived["nov"])
    before = _since(runtime, "gammon42", datetime(2026, 10, 1, tzinfo=UTC))
    assert [] == before.mismatches and before.events == len(lived["nov"]) + 1
    assert report.events == replayed(runtime.engine, "gammon42", later)
    assert before.events == replayed(runtime.engine, "gammon42", datetime(2026, 10, 1, tzinfo=UTC))
    late, late_event, late_player = _row(runtime, "after", later)
    _tamper(runtime, late)
    found = _since(runtime, "gammon42", later).mismatches
    assert (late_event, late_player, "rating_after") in {
        (m.event_id, m.player_id, m.field) for m in found
    }


@pytest.mark.parametrize("voided", ["after", "before"])
def test_a_void_since_the_instant_is_derived(runtime, monkeypatch, voided):
    """A void taken after the instant verifies clean since it: of a game after the instant
    from the instant, of a game before it from that game (the replay starts there)."""
    from worker.ops.void import void

    lived = _lived(runtime, _Clock(monkeypatch))
    cfg = runtime.config.ladders["gammon42"]
    chosen = lived["nov"][5] if voided == "after" else lived["oct"][-3]
    done = void(
        runtime.engine,
        runtime.leaderboard_redis,
        cfg,
        [chosen["event_id"]],
        "t",
        "op",
        receipt_sink=runtime.receipts,
    )
    assert [chosen["event_id"]] == done.done
    report = _since(runtime, "gammon42", NOV)
    assert [] == report.mismatches and report.events == replayed(runtime.engine, "gammon42", NOV)
    if voided == "after":
        assert report.since == NOV
    else:
        assert report.since is not None and report.since < NOV
    whole = verify(runtime.engine, None, cfg)
    assert [] == whole.mismatches


def _rows_read(node: dict[str, Any]) -> float:
    """The rows a plan node read, every loop together (those its filters dropped too)."""
    each = node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)
    return float(each + node.get("Rows Removed by Index Recheck", 0)) * node.get("Actual Loops", 0)


def _months_read(nodes: list[dict[str, Any]], months: set[str]) -> dict[str, float]:
    """The rows a plan's nodes read of each of these partitions."""
    read: dict[str, float] = {}
    for node in nodes:
        name = node.get("Relation Name")
        if name in months:
            read[name] = read.get(name, 0.0) + _rows_read(node)
    return read


def test_the_state_at_an_instant_reads_the_months_before_it_by_index_probes(runtime, monkeypatch):
    """docs/operations.md, verifying since an instant: 'in time proportional to that part
    rather than to the whole log'. In the months of history before the instant, each statement
    ``boundary.at`` runs reads by index probes of the players named after it (none of the
    history's rows: one row at most a month), and the window read never runs a month before
    the window's."""
    clock = _Clock(monkeypatch)
    instant = datetime(2026, 11, 15, tzinfo=UTC)
    history = datetime(2026, 9, 10, tzinfo=UTC)  # its last game; its players never play again
    fill(runtime.engine, "gammon42", "gammon42", 20_000, until=history, months=4, players=2000)
    _month_of_games(runtime, clock, datetime(2026, 10, 20, tzinfo=UTC), 8)  # in the window
    _month_of_games(runtime, clock, datetime(2026, 11, 20, tzinfo=UTC), 8)  # after the instant
    # and 1,000 players new after it: read as one list, the planner scanned every month for them
    later = datetime(2026, 11, 21, tzinfo=UTC)
    clock.at(later)
    publish(runtime, *(game(f"q{n}", f"q{n + 1}", ended_at=later) for n in range(0, 1000, 2)))
    drain(runtime)
    clock.real()
    first_window_month = partitions.month_of(
        instant - timedelta(days=WINDOW_DAYS) - PROCESSED_MARGIN
    )
    ran: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
        ran.append((statement, params))

    with runtime.engine.connect() as conn:
        conn.exec_driver_sql("ANALYZE events; ANALYZE rating_changes")
        months = [m for _, m in partitions.attached(conn, "events") if m <= history.date()]
        event.listen(conn, "before_cursor_execute", record)
        boundary.at(conn, "gammon42", instant, 1500.0, None)
        event.remove(conn, "before_cursor_execute", record)
        history_months = {
            partitions.partition_name(table, m)
            for table in ("events", "rating_changes")
            for m in months
        }
        before_window = {
            partitions.partition_name("events", m) for m in months if m < first_window_month
        }
        assert len(months) >= 4 and before_window and len(ran) >= 10
        wide: dict[str, Any] = {}  # statement -> what it read of the history
        for statement, params in ran:
            nodes = _nodes(_plan(conn, statement, params, run=True))
            read = _months_read(nodes, history_months)
            if max(read.values(), default=0.0) > 1:
                wide[statement] = read
            executed = {n.get("Relation Name") for n in nodes if n.get("Actual Loops", 0) > 0}
            if "window" in params and executed & before_window:
                wide[statement] = sorted(executed & before_window)
    assert {} == wide


def test_the_replay_since_an_instant_reads_the_months_before_it_by_index_probes(
    runtime, monkeypatch
):
    """docs/operations.md, verifying since an instant: 'in time proportional to that part
    rather than to the whole log'. Every statement ``verify --since`` runs (the state at the
    instant, the log since it with its ledger rows, the recorded rows, the moderation
    actions' rows) and the count of the part its progress shows read the months of history
    before the instant by index probes at most: one row a month."""
    clock = _Clock(monkeypatch)
    instant = datetime(2026, 11, 15, tzinfo=UTC)
    history = datetime(2026, 9, 10, tzinfo=UTC)  # its last game; its players never play again
    fill(runtime.engine, "gammon42", "gammon42", 20_000, until=history, months=4, players=2000)
    after = _month_of_games(runtime, clock, datetime(2026, 11, 20, tzinfo=UTC), 8)
    clock.real()
    cfg = runtime.config.ladders["gammon42"]
    adjust(runtime.engine, None, cfg, PLAYERS[0], 5.0, "typo", "op")  # its rows: read apart
    # statement, parameters, and for a cursor's read its ``in_index_order`` (``cursor.rows``)
    ran: list[tuple[str, Any, bool | None]] = []

    def record(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            ran.append((statement, params, None))

    streamed: list[tuple[Any, bool]] = []
    reading = log.read_rows

    def read_rows(engine: Any, query: Any, *, in_index_order: bool = False) -> Any:
        streamed.append((query, in_index_order))
        return reading(engine, query, in_index_order=in_index_order)

    monkeypatch.setattr(log, "read_rows", read_rows)
    with runtime.engine.begin() as conn:
        conn.exec_driver_sql("ANALYZE events; ANALYZE rating_changes")
        months = [m for _, m in partitions.attached(conn, "events") if m <= history.date()]
    event.listen(runtime.engine, "before_cursor_execute", record)
    try:
        report = verify(runtime.engine, None, cfg, since=instant)
        counted = replayed(runtime.engine, "gammon42", instant)
    finally:
        event.remove(runtime.engine, "before_cursor_execute", record)
    assert [] == report.mismatches and counted == report.events == len(after)
    history_months = {
        partitions.partition_name(table, m)
        for table in ("events", "rating_changes")
        for m in months
    }
    assert len(months) >= 4 and len(streamed) == 2 and len(ran) >= 10
    wide: dict[str, Any] = {}  # statement -> what it read of the history
    with runtime.engine.connect() as conn:
        for query, in_index_order in streamed:
            compiled = query.compile(
                dialect=conn.dialect, compile_kwargs={"render_postcompile": True}
            )
            ran.append((str(compiled), compiled.params, in_index_order))
        for statement, params, in_order in ran:
            with conn.begin():
                if in_order is not None:
                    plan_for_every_row(conn, in_index_order=in_order)
                nodes = _nodes(_plan(conn, statement, params, run=True))
            read = _months_read(nodes, history_months)
            if max(read.values(), default=0.0) > 1:
                wide[statement] = read
    assert {} == wide
