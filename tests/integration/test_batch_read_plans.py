"""What a worker batch reads, as PostgreSQL plans it: every read is index probes.

A batch reads, before it claims its players, the links of the ids it names and the event ids
applied before (``before_claim``); once they are locked, in the claim's round trip, the links
again, the ids applied meanwhile, the moderation marks, the window counts and, for a duplicate's
receipt, its original's rows (``after_reads``).
Those of the tables that grow with the log (the audit log's monthly partitions and the
duplicate table) must find their rows by an index (the window counts by the winner's and the
loser's ``(ladder, side, ended_at)`` index of each partition), never by reading a table or a
partition whole: a batch's cost must not grow with the log.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import text

from engine.needs import WindowAsk
from tests.conftest import drain, publish
from tests.events import game
from worker.store import partitions, statements
from worker.store import receipts as stored_receipts
from worker.store.driver import Read
from worker.store.tables import metadata

PLAYERS = 40
GAMES = 800
LOGGED = ("events", "event_ids")  # the tables that grow with the log (each month's partition)


def _nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [plan, *(n for sub in plan.get("Plans", []) for n in _nodes(sub))]


def _plan(runtime: Any, read: Read[Any]) -> list[dict[str, Any]]:
    """``read`` explained on a connection of the worker's engine (its session settings)."""
    with runtime.engine.connect() as conn:
        driver = conn.connection.driver_connection
        assert driver is not None
        with driver.cursor() as cur:
            cur.execute("EXPLAIN (FORMAT JSON) " + read.sql, read.params)
            ((explained,),) = cur.fetchall()
        conn.rollback()
    return _nodes(explained[0]["Plan"])


def _whole_reads(
    runtime: Any, nodes: list[dict[str, Any]], logged: tuple[str, ...] = LOGGED
) -> list[str]:
    """The tables (or partitions) of the log holding rows that the plan reads whole (an
    empty partition, a month still ahead, is no cost)."""
    scanned = {
        n["Relation Name"]
        for n in nodes
        if n["Node Type"] == "Seq Scan" and n.get("Relation Name", "").startswith(logged)
    }
    with runtime.engine.connect() as conn:
        return sorted(
            name
            for name in scanned
            if conn.execute(text(f'SELECT EXISTS (SELECT 1 FROM "{name}")')).scalar_one()
        )


def _busy_ladder(runtime: Any) -> None:
    """800 games among 40 players stored and analyzed, so the planner knows the tables are
    not tiny."""
    start = datetime.now(UTC) - timedelta(days=3)
    for n in range(GAMES):
        a, b = f"p{n % PLAYERS}", f"p{(n * 7 + 1) % PLAYERS}"
        if a == b:
            b = f"p{(n + 1) % PLAYERS}"
        at = start + timedelta(minutes=5 * n)
        publish(runtime, game(a, b, event_id=f"g-{n}", ended_at=at))
    drain(runtime)
    with runtime.engine.begin() as conn:  # this test's tables only: a database-wide ANALYZE
        # waits on other tests' schemas, and deadlocked with one's DDL
        conn.execute(text("ANALYZE " + ", ".join(t.name for t in metadata.sorted_tables)))


def test_every_read_of_a_batch_finds_its_rows_by_an_index(runtime):
    """The reads of a batch of a busy ladder: no sequential scan of the audit log or the
    duplicate table, and the window counts read through the winner's and the loser's window
    index."""
    _busy_ladder(runtime)
    now = datetime.now(UTC)
    ids = [f"p{n}" for n in range(10)]
    named = {"gammon42": set(ids)}
    keys = [("gammon42", f"g-{n}") for n in range(0, GAMES, 80)]
    ask = WindowAsk(
        ladder="gammon42",
        first=now - timedelta(minutes=10),
        last=now,
        ranked_ids=ids,
        ranked_hours=(168, 168),
        pairs=[("p1", "p2"), ("p3", "p4")],
        pair_hours=24,
    )
    before: list[Read[Any]] = [statements._links_read(named), statements._existing_read(keys)]
    after = statements.after_reads(named, [("gammon42", "t-1")], [ask], keys, now)
    windows = after.reads[-1]
    assert "json_array_elements_text(a.ids)" in windows.sql  # the ranked read, pairs folded
    for read in [*before, *after.reads]:
        nodes = _plan(runtime, read)
        assert not _whole_reads(runtime, nodes), (read.sql, _whole_reads(runtime, nodes))
    planned = _plan(runtime, windows)
    used = {n.get("Index Name", "") for n in planned}
    assert any("winner_id_ended_at" in name for name in used), used
    assert any("loser_id_ended_at" in name for name in used), used
    # Only the months the read may need are planned (those ahead are made at start-up, and a
    # year of months would cost a millisecond of planning a batch).
    earliest, latest = windows.params["earliest"], windows.params["latest"]
    needed, month = set(), partitions.month_of(earliest)
    while month <= partitions.month_of(latest):
        needed.add(partitions.partition_name("events", month))
        month = partitions.next_month(month)
    with runtime.engine.connect() as conn:
        attached = {name for name, _ in partitions.attached(conn, "events")}
    assert attached - needed  # months the plan could have held
    names = {n["Relation Name"] for n in planned if n.get("Relation Name", "").startswith("events")}
    assert names and names <= needed, (names, needed)


