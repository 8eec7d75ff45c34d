"""``ladder worker``: the inbox pump and an RQ worker in one process.

With ``--burst`` it stages what waits in the inbox (one batch) as an RQ job and works the
queue, whose batch job takes the next batches itself as a running worker's does
(``batches``), and repeats until both are empty, then exits 0. Without it, a pump
thread blocks on the inbox and moves events as they arrive while RQ's worker runs jobs;
SIGTERM (and SIGINT) make RQ finish the job in hand, the pump hand over the batch it holds,
and the process exit cleanly.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from typing import Any, cast

import structlog
from redis.exceptions import RedisError
from rq.exceptions import StopRequested
from rq.registry import ScheduledJobRegistry, StartedJobRegistry
from rq.utils import now as rq_now

from worker import failpoints, keys
from worker.boards.active import sweeper
from worker.bootstrap import Runtime
from worker.entrypoints.worker import batches
from worker.entrypoints.worker.recovery import maintain
from worker.observability import logs
from worker.queue import faults
from worker.queue.liveness import Liveness
from worker.queue.rqworker import Worker

log = structlog.get_logger("ladder")
MAINTAIN_EVERY_SECONDS = 15.0


def _burst_worker(rt: Runtime) -> Worker:
    """A burst worker's RQ loop ends and starts again each round: it listens to no commands."""
    worker = Worker([rt.inbox.queue], connection=rt.redis)
    worker.handlers = batches.Handlers(rt)
    worker.listening = False
    _hand_back_on_stop(worker)  # SIGTERM: the job takes no follow-on batch after the one in hand
    return worker


def _work(worker: Worker, *, burst: bool) -> None:
    """Run RQ's loop. Its start-up maintenance is skipped: ``maintain`` ran just before and
    handles abandoned batches itself (at once, not on RQ's retry back-off). RQ's scheduler
    (a forked child) is not started: ``worker.queue.liveness`` schedules on a thread instead."""
    worker.last_cleaned_at = rq_now()  # type: ignore[assignment]
    worker.work(burst=burst, logging_level=logs.rq_level(), with_scheduler=False)


def _hand_back_on_stop(worker: Worker) -> None:
    """RQ's own SIGTERM handler also tells the job in hand to take no more follow-on batches,
    and a batch held through an outage to hand it back."""
    request_stop = worker.request_stop

    def stop_requested(signum: Any, frame: Any) -> None:
        batches.stopping.set()
        request_stop(signum, frame)  # type: ignore[no-untyped-call]

    worker.request_stop = stop_requested  # type: ignore[method-assign]


def _in_flight(rt: Runtime) -> int:
    """Events not yet settled. Counted with ZCARD: RQ's ``Registry.count`` runs the registry's
    cleanup as a side effect, which would retry abandoned batches on RQ's back-off."""
    queue = rt.inbox.queue
    registries = (
        ScheduledJobRegistry(queue=queue).key,  # type: ignore[no-untyped-call]
        StartedJobRegistry(queue=queue).key,
    )
    # a running worker's idle pump keeps an empty batch registered: count staged events only
    staged = cast(list[bytes], rt.redis.zrange(keys.STAGING_INDEX, 0, -1))
    with rt.redis.pipeline(transaction=False) as pipe:
        for key in registries:
            pipe.zcard(key)
        pipe.llen(queue.key)
        pipe.llen(queue.intermediate_queue_key)
        pipe.llen(keys.INBOX)
        for batch in staged:
            pipe.llen(keys.staging(batch.decode()))
        return sum(int(n) for n in pipe.execute())


def run_burst(rt: Runtime) -> None:
    """Drain the inbox and the queue, including batches waiting for a retry or left running by
    a worker that died."""
    worker = _burst_worker(rt)
    liveness = Liveness(rt.redis, rt.inbox.queue, worker, sweeper(rt.leaderboard_redis, rt.config))
    liveness.start()
    try:
        _burst(rt, worker)
    except StopRequested:  # SIGTERM between two rounds of RQ's loop (its handler stays)
        pass
    finally:
        liveness.close()


