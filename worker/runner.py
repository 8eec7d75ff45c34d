"""``ladder worker``: the inbox pump and an RQ worker in one process.

With ``--burst`` it moves everything in the inbox into RQ jobs, works the queue, and repeats
until both are empty, then exits 0. Without it, a pump thread blocks on the inbox and moves
events as they arrive while RQ's worker runs jobs; SIGTERM (and SIGINT) make RQ finish the
job in hand, the pump hand over the batch it holds, and the process exit cleanly.
"""

from __future__ import annotations

import threading
import time

import structlog
from rq import SimpleWorker
from rq.registry import ScheduledJobRegistry, StartedJobRegistry

from worker import jobs, keys
from worker.runtime import Runtime

log = structlog.get_logger("ladder")
MAINTAIN_EVERY_SECONDS = 15.0


def _worker(rt: Runtime) -> SimpleWorker:
    return SimpleWorker([rt.inbox.queue], connection=rt.redis)


def maintain(rt: Runtime, worker: SimpleWorker) -> None:
    """Recover what dead processes left behind; prompt where RQ alone would be slow.

    - batches stranded between the inbox and RQ are enqueued (``Inbox.recover``);
    - RQ's registry maintenance: a batch whose worker died (its started-registry entry
      expired: at most the job timeout, capped at 30 s, plus 60 s) is retried, and jobs stuck
      in RQ's intermediate queue are put back; RQ itself runs this only every 10 minutes;
    - a batch that failed for good becomes per-event dead letters.
    """
    rt.inbox.recover()
    worker.clean_registries()  # type: ignore[no-untyped-call]
    jobs.split_failed_batches(rt)


def _in_flight(rt: Runtime) -> int:
    queue = rt.inbox.queue
    scheduled = ScheduledJobRegistry(queue=queue)  # type: ignore[no-untyped-call]
    started = StartedJobRegistry(queue=queue)
    staged = int(rt.redis.zcard(keys.STAGING_INDEX))
    return int(queue.count + scheduled.count + started.count + staged + rt.inbox.pending())


def run_burst(rt: Runtime) -> int:
    """Drain the inbox and the queue, including batches waiting for a retry or left running by
    a worker that died; then return how many events were moved from the inbox."""
    jobs.install(rt)
    worker = _worker(rt)
    moved = 0
    last_maintenance = 0.0
    while True:
        if time.monotonic() - last_maintenance > 1.0:
            maintain(rt, worker)
            last_maintenance = time.monotonic()
        moved += rt.inbox.drain()
        _worker(rt).work(burst=True, logging_level="WARNING", with_scheduler=True)
        if rt.inbox.pending() or rt.inbox.queue.count:
            continue
        if not _in_flight(rt):
            return moved
        time.sleep(0.2)  # a retry back-off, or an abandoned batch not yet expired


def run_forever(rt: Runtime) -> None:
    jobs.install(rt)
    worker = _worker(rt)
    maintain(rt, worker)
    stop = threading.Event()

    def pump() -> None:
        last_maintenance = time.monotonic()
        while not stop.is_set():
            try:
                rt.inbox.pump_blocking(timeout=1.0)
                if time.monotonic() - last_maintenance > MAINTAIN_EVERY_SECONDS:
                    maintain(rt, worker)
                    last_maintenance = time.monotonic()
            except Exception as exc:  # Redis away: wait and try again, never die
                log.warning("inbox_pump_error", error=f"{type(exc).__name__}: {exc}")
                stop.wait(1.0)

    thread = threading.Thread(target=pump, name="ladder-inbox-pump", daemon=True)
    thread.start()
    try:
        worker.work(burst=False, logging_level="WARNING", with_scheduler=True)
    finally:
        stop.set()
        thread.join(timeout=10)
