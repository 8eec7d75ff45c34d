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

from tests.events import game, link, player_updated, tournament
from worker.service import records
from worker.store.log import audit_rows, event_of, read_rows, stream_log
from worker.store.tables import events

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
