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
from rq.registry import ScheduledJobRegistry

from worker import jobs
from worker.runtime import Runtime

log = structlog.get_logger("ladder")
RECOVER_EVERY_SECONDS = 15.0


def _worker(rt: Runtime) -> SimpleWorker:
    return SimpleWorker([rt.inbox.queue], connection=rt.redis)


def run_burst(rt: Runtime) -> int:
    """Drain the inbox and the queue, waiting for batches scheduled for a retry; then return."""
    jobs.install(rt)
    rt.inbox.recover()
    scheduled = ScheduledJobRegistry(queue=rt.inbox.queue)  # type: ignore[no-untyped-call]
    moved = 0
    while True:
        moved += rt.inbox.drain()
        _worker(rt).work(burst=True, logging_level="WARNING", with_scheduler=True)
        if rt.inbox.pending() or rt.inbox.queue.count:
            continue
        if not scheduled.count:
            return moved
        time.sleep(0.2)  # a batch waits for its retry back-off


def run_forever(rt: Runtime) -> None:
    jobs.install(rt)
    rt.inbox.recover()
    stop = threading.Event()

    def pump() -> None:
        last_recover = time.monotonic()
        while not stop.is_set():
            try:
                rt.inbox.pump_blocking(timeout=1.0)
                if time.monotonic() - last_recover > RECOVER_EVERY_SECONDS:
                    rt.inbox.recover()
                    last_recover = time.monotonic()
            except Exception as exc:  # Redis away: wait and try again, never die
                log.warning("inbox_pump_error", error=f"{type(exc).__name__}: {exc}")
                stop.wait(1.0)

    thread = threading.Thread(target=pump, name="ladder-inbox-pump", daemon=True)
    thread.start()
    try:
        _worker(rt).work(burst=False, logging_level="WARNING", with_scheduler=True)
    finally:
        stop.set()
        thread.join(timeout=10)
