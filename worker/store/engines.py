"""The SQLAlchemy engine of the store: its pool, its pings and each session's settings."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import InvalidatePoolError

CONNECT_TIMEOUT_SECONDS = 5
POOL_TIMEOUT_SECONDS = 5


# A pooled connection idle this long is pinged when it is checked out again.
PING_AFTER_IDLE_SECONDS = 1.0
_LAST_USED = "ladder_last_used"


def make_engine(url: str) -> Engine:
    """One engine per process; a connection that sat idle in the pool is pinged when it is
    checked out (``_ping_if_idle``), so a restarted database is noticed, not fatal.

    A connection attempt gives up after 5 s (a server that accepts and stays silent, or is
    frozen), and so does a wait for a free pooled connection: both are outages to callers.
    """
    engine = create_engine(
        url,
        pool_size=5,
        max_overflow=5,
        pool_timeout=POOL_TIMEOUT_SECONDS,
        connect_args={
            "connect_timeout": CONNECT_TIMEOUT_SECONDS,
            "keepalives": 1,
            "keepalives_idle": 10,
            "keepalives_interval": 5,
            "keepalives_count": 3,
        },
    )
    event.listen(engine, "connect", _session_settings)
    event.listen(engine, "connect", _used)  # a fresh connection needs no ping
    event.listen(engine, "checkout", _ping_if_idle(engine))
    event.listen(engine, "checkin", _used)
    return engine


def _ping_if_idle(engine: Engine) -> Any:
    """SQLAlchemy's pre-ping, for connections idle in the pool over ``PING_AFTER_IDLE_SECONDS``
    only: pinging at every checkout cost a busy worker one round trip a batch (9 % of its
    time at 1,000 events/s). A connection that died while in use (the database restarted
    under load) fails its batch as an outage, which is held and tried again; a ping that
    finds a connection gone invalidates the pool, so every older connection is replaced."""

    def ping(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        used = record.info.get(_LAST_USED)
        if used is not None and time.monotonic() - used < PING_AFTER_IDLE_SECONDS:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except engine.dialect.loaded_dbapi.Error as err:
            if engine.dialect.is_disconnect(err, dbapi_connection, None):
                raise InvalidatePoolError() from err
            raise

    return ping


def _used(_dbapi_connection: Any, record: Any) -> None:
    if record is not None:
        record.info[_LAST_USED] = time.monotonic()


def _session_settings(dbapi_connection: Any, _record: Any) -> None:
    """Every session reads timestamps in UTC: the store's own statements get them straight
    from psycopg, and a player's card shows them as ISO 8601 in UTC whatever the server's
    time zone.

    psycopg prepares a statement on the server after its fifth run on a connection, so the
    batch path's constant statements are parsed once per connection. Each run is still
    planned for the tables as they are then: a generic plan, made once while a table was
    small, would stay with the connection after the table has grown (measured: the
    duplicate-event check went from 0.4 ms to 2.6 ms per batch within 3,000 events). It still
    would with the per-key probes of ``worker.store.statements``: on PostgreSQL 15 the generic
    plan of the duplicate check, made after a first ANALYZE of 60 rows, reads the whole table
    for each key, and stays so after the table has grown to 3,060 rows (checked with
    ``force_generic_plan``). Planning each run costs about 1.25 ms of a 6-event batch.

    No JIT compilation: the batch's statements are index probes per key, whose cost the
    planner overestimates when the keys arrive in a JSON document (a set-returning function
    counts as 100 rows), so the window query crossed ``jit_above_cost`` and compiled itself
    in every batch (measured: 80-90 ms of 240 ms for one batch's windows on one hot ladder)."""
    with dbapi_connection.cursor() as cursor:
        cursor.execute("SET TimeZone = 'UTC'")
        cursor.execute("SET plan_cache_mode = force_custom_plan")
        cursor.execute("SET jit = off")
    dbapi_connection.commit()
