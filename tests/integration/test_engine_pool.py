"""The PostgreSQL engine's pool pings a connection that sat idle before handing it out again
(so a restarted database is noticed, not fatal), and not one that was used a moment ago (a
busy worker would pay a round trip a batch)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from worker.store import tables
from worker.store.tables import PING_AFTER_IDLE_SECONDS, make_engine


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
        record.info[tables._LAST_USED] -= seconds


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
