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

from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import Select, select, tuple_
from sqlalchemy.engine import Connection, Engine

from schemas import receipt_bodies as receipts
from schemas.receipt import Receipt, ReceiptOutcome
from worker.store.log import RECEIPT_LEDGER, ShownLedgerRow, ledger_query, merged, read_rows
from worker.store.statements import chunks
from worker.store.tables import event_effects, events, rating_changes

_EVENT_COLUMNS = (
    events.c.ladder,
    events.c.event_id,
    events.c.type,
    events.c.outcome,
    events.c.reason,
    events.c.ruleset_version,
    events.c.processed_at,
)
_CHANGE_COLUMNS = (
    rating_changes.c.ladder,
    rating_changes.c.event_id,
    rating_changes.c.player_id,
    rating_changes.c.rating_before,
    rating_changes.c.rating_after,
    rating_changes.c.delta,
    rating_changes.c.k,
    rating_changes.c.expected,
    rating_changes.c.games,
    rating_changes.c.provisional,
    rating_changes.c.deviation,
    rating_changes.c.volatility,
)


def originals(conn: Connection, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Receipt]:
    """The stored receipts of these (ladder, event_id) keys; keys not stored are absent."""
    found: dict[tuple[str, str], Receipt] = {}
    for part in chunks(sorted(set(keys))):
        wanted = list(part)
        rows = conn.execute(
            select(*_EVENT_COLUMNS).where(tuple_(events.c.ladder, events.c.event_id).in_(wanted))
        )
        heads = {(r.ladder, r.event_id): r for r in rows}
        if not heads:
            continue
        ledger: dict[tuple[str, str], list[Any]] = {}
        for row in conn.execute(ledger_of(list(heads))):
            ledger.setdefault((row.ladder, row.event_id), []).append(row)
        moderated = _effects(conn, list(heads))
        for key, head in heads.items():
            made = receipts.from_rows(head, ledger.get(key, []))
            effect = moderated.get(key)
            if effect is not None:
                made = receipts.moderated(made, *effect)
            found[key] = made
    return found


class Head(NamedTuple):
    """An audit row as its receipt reads it (``receipt_log``; ``receipts.from_rows``)."""

    ladder: str
    event_id: str
    type: str
    outcome: str
    reason: str | None
    ruleset_version: str | None
    processed_at: datetime
    seq: int


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


def ledger_of(keys: list[tuple[str, str]]) -> Select[Any]:
    """The ledger rows of these (ladder, event_id) keys, in ledger order: probes of the
    ``rating_changes_event`` index, whatever the ladder's ledger holds."""
    return (
        select(*_CHANGE_COLUMNS)
        .where(tuple_(rating_changes.c.ladder, rating_changes.c.event_id).in_(keys))
        .order_by(rating_changes.c.id)
    )


def _effects(
    conn: Connection, keys: list[tuple[str, str]]
) -> dict[tuple[str, str], tuple[ReceiptOutcome, str | None]]:
    """The outcome (and reason) the latest void gave each of these events, where one did."""
    query = (
        select(
            event_effects.c.ladder,
            event_effects.c.event_id,
            event_effects.c.outcome,
            event_effects.c.reason,
        )
        .where(tuple_(event_effects.c.ladder, event_effects.c.event_id).in_(keys))
        .order_by(event_effects.c.action_id)
    )
    return {(a, e): (o, r) for a, e, o, r in conn.execute(query)}


def stored_receipt(engine: Engine, ladder: str, event_id: str) -> Receipt | None:
    """One event's receipt from PostgreSQL, or None when the ladder never applied it."""
    with engine.connect() as conn:
        return originals(conn, [(ladder, event_id)]).get((ladder, event_id))
