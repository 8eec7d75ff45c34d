"""The Python publishing helper: ``RPUSH ladder:inbox``, and optionally wait for receipts.

It does what any game server does with plain Redis commands. With ``wait=True`` it reads the
receipt stream ``ladder:receipts`` from the entry before the first ``RPUSH`` on, so a receipt
cannot slip by between publishing and waiting, and one ``XREAD BLOCK`` serves any number of
events (a wait list per event, ``BLPOP ladder:receipt-wait:<event_id>``, is the other way,
for one event at a time)::

    from redis import Redis
    from worker.queue.publish import publish

    (sent,) = publish(Redis(), [event], wait=True, timeout=2.0)
    sent.receipt  # the receipt as a dict, or None if none arrived within 2 s
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

from redis import Redis

from worker import keys

CHUNK = 1000  # RPUSHes per round trip
READ_COUNT = 1000  # stream entries per XREAD
BLOCK_SECONDS = 1.0  # each XREAD blocks at most this long: well within any socket timeout


@dataclass(frozen=True)
class Published:
    """One event sent: its id (None when the text has no readable ``event_id``, so no receipt
    can be matched to it) and its receipt (None: not waited for, or none arrived in time)."""

    event_id: str | None
    receipt: dict[str, Any] | None = None


def event_id_of(text: str) -> str | None:
    try:
        found = json.loads(text)
    except (ValueError, RecursionError):
        return None
    event_id = found.get("event_id") if isinstance(found, dict) else None
    return event_id if isinstance(event_id, str) else None


def publish(
    redis: Redis,
    events: Iterable[Mapping[str, Any] | str],
    *,
    wait: bool = False,
    timeout: float = 2.0,
    on_receipt: Callable[[Published], None] | None = None,
) -> list[Published]:
    """``RPUSH`` each event (a dict, or its JSON text) onto the inbox, in order.

    ``wait``: then wait up to ``timeout`` seconds after the last one is sent for every
    event's receipt; ``on_receipt`` is called for each as it arrives. The result lists the
    events in the order given."""
    start = _last_id(redis) if wait else "0-0"
    texts = [e if isinstance(e, str) else json.dumps(e, ensure_ascii=False) for e in events]
    sent = [Published(event_id_of(text)) for text in texts]
    with redis.pipeline(transaction=False) as pipe:
        for i, text in enumerate(texts, 1):
            pipe.rpush(keys.INBOX, text)
            if i % CHUNK == 0:
                pipe.execute()
        pipe.execute()
    if not wait:
        return sent
    # An event id sent twice gets two receipts (the second a duplicate's): one each, in order.
    pending: dict[str, deque[int]] = {}
    for index, item in enumerate(sent):
        if item.event_id is not None:
            pending.setdefault(item.event_id, deque()).append(index)
    for receipt in receipts_after(redis, start, time.monotonic() + timeout, pending):
        event_id = str(receipt.get("event_id"))
        waiting = pending[event_id]
        index = waiting.popleft()
        if not waiting:
            del pending[event_id]
        sent[index] = Published(sent[index].event_id, receipt)
        if on_receipt is not None:
            on_receipt(sent[index])
    return sent


def receipts_after(
    redis: Redis, start: str, deadline: float, wanted: Mapping[str, object]
) -> Iterator[dict[str, Any]]:
    """Receipts on the stream after ``start`` whose event id is in ``wanted`` (read again
    each time: the caller removes the ones it has), until none is left or ``deadline``."""
    last = start
    while wanted:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        block = max(1, int(min(left, BLOCK_SECONDS) * 1000))
        reply = redis.xread({keys.RECEIPTS: last}, count=READ_COUNT, block=block)
        for _, entries in cast(list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]], reply):
            for entry_id, fields in entries:
                last = entry_id.decode()
                receipt = json.loads(fields[b"receipt"])
                if isinstance(receipt, dict) and receipt.get("event_id") in wanted:
                    yield receipt


def _last_id(redis: Redis) -> str:
    """The id of the stream's newest entry ("0-0" when it is empty)."""
    newest = cast(list[tuple[bytes, Any]], redis.xrevrange(keys.RECEIPTS, count=1))
    return newest[0][0].decode() if newest else "0-0"