def test_a_duplicates_receipt_reads_its_original_by_the_event(runtime):
    """A batch with a duplicate repeats its original's numbers in the duplicate's receipt,
    read while the batch holds its players, in the claim's round trip (``after_reads``,
    ``receipts.original_reads``): the audit row, the ledger rows and the moderation effects
    of each original are found by an index by event, never by reading a table whole (a read
    that grew with the ladder's history), and never the ledger by player."""
    _busy_ladder(runtime)
    keys = [("gammon42", "g-5"), ("gammon42", "g-700")]
    after = statements.after_reads({"gammon42": {"p1"}}, [], [], [], datetime.now(UTC), None, keys)
    reads = stored_receipts.original_reads(keys)
    assert [r.sql for r in after.reads[4:7]] == [r.sql for r in reads]
    with runtime.engine.connect() as conn:
        stored = conn.execute(text("SELECT count(*) FROM rating_changes")).scalar_one()
    assert stored > GAMES // 2  # a ladder's history to read whole
    for read in reads:
        nodes = _plan(runtime, read)
        table = read.sql.split(" FROM ")[2].split()[0]  # the table probed in the lateral
        used = {n["Index Name"] for n in nodes if n.get("Index Name", "").startswith(table)}
        if table != "event_effects":  # no void yet: an empty table, read as the planner likes
            assert used and all("event_id" in name or "pkey" in name for name in used), used
        assert not any("player_id" in name for name in used), used
        assert not _whole_reads(runtime, nodes, (*LOGGED, "rating_changes", "event_effects"))


def test_a_workers_windows_in_memory_are_read_by_the_same_indexes(runtime):
    """The reads of a worker that keeps its windows in memory (``windowcache``): the ladder's
    mark (its counts, a row per ladder whatever the log holds, and the events stored after the
    worker's, by the scoring-order index), and its players' ranked games by the winner's and
    the loser's window index, in the months the games may be stored in only."""
    from worker.store.windowcache import WindowCache

    _busy_ladder(runtime)
    now = datetime.now(UTC)
    ids = [f"p{n}" for n in range(10)]
    ask = WindowAsk("gammon42", now - timedelta(minutes=10), now, ids, (168, 168), [], 24)
    named = {"gammon42": set(ids)}
    cache = WindowCache()
    after = statements.after_reads(named, [], [ask], [], now, cache)
    assert after.cached is not None
    counted, filled = after.cached.reads
    assert [counted, filled] == after.reads[-2:]
    for read in (counted, filled):
        nodes = _plan(runtime, read)
        assert not _whole_reads(runtime, nodes), read.sql
    cache.ladder("gammon42").warm = True  # as after a claim: the events after its mark
    marked = statements.after_reads(named, [], [ask], [], now, cache).reads[-2]
    assert marked.params["after"] == [0]
    used = {n.get("Index Name", "") for n in _plan(runtime, marked)}
    assert any("ladder_seq" in name for name in used), used
    planned = _plan(runtime, filled)
    used = {n.get("Index Name", "") for n in planned}
    assert any("winner_id_ended_at" in name for name in used), used
    assert any("loser_id_ended_at" in name for name in used), used
    months = {partitions.partition_name("events", partitions.month_of(t)) for t in (now,)}
    months.add(partitions.partition_name("events", partitions.month_of(ask.since - timedelta(1))))
    names = {n["Relation Name"] for n in planned if n.get("Relation Name", "").startswith("events")}
    assert names and names <= months | {
        partitions.partition_name("events", partitions.next_month(partitions.month_of(now)))
    }, (names, months)


# (batch processed at, its games' first end): is the archived read sent? (``windows.archived``)
ARCHIVED_READ_SENT = [
    (datetime(2026, 11, 20, tzinfo=UTC), datetime(2026, 11, 20, tzinfo=UTC), False),
    (datetime(2026, 11, 9, 1, tzinfo=UTC), datetime(2026, 11, 9, 1, tzinfo=UTC), False),
    (datetime(2026, 11, 8, 23, tzinfo=UTC), datetime(2026, 11, 8, 23, tzinfo=UTC), True),
    (datetime(2026, 11, 1, 1, tzinfo=UTC), datetime(2026, 11, 1, 1, tzinfo=UTC), True),
    (datetime(2026, 11, 20, tzinfo=UTC), datetime(2026, 10, 2, tzinfo=UTC), True),  # a late game
    (datetime(2026, 11, 30, 23, tzinfo=UTC), datetime(2026, 11, 30, 23, tzinfo=UTC), True),
]


def test_a_batch_reads_archived_games_only_where_an_archive_can_have_left_them(runtime):
    """An archive's boundary is the first of a month no later than the archive's (a clock a
    day ahead included), and its games ended at most minutes after it: a batch whose windows
    (a week) all open after that sends no read of them; one that may need them sends one,
    which for a ladder without a checkpoint reads ``checkpoints`` only, never the log."""
    from worker.store import windows

    ids = ["p1", "p2"]
    for now, first, sent in ARCHIVED_READ_SENT:
        ask = WindowAsk("gammon42", first, first, ids, (168, 168), [("p1", "p2")], 24)
        facts = statements.WindowFacts([], [], [], [])
        reads = windows.archived([ask], facts, now)
        assert sent == bool(reads), (now, first)
        after = statements.after_reads({"gammon42": set(ids)}, [], [ask], [], now)
        assert sent == any(read.sql == windows._PG_ARCHIVED for read in after.reads)
    _busy_ladder(runtime)
    (read,) = windows.archived([ask], facts, now)
    relations = {n["Relation Name"] for n in _plan(runtime, read) if "Relation Name" in n}
    assert {"checkpoints"} == relations
    with runtime.engine.connect() as conn:
        assert [] == conn.exec_driver_sql(read.sql, read.params).fetchall()
