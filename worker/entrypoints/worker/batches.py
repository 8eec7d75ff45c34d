"""What RQ's jobs do (``worker.queue.jobs`` hands them here): they hand the raw payloads to
the service.

``process_batch`` runs a batch taken from the inbox: its invalid events are dead-lettered
together once the batch is applied. While PostgreSQL or Redis is unreachable the job keeps its
batch and tries it again with capped back-off for as long as the outage lasts
(``worker.queue.faults`` says what is an outage); no event is dead-lettered for an outage. Any
other failure splits the batch until the event that fails is alone: that event is dead-lettered
(``processing_error``) and the others are applied. A batch that fails even so (RQ's retries
spent) becomes per-event dead letters (``retries_exhausted``), so an operator replays events,
never opaque batches (``refusals``, which also runs the job of a dead letter replayed). Then,
while events wait in the inbox, the job takes them itself a batch at a time (for up to
``FOLLOW_ON_SECONDS``), so a busy worker does not pay for an RQ job per batch.

Each batch reads, in its own transaction (one read of a partial index, empty but for them),
whether a moderation action of its ladders is marked not projected: its command committed,
then could not write Redis. Once Redis has answered the batch, ``heal_moderated`` re-projects
those ladders, as ``ladder reconcile --repair`` would, and takes the mark off.
"""

from __future__ import annotations

import signal
import threading
import time
import traceback
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

import structlog
from rq import get_current_job
from rq.timeouts import BaseTimeoutException

from worker import failpoints
from worker.bootstrap import Runtime
from worker.entrypoints.worker import refusals
from worker.ops import reconcile
from worker.queue import faults
from worker.service.batch import Settled
from worker.service.intake import Prepared
from worker.service.outcomes import Processed

log = structlog.get_logger("ladder")


@dataclass(frozen=True)
class Handlers:
    """The jobs of a worker of ``rt`` (``worker.queue.jobs.Handlers``)."""

    rt: Runtime

    def batch(self, payloads: list[str]) -> int:
        return process_batch(self.rt, payloads)

    def event(self, payload: str) -> str:
        return refusals.process_event(self.rt, payload)


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


# How long a batch job goes on taking events from the inbox itself after its own batch while
# another job waits in the queue (a dead letter replayed, a batch recovered or enqueued by a
# pump); with none waiting it goes on up to a quarter of the job timeout
# (``LADDER_JOB_TIMEOUT``), so RQ's loop between jobs is paid for less often under load.
FOLLOW_ON_SECONDS = 2.0
# How long it waits for the next event when the inbox is empty, in a worker that runs until
# stopped (``Runtime.serving``) and has no other job queued: an event published then is taken at
# once, instead of after the job ends, the pump enqueues a job and RQ starts it.
FOLLOW_ON_WAIT_SECONDS = 0.05


# A batch job's meta once its own batch is done (committed and written to Redis, handed back,
# or dead-lettered): a crash in its follow-on batches then leaves ``recover`` nothing of the
# job's own to enqueue again (those batches are staged, and recovered as batches of their own).
OWN_BATCH_DONE = "own_batch_done"


def process_batch(rt: Runtime, payloads: list[str]) -> int:
    activity.set(True)
    try:
        done = _process_batch(rt, payloads)
        job = get_current_job()
        if job is not None:
            failpoints.hit("jobs.before_own_batch_done")  # killed here: run again, duplicates
            job.meta[OWN_BATCH_DONE] = True
            job.save_meta()  # type: ignore[no-untyped-call]
        return done + _follow_on(rt)
    finally:
        activity.set(False)


