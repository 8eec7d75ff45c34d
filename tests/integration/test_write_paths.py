"""A batch's audit and ledger rows go by COPY from ``statements.COPY_ROWS`` rows on, and in one
JSON document below it (``worker.store.statements.write_batch``): both paths store the same
values, to the last bit, in the order the rows were scored."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from worker.store import statements
from worker.store.tables import events, rating_changes

WHEN = datetime(2026, 12, 1, 10, 0, 0, 123456, tzinfo=UTC)


def audit_row(ladder: str, n: int) -> dict[str, Any]:
    odd = n % 2 == 1
    return {
        "ladder": ladder,
        "event_id": f"e\\{n}\tü" if odd else f"e-{n}",  # COPY's escapes: backslash, tab
        "type": "game.finished",
        "outcome": "rated" if odd else "unrated",
        "reason": None if odd else "pair_limit",
        "ruleset": "gammon42",
        "ruleset_version": "1.3.1",
        "ended_at": WHEN + timedelta(seconds=30 * n),
        "processed_at": WHEN.astimezone(timezone(timedelta(hours=-5))),
        "mode": "ranked",
        "winner_id": f"zoë\n{n}" if odd else f"w{n}",
        "loser_id": None if n == 3 else f"l{n}",
        "cube": 2,
        "coefficient": 1 + 2 / 6,
        "match_length": None,
        "payload": {
            "event_id": f"e-{n}",
            "note": 'quote " back \\ slash \t tab, newline \n, ☃',
            "nested": {"list": [1, 2.5, None, True], "big": 2**53 + 1},
        },
        "digest": "0f" * 32,
    }


def ledger_row(ladder: str, n: int) -> dict[str, Any]:
    return {
        "ladder": ladder,
        "player_id": f"p{n % 7}",
        "event_id": f"e-{n // 2}",
        "kind": "game",
        "rating_before": 1500.0 + n / 3,
        "rating_after": 1500.0 + n / 3 + 0.1 + 1e-13,
        "delta": 0.1 + 1e-13,
        "k": 32 if n % 2 else 15.999999999999998,
        "expected": 1e-7 * n,
        "at": WHEN,
        "games": None if n == 4 else n,
        "provisional": None if n == 5 else n % 3 == 0,
    }


def stored(runtime: Any, ladder: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    with runtime.engine.connect() as conn:
        audit = [
            {k: v for k, v in row._mapping.items() if k not in ("ladder", "seq")}
            for row in conn.execute(
                select(events).where(events.c.ladder == ladder).order_by(events.c.seq)
            )
        ]
        changes = [
            {k: v for k, v in row._mapping.items() if k not in ("ladder", "id")}
            for row in conn.execute(
                select(rating_changes)
                .where(rating_changes.c.ladder == ladder)
                .order_by(rating_changes.c.id)
            )
        ]
    return audit, changes


def test_copy_and_the_json_document_store_the_same_rows_in_scoring_order(runtime, monkeypatch):
    count = 30
    copied: list[str] = []
    copy = statements._copy

    def spy(conn: Any, table: Any, columns: Any, rows: list[dict[str, Any]]) -> None:
        copied.extend(f"{table.name}:{row['ladder']}" for row in rows[:1])
        copy(conn, table, columns, rows)

    monkeypatch.setattr(statements, "_copy", spy)
    for ladder, rows_from in (("json", 10**9), ("copy", 1)):
        monkeypatch.setattr(statements, "COPY_ROWS", rows_from)
        with runtime.engine.begin() as conn:
            statements.write_batch(
                conn,
                [audit_row(ladder, n) for n in range(count)],
                [ledger_row(ladder, n) for n in range(2 * count)],
                [],
                [],
                [],
            )
    assert copied == ["events:copy", "rating_changes:copy"]
    by_json, by_copy = stored(runtime, "json"), stored(runtime, "copy")
    assert by_json == by_copy
    audit, changes = by_copy
    assert [row["event_id"] for row in audit] == [audit_row("", n)["event_id"] for n in range(30)]
    assert [row["rating_after"] for row in changes] == [
        ledger_row("", n)["rating_after"] for n in range(60)
    ]
    assert audit[1]["payload"] == audit_row("", 1)["payload"]
    assert audit[0]["processed_at"] == WHEN


def test_a_repeated_audit_row_is_refused_by_copy_as_by_the_insert(runtime, monkeypatch):
    """SPEC 2.4 step 1 rests on it: an event id is stored once per ladder."""
    monkeypatch.setattr(statements, "COPY_ROWS", 1)
    with runtime.engine.begin() as conn:
        statements.write_batch(conn, [audit_row("copy", 2)], [], [], [], [])
    with pytest.raises(IntegrityError) as caught, runtime.engine.begin() as conn:
        statements.write_batch(conn, [audit_row("copy", 2)], [], [], [], [])
    assert "23505" == getattr(caught.value.orig, "sqlstate", None)


def test_an_id_too_long_for_its_column_is_refused_not_cut(runtime, monkeypatch):
    monkeypatch.setattr(statements, "COPY_ROWS", 1)
    row = audit_row("copy", 2) | {"winner_id": "w" * 129}
    with pytest.raises(Exception, match="too long"), runtime.engine.begin() as conn:
        statements.write_batch(conn, [row], [], [], [], [])
    assert stored(runtime, "copy") == ([], [])
