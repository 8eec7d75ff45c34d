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
