"""Every Redis key name ladder uses, in one place.

Leaderboard keys are a public contract (README, "Redis keys"): other services read them
directly. Each carries a per-ladder hash tag ``{<ladder>}`` so one ladder lives in one
Redis Cluster slot. Queue-side keys belong to the queue Redis only.
"""

from __future__ import annotations

INBOX = "ladder:inbox"
"""List that game servers ``RPUSH`` raw event JSON onto."""

STAGING_INDEX = "ladder:staging"
"""Zset of batch ids moved out of the inbox but not yet confirmed as RQ jobs (score: time)."""

QUEUE_NAME = "ladder"
"""The RQ queue that batches of events run on; its failed registry is the dead-letter queue."""


def staging(batch_id: str) -> str:
    """List holding one batch's raw events between the inbox and its RQ job."""
    return f"ladder:staging:{batch_id}"


def _tag(ladder: str) -> str:
    return f"ladder:{{{ladder}}}"


def rating(ladder: str) -> str:
    """Zset of every rated player, score = rating."""
    return f"{_tag(ladder)}:rating"


def public(ladder: str) -> str:
    """Zset of the players eligible for the ladder's public list."""
    return f"{_tag(ladder)}:public"


def boosted(ladder: str) -> str:
    """Zset of boosted points."""
    return f"{_tag(ladder)}:boosted"


def active(ladder: str) -> str:
    """Zset of the rated players whose last rated game ended within the ladder's
    ``active_days``, score = rating (only on a ladder with ``[ladders.<name>.board]``)."""
    return f"{_tag(ladder)}:active"


def active_since(ladder: str) -> str:
    """Zset of the players on the active board, score = when their last rated game ended
    (Unix seconds): the sweep takes the players whose game is too old off the active board."""
    return f"{_tag(ladder)}:active:since"


def season(ladder: str, name: str) -> str:
    """Zset of a closed season's archived final standings."""
    return f"{_tag(ladder)}:season:{name}"


def player(ladder: str, player_id: str) -> str:
    """Hash with a player's card: rating, games, experience, provisional, updated_at, ..."""
    return f"{_tag(ladder)}:player:{player_id}"


def player_prefix(ladder: str) -> str:
    return f"{_tag(ladder)}:player:"


SCHEDULER_LOCK = "ladder:scheduler"
"""String naming the worker that moves due retries to the queue now (expires unless renewed)."""


def alive(worker_name: str) -> str:
    """A worker's heartbeat: set every few seconds with a short expiry while it runs."""
    return f"ladder:alive:{worker_name}"


def rebuild_temp(ladder: str, token: str, name: str) -> str:
    """A rebuild's or season close's scratch key in the ladder's slot, renamed over the live one."""
    return f"{_tag(ladder)}:rebuild:{token}:{name}"


def dlq_by_event(event_id: str) -> str:
    """Set of the dead-letter ids of one event id: ``show`` finds them without a scan."""
    return f"ladder:dlq:event:{event_id}"


def stuck(job_id: str) -> str:
    """When a batch job was first seen in RQ's intermediate list without a worker (expires)."""
    return f"ladder:stuck:{job_id}"


BATCH_JOB_PREFIX = "ladder-batch-"
"""RQ job ids of event batches start with this (the job key is ``rq:job:<id>``)."""


def batch_job(batch_id: str) -> str:
    """The RQ job id of one batch: unique, so enqueueing a batch twice is a no-op."""
    return f"{BATCH_JOB_PREFIX}{batch_id}"


RECEIPTS = "ladder:receipts"
"""Stream of every event's receipt (field ``receipt``), capped with ``MAXLEN ~``."""


def receipt(event_id: str) -> str:
    """String holding one event's JSON receipt for ``LADDER_RECEIPT_TTL`` seconds."""
    return f"ladder:receipt:{event_id}"


def console_logout(digest: str) -> str:
    """String marking one console session as ended by its logout, until it would have expired
    (``digest``: the SHA-256 of the session cookie, never the cookie)."""
    return f"ladder:console-logout:{digest}"


def receipt_wait(event_id: str) -> str:
    """List a game server ``BLPOP``s to wait for one event's receipt (expires soon after)."""
    return f"ladder:receipt-wait:{event_id}"
