"""What keeps a worker's jobs moving besides the job itself, on threads of the worker.

- The heartbeat: every ``HEARTBEAT_SECONDS`` the worker sets ``ladder:alive:<name>`` to expire
  after ``ALIVE_SECONDS``, and extends RQ's started-registry entry of the job in hand, so a
  batch held through a long outage is not taken for abandoned.
  ``worker.entrypoints.worker.recovery`` calls a batch abandoned as soon as its worker's
  heartbeat is gone, whatever the job timeout.
- The scheduler: RQ's scheduler runs in a forked child that outlives a SIGKILLed parent and
  is never restarted once it dies. Here each worker runs a thread instead, which moves due
  retries from RQ's scheduled registry to the queue while it holds ``ladder:scheduler``; the
  lock expires ``SCHEDULER_LOCK_SECONDS`` after its holder stops renewing it (a dead worker,
  or a lock restored by a Redis restart), and any live worker takes it over.
- Maintenance: every ``MAINTENANCE_SECONDS`` a periodic chore of the read model, when there is
  one (``worker.boards.active``: players whose last game grew too old leave the active board).

Both threads die with their process and share its Redis client only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

import structlog
from rq.executions import Execution
from rq.job import Job
from rq.registry import ScheduledJobRegistry, StartedJobRegistry
from rq.utils import current_timestamp

from worker import keys
from worker.lua import lua_source
from worker.queue import faults

if TYPE_CHECKING:
    from redis import Redis
    from rq import Queue, SimpleWorker

log = structlog.get_logger("ladder")
HEARTBEAT_SECONDS = 5.0
ALIVE_SECONDS = 20
SCHEDULER_SECONDS = 1.0
SCHEDULER_LOCK_SECONDS = 15
MAINTENANCE_SECONDS = 60.0

# The script and what its KEYS and ARGV hold: acquire.lua.
ACQUIRE = lua_source("worker.queue", "acquire.lua")


def beat(redis: Redis, worker: SimpleWorker, queue: Queue) -> None:
    """One heartbeat: this worker is alive, and so is the job it runs."""
    execution = cast(Execution | None, getattr(worker, "execution", None))
    with redis.pipeline(transaction=False) as pipe:
        pipe.set(keys.alive(worker.name), 1, ex=ALIVE_SECONDS)
        if execution is not None:
            execution.heartbeat(StartedJobRegistry(queue=queue), ALIVE_SECONDS + 60, pipe)
        pipe.execute()


def enqueue_due(redis: Redis, queue: Queue) -> int:
    """Move retries whose back-off is over from the scheduled registry to the queue."""
    registry = ScheduledJobRegistry(queue=queue)  # type: ignore[no-untyped-call]
    ids = registry.get_jobs_to_schedule(current_timestamp())
    if not ids:
        return 0
    jobs = Job.fetch_many(ids, connection=redis)
    with redis.pipeline() as pipe:
        for job_id, job in zip(ids, jobs, strict=True):
            if job is not None:
                queue.enqueue_job(job, pipeline=pipe)
            registry.remove(job_id, pipeline=pipe)
        pipe.execute()
    return len(ids)


class Liveness:
    """The heartbeat and scheduler threads of one worker process."""

    def __init__(
        self,
        redis: Redis,
        queue: Queue,
        worker: SimpleWorker,
        maintenance: Callable[[], None] | None = None,
    ) -> None:
        self.redis = redis
        self.queue = queue
        self.worker = worker
        self.stop = threading.Event()
        self.holds_scheduler = False
        self._acquire = redis.register_script(ACQUIRE)
        self._threads = [
            threading.Thread(target=self._beat, name="ladder-heartbeat", daemon=True),
            threading.Thread(target=self._schedule, name="ladder-scheduler", daemon=True),
        ]
        self.maintenance = maintenance
        if maintenance is not None:
            self._threads.append(
                threading.Thread(target=self._maintain, name="ladder-maintenance", daemon=True)
            )

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def close(self) -> None:
        self.stop.set()
        for thread in self._threads:
            thread.join(timeout=5)
        try:
            self.redis.delete(keys.alive(self.worker.name))
            if self.holds_scheduler:
                self.redis.delete(keys.SCHEDULER_LOCK)
        except Exception:
            pass  # Redis away at exit: both expire by themselves

    def _beat(self) -> None:
        while True:
            try:
                beat(self.redis, self.worker, self.queue)
            except Exception:
                pass  # Redis away: the batch job reports the outage, once
            if self.stop.wait(HEARTBEAT_SECONDS):
                return

    def _maintain(self) -> None:
        assert self.maintenance is not None
        while True:
            try:
                self.maintenance()
            except Exception as exc:
                log.warning("maintenance_failed", error=faults.said(exc))
            if self.stop.wait(MAINTENANCE_SECONDS):
                return

    def _schedule(self) -> None:
        while True:
            try:
                held = bool(
                    self._acquire(
                        keys=[keys.SCHEDULER_LOCK], args=[self.worker.name, SCHEDULER_LOCK_SECONDS]
                    )
                )
                if held and not self.holds_scheduler:
                    log.info("scheduler_acquired", worker=self.worker.name)
                self.holds_scheduler = held
                if held:
                    enqueue_due(self.redis, self.queue)
            except Exception:
                pass  # Redis away: tried again in a second
            if self.stop.wait(SCHEDULER_SECONDS):
                return
