"""A batch's receipts in event order, a duplicate's made from its original's stored numbers."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from engine import Decision
from schemas import receipt_bodies as receipts
from worker.store import receipts as stored_receipts


def in_order(
    conn: Any, pending: list[receipts.ReceiptWrite | Decision], now: datetime, ttl_seconds: int
) -> list[receipts.ReceiptWrite]:
    """The batch's receipts in event order; a duplicate's repeats the original's numbers
    (read after this batch's rows are written: the original may be in this batch).

    A duplicate whose original was processed less than the receipt TTL ago and whose key
    is missing lost its receipt to a crash between commit and the Redis write: the
    original's receipt is sent again (``heal``), as the leaderboard is re-projected."""
    duplicates = [r for r in pending if isinstance(r, Decision)]
    found = (
        stored_receipts.originals(conn, {(d.ladder, d.event_id) for d in duplicates})
        if duplicates
        else {}
    )
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
