"""The audit log partitioned by month: exactly-once across months, index probes, and
``ladder archive`` with ``verify`` from the recorded checkpoint."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import delete, func, select, text, update
from sqlalchemy.exc import IntegrityError

from bench.history_fill import fill
from tests.conftest import drain, publish
from tests.events import game, link, tournament
from worker.ops.archiving import ArchiveRefused, archive
from worker.ops.verify import verify
from worker.service import batch
from worker.store import locks, partitions
from worker.store.tables import checkpoint_players, checkpoints, event_ids, events

PLAYERS = [f"p{i}" for i in range(8)]


class _Clock:
    """The batch's clock set to ``at`` (``worker.service.batch`` reads ``datetime.now``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch

    def at(self, when: datetime) -> None:
        class Then(datetime):
            @classmethod
            def now(cls, tz: Any = None) -> Any:
                return when

        self.monkeypatch.setattr(batch, "datetime", Then)

    def real(self) -> None:
        self.monkeypatch.setattr(batch, "datetime", datetime)


def _month_of_games(
    rt: Any, clock: _Clock, day: datetime, count: int, ladder: str = "gammon42"
) -> list[dict[str, Any]]:
    """``count`` games processed on ``day`` (one batch an hour), each ended a minute before."""
    made = []
    for n in range(count):
        at = day + timedelta(hours=n)
        clock.at(at)
        a, b = PLAYERS[n % len(PLAYERS)], PLAYERS[(n * 3 + 1) % len(PLAYERS)]
        if a == b:
            b = PLAYERS[(n + 1) % len(PLAYERS)]
        event = game(a, b, ladder=ladder, ended_at=at - timedelta(minutes=1))
        made.append(event)
        publish(rt, event)
        drain(rt)
    return made


def _lived(rt: Any, clock: _Clock) -> dict[str, list[dict[str, Any]]]:
    """A ladder lived over September, October, November and now: games (some near each month's
    end, so windows reach across the boundary), a link and a settled tournament."""
    lived = {}
    lived["sep"] = _month_of_games(rt, clock, datetime(2026, 9, 28, tzinfo=UTC), 30)
    clock.at(datetime(2026, 10, 3, tzinfo=UTC))
    extra = [link("gammon42", "anon-1", PLAYERS[0]), tournament("gammon42", "cup", PLAYERS[:3])]
    publish(rt, *extra)
    drain(rt)
    lived["oct"] = extra + _month_of_games(rt, clock, datetime(2026, 10, 29, tzinfo=UTC), 40)
    lived["nov"] = _month_of_games(rt, clock, datetime(2026, 11, 28, tzinfo=UTC), 40)
    lived["fibs"] = _month_of_games(rt, clock, datetime(2026, 10, 5, tzinfo=UTC), 10, "fibs")
    clock.real()
    now = [game(PLAYERS[1], PLAYERS[2]), game(PLAYERS[3], PLAYERS[4], ladder="fibs")]
    publish(rt, *now)
    drain(rt)
    lived["now"] = now
    return lived


def _verified(rt: Any) -> dict[str, Any]:
    return {name: verify(rt.engine, None, cfg) for name, cfg in rt.config.ladders.items()}


def _mismatches(reports: dict[str, Any]) -> dict[str, list[Any]]:
    return {name: r.mismatches for name, r in reports.items() if r.mismatches}


