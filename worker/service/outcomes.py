"""What happened to each event of a batch (``Processed``), the dead letter of an event the
engine refuses (``refused``), and the batch's log line."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from engine import Decision, Reason, Ruleset
from engine.ladder import unsupported_detail
from schemas import InvalidEvent
from worker.service.intake import Valid

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
    for outcome in outcomes if log.is_enabled_for(logging.DEBUG) else ():
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


def refused(
    item: Valid,
    decision: Decision,
    rules: Ruleset,
    on_invalid: Callable[[str | bytes, InvalidEvent], None],
) -> None:
    """An event the engine dead-letters, with a detail that says why: a game of a shape
    its ladder's ruleset does not rate (SPEC 7), or an id applied before with other
    content (SPEC 2.4 step 1)."""
    if decision.reason == Reason.UNSUPPORTED_SHAPE:
        detail = f"ladder {decision.ladder!r} {unsupported_detail(item.event, rules)}"
    else:
        stored, sent = decision.digests
        detail = (
            f"event id {decision.event_id!r} was applied before with other content "
            f"(stored payload sha256 {stored}, this one {sent})"
        )
        log.warning(
            "event_id_conflict",
            event_id=decision.event_id,
            ladder=decision.ladder,
            stored_digest=stored,
            digest=sent,
        )
    reason = str(decision.reason)
    on_invalid(
        item.raw,
        InvalidEvent(reason, detail, event_id=decision.event_id, ladder=decision.ladder),
    )