def _follow_on(rt: Runtime) -> int:
    """While events wait in the inbox, take them in this job, a batch at a time, for up to
    ``FOLLOW_ON_SECONDS`` (longer while no other job waits, ``_Deadline``): under load a worker
    goes from one batch to the next without an RQ job (and the pump's hand-over) in between. A
    serving worker with no other job queued waits up to ``FOLLOW_ON_WAIT_SECONDS`` for the next
    event when the inbox is empty (``Runtime.serving``). On SIGTERM it takes none after the
    batch in hand (``stopping``).

    Each batch is staged exactly as the pump stages it, so a crash loses nothing (``recover``
    makes it a job). Once a batch is committed, a batch is taken from the inbox, then the
    batch's Redis write (``Service.project``) runs on the process's Redis thread while this one
    commits the next batch: the two wait on different servers (a batch of fewer than
    ``THREADED_FROM`` events is written at once instead, and the next taken after it). The
    batch taken so is the one after the next: the next was taken before its predecessor
    settled, and its events validated while that one's last writes and COMMIT travelled to
    PostgreSQL and back (validation reads and writes no store; its invalid events are
    dead-lettered when their own batch is settled). The next batch's write starts only after
    it, and a batch's staging list is released only once its write is done, so a crash before
    then leaves the batch to ``recover``, whose job finds its events applied (duplicates) and
    writes their players and receipts again. A batch that fails, or whose Redis write fails,
    is handed over as a job of its own (which waits out an outage, or isolates the event that
    fails), and so is each one taken and left unsettled."""
    done = 0
    writing: _Writing | None = None
    # taken, not yet settled, in order (at most two: the next, validated while the batch
    # before it committed, and the one after it)
    held: deque[tuple[tuple[str, list[str]], Prepared | None]] = deque()
    deadline = _Deadline.of(rt)
    try:
        while True:
            if not held:
                if (claimed := _next(rt, deadline, wait=True)) is None:
                    break
                held.append((claimed, None))
            (batch, payloads), prepared = held.popleft()
            threaded = len(payloads) >= THREADED_FROM
            if threaded and not held and (claimed := _next(rt, deadline, wait=False)):
                held.append((claimed, None))
            # the next batch's events validated while this one's commit travels
            ahead = _Ahead(rt, held[0][0][1]) if held and held[0][1] is None else None
            letters = refusals.Letters(rt)
            try:
                settled = rt.service.settle(
                    payloads if prepared is None else prepared,
                    letters,
                    meanwhile=None if ahead is None else ahead,
                )
                letters.flush()
            except Exception as exc:
                log.warning("follow_on_batch_failed", error=faults.said(exc))
                rt.inbox.hand_over(batch, payloads)
                break
            if ahead is not None and ahead.prepared is not None:
                held[0] = (held[0][0], ahead.prepared)
            previous, writing = writing, None
            if previous is not None and not previous.done(rt):
                rt.inbox.hand_over(batch, payloads)  # committed: its job writes Redis again
                break
            if threaded and len(held) < 2:
                # Redis runs one command at a time: the next batch's claim, sent once this
                # batch's write has started, would wait for the whole write.
                if (claimed := _next(rt, deadline, wait=False)) is not None:
                    held.append((claimed, None))
            writing = _Writing.start(rt, batch, payloads, settled)
            done += len(settled.outcomes)
    finally:
        if writing is not None:
            writing.done(rt)
        for claimed, _ in held:
            rt.inbox.hand_over(*claimed)  # taken, never settled: a job of its own
    return done


class _Ahead:
    """The next batch's events validated while the batch before it commits
    (``Service.settle``'s ``meanwhile``)."""

    def __init__(self, rt: Runtime, payloads: list[str]) -> None:
        self.rt = rt
        self.payloads = payloads
        self.prepared: Prepared | None = None

    def __call__(self) -> None:
        failpoints.hit("jobs.validating_ahead")  # killed here: its COMMIT sent, no answer read
        try:
            self.prepared = self.rt.service.prepare(self.payloads)
        except BaseTimeoutException:  # the job's time is up: not this batch's fault
            raise
        except Exception as exc:  # the batch is validated again when it is settled
            log.warning("validation_ahead_failed", error=faults.said(exc, 300))


@dataclass(frozen=True)
class _Deadline:
    """When a job stops taking follow-on batches: after ``FOLLOW_ON_SECONDS`` if another job
    waits in the queue then, at a quarter of the job timeout in any case (and never after
    that quarter, however short the timeout)."""

    soft: float
    hard: float

    @classmethod
    def of(cls, rt: Runtime) -> _Deadline:
        now, most = time.monotonic(), rt.settings.job_timeout / 4
        return cls(now + min(FOLLOW_ON_SECONDS, most), now + most)

    def passed(self, rt: Runtime) -> bool:
        now = time.monotonic()
        return now >= self.hard or (now >= self.soft and rt.inbox.queue.count > 0)


def _next(rt: Runtime, deadline: _Deadline, *, wait: bool) -> tuple[str, list[str]] | None:
    """The next follow-on batch, staged, while the job's time lasts; ``wait``: a serving
    worker with no other job queued waits a moment for an event (``FOLLOW_ON_WAIT_SECONDS``)."""
    if stopping.is_set() or deadline.passed(rt):
        return None
    claimed = rt.inbox.claim()
    if claimed is None and wait and rt.serving.is_set() and not rt.inbox.queue.count:
        claimed = rt.inbox.claim_blocking(FOLLOW_ON_WAIT_SECONDS)
    return claimed


_REDIS_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ladder-redis")
# A follow-on batch smaller than this is written to Redis at once, on the job's thread: under a
# light load batches are small, and their receipts come about 6 ms sooner so (p50 and p99 at
# 1,000 events/s); a batch this large or larger is written on the Redis thread beside the next.
THREADED_FROM = 100


@dataclass(frozen=True)
class _Writing:
    """A follow-on batch committed in PostgreSQL, its Redis write under way on the Redis
    thread; its staging list is released there once the write is done."""

    batch: str
    payloads: list[str]
    future: Future[None]

    @classmethod
    def start(cls, rt: Runtime, batch: str, payloads: list[str], settled: Settled) -> _Writing:
        def write() -> None:
            failpoints.hit("jobs.before_redis_write")
            rt.service.project(settled)
            rt.inbox.release(batch)
            heal_moderated(rt, settled.unprojected)

        if len(payloads) >= THREADED_FROM:
            return cls(batch, payloads, _REDIS_THREAD.submit(write))
        written: Future[None] = Future()
        try:
            write()
            written.set_result(None)
        except Exception as exc:
            written.set_exception(exc)
        return cls(batch, payloads, written)

    def done(self, rt: Runtime) -> bool:
        """Wait for the write; when it failed, the batch is handed over as a job (False)."""
        try:
            self.future.result()
            return True
        except Exception as exc:
            log.warning("follow_on_batch_failed", error=faults.said(exc))
            rt.inbox.hand_over(self.batch, self.payloads)
            return False


