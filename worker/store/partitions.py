"""The audit log's monthly partitions: ``events`` by ``processed_at``, ``rating_changes`` by ``at``.

Both tables are partitioned by range, one partition a month (``events_2026_12``,
``rating_changes_2026_12``: [first day of the month, first day of the next) in UTC). The key is
the time a row was written, not a game's ``ended_at``: the scoring order (``events.seq``)
follows it, so every event of an archived month was scored before every event left
(``worker.ops.archiving``), and an event that arrives late lands in the month it is scored.
A batch's audit and ledger rows share its ``now``, so they land in the same month.

Partitions are made ahead: ``ladder migrate`` and every command that checks the schema
make this month's and the next ``MONTHS_AHEAD``; a worker makes its batch's month before
writing to it when it has not seen it yet (``ready``), which in practice is at most
once a month a process: by then the month was made ahead. There is no DEFAULT partition: a
row for a month without its partition fails its batch (held and tried again, by which time
``ready`` made the month), where a DEFAULT partition would take it silently and then refuse
the month's partition until its rows were moved out by hand.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import UTC, date, datetime

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

# Partitioned table -> its partition key.
PARTITIONED = {"events": "processed_at", "rating_changes": "at"}
MONTHS_AHEAD = 2  # months made ahead of the current one
ARCHIVED_PREFIX = "archived_"  # a detached partition's new name: archived_events_2025_11
# Held while partitions are made, so two processes never make one at once.
_LOCK_KEY = 0x6C616464  # "ladd"

_known: set[tuple[str, date]] = set()  # (database URL, month) made or seen by this process
_known_lock = threading.Lock()


def month_of(at: datetime | date) -> date:
    """The first day of ``at``'s month (UTC)."""
    if isinstance(at, datetime):
        at = at.astimezone(UTC) if at.tzinfo is not None else at
    return date(at.year, at.month, 1)


def next_month(month: date, count: int = 1) -> date:
    index = month.year * 12 + month.month - 1 + count
    return date(index // 12, index % 12 + 1, 1)


def partition_name(table: str, month: date) -> str:
    return f"{table}_{month:%Y_%m}"


def parse_month(value: str) -> date:
    """``YYYY-MM`` as the first day of that month (ValueError when it is not one)."""
    try:
        found = datetime.strptime(value, "%Y-%m")
    except ValueError:
        raise ValueError(f"{value!r} is not a month written YYYY-MM") from None
    return date(found.year, found.month, 1)


def create(conn: Connection, months: Iterable[date]) -> list[str]:
    """Make each table's partition for each month that has none (an archived month is made
    again, empty: its old rows stay in their ``archived_`` table); returns the names made.
    Runs under a transaction-level advisory lock, so concurrent callers make each once."""
    wanted = sorted(set(months))
    if not wanted:
        return []
    conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
    made: list[str] = []
    for table in PARTITIONED:
        for month in wanted:
            name = partition_name(table, month)
            exists = conn.execute(text("SELECT to_regclass(:name)"), {"name": name}).scalar()
            if exists is not None:
                continue
            start, end = month, next_month(month)
            conn.execute(
                text(
                    f'CREATE TABLE "{name}" PARTITION OF {table} FOR VALUES '
                    f"FROM ('{start.isoformat()} 00:00:00+00') TO ('{end.isoformat()} 00:00:00+00')"
                )
            )
            made.append(name)
    return made


def ahead(now: datetime) -> list[date]:
    """The months made ahead at ``now``: the current one and ``MONTHS_AHEAD`` after it."""
    first = month_of(now)
    return [next_month(first, n) for n in range(MONTHS_AHEAD + 1)]


def ensure_ahead(engine: Engine, now: datetime | None = None) -> list[str]:
    """Make the partitions of the current month and the months ahead that are missing."""
    months = ahead(now or datetime.now(UTC))
    key = str(engine.url)
    with _known_lock:
        if all((key, m) in _known for m in months):
            return []
    with engine.begin() as conn:
        made = create(conn, months)
    with _known_lock:
        _known.update((key, m) for m in months)
    return made


def ready(engine: Engine, now: datetime) -> None:
    """Before a batch processed at ``now`` writes: its month's partitions exist (checked
    once a month a process; made, with the months ahead, when missing)."""
    if (str(engine.url), month_of(now)) not in _known:
        ensure_ahead(engine, now)


def forget() -> None:
    """Forget what this process knows of partitions (for tests that drop them)."""
    with _known_lock:
        _known.clear()


def attached(conn: Connection, table: str) -> list[tuple[str, date]]:
    """The table's partitions (name, month), oldest first."""
    rows = conn.execute(
        text(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = to_regclass(:table)"
        ),
        {"table": table},
    )
    found = []
    for (name,) in rows:
        suffix = str(name)[len(table) + 1 :]
        try:
            found.append((str(name), datetime.strptime(suffix, "%Y_%m").date()))
        except ValueError:
            continue  # a partition not made here (none is): not one of the months
    return sorted(found, key=lambda item: item[1])


def detach(conn: Connection, before: date) -> list[str]:
    """Detach every partition of a month before ``before`` from both tables and rename it
    ``archived_<name>`` (a standalone table, kept until an operator drops it); returns the new
    names. Takes a short ACCESS EXCLUSIVE lock on each table, in the caller's transaction."""
    moved: list[str] = []
    for table in PARTITIONED:
        for name, month in attached(conn, table):
            if month >= before:
                continue
            conn.execute(text(f'ALTER TABLE {table} DETACH PARTITION "{name}"'))
            archived = ARCHIVED_PREFIX + name
            conn.execute(text(f'ALTER TABLE "{name}" RENAME TO "{archived}"'))
            moved.append(archived)
    return moved
