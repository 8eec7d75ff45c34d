"""A batch's receipts in event order, a duplicate's made from its original's stored numbers."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from engine import Decision
from schemas import receipt_bodies as receipts
from schemas.receipt import Receipt
from worker.store import receipts as stored_receipts


def in_order(
    conn: Any,
    pending: list[receipts.ReceiptWrite | Decision],
    now: datetime,
    ttl_seconds: int,
    known: Mapping[tuple[str, str], Receipt | None],
) -> list[receipts.ReceiptWrite]:
    """The batch's receipts in event order; a duplicate's repeats the original's numbers.
    ``known``: the stored receipts the batch read once its players were locked (those of ids
    applied before it, ``None`` where none is stored); the others are read here, after this
    batch's rows are written (the original may be in this batch).

    A duplicate whose original was processed less than the receipt TTL ago and whose key
    is missing lost its receipt to a crash between commit and the Redis write: the
    original's receipt is sent again (``heal``), as the leaderboard is re-projected."""
    unknown = {(r.ladder, r.event_id) for r in pending if isinstance(r, Decision)} - known.keys()
    found = {**known, **stored_receipts.originals(conn, unknown)} if unknown else known
    ttl = timedelta(seconds=ttl_seconds)
    made = []
    for receipt in pending:
        if not isinstance(receipt, Decision):
            made.append(receipt)
            continue
        duplicate = receipt
        original = found.get((duplicate.ladder, duplicate.event_id))
        if original is None:  # never expected (its row made it a duplicate): nothing moved
            body = receipts.body(duplicate, (), now)
            made.append(
                receipts.ReceiptWrite(
                    duplicate.event_id, duplicate.ladder, body, receipts.DUPLICATE
                )
            )
            continue
        recent = now - datetime.fromisoformat(original["processed_at"]) < ttl
        made.append(
            receipts.ReceiptWrite(
                duplicate.event_id,
                duplicate.ladder,
                receipts.duplicate(original),
                receipts.DUPLICATE,
                heal=original if recent else None,
            )
        )
    return made