def test_archive_detaches_early_months_and_verify_replays_from_the_checkpoint(runtime, monkeypatch):
    """SPEC: 'Audit and ledger tables are partitioned by month; `ladder archive --before
    YYYY-MM` detaches old partitions and verify then starts from the recorded checkpoint.'"""
    clock = _Clock(monkeypatch)
    lived = _lived(runtime, clock)
    assert _mismatches(_verified(runtime)) == {}
    with runtime.engine.connect() as conn:
        names = [n for n, _ in partitions.attached(conn, "events")]
    assert {"events_2026_09", "events_2026_10", "events_2026_11"} <= set(names)

    done = archive(runtime.engine, runtime.config, date(2026, 11, 1))
    assert {"archived_events_2026_09", "archived_events_2026_10"} <= set(done.tables)
    assert {"archived_rating_changes_2026_09", "archived_rating_changes_2026_10"} <= set(
        done.tables
    )
    assert {p.ladder for p in done.checkpoints} == {"gammon42", "fibs"}
    with runtime.engine.connect() as conn:
        left = conn.execute(select(func.count()).select_from(events)).scalar_one()
        kept = conn.execute(text("SELECT count(*) FROM archived_events_2026_10")).scalar_one()
    assert left == len(lived["nov"]) + len(lived["now"])
    assert kept == len(lived["oct"]) + len(lived["fibs"])

    reports = _verified(runtime)
    assert _mismatches(reports) == {}
    assert reports["gammon42"].events == len(lived["nov"]) + 1  # only the months left
    assert reports["fibs"].events == 1

    # An archived event sent again is still a duplicate: nothing written, nothing changed.
    publish(runtime, lived["oct"][5])
    drain(runtime)
    with runtime.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(events)).scalar_one() == left
    assert _mismatches(_verified(runtime)) == {}

    # A second archive starts from the first checkpoint.
    again = archive(runtime.engine, runtime.config, date(2026, 12, 1))
    assert "archived_events_2026_11" in again.tables
    assert {p.ladder: p.events for p in again.checkpoints}["gammon42"] == sum(
        len(lived[m]) for m in ("sep", "oct", "nov")
    )
    reports = _verified(runtime)
    assert _mismatches(reports) == {}
    assert reports["gammon42"].events == 1


def test_verify_uses_the_checkpoint_and_finds_it_altered(runtime, monkeypatch):
    """The checkpoint is what verify starts from: a rating altered in it is reported, and
    without it the months left do not follow from the first game."""
    clock = _Clock(monkeypatch)
    _lived(runtime, clock)
    archive(runtime.engine, runtime.config, date(2026, 11, 1))
    with runtime.engine.begin() as conn:
        conn.execute(
            update(checkpoint_players)
            .where(
                checkpoint_players.c.ladder == "gammon42", checkpoint_players.c.player_id == "p1"
            )
            .values(rating=checkpoint_players.c.rating + 0.5)
        )
    found = _mismatches(_verified(runtime))
    assert set(found) == {"gammon42"}
    with runtime.engine.begin() as conn:
        conn.execute(delete(checkpoints).where(checkpoints.c.ladder == "fibs"))
    assert "fibs" in _mismatches(_verified(runtime))


def test_archive_refuses_a_boundary_ahead_and_changes_nothing(runtime, monkeypatch):
    """A boundary after the current month is refused, and so is a ladder not configured."""
    with pytest.raises(ArchiveRefused, match="after the current month"):
        archive(runtime.engine, runtime.config, partitions.next_month(date.today(), 1))
    clock = _Clock(monkeypatch)
    _month_of_games(runtime, clock, datetime(2026, 10, 2, tzinfo=UTC), 2)
    with runtime.engine.begin() as conn:
        conn.execute(update(events).values(ladder="gone"))
    with pytest.raises(ArchiveRefused, match="ladder gone .* not configured"):
        archive(runtime.engine, runtime.config, date(2026, 11, 1))
    with runtime.engine.connect() as conn:
        assert "events_2026_10" in [n for n, _ in partitions.attached(conn, "events")]
        assert conn.execute(select(func.count()).select_from(checkpoints)).scalar_one() == 0


