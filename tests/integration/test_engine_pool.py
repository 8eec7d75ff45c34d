"""The PostgreSQL engine's pool pings a connection that sat idle before handing it out again
(so a restarted database is noticed, not fatal), and not one that was used a moment ago (a
busy worker would pay a round trip a batch)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import text

from worker.store import engines
from worker.store.engines import PING_AFTER_IDLE_SECONDS, make_engine


def _pinged(engine: Any, monkeypatch: Any) -> list[object]:
    pings: list[object] = []
    real = engine.dialect.do_ping

    def counted(dbapi_connection: Any) -> bool:
        pings.append(dbapi_connection)
        return bool(real(dbapi_connection))

    monkeypatch.setattr(engine.dialect, "do_ping", counted)
    return pings


def _age(engine: Any, seconds: float) -> None:
    """Make every pooled connection look idle for ``seconds`` more."""
    for record in list(engine.pool._pool.queue):
        record.info[engines._LAST_USED] -= seconds


def test_a_connection_used_a_moment_ago_is_not_pinged_and_an_idle_one_is(database_url, monkeypatch):
    engine = make_engine(database_url)
    pings = _pinged(engine, monkeypatch)
    try:
        for _ in range(3):  # a fresh connection, then the same one at once: no ping
            with engine.connect() as conn:
                assert 1 == conn.execute(text("SELECT 1")).scalar_one()
        assert [] == pings
        _age(engine, PING_AFTER_IDLE_SECONDS + 1)
        with engine.connect() as conn:
            assert 1 == conn.execute(text("SELECT 1")).scalar_one()
        assert 1 == len(pings)
    finally:
        engine.dispose()


def test_an_idle_connection_the_server_closed_is_replaced_on_checkout(database_url):
    """The server ends the pooled session (as a restart would); the next checkout pings,
    finds it gone, invalidates the pool and hands out a new connection: no error."""
    engine = make_engine(database_url)
    admin = make_engine(database_url)
    try:
        with engine.connect() as conn:
            first = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
        with admin.connect() as conn:
            assert conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": first}).scalar()
        _age(engine, PING_AFTER_IDLE_SECONDS + 1)
        with engine.connect() as conn:
            now = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
        assert now != first
    finally:
        admin.dispose()
        engine.dispose()


def test_a_pipelined_statement_fails_as_sqlalchemy_raises_it(runtime):
    """A statement sent in pipeline mode fails as ``exec_driver_sql`` would have raised it:
    a repeated audit row is SQLAlchemy's ``IntegrityError`` (the service retries conflicts
    by that class and SQLSTATE), with the transaction rolled back."""
    from datetime import UTC, datetime

    from sqlalchemy.exc import IntegrityError

    from worker.store import statements

    now = datetime.now(UTC)
    row = {
        "ladder": "gammon42",
        "event_id": "e-1",
        "type": "game.finished",
        "outcome": "rated",
        "reason": None,
        "ruleset": "gammon42",
        "ruleset_version": "1.3.1",
        "ended_at": now,
        "processed_at": now,
        "mode": "ranked",
        "winner_id": "a",
        "loser_id": "b",
        "cube": 1,
        "coefficient": 1.0,
        "match_length": None,
        "payload": {"event_id": "e-1"},
        "digest": None,
    }
    engine = runtime.engine
    with engine.begin() as conn:
        statements.write_batch(conn, [row], [], [], [], [])
    try:
        with engine.begin() as conn:
            statements.write_batch(conn, [row], [], [], [], [])
    except IntegrityError as exc:
        assert "23505" == getattr(exc.orig, "sqlstate", None)
    else:
        raise AssertionError("a repeated audit row was written")
    with engine.connect() as conn:
        assert 1 == conn.execute(text("SELECT count(*) FROM events")).scalar_one()


def test_a_connection_lost_mid_batch_is_an_outage_of_postgresql(runtime, database_url):
    """The server ends the session between two statements of a batch: the pipelined reads
    fail as SQLAlchemy's ``OperationalError`` with the connection invalidated, which the
    worker holds as an outage (``faults.unavailable_store``), and the pool connects anew."""
    from sqlalchemy.exc import OperationalError

    from worker.queue import faults
    from worker.store import statements

    engine = runtime.engine
    admin = make_engine(database_url)
    caught: list[BaseException] = []
    try:
        try:
            with engine.begin() as conn:
                pid = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
                with admin.connect() as other:
                    other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
                try:  # the statement's own failure, before the rollback raises its own
                    after = statements.after_reads(
                        {"gammon42": {"a"}}, [], [], [("gammon42", "e")], datetime.now(UTC)
                    )
                    statements.claim_players(conn, {}, datetime.now(UTC), then=after.reads)
                except OperationalError as exc:
                    caught.append(exc)
                    raise
        except OperationalError:
            pass
        assert caught and getattr(caught[0], "connection_invalidated", False)
        assert faults.POSTGRESQL == faults.unavailable_store(caught[0])
        with engine.connect() as conn:
            assert pid != conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
    finally:
        admin.dispose()
