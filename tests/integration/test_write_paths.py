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
from worker.store.tables import (
    events,
    game_players,
    links,
    players,
    rating_changes,
    tournaments,
)

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
        "deviation": None if n % 2 else 100.0 + n,
        "volatility": None if n % 2 else 0.06,
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

    def spy(conn: Any, into: Any, rows: list[dict[str, Any]]) -> None:
        copied.extend(f"{into.table}:{row['ladder']}" for row in rows[:1])
        copy(conn, into, rows)

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


def link_row(ladder: str, n: int) -> dict[str, Any]:
    return {
        "ladder": ladder,
        "anonymous_id": f"guest-{n}",
        "account_id": f"acct-{n}",
        "event_id": f"link-{n}",
        "adopted": n % 2 == 0,
        "linked_at": WHEN,
    }


def tournament_row(ladder: str, n: int) -> dict[str, Any]:
    return {
        "ladder": ladder,
        "tournament_id": f"cup-{n}",
        "event_id": f"t-{n}",
        "public": n == 0,
        "settled_at": WHEN + timedelta(hours=n),
    }


def stored_side_rows(runtime: Any, ladder: str) -> tuple[list[Any], list[Any]]:
    with runtime.engine.connect() as conn:
        return (
            [
                tuple(row)[1:]
                for row in conn.execute(
                    select(links).where(links.c.ladder == ladder).order_by(links.c.anonymous_id)
                )
            ],
            [
                tuple(row)[1:]
                for row in conn.execute(
                    select(tournaments)
                    .where(tournaments.c.ladder == ladder)
                    .order_by(tournaments.c.tournament_id)
                )
            ],
        )


@pytest.mark.parametrize("rows_from", [10**9, 1], ids=["json", "copy"])
def test_a_batch_with_links_and_tournaments_writes_them_on_either_path(
    runtime, monkeypatch, rows_from
):
    """Links and settled tournaments go with the batch's other rows, and a large batch that
    carries them still sends its audit and ledger rows by COPY."""
    monkeypatch.setattr(statements, "COPY_ROWS", rows_from)
    copied: list[str] = []
    copy = statements._copy

    def spy(conn: Any, into: Any, rows: list[dict[str, Any]]) -> None:
        copied.append(into.table)
        copy(conn, into, rows)

    monkeypatch.setattr(statements, "_copy", spy)
    with runtime.engine.begin() as conn:
        statements.write_batch(
            conn,
            [audit_row("side", n) for n in range(3)],
            [ledger_row("side", n) for n in range(6)],
            [],
            [link_row("side", n) for n in range(2)],
            [tournament_row("side", n) for n in range(2)],
            commit=True,
        )
    assert copied == ([] if rows_from > 1 else ["events", "rating_changes"])
    audit, changes = stored(runtime, "side")
    assert [row["event_id"] for row in audit] == [audit_row("", n)["event_id"] for n in range(3)]
    assert len(changes) == 6
    assert stored_side_rows(runtime, "side") == (
        [tuple(link_row("side", n).values())[1:] for n in range(2)],
        [tuple(tournament_row("side", n).values())[1:] for n in range(2)],
    )


@pytest.mark.parametrize("rows_from", [10**9, 1], ids=["json", "copy"])
def test_an_account_linked_twice_is_a_conflict_and_the_batch_writes_nothing(
    runtime, monkeypatch, rows_from
):
    """SPEC 2: "an anonymous id can be linked **once**, to **one** account". The engine
    refuses a second link it can see; one committed by another worker meanwhile meets the
    table's constraint: an integrity error (the service retries the batch with the new lock
    set), and the batch's other rows go with it."""
    monkeypatch.setattr(statements, "COPY_ROWS", rows_from)
    with runtime.engine.begin() as conn:
        statements.write_batch(conn, [], [], [], [link_row("twice", 1)], [], commit=True)
    again = link_row("twice", 1) | {"anonymous_id": "guest-other"}
    with pytest.raises(IntegrityError) as caught, runtime.engine.begin() as conn:
        statements.write_batch(
            conn, [audit_row("twice", 4)], [ledger_row("twice", 4)], [], [again], [], commit=True
        )
    assert "23505" == getattr(caught.value.orig, "sqlstate", None)
    assert stored(runtime, "twice") == ([], [])
    assert stored_side_rows(runtime, "twice") == ([tuple(link_row("twice", 1).values())[1:]], [])
    with runtime.engine.connect() as conn:
        assert conn.execute(select(players).where(players.c.ladder == "twice")).all() == []


def seat_row(ladder: str, n: int) -> dict[str, Any]:
    return {
        "ladder": ladder,
        "player_id": f"zoë\\{n}\t" if n % 2 else f"p{n}",  # COPY's escapes again
        "event_id": f"team-{n // 4}",
        "rank": 1 + n % 4,
        "teams": 4,
        "draw": n >= 8,
        "ended_at": WHEN - timedelta(minutes=n),
        "processed_at": WHEN.astimezone(timezone(timedelta(hours=2))),
    }


@pytest.mark.parametrize("rows_from", [10**9, 1], ids=["json", "copy"])
def test_the_players_of_draws_and_team_games_are_written_on_either_path(
    runtime, monkeypatch, rows_from
):
    """``game_players`` rows go with the batch's other rows: in its JSON document, or by COPY
    with its audit and ledger rows in a large batch, the same values either way."""
    monkeypatch.setattr(statements, "COPY_ROWS", rows_from)
    copied: list[str] = []
    copy = statements._copy

    def spy(conn: Any, into: Any, rows: list[dict[str, Any]]) -> None:
        copied.extend([into.table] if rows else [])
        copy(conn, into, rows)

    monkeypatch.setattr(statements, "_copy", spy)
    with runtime.engine.begin() as conn:
        statements.write_batch(
            conn,
            [audit_row("seats", n) for n in range(3)],
            [],
            [],
            [],
            [],
            seat_rows=[seat_row("seats", n) for n in range(12)],
            commit=True,
        )
    assert copied == ([] if rows_from > 1 else ["events", "game_players"])
    with runtime.engine.connect() as conn:
        found = conn.execute(
            select(game_players)
            .where(game_players.c.ladder == "seats")
            .order_by(game_players.c.event_id, game_players.c.rank)
        )
        assert [dict(row._mapping) for row in found] == [seat_row("seats", n) for n in range(12)]
