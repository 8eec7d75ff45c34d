"""The audit log as the replaying commands read it (``worker.store.log``).

On PostgreSQL a stored game's fields are read one by one on the server and the payload is
not sent; anything else comes as the whole payload. Either way the engine must get the
event that decoding the whole stored payload gives (``records.engine_event``), which is
what the worker scored live: one mapping from the stored form to the engine's events.
"""

from __future__ import annotations

import copy
import threading
from datetime import UTC, datetime
from typing import Any

import pytest
from psycopg.errors import UndefinedTable
from sqlalchemy import insert, literal_column, select, table

from schemas import records
from tests.events import game, link, player_updated, tournament
from worker.store import partitions
from worker.store.cursor import plan_for_every_row
from worker.store.log import audit_rows, event_of, ledger_query, read_rows, stream_log
from worker.store.tables import events, rating_changes

PROCESSED = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _variants() -> list[dict[str, Any]]:
    """Stored payloads: the ordinary ones, every default left out, and every field of a
    game in a JSON type other than the one decoding expects."""
    plain = game("w1", "l1", cube=2, match_length=3, result="gammon")
    plain["winner"].update(is_bot=False, network="net-a")
    plain["loser"].update(is_bot=True)
    bare = game("w2", "l2")  # no cube, match_length, result, is_bot, network
    found = [plain, bare, game("w3", "l3", ladder="fibs", mode="boosted", match_length=7)]
    found += [
        tournament("gammon42", "t-1", ["a", "b", "c"]),
        link("gammon42", "anon-1", "acct-1"),
        player_updated("gammon42", "p-1", True, False),
        game("ü-ßpieler", "l-ñ", event_id="e-ünïcode"),
    ]
    odd: list[tuple[tuple[str, ...], Any]] = [
        (("cube",), 2.0),
        (("cube",), "2"),
        (("cube",), True),
        (("cube",), None),
        (("match_length",), 1.5),
        (("match_length",), [1]),
        (("result",), 3),
        (("result",), None),
        (("mode",), None),
        (("winner", "is_bot"), None),
        (("winner", "is_bot"), "yes"),
        (("loser", "is_bot"), 1),
        (("winner", "network"), None),
        (("loser", "network"), 7),
        (("winner", "player_id"), 12),
        (("ended_at",), 5),
        (("event_id",), 9),
        (("ladder",), ["gammon42"]),
    ]
    for path, value in odd:
        changed = copy.deepcopy(plain)
        here = changed
        for key in path[:-1]:
            here = here[key]
        here[path[-1]] = value
        found.append(changed)
    for missing in ("winner", "mode", "ended_at", "event_id"):
        changed = copy.deepcopy(plain)
        del changed[missing]
        found.append(changed)
    changed = copy.deepcopy(plain)
    changed["winner"] = ["w1"]
    found.append(changed)
    return found


def _decoded(read: Any) -> Any:
    try:
        return read()
    except (KeyError, ValueError, TypeError, AssertionError) as exc:
        return type(exc)


def test_every_stored_payload_reads_as_the_event_its_whole_payload_decodes_to(runtime):
    """SPEC 5: replay applies 'the stored events in their scoring order'; the event read
    from the log's fields equals the one decoded from the whole payload, or both fail."""
    payloads = _variants()
    with runtime.engine.begin() as conn:
        partitions.create(conn, [partitions.month_of(PROCESSED)])  # a month gone by
        for number, payload in enumerate(payloads):
            conn.execute(
                insert(events).values(
                    ladder="gammon42",
                    event_id=f"row-{number}",
                    type=str(payload.get("type")),
                    outcome="rated",
                    ruleset="gammon42",
                    ruleset_version="v1",
                    processed_at=PROCESSED,
                    payload=payload,
                )
            )
    rows = list(audit_rows(runtime.engine, "gammon42"))
    assert len(rows) == len(payloads)
    by_fields = sum(1 for row in rows if row[4] is None)
    assert by_fields == 4  # the four plain games; every other row brought its payload
    for row, payload in zip(rows, payloads, strict=True):
        expected = _decoded(lambda p=payload: records.engine_event(p))
        assert _decoded(lambda r=row: event_of(r)) == expected, payload
    # ``after`` reads on from a scoring number, as a void's second pass does.
    seqs = [row[6] for row in rows]
    later = list(audit_rows(runtime.engine, "gammon42", after=seqs[9]))
    assert [row[6] for row in later] == seqs[10:]
    assert [row for row, _ in stream_log(runtime.engine, "gammon42", after=seqs[9])] == later


