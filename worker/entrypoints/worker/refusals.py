"""What becomes of events a batch job cannot apply: each its own dead letter, with a reason.

A batch's invalid events wait in ``Letters`` and are dead-lettered together once it is applied;
an event that fails to apply is dead-lettered alone (``processing_error``); a batch whose
retries are spent becomes per-event dead letters (``dead_letter_all``), and so does a batch
its worker died on every time (``split_failed_batches``), so the dead-letter queue only ever
holds single events. ``process_event`` is the job of one dead-lettered event replayed: it runs
again, and an event still invalid fails again (``EventStillInvalid``).
"""

from __future__ import annotations

import traceback
from datetime import UTC, datetime

import structlog
from rq import get_current_job
from rq.exceptions import NoSuchJobError
from rq.job import Job

from engine import Outcome, Reason
from schemas import InvalidEvent
from worker import keys
from worker.bootstrap import Runtime
from worker.queue import faults
from worker.service.outcomes import Processed
from worker.store.letters import guess_ids

log = structlog.get_logger("ladder")
PROCESSING_ERROR = str(Reason.PROCESSING_ERROR)


def processing_error(rt: Runtime, payload: str, exc: Exception) -> Processed:
    guessed = guess_ids(payload)
    error = InvalidEvent(
        PROCESSING_ERROR,
        faults.said(exc),
        event_id=guessed.get("event_id"),
        ladder=guessed.get("ladder"),
    )
    rt.dead_letter(payload, error, traceback.format_exc())
    log.warning(
        "event",
        event_id=error.event_id,
        ladder=error.ladder,
        outcome=str(Outcome.DEAD_LETTERED),
        reason=PROCESSING_ERROR,
        detail=error.detail,
    )
    return Processed(error.event_id, error.ladder, str(Outcome.DEAD_LETTERED), PROCESSING_ERROR)


class Letters:
    """A batch's invalid events, dead-lettered together once the batch is applied (``flush``):
    one write for them all, so a flood of invalid events costs about what rating them would.
    A split batch validates its events again: each is taken once. Until the flush they are
    in the batch's staging list or job, so a crash before it loses none (the batch runs
    again, and a dead letter's id is its payload's)."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.seen: set[str | bytes] = set()
        self.waiting: list[tuple[str | bytes, InvalidEvent, str]] = []

    def __call__(self, raw: str | bytes, error: InvalidEvent) -> None:
        if raw not in self.seen:
            self.seen.add(raw)
            self.waiting.append((raw, error, ""))

    def flush(self) -> None:
        if self.waiting:
            self.rt.dead_letter_many(self.waiting)
            self.waiting = []


def dead_letter_all(rt: Runtime, payloads: list[str], exc: Exception, trace: str) -> None:
    """The last attempt failed: every event becomes its own dead letter, none is dropped."""
    now = datetime.now(UTC)
    for payload in payloads:
        try:
            rt.intake.parse(payload, now)
        except InvalidEvent as invalid:
            rt.dead_letter(payload, invalid)  # keep its own, precise reason
            continue
        error = InvalidEvent("retries_exhausted", faults.said(exc))
        rt.dead_letter(payload, error, trace)


def failure_text(job: Job) -> str:
    """The traceback RQ stored for a job's latest failure ('' if none)."""
    result = job.latest_result()
    return (result.exc_string or "") if result is not None else ""


def split_failed_batches(rt: Runtime) -> int:
    """A batch in the failed registry (its worker died on every attempt) becomes per-event
    dead letters, so the dead-letter queue only ever holds single events."""
    registry = rt.dead_letters.registry
    split = 0
    for job_id in registry.get_job_ids():
        if not job_id.startswith(keys.BATCH_JOB_PREFIX):
            continue
        try:
            job = Job.fetch(job_id, connection=rt.redis)
        except NoSuchJobError:
            registry.remove(job_id)
            continue
        payloads = job.args[0] if job.args else []
        trace = failure_text(job)
        reason = (trace or "failed").strip().splitlines()[-1]
        dead_letter_all(rt, list(payloads), RuntimeError(reason), trace)
        registry.remove(job, delete_job=True)
        split += len(payloads)
    return split


class EventStillInvalid(Exception):
    """A replayed event failed validation again; RQ puts it back in the failed registry."""


def process_event(rt: Runtime, payload: str) -> str:

    def refuse(raw: str | bytes, error: InvalidEvent) -> None:
        job = get_current_job()
        if job is not None:
            job.meta.update({"reason": error.reason, "detail": error.detail})
            job.meta["attempts"] = int(job.meta.get("attempts", 1)) + 1
            job.save_meta()  # type: ignore[no-untyped-call]
        raise EventStillInvalid(str(error))

    outcomes = rt.service.process([payload], on_invalid=refuse)
    return outcomes[0].outcome if outcomes else "none"