def _burst(rt: Runtime, worker: Worker) -> None:
    last_maintenance = 0.0
    while True:
        if time.monotonic() - last_maintenance > 1.0:
            maintain(rt, worker)
            last_maintenance = time.monotonic()
        rt.inbox.pump_once()  # the job takes what waits after its batch (``batches._follow_on``)
        _work(worker, burst=True)
        if _stop_was_requested(worker):  # SIGTERM: the job in hand finished, take no more
            return
        if rt.inbox.pending() or rt.inbox.queue.count:
            continue
        if not _in_flight(rt):
            return
        time.sleep(0.2)  # a retry back-off, or an abandoned batch not yet noticed


def _stop_was_requested(worker: Worker) -> bool:
    """RQ records every SIGTERM/SIGINT's time; ``_stop_requested`` is set only when busy."""
    return bool(worker._stop_requested or worker._shutdown_requested_date)


def run_forever(rt: Runtime) -> None:
    # Imported here: a burst worker serves no metrics, and prometheus_client and its WSGI
    # server are a visible share of its start-up.
    from worker.observability import metrics

    observed = metrics.start(rt, rt.settings.metrics_port)  # first: before anything logs

    stop = threading.Event()
    current: list[Worker] = []  # the worker whose loop is about to run, once built

    def stop_requested(*_: Any) -> None:
        """A stop request outside RQ's loop (start-up, a restart): ours to keep. The worker
        about to enter its loop is marked too, so a loop entered just after this signal and
        before RQ installed its own handlers stops at its first turn instead of running on."""
        stop.set()
        for worker in current:
            worker._stop_requested = True

    def keep_stop_requests() -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, stop_requested)

    def new_worker() -> Worker | None:
        """RQ's worker talks to Redis as it is built: wait for Redis rather than die."""
        delay = 1.0
        while not stop.is_set():
            try:
                return observed.worker([rt.inbox.queue], rt.redis, batches.Handlers(rt))
            except RedisError as exc:
                log.warning("redis_unreachable", error=faults.said(exc))
                stop.wait(delay)
                delay = min(delay * 2, 30.0)
        return None

    keep_stop_requests()
    try:
        first = new_worker()
        if first is None:
            return
        worker = first
        current[:] = [worker]
        _hand_back_on_stop(worker)
        liveness = Liveness(
            rt.redis, rt.inbox.queue, worker, sweeper(rt.leaderboard_redis, rt.config)
        )
        liveness.start()
        try:
            maintain(rt, worker)
            failpoints.hit("runner.before_loop")
            _serve(rt, worker, liveness, stop, current, new_worker, keep_stop_requests)
        finally:
            liveness.close()
    finally:
        observed.close()


def _serve(
    rt: Runtime,
    worker: Worker,
    liveness: Liveness,
    stop: threading.Event,
    current: list[Worker],
    new_worker: Callable[[], Worker | None],
    keep_stop_requests: Callable[[], None],
) -> None:
    """The inbox pump on a thread, RQ's loop here, until a stop request."""

    def pump() -> None:
        last_maintenance = time.monotonic()
        while not stop.is_set():
            try:
                # While this process runs a batch, new events wait in the inbox and go together
                # in the next one: batches grow with the load instead of one job per event.
                if not batches.activity.wait(running=False, timeout=0.5):
                    continue
                if rt.inbox.pump_blocking(timeout=1.0):
                    batches.activity.wait(running=True, timeout=0.05)  # a worker takes it
                if time.monotonic() - last_maintenance > MAINTAIN_EVERY_SECONDS:
                    maintain(rt, current[0])
                    last_maintenance = time.monotonic()
            except Exception as exc:  # Redis away: wait and try again, never die
                log.warning("inbox_pump_error", error=faults.said(exc))
                stop.wait(1.0)

    thread = threading.Thread(target=pump, name="ladder-inbox-pump", daemon=True)
    thread.start()
    rt.serving.set()  # a batch job may wait a moment for the next event (``_follow_on``)
    try:
        while not stop.is_set():
            try:
                _work(worker, burst=False)
            except Exception as exc:
                log.warning("worker_loop_error", error=faults.said(exc))
            if _stop_was_requested(worker):
                break
            keep_stop_requests()
            # RQ's loop gave up (Redis went away mid-job): wait, then start a fresh one
            log.warning("worker_loop_restart")
            if stop.wait(2.0):
                break
            replacement = new_worker()
            if replacement is None:
                break
            worker = replacement
            current[:] = [worker]
            _hand_back_on_stop(worker)
            liveness.worker = worker
    finally:
        rt.serving.clear()
        stop.set()
        thread.join(timeout=10)
