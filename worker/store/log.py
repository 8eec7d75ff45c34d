"""The audit log read in scoring order, for the commands that replay it (``ladder verify``,
``void``, ``backtest``, ``calibrate``).

``stream_log`` yields each audit row of a ladder in scoring order (``events.seq``; SQLite's
rowid) with its ledger rows in written order, from two server-side cursors merged, so memory
holds one chunk, not the history; ``recorded_actions`` the ledger rows that are actions of
their own (season resets, imports); ``read_rows`` any query's rows the same way.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import and_, func, literal_column, select
from sqlalchemy.engine import Engine

from engine.replay import RECORDED_KINDS
from worker.store.tables import events, rating_changes

CHUNK = 5000  # rows per fetch from the server-side cursor
STORED_LEDGER = ("player_id", "kind", "rating_before", "rating_after", "delta", "k", "expected")
RECORDED = [str(kind) for kind in RECORDED_KINDS]


def count_events(engine: Engine, ladder: str) -> int:
    with engine.connect() as conn:
        query = select(func.count()).select_from(events).where(events.c.ladder == ladder)
        return int(conn.execute(query).scalar_one())


def scoring_order(engine: Engine) -> Any:
    """The column that orders a ladder's audit rows as they were scored."""
    return events.c.seq if engine.dialect.name == "postgresql" else literal_column("events.rowid")


def stream_log(engine: Engine, ladder: str) -> Iterator[tuple[Sequence[Any], list[Sequence[Any]]]]:
    """Each audit row in scoring order with its ledger rows in written order: two cursors,
    one over the audit rows and one over the ledger (ordered by its event's place), merged."""
    order = scoring_order(engine)
    audit = (
        select(
            events.c.event_id,
            events.c.outcome,
            events.c.reason,
            events.c.ruleset_version,
            events.c.payload,
            events.c.processed_at,
            order,
        )
        .where(events.c.ladder == ladder)
        .order_by(order)
    )
    joined = rating_changes.join(
        events,
        and_(
            events.c.ladder == rating_changes.c.ladder,
            events.c.event_id == rating_changes.c.event_id,
        ),
    )
    ledger = (
        select(order, *(rating_changes.c[c] for c in STORED_LEDGER))
        .select_from(joined)
        .where(rating_changes.c.ladder == ladder, rating_changes.c.kind.not_in(RECORDED))
        .order_by(order, rating_changes.c.id)
    )
    changes = read_rows(engine, ledger)
    pending = next(changes, None)
    for row in read_rows(engine, audit):
        seq = row[6]
        mine: list[Sequence[Any]] = []
        while pending is not None and pending[0] == seq:
            mine.append(pending[1:])
            pending = next(changes, None)
        yield row, mine


def read_rows(engine: Engine, query: Any) -> Iterator[Sequence[Any]]:
    """The query's rows through a server-side cursor (PostgreSQL) or in chunks (SQLite)."""
    with engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            compiled = query.compile(
                dialect=conn.dialect, compile_kwargs={"render_postcompile": True}
            )
            driver = conn.connection.driver_connection
            assert driver is not None
            # Plan for reading every row (a cursor's default plans for the first tenth, which
            # with stale statistics can turn the join into a nested loop over the ledger).
            conn.exec_driver_sql("SET LOCAL cursor_tuple_fraction = 1.0")
            # Binary rows: numbers and timestamps as the server holds them, nothing to parse.
            name = f"ladder_verify_{uuid.uuid4().hex}"
            with driver.cursor(name=name, binary=True) as cursor:
                cursor.execute(str(compiled), compiled.params)
                while part := cursor.fetchmany(CHUNK):
                    yield from part
            return
        result = conn.execution_options(yield_per=CHUNK).execute(query)
        for part in result.partitions():
            yield from part


def recorded_actions(engine: Engine, ladder: str) -> list[Sequence[Any]]:
    """The ladder's recorded ledger actions (season resets), oldest first."""
    query = (
        select(
            rating_changes.c.event_id,
            rating_changes.c.at,
            *(rating_changes.c[c] for c in STORED_LEDGER),
        )
        .where(rating_changes.c.ladder == ladder, rating_changes.c.kind.in_(RECORDED))
        .order_by(rating_changes.c.id)
    )
    with engine.connect() as conn:
        return [tuple(row) for row in conn.execute(query)]
