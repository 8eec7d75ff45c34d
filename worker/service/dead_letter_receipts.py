"""The receipt of a dead-lettered event, as the CLI and the API read it.

Its Redis copy (``worker.boards.receipts``) while it is kept, else built again from the
dead-letter queue (``worker.queue.deadletter``), whose letters are in Redis or archived in
PostgreSQL.
"""

from __future__ import annotations

from typing import cast

from redis import Redis
from sqlalchemy.engine import Engine

from schemas.receipt import Receipt
from worker.boards.receipts import stored
from worker.queue.deadletter import DeadLetters


def dead_letter_receipt(redis: Redis, engine: Engine, ladder: str, event_id: str) -> Receipt | None:
    """The receipt of a dead-lettered event on ``ladder``: its Redis copy while it is kept,
    else built from the dead-letter queue (in Redis or archived in PostgreSQL); None for an
    event that is in neither. A ``RedisError`` is raised, not taken for "in neither": with
    Redis away nobody can say the event was not dead-lettered."""
    copy = stored(redis, event_id)
    if copy is not None and copy.get("outcome") == "dead_lettered":
        if copy.get("ladder") == ladder:
            return cast(Receipt, copy)  # the text the worker wrote from the letter's receipt
    return DeadLetters(redis, ttl_seconds=0, engine=lambda: engine).receipt(ladder, event_id)
