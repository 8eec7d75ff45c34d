"""The batch's own psycopg connection: reads sent in pipeline mode, failures raised as
SQLAlchemy raises them, key sets as arrays.

A read is a statement, its parameters and what its rows make, so that one read runs alone
or beside others in one round trip (``worker.store.statements.after_reads``).
"""

from __future__ import annotations

import select
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

T = TypeVar("T")


def split(keys: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Sorted (ladder, id) pairs as two parallel lists, each one text (``listed``), as ``KEYS``
    reads them: ``{"ladders": ..., "ids": ...}``."""
    ordered = sorted(set(keys))
    return {"ladders": listed(a for a, _ in ordered), "ids": listed(b for _, b in ordered)}


# A list of texts goes as one text, its items separated by the unit separator, and the server
# splits it (``string_to_array``): psycopg dumps an array item by item in Python, even in
# binary (measured: two arrays of 1,300 ids, 0.69-0.87 -> 0.11-0.13 ms of client CPU a
# statement). No ladder name or id holds a control character (``schemas.events``); ``listed``
# checks.
SEPARATOR = "\x1f"
_SPLIT = "string_to_array(%({})s, E'\\x1F')"
KEYS = f"unnest({_SPLIT.format('ladders')}, {_SPLIT.format('ids')})"


def items(name: str) -> str:
    """The SQL of the text[] that the parameter ``name`` (``listed``) holds."""
    return _SPLIT.format(name)


def listed(values: Iterable[str]) -> str:
    """``values`` as one text for ``items``: each separated by ``SEPARATOR``. An empty value
    (the server would read none) or one holding the separator is refused: it would be read as
    another list."""
    texts = list(values)
    text = SEPARATOR.join(texts)
    if text.count(SEPARATOR) != max(len(texts) - 1, 0) or "" in texts:
        raise ValueError("a listed value is empty or holds a \\x1f byte")
    return text


@dataclass(frozen=True)
class Read(Generic[T]):
    sql: str
    params: dict[str, Any]
    make: Callable[[Sequence[Any]], T]


def run_all(conn: Connection, reads: Sequence[Read[Any]]) -> list[Any]:
    """``reads`` in one round trip, each made from its rows. As a transaction's first
    statements, psycopg sends its BEGIN along with them, not in a round trip of its own."""
    with pipeline(conn) as driver:
        cursors = [driver.execute(read.sql, read.params) for read in reads]
    return [read.make(cursor.fetchall()) for read, cursor in zip(reads, cursors, strict=True)]


def connection_of(conn: Connection) -> Any:
    """The batch's own psycopg connection (so inside its transaction)."""
    driver = conn.connection.driver_connection
    assert driver is not None
    return driver


@contextmanager
def pipeline(conn: Connection) -> Iterator[Any]:
    """The batch's psycopg connection in pipeline mode: statements sent without waiting for
    each other's results, all received when the block ends (one round trip). A failure is
    raised as by ``driver_errors``."""
    with driver_errors(conn) as driver, driver.pipeline():
        yield driver


def sent(driver: Any) -> None:
    """Everything queued on ``driver`` (a connection in pipeline mode) written to the
    server's socket, without waiting for any result: the server runs it meanwhile."""
    pgconn = driver.pgconn
    while pgconn.flush():
        select.select([], [pgconn.socket], [])


@contextmanager
def driver_errors(conn: Connection) -> Iterator[Any]:
    """The batch's psycopg connection, used directly. A failure is raised as SQLAlchemy
    raises it from ``exec_driver_sql`` (``IntegrityError``, ``OperationalError``...), so the
    service tells conflicts and outages apart as for any other statement; a lost connection
    is invalidated."""
    dialect = conn.dialect
    error = dialect.loaded_dbapi.Error
    driver = connection_of(conn)
    try:
        yield driver
    except error as exc:
        lost = bool(dialect.is_disconnect(exc, driver, None))
        if lost:
            conn.invalidate(exc)
        raise DBAPIError.instance(
            None, None, exc, error, connection_invalidated=lost, dialect=dialect
        ) from exc