def test_a_reader_left_early_stops_its_fetching_thread(runtime):
    """Reading runs a thread ahead of the reader; a reader that stops early (a void that
    finds what it needs, an error) must not leave that thread or its connection behind."""
    query: Any = select(literal_column("generate_series(1, 100000)"))
    before = {t for t in threading.enumerate() if t.name == "ladder-read-ahead"}
    rows = read_rows(runtime.engine, query)
    assert next(rows) == (1,)
    rows.close()  # type: ignore[attr-defined]
    unread = read_rows(runtime.engine, query)
    del unread
    for thread in threading.enumerate():
        if thread.name == "ladder-read-ahead" and thread not in before:
            thread.join(timeout=5)
            assert not thread.is_alive()
    missing: Any = select(literal_column("1")).select_from(table("no_such_table"))
    with pytest.raises(UndefinedTable, match="no_such_table"):
        list(read_rows(runtime.engine, missing))  # the server's error reaches the reader


def _plan_nodes(plan: dict[str, Any]) -> list[str]:
    return [plan["Node Type"], *(n for sub in plan.get("Plans", []) for n in _plan_nodes(sub))]


def test_the_ledger_of_a_ladder_never_analyzed_is_not_read_by_a_nested_loop(runtime):
    """A ladder just ingested, restored or copied has no statistics until autovacuum looks
    at it: every table is estimated at a row or two. The ledger's join with the audit rows
    must still be read in one pass (a hash or merge join), not by a loop over the ledger for
    each audit row, which took 4.3 s for 3,000 events (10 ms in one pass)."""
    count = 400
    with runtime.engine.begin() as conn:
        partitions.create(conn, [partitions.month_of(PROCESSED)])  # a month gone by
        conn.execute(
            insert(events),
            [
                {
                    "ladder": "gammon42",
                    "event_id": f"g-{n}",
                    "type": "game.finished",
                    "outcome": "rated",
                    "ruleset": "gammon42",
                    "ruleset_version": "v1",
                    "processed_at": PROCESSED,
                    "payload": game(f"w{n}", f"l{n}", event_id=f"g-{n}"),
                }
                for n in range(count)
            ],
        )
        conn.execute(
            insert(rating_changes),
            [
                {
                    "ladder": "gammon42",
                    "player_id": f"{side}{n}",
                    "event_id": f"g-{n}",
                    "kind": "game",
                    "rating_before": 1500.0,
                    "rating_after": 1500.0 + delta,
                    "delta": delta,
                    "at": PROCESSED,
                }
                for n in range(count)
                for side, delta in (("w", 8.0), ("l", -8.0))
            ],
        )
    query = ledger_query(runtime.engine, "gammon42")
    with runtime.engine.connect() as conn:
        (analyzed,) = conn.exec_driver_sql(
            "SELECT count(*) FROM pg_stat_user_tables WHERE relname IN ('events', "
            "'rating_changes') AND schemaname = current_schema() AND (last_analyze IS NOT NULL "
            "OR last_autoanalyze IS NOT NULL)"
        ).one()
        assert analyzed == 0  # the state this is about
        compiled = query.compile(dialect=conn.dialect, compile_kwargs={"render_postcompile": True})
        plan_for_every_row(conn)
        driver = conn.connection.driver_connection
        assert driver is not None
        with driver.cursor() as cur:
            cur.execute("EXPLAIN (FORMAT JSON) " + str(compiled), compiled.params)
            ((explained,),) = cur.fetchall()
    nodes = _plan_nodes(explained[0]["Plan"])
    assert "Nested Loop" not in nodes, nodes
    assert {"Hash Join", "Merge Join"} & set(nodes), nodes
    read = list(stream_log(runtime.engine, "gammon42"))
    assert len(read) == count and all(len(ledger) == 2 for _, ledger in read)
