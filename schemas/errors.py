"""The one exception event validation raises, and its machine-readable reason codes."""

from __future__ import annotations

from typing import Any

#: Every reason an event can be rejected for (dead-letter queue ``reason`` values).
#: ``unknown_ladder`` and ``bad_signature`` are raised by the worker and ``unsupported_shape``
#: (a game of a shape its ladder's ruleset cannot rate: a draw or a team game on a ruleset
#: that rates 1v1 wins only) by the engine, never by :func:`schemas.parse_event`; they are
#: listed so this tuple is the complete vocabulary.
REASONS: tuple[str, ...] = (
    "payload_too_large",
    "invalid_json",
    "not_an_object",
    "unknown_type",
    "missing_field",
    "invalid_field",
    "invalid_cube",
    "self_play",
    "ended_at_in_future",
    "invalid_timestamp",
    "unknown_ladder",
    "bad_signature",
    "unsupported_shape",
)


class InvalidEvent(Exception):
    """An event that can never be processed; it belongs in the dead-letter queue.

    ``reason`` is one of :data:`REASONS`. ``detail`` is for humans and never contains a
    raw IP address. ``event_id`` and ``ladder`` are copied best-effort from the payload
    (``None`` when the payload had no usable value for them).
    """

    def __init__(
        self,
        reason: str,
        detail: str,
        *,
        event_id: str | None = None,
        ladder: str | None = None,
    ) -> None:
        super().__init__(reason, detail)
        self.reason = reason
        self.detail = detail
        self.event_id = event_id
        self.ladder = ladder

    def __str__(self) -> str:
        return f"{self.reason}: {self.detail}"

    def __repr__(self) -> str:
        return (
            f"InvalidEvent(reason={self.reason!r}, detail={self.detail!r}, "
            f"event_id={self.event_id!r}, ladder={self.ladder!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only attributes survive pickling (RQ pickles job failures).
        return (_rebuild, (self.reason, self.detail, self.event_id, self.ladder))


def _rebuild(reason: str, detail: str, event_id: str | None, ladder: str | None) -> InvalidEvent:
    return InvalidEvent(reason, detail, event_id=event_id, ladder=ladder)


class InvalidArgument(ValueError):
    """A read's parameter that can never be satisfied: bad board name, size, cube, ...

    The leaderboards and the audit-store history raise it, so the CLI and the API map it to
    one answer (a usage error, 400)."""


class UnknownPlayer(LookupError):
    """The player is not on the board, or has no card on the ladder (the CLI's and the API's
    404)."""
