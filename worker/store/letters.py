"""Dead letters as records: what one refused event is, which ones an operator means, and the
ids a payload that may not be valid carries. Shared by the Redis side (``deadletter``) and the
PostgreSQL archive (``worker.store.archive``).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from schemas import InvalidEvent, oversized
from schemas import receipt_bodies as receipts

PAYLOAD_BYTES = 65536  # a dead letter keeps at most this much of a payload, plus its digest


class AmbiguousReference(LookupError):
    """An event id names more than one dead letter: the operator must pick a dead-letter id."""

    def __init__(self, reference: str, ids: list[str]) -> None:
        super().__init__(f"{reference!r} names {len(ids)} dead letters: {', '.join(ids)}")
        self.reference = reference
        self.ids = ids


def dead_letter_id(raw: str | bytes) -> str:
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    return "ladder-dead-" + hashlib.sha256(data).hexdigest()[:32]


@dataclass(frozen=True)
class DeadLetter:
    id: str
    event_id: str | None
    ladder: str | None
    reason: str
    detail: str
    failed_at: datetime | None
    attempts: int
    payload: str

    def age(self, now: datetime) -> timedelta | None:
        return now - self.failed_at if self.failed_at else None

    def as_json(self, now: datetime) -> dict[str, Any]:
        age = (now - self.failed_at).total_seconds() if self.failed_at else None
        return {
            "id": self.id,
            "event_id": self.event_id,
            "ladder": self.ladder,
            "reason": self.reason,
            "detail": self.detail,
            "failed_at": self.failed_at.isoformat() if self.failed_at else None,
            "age_seconds": round(age, 1) if age is not None else None,
            "attempts": self.attempts,
        }


@dataclass(frozen=True)
class Filter:
    """Which dead letters an operator means: every given condition must hold."""

    reason: str | None = None
    ladder: str | None = None
    older_than: timedelta | None = None
    newer_than: timedelta | None = None

    def matches(self, letter: DeadLetter, now: datetime) -> bool:
        if self.reason is not None and letter.reason != self.reason:
            return False
        if self.ladder is not None and letter.ladder != self.ladder:
            return False
        age = letter.age(now)
        if self.older_than is not None and (age is None or age < self.older_than):
            return False
        return not (self.newer_than is not None and (age is None or age > self.newer_than))

    @property
    def empty(self) -> bool:
        return self == Filter()


def aware(when: datetime | None) -> datetime | None:
    if when is not None and when.tzinfo is None:
        return when.replace(tzinfo=UTC)
    return when


_FIELD = {
    name: re.compile(rf'"{name}"\s*:\s*"([^"\\]{{1,128}})"') for name in ("event_id", "ladder")
}


def guess_head(payload: str) -> dict[str, Any]:
    """An oversized payload is not parsed: its ids are looked for in its first 64 KiB."""
    head = payload[:PAYLOAD_BYTES]
    found = {name: pattern.search(head) for name, pattern in _FIELD.items()}
    return {name: match.group(1) for name, match in found.items() if match}


def guess_type(payload: str) -> str | None:
    """The ``type`` of a payload that may not be a valid event (None when unreadable)."""
    if len(payload) > PAYLOAD_BYTES:
        return None
    try:
        data = json.loads(payload)
    except (TypeError, ValueError, RecursionError):
        return None
    found = data.get("type") if isinstance(data, dict) else None
    return found if isinstance(found, str) and len(found) <= 64 else None


def guess_ids(payload: Any) -> dict[str, Any]:
    """``event_id`` and ``ladder`` of a payload that may not be a valid event (or {})."""
    try:
        data = json.loads(payload)
    except (TypeError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: data[k] for k in ("event_id", "ladder") if isinstance(data.get(k), str)}


TRACEBACK_CHARS = 20000
EVENT_ID_CHARS = 128  # SPEC 3: event_id is 1-128 characters


def filed(
    raw: str | bytes, error: InvalidEvent, traceback: str, attempts: int
) -> tuple[str, dict[str, Any]]:
    """What a dead letter keeps of an event: its payload (the first ``PAYLOAD_BYTES`` of an
    oversized one, with its size and digest) and its meta (reason, detail, the ids as far as
    they could be read, when, attempts, traceback)."""
    payload = raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
    whole = len(payload) <= PAYLOAD_BYTES and not payload.startswith(oversized.MARK)
    guessed = guess_ids(payload) if whole else guess_head(payload)  # else: its head
    data = payload.encode("utf-8", "surrogatepass")
    kept: dict[str, Any] = {}
    if len(data) > PAYLOAD_BYTES:  # oversized: its head and what identifies it
        kept = {"payload_bytes": len(data), "payload_sha256": hashlib.sha256(data).hexdigest()}
        payload = data[:PAYLOAD_BYTES].decode("utf-8", "ignore")
    return payload, {
        "reason": error.reason,
        "detail": error.detail,
        "event_id": error.event_id or guessed.get("event_id"),
        "ladder": error.ladder or guessed.get("ladder"),
        "dead_lettered_at": datetime.now(UTC).isoformat(),
        "attempts": attempts,
        # RQ 3 keeps a registry entry's exc_string only in results; keep ours here.
        "traceback": (traceback or str(error))[-TRACEBACK_CHARS:],
        **kept,
    }


def receipt_of(payload: str, meta: dict[str, Any], error: InvalidEvent) -> receipts.ReceiptWrite:
    """A dead letter's receipt: ``event_id``, ``ladder`` and ``type`` as far as they could be
    read (an id that is no valid event id gets the stream entry only)."""
    event_id = meta.get("event_id")
    if not isinstance(event_id, str) or not 1 <= len(event_id) <= EVENT_ID_CHARS:
        event_id = None
    ladder = meta.get("ladder")
    body = receipts.dead_lettered(
        event_id,
        ladder if isinstance(ladder, str) else None,
        guess_type(payload),
        error.reason,
        error.detail,
        datetime.now(UTC),
    )
    return receipts.ReceiptWrite(event_id, None, body, receipts.DEAD_LETTER)