def test_an_event_id_is_stored_once_across_months(runtime, monkeypatch):
    """SPEC 2.4: exactly once. An event sent again a month later (a new processed_at, so
    another partition) is a duplicate, and the store itself refuses a second row."""
    clock = _Clock(monkeypatch)
    (first,) = _month_of_games(runtime, clock, datetime(2026, 10, 30, tzinfo=UTC), 1)
    clock.at(datetime(2026, 11, 2, tzinfo=UTC))
    publish(runtime, first)
    drain(runtime)
    with runtime.engine.connect() as conn:
        rows = conn.execute(
            select(events.c.processed_at).where(events.c.event_id == first["event_id"])
        )
        assert [r[0].month for r in rows] == [10]
        digest = conn.execute(
            select(event_ids.c.digest).where(event_ids.c.event_id == first["event_id"])
        ).scalar_one()
        assert digest is not None
    with pytest.raises(IntegrityError), runtime.engine.begin() as conn:
        row = conn.execute(select(events).where(events.c.event_id == first["event_id"])).one()
        again = dict(row._mapping)
        again["processed_at"] = datetime(2026, 11, 2, tzinfo=UTC)
        del again["seq"]
        again["payload"] = json.loads(json.dumps(again["payload"]))
        conn.execute(events.insert().values(**again))


def _plan(conn: Any, sql: str, params: dict[str, Any], *, run: bool = False) -> Any:
    how = "(ANALYZE, FORMAT JSON)" if run else "(FORMAT JSON)"
    return conn.exec_driver_sql(f"EXPLAIN {how} " + sql, params).scalar_one()


def _nodes(plan: Any) -> list[dict[str, Any]]:
    """Every node of a JSON plan."""
    found: list[dict[str, Any]] = []
    todo = [plan[0]["Plan"]]
    while todo:
        node = todo.pop()
        found.append(node)
        todo.extend(node.get("Plans", []))
    return found


def test_the_duplicate_check_and_the_window_reads_are_index_probes_of_the_months_they_need(
    runtime,
):
    """The duplicate check probes ``event_ids`` by key; the window reads scan the window
    index of the partitions of the window's months only, not every month of the log."""
    from worker.store import statements, windows

    now = datetime.now(UTC)
    fill(runtime.engine, "gammon42", "gammon42", 40_000, until=now, months=4, players=2000)
    ask = statements.WindowAsk(
        "gammon42", now - timedelta(hours=1), now, ["g1", "g2"], (24, 168), [("g1", "g2")], 24
    )
    first_needed = partitions.month_of(ask.since - windows.PROCESSED_MARGIN)
    facts = statements.WindowFacts([], [], [], [])
    with runtime.engine.connect() as conn:
        conn.exec_driver_sql("ANALYZE events; ANALYZE event_ids")
        existing = statements._existing_read([("gammon42", "h-1"), ("fibs", "e-2")])
        plan = _plan(
            conn,
            existing.sql.replace("%(ladders)b", "%(ladders)s").replace("%(ids)b", "%(ids)s"),
            existing.params,
        )
        scans = [(n["Node Type"], n.get("Relation Name")) for n in _nodes(plan)]
        assert ("Index Scan", "event_ids") in scans or ("Index Only Scan", "event_ids") in scans
        assert not [s for s in scans if s[0] == "Seq Scan" or str(s[1]).startswith("events")]
        months = {m for _, m in partitions.attached(conn, "events")}
        old = {partitions.partition_name("events", m) for m in months if m < first_needed}
        assert len(old) >= 3
        for read in windows.reads([ask], facts, now):
            nodes = _nodes(_plan(conn, read.sql, read.params, run=True))
            ran = [n for n in nodes if n.get("Actual Loops", 0) > 0]
            # The months before the windows' are pruned as the read runs, never scanned.
            assert not [n for n in ran if n.get("Relation Name") in old]
            read_months = [n for n in ran if str(n.get("Relation Name")).startswith("events_")]
            assert read_months
            assert all(n["Node Type"] == "Index Scan" for n in read_months if n["Actual Rows"])
            assert "Seq Scan on events" not in plan


