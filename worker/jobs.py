"""RQ job functions. Thin: they hand the raw payloads to the service.

``process_batch`` runs a batch taken from the inbox: invalid events are dead-lettered one by
one; a transient error is raised so RQ retries the batch with back-off, and on the last
attempt the batch is split into per-event dead letters (reason ``retries_exhausted``) so an
operator replays events, never opaque batches. Then, while events wait in the inbox, the job
takes them itself a batch at a time (for up to half a second), so a busy worker does not pay
for an RQ job per batch. ``process_event`` is the job of one
dead-lettered event; replaying it runs it again, and an event still invalid fails again.
"""

from __future__ import annotations

import threading
import time
import traceback
from datetime import UTC, datetime

import structlog
from rq import get_current_job
from rq.exceptions import NoSuchJobError
from rq.job import Job

from schemas import InvalidEvent
from worker.runtime import Runtime
from worker.settings import Settings

log = structlog.get_logger("ladder")
BATCH_PREFIX = "ladder-batch-"
_runtime: Runtime | None = None


def install(runtime: Runtime) -> None:
    """Called by ``ladder worker`` so jobs share the process's connections."""
    global _runtime
    _runtime = runtime


def runtime() -> Runtime:
    global _runtime
    if _runtime is None:  # a job run by a plain ``rq worker``: build from the environment
        _runtime = Runtime(Settings.from_env())
    return _runtime


class _Activity:
    """Whether this process is running a batch, for the inbox pump to wait on (no polling)."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._running = False

    def set(self, running: bool) -> None:
        with self._condition:
            self._running = running
            self._condition.notify_all()

    def wait(self, running: bool, timeout: float) -> bool:
        with self._condition:
            return self._condition.wait_for(lambda: self._running is running, timeout)


activity = _Activity()


# How long a batch job goes on taking events from the inbox itself after its own batch.
FOLLOW_ON_SECONDS = 0.5


def process_batch(payloads: list[str]) -> int:
    activity.set(True)
    try:
        done = _process_batch(payloads)
        return done + _follow_on(runtime())
    finally:
        activity.set(False)


def _follow_on(rt: Runtime) -> int:
    """While events wait in the inbox, take them in this job, a batch at a time, for up to
    ``FOLLOW_ON_SECONDS``: under load a worker goes from one batch to the next without an RQ
    job (and the pump's hand-over) in between. Each batch is staged exactly as the pump
    stages it, so a crash loses nothing (``recover`` makes it a job); a batch that fails is
    handed over as a job of its own, with RQ's retries and dead-lettering."""
    done = 0
    deadline = time.monotonic() + FOLLOW_ON_SECONDS
    while time.monotonic() < deadline:
        claimed = rt.inbox.claim()
        if claimed is None:
            break
        batch, payloads = claimed
        try:
            done += len(rt.service.process(payloads, on_invalid=rt.dead_letter))
        except Exception as exc:
            log.warning("follow_on_batch_failed", error=f"{type(exc).__name__}: {exc}"[:500])
            rt.inbox.hand_over(batch, payloads)
            break
        rt.inbox.release(batch)
    return done


def _process_batch(payloads: list[str]) -> int:
    rt = runtime()
    try:
        outcomes = rt.service.process(payloads, on_invalid=rt.dead_letter)
    except Exception as exc:
        job = get_current_job()
        if job is not None and not job.retries_left:
            _dead_letter_all(rt, payloads, exc, traceback.format_exc())
            return 0
        raise
    return len(outcomes)


def _dead_letter_all(rt: Runtime, payloads: list[str], exc: Exception, trace: str) -> None:
    """The last attempt failed: every event becomes its own dead letter, none is dropped."""
    now = datetime.now(UTC)
    for payload in payloads:
        try:
            rt.service.parse(payload, now)
        except InvalidEvent as invalid:
            rt.dead_letter(payload, invalid)  # keep its own, precise reason
            continue
        error = InvalidEvent("retries_exhausted", f"{type(exc).__name__}: {exc}"[:500])
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
        if not job_id.startswith(BATCH_PREFIX):
            continue
        try:
            job = Job.fetch(job_id, connection=rt.redis)
        except NoSuchJobError:
            registry.remove(job_id)
            continue
        payloads = job.args[0] if job.args else []
        trace = failure_text(job)
        reason = (trace or "failed").strip().splitlines()[-1]
        _dead_letter_all(rt, list(payloads), RuntimeError(reason), trace)
        registry.remove(job, delete_job=True)
        split += len(payloads)
    return split


class EventStillInvalid(Exception):
    """A replayed event failed validation again; RQ puts it back in the failed registry."""


def process_event(payload: str) -> str:
    rt = runtime()

    def refuse(raw: str | bytes, error: InvalidEvent) -> None:
        job = get_current_job()
        if job is not None:
            job.meta.update({"reason": error.reason, "detail": error.detail})
            job.meta["attempts"] = int(job.meta.get("attempts", 1)) + 1
            job.save_meta()  # type: ignore[no-untyped-call]
        raise EventStillInvalid(str(error))

    outcomes = rt.service.process([payload], on_invalid=refuse)
    return outcomes[0].outcome if outcomes else "none"
