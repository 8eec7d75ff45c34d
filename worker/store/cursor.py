"""Reading many rows: a server-side cursor, with a thread fetching ahead.

Every command that reads a whole ladder (verify, void, backtest, calibrate, rebuild,
reconcile, an import's projection) reads through here, so memory holds a few chunks, not the
table. A thread, started as soon as the reader is made, fetches the next chunk
while the caller works on this one: the server's time to produce rows overlaps the caller's
instead of adding to it (the driver lets go of the interpreter while it waits), and two
readers made together produce their first rows at the same time.
"""

from __future__ import annotations

import queue
import threading
import uuid
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from sqlalchemy.engine import Engine

AHEAD = 2  # chunks a fetching thread may hold ready


def chunks(
    engine: Engine,
    query: Any,
    *,
    size: int,
    binary: bool = True,
    in_index_order: bool = False,
) -> Iterator[Sequence[Sequence[Any]]]:
    """The query's rows, ``size`` at a time (plain tuples).

    ``binary``: numbers and timestamps as the server holds them, nothing to parse.
    ``in_index_order``: the query's order is an index's, to be read as it comes rather than
    sorted first (a sort makes every row before it hands out the first)."""
    return _prefetched(lambda: _server_chunks(engine, query, size, binary, in_index_order))


def rows(
    engine: Engine, query: Any, *, size: int, in_index_order: bool = False
) -> Iterator[Sequence[Any]]:
    """The query's rows one by one, read as ``chunks`` reads them (started now)."""
    return _flat(chunks(engine, query, size=size, in_index_order=in_index_order))


def _flat(parts: Iterator[Sequence[Sequence[Any]]]) -> Iterator[Sequence[Any]]:
    try:
        for part in parts:
            yield from part
    finally:
        close = getattr(parts, "close", None)
        if close is not None:
            close()


def plan_for_every_row(conn: Any, *, in_index_order: bool = False) -> None:
    """Plan the transaction's next reads for reading every row of a ladder's tables.

    A cursor's default plans for the first tenth of the rows. And a table never analyzed yet
    (a ladder just ingested, restored or copied, before autovacuum has looked at it) is
    estimated at a row or two, which turns the ledger's join with the audit rows into a nested
    loop over the whole table for each audit row (3,000 events: 4.3 s instead of 10 ms). A
    whole-ladder read has no use for a nested loop, so it gets none; with ``in_index_order``
    the rows come in the order of the index read, not sorted after it."""
    conn.exec_driver_sql("SET LOCAL cursor_tuple_fraction = 1.0")
    conn.exec_driver_sql("SET LOCAL enable_nestloop = off")
    if in_index_order:
        conn.exec_driver_sql("SET LOCAL enable_sort = off")


def _server_chunks(
    engine: Engine, query: Any, size: int, binary: bool, in_index_order: bool
) -> Iterator[Sequence[Sequence[Any]]]:
    with engine.connect() as conn:
        compiled = query.compile(dialect=conn.dialect, compile_kwargs={"render_postcompile": True})
        driver = conn.connection.driver_connection
        assert driver is not None
        plan_for_every_row(conn, in_index_order=in_index_order)
        name = f"ladder_read_{uuid.uuid4().hex}"
        with driver.cursor(name=name, binary=binary) as cursor:
            cursor.execute(str(compiled), compiled.params)
            while part := cursor.fetchmany(size):
                yield part


_END = object()  # after the last chunk


def _prefetched(
    make: Callable[[], Iterator[Sequence[Sequence[Any]]]],
) -> Iterator[Sequence[Sequence[Any]]]:
    """The chunks of ``make()``, which a thread runs (from now on) up to ``AHEAD`` chunks in
    front of the reader. Its error is raised to the reader; a reader that stops early, or
    never starts, stops the thread."""
    handoff: queue.Queue[Any] = queue.Queue(AHEAD)
    stop = threading.Event()

    def fetch() -> None:
        try:
            for part in make():
                while not stop.is_set():
                    try:
                        handoff.put(part, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            handoff.put(_END)
        except BaseException as exc:  # handed to the reader, raised there
            handoff.put(exc)

    thread = threading.Thread(target=fetch, name="ladder-read-ahead", daemon=True)
    handed = _handed(handoff, stop, thread)
    weakref.finalize(handed, stop.set)  # dropped without being read to the end
    thread.start()
    return handed


def _handed(
    handoff: queue.Queue[Any], stop: threading.Event, thread: threading.Thread
) -> Iterator[Sequence[Sequence[Any]]]:
    try:
        while (part := handoff.get()) is not _END:
            if isinstance(part, BaseException):
                raise part
            yield part
    finally:
        stop.set()
        while thread.is_alive():
            try:
                handoff.get(timeout=0.1)
            except queue.Empty:
                pass
        thread.join()
