"""What happened to each event of a batch (``Processed``), and the batch's log line."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import structlog

log = structlog.get_logger("ladder")


@dataclass(frozen=True)
class Processed:
    """What happened to one event: logged, and returned to callers and tests."""

    event_id: str | None
    ladder: str | None
    outcome: str  # an engine.Outcome
    reason: str | None = None  # an engine.Reason
    duration_ms: float = 0.0


def log_batch(outcomes: list[Processed], duration_ms: float) -> None:
    """One ``batch`` line at INFO: the batch's events counted by outcome, and by ladder,
    outcome and reason (what the metrics count); each event's own line is at DEBUG."""
    per_event_ms = round(duration_ms / max(len(outcomes), 1), 3)
    for outcome in outcomes:
        log.debug(
            "event",
            event_id=outcome.event_id,
            ladder=outcome.ladder,
            outcome=outcome.outcome,
            reason=outcome.reason,
            duration_ms=per_event_ms,
        )
    counts = Counter((o.ladder, o.outcome, o.reason) for o in outcomes)
    log.info(
        "batch",
        events=len(outcomes),
        duration_ms=round(duration_ms, 3),
        outcomes=dict(Counter(o.outcome for o in outcomes)),
        counts=[
            {"ladder": ladder, "outcome": outcome, "reason": reason, "events": n}
            for (ladder, outcome, reason), n in counts.items()
        ],
    )
