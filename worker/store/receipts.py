"""Receipts read back from the audit store: an ``events`` row and its ledger rows.

``receipt_log`` streams what a ladder's receipts are made of, in scoring order, as
``ladder verify`` compares the kept ones (``worker.ops.keptreceipts``).

Used for a duplicate (it repeats the original's numbers) and for ``GET
/ladders/{ladder}/events/{event_id}`` / ``ladder event``, which work after the Redis copy
of a receipt expired. The outcome is the event's as moderation left it (its latest
``event_effects`` row): a voided game's receipt says ``voided`` and lists no players. The
ledger rows are the event's own (the log is append-only: a void adds correction rows and
rewrites no event's), so the re-rated numbers of a later game are those of its Redis copy,
which the void rewrote, while that copy is kept (``schemas.receipt_bodies.with_ranks``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import select
from sqlalchemy.engine import Connection, Engine

from schemas import receipt_bodies as receipts
from schemas.receipt import Receipt
from worker.store.driver import KEYS, Read, run_all, split
from worker.store.log import RECEIPT_LEDGER, ShownLedgerRow, ledger_query, merged, read_rows
from worker.store.tables import events


class Head(NamedTuple):
    """An audit row as its receipt reads it (``receipt_log``, ``originals``;
    ``receipts.from_rows``)."""

    ladder: str
    event_id: str
    type: str
    outcome: str
    reason: str | None
    ruleset_version: str | None
    processed_at: datetime
    seq: int


class _Change(NamedTuple):
    """A ledger row as a receipt read back from the store shows it."""

    ladder: str
    event_id: str
    player_id: str
    rating_before: float
    rating_after: float
    delta: float
    k: float | None
    expected: float | None
    games: int | None
    provisional: bool | None
    deviation: float | None
    volatility: float | None


def _by_key(table: str, columns: Sequence[str], order: str = "") -> str:
    """``columns`` of ``table``'s rows of the keys: one lateral probe per key (``OFFSET 0``
    keeps it from being flattened into a join), ordered by ``order``."""
    names = ", ".join(columns)
    shown = ", ".join(f"r.{name}" for name in columns)
    inner = f"{names}, {order}" if order else names
    return (
        f"SELECT {shown} FROM {KEYS} AS k(ladder, event_id) CROSS JOIN LATERAL (\n"
        f"  SELECT {inner} FROM {table}\n"
        f"  WHERE ladder = k.ladder AND event_id = k.event_id OFFSET 0) AS r"
        + (f"\nORDER BY r.{order}" if order else "")
    )


_PG_HEADS = _by_key("events", Head._fields)
_PG_LEDGER = _by_key("rating_changes", _Change._fields, "id")
_PG_EFFECTS = _by_key("event_effects", ("ladder", "event_id", "outcome", "reason"), "action_id")


def originals(conn: Connection, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Receipt]:
    """The stored receipts of these (ladder, event_id) keys; keys not stored are absent. One
    round trip (``original_reads``)."""
    wanted = sorted(set(keys))
    return made_originals(run_all(conn, original_reads(wanted))) if wanted else {}


def original_reads(keys: Iterable[tuple[str, str]]) -> list[Read[Any]]:
    """What the receipts of these keys are made of: their audit rows, their ledger rows (in
    ledger order) and the moderation effects on them (oldest first), each read by one index
    probe per key, whatever the log holds; ``made_originals`` makes the receipts of their
    results. A batch sends them beside its reads once its players are locked
    (``worker.store.statements.after_reads``)."""
    params = split(keys)
    return [
        Read(_PG_HEADS, params, lambda rows: [Head._make(r) for r in rows]),
        Read(_PG_LEDGER, params, lambda rows: [_Change._make(r) for r in rows]),
        Read(_PG_EFFECTS, params, list),
    ]


def made_originals(results: Sequence[Any]) -> dict[tuple[str, str], Receipt]:
    """The receipts made of ``original_reads``' results, by (ladder, event_id)."""
    heads, changes, effects = results
    ledger: dict[tuple[str, str], list[Any]] = {}
    for row in changes:
        ledger.setdefault((row.ladder, row.event_id), []).append(row)
    moderated = {(a, e): (o, r) for a, e, o, r in effects}  # the latest void's, by action id
    found: dict[tuple[str, str], Receipt] = {}
    for head in heads:
        key = (head.ladder, head.event_id)
        made = receipts.from_rows(head, ledger.get(key, []))
        effect = moderated.get(key)
        found[key] = made if effect is None else receipts.moderated(made, *effect)
    return found


def receipt_log(
    engine: Engine, ladder: str, after: int = 0, *, since: datetime | None = None
) -> Iterator[tuple[Head, list[Any]]]:
    """``stream_log`` of what the events' receipts are made of: each audit row numbered after
    ``after`` as its receipt reads it (``Head``: no payload) with its ledger rows
    (``ShownLedgerRow``), so much less for the server to read than the whole events."""
    changes = read_rows(engine, ledger_query(engine, ladder, after, RECEIPT_LEDGER, since=since))
    query = (
        select(*(events.c[name] for name in Head._fields))
        .where(events.c.ladder == ladder, events.c.seq > after)
        .order_by(events.c.seq)
    )
    heads = map(Head._make, read_rows(engine, query, in_index_order=True))
    yield from merged(heads, changes, ShownLedgerRow)


def stored_receipt(engine: Engine, ladder: str, event_id: str) -> Receipt | None:
    """One event's receipt from PostgreSQL, or None when the ladder never applied it."""
    with engine.connect() as conn:
        return originals(conn, [(ladder, event_id)]).get((ladder, event_id))
