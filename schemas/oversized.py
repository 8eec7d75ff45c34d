"""An event too large to take: refused by its size alone, never read whole by a worker.

The inbox's claim (``claim.lua``) replaces an element over ``LADDER_MAX_EVENT_BYTES`` by
``MARK``, its size in bytes, its SHA-1 and its first 1,024 bytes, in the same step that moves it
to the batch's staging list; parsing refuses that stand-in as ``payload_too_large``, and
its dead letter keeps it (the event id is read from its head when it can be), nothing of the
rest. An element taken by a blocking wait (``BLMOVE``) arrives whole: it is replaced the same
way, in the staging list too, before anything reads it.
"""

from __future__ import annotations

import hashlib

from schemas.errors import InvalidEvent

MARK = "\x01too_large "  # no JSON text begins with a control character
HEAD_BYTES = 1024


def stand_in(item: bytes | str) -> str:
    """What ``claim.lua`` makes of an oversized element, made here of one taken whole."""
    data = item if isinstance(item, bytes) else item.encode("utf-8", "surrogateescape")
    head = data[:HEAD_BYTES].decode("utf-8", "ignore")
    # SHA-1, as Redis's sha1hex in claim.lua: it names the payload, it protects nothing
    return f"{MARK}{len(data)} {hashlib.sha1(data).hexdigest()} {head}"


def refusal(item: str, max_bytes: int) -> InvalidEvent | None:
    """The refusal of a stand-in (None for any other payload)."""
    if not item.startswith(MARK):
        return None
    size, digest = (item[len(MARK) :].split(" ", 2) + ["", ""])[:2]
    return InvalidEvent(
        "payload_too_large",
        f"payload is {size} bytes; the limit is {max_bytes} (LADDER_MAX_EVENT_BYTES): refused "
        f"unread, SHA-1 {digest}, its first {HEAD_BYTES} bytes kept",
    )