# Set when the worker is asked to stop: a batch held through an outage is handed back.
stopping = threading.Event()
OUTAGE_BACKOFF_FIRST_SECONDS = 1.0
OUTAGE_BACKOFF_MAX_SECONDS = 30.0


def _process_batch(rt: Runtime, payloads: list[str]) -> int:
    """Apply the batch, holding it through an outage: tried again with capped back-off (1 s
    doubling to 30 s) for as long as the store is away; nothing is dead-lettered for it."""
    on_invalid = refusals.Letters(rt)
    delay = OUTAGE_BACKOFF_FIRST_SECONDS
    while True:
        try:
            unprojected: dict[str, int] = {}
            with _job_clock():
                outcomes = apply_isolating(rt, payloads, on_invalid, unprojected)
        except Exception as exc:
            store = faults.classify(exc, rt.probes)
            if store is None:  # not an outage: RQ's retries, then per-event dead letters
                job = get_current_job()
                if job is not None and not job.retries_left:
                    refusals.dead_letter_all(rt, payloads, exc, traceback.format_exc())
                    return 0
                raise
            faults.outages.lost(store, exc)
            if stopping.wait(delay):
                rt.inbox.enqueue_batch(payloads, meta={"handed_back": True})
                log.warning("held_batch_handed_back", events=len(payloads))
                return 0
            delay = min(delay * 2, OUTAGE_BACKOFF_MAX_SECONDS)
            continue
        faults.outages.regained()
        heal_moderated(rt, unprojected)
        return len(outcomes)


def heal_moderated(rt: Runtime, unprojected: dict[str, int]) -> None:
    """Re-project each ladder a batch found with a moderation action marked not projected
    (``Settled.unprojected``: ladder -> its newest such action; ``reconcile.heal``); a
    failure is logged, and the next batch tries again."""
    marked = {ladder: n for ladder, n in unprojected.items() if ladder in rt.config.ladders}
    if not marked:
        return
    try:
        for engine, named in rt.databases.grouped(sorted(marked)):  # each primary's ladders
            for ladder in named:
                through = marked[ladder]
                config = rt.config.ladders[ladder]
                healed = reconcile.heal(
                    engine, rt.leaderboard_redis, config, through, receipts=rt.receipts
                )
                log.warning("moderation_healed", ladder=ladder, action=through, players=healed)
    except Exception as exc:
        log.warning("moderation_heal_failed", error=faults.said(exc, 300))


def apply_isolating(
    rt: Runtime,
    payloads: list[str],
    on_invalid: refusals.Letters,
    unprojected: dict[str, int] | None = None,
) -> list[Processed]:
    """Apply ``payloads``; when that fails for a reason that is not an outage, split the
    batch in halves, and so on, until the event that fails is alone: it is dead-lettered
    (``processing_error``, with the exception) and every other event is applied. The batch's
    invalid events are dead-lettered once it is committed, before its Redis write (their
    receipts come first, as they were refused first).

    An outage is raised to the caller, which holds the whole batch (events of halves applied
    already are duplicates when it is tried again, and change nothing). ``unprojected``
    collects what the batch found marked not projected (``Settled.unprojected``)."""
    try:
        settled = rt.service.settle(payloads, on_invalid)
        on_invalid.flush()
        rt.service.project(settled)
        if unprojected is not None:
            unprojected.update(settled.unprojected)
        return settled.outcomes
    except Exception as exc:
        if faults.classify(exc, rt.probes) is not None:
            raise
        if len(payloads) == 1:
            return [refusals.processing_error(rt, payloads[0], exc)]
        log.warning(
            "batch_split",
            events=len(payloads),
            error=faults.said(exc, 300),
        )
        middle = len(payloads) // 2
        return [
            *apply_isolating(rt, payloads[:middle], on_invalid, unprojected),
            *apply_isolating(rt, payloads[middle:], on_invalid, unprojected),
        ]


@contextmanager
def _job_clock() -> Iterator[None]:
    """Each attempt gets the job's whole timeout; the wait between attempts is not counted.

    RQ's death penalty in a ``SimpleWorker`` is an alarm signal set for the job's run."""
    job = get_current_job()
    armed = (
        job is not None
        and bool(job.timeout)
        and threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGALRM) not in (signal.SIG_DFL, signal.SIG_IGN, None)
    )
    if armed and job is not None and job.timeout:
        signal.alarm(int(job.timeout))
    try:
        yield
    finally:
        if armed:
            signal.alarm(0)