def test_an_erased_id_leaves_the_checkpoint_and_the_archived_months(runtime, monkeypatch):
    """SPEC: 'Erase removes a player's real id from ... every table', archived months and
    checkpoints included."""
    from worker.store.erase import rename

    clock = _Clock(monkeypatch)
    _lived(runtime, clock)
    archive(runtime.engine, runtime.config, date(2026, 11, 1))
    tables = ["checkpoints", "checkpoint_players", "archived_events_2026_10"]
    tables += ["archived_rating_changes_2026_10", "archived_events_2026_09"]

    def naming(conn: Any, player: str) -> list[str]:
        found = []
        for name in tables:
            rows = conn.exec_driver_sql(
                f"SELECT t::text FROM {name} t WHERE ladder = 'gammon42'"  # fibs keeps its p0
            ).scalars()
            if any(f'"{player}"' in row or f",{player}," in row for row in rows):
                found.append(name)
        return found

    with runtime.engine.begin() as conn:
        assert naming(conn, "p0") == tables
        rename(conn, "gammon42", "p0", "erased-1")
        assert naming(conn, "p0") == []
    assert _mismatches(_verified(runtime)).keys() <= {"gammon42"}


def test_a_void_after_an_archive_replays_from_the_checkpoint(runtime, monkeypatch):
    """SPEC 5: a void re-rates exactly, as if the voided game had never been published; after
    ``ladder archive`` the ladder's history starts at its checkpoint, so a void of a game left
    changes only what that game changed: verify and reconcile find nothing after it, and a
    backtest with the stored parameters reproduces every stored rating."""
    from worker.ops import reconcile
    from worker.ops.backtest import backtest
    from worker.ops.void import void

    clock = _Clock(monkeypatch)
    lived = _lived(runtime, clock)
    archive(runtime.engine, runtime.config, date(2026, 11, 1))
    cfg = runtime.config.ladders["gammon42"]
    chosen = lived["nov"][7]["event_id"]
    report = void(
        runtime.engine,
        runtime.leaderboard_redis,
        cfg,
        [chosen],
        "t",
        "op",
        receipt_sink=runtime.receipts,
    )
    assert [chosen] == report.done
    assert len(report.players) <= 2 + len(PLAYERS)  # its players, and later games' only
    found = verify(runtime.engine, runtime.leaderboard_redis, cfg)
    assert [] == found.mismatches
    assert reconcile.check(runtime.engine, runtime.leaderboard_redis, cfg).clean
    replayed = backtest(runtime.engine, cfg, {})
    assert replayed.players and all(s == c for s, c in replayed.players.values())


def test_an_archive_waits_for_a_batch_of_its_ladder_in_flight(runtime, monkeypatch):
    """A batch reads its windows from the log and from the ladder's checkpoint
    (``windows.archived``) while it holds its ladder, from its claim to its commit: the
    archive holds the database's batch key, which every batch holds shared, so it waits for
    such a batch, and the batch reads both before the archive (and one that claims later,
    both after it)."""
    clock = _Clock(monkeypatch)
    _month_of_games(runtime, clock, datetime(2026, 10, 30, tzinfo=UTC), 3)
    clock.real()
    finished: list[object] = []

    def archiving() -> None:
        try:
            finished.append(archive(runtime.engine, runtime.config, date(2026, 11, 1)))
        except Exception as exc:  # the test's thread reports it
            finished.append(exc)

    with runtime.engine.connect() as batch_conn:
        batch_conn.exec_driver_sql(locks.SHARE_LADDERS, {"ladders": ["gammon42"]})
        key = batch_conn.exec_driver_sql(  # the batch key, held shared by every batch
            "SELECT hashtextextended(current_schema() || ':batches', 0)"
        ).scalar_one()
        thread = threading.Thread(target=archiving)
        thread.start()
        waiting = 0
        deadline = time.monotonic() + 30
        while not finished and not waiting and time.monotonic() < deadline:
            time.sleep(0.05)
            with runtime.engine.connect() as conn:
                waiting = conn.exec_driver_sql(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                    " AND ((classid::bigint << 32) | objid::bigint) = %(key)s",
                    {"key": key},
                ).scalar_one()
        assert (1, []) == (waiting, finished)  # held at the batch key
        batch_conn.rollback()
    thread.join(60)
    assert [] == [r for r in finished if isinstance(r, Exception)]
    assert len(finished) == 1
