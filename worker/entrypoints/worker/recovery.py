"""Crash recovery, run by every worker every 15 seconds (and by ``--burst`` until idle).

A worker killed at any moment has its work taken up by another within 60 s: 20 s for its
heartbeat to expire, up to 15 s until the next maintenance, plus the grace periods below.

- A batch stranded between the inbox and RQ (its mover died) is enqueued: ``Inbox.recover``.
- A batch whose worker died mid-run is noticed when the worker's heartbeat
  (``ladder:alive:<worker>``, renewed every 5 s, expiring after 20 s) is gone, whatever the
  job timeout, or when RQ's started-registry entry expires. Its events are enqueued again
  at once as a fresh batch, so a crash does not eat into RQ's retry back-off; replaying
  applied events is harmless (idempotent ids).
  After ``MAX_CRASHES`` crashes the batch is left to RQ's own retry and, in the end, to
  per-event dead letters, so one event that kills workers cannot stop the others for long.
- A batch left in RQ's intermediate queue (its worker stopped between RQ's dequeue and the
  job's start) is enqueued again after ``STUCK_GRACE_SECONDS``.
- RQ's registry maintenance (expired registries), which RQ itself runs only every 10 minutes.
- A batch that failed for good becomes per-event dead letters.
"""

from __future__ import annotations

import time
from datetime import UTC
from typing import TYPE_CHECKING, cast

import structlog
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus
from rq.registry import StartedJobRegistry

from worker import keys
from worker.entrypoints.worker.batches import OWN_BATCH_DONE
from worker.entrypoints.worker.refusals import split_failed_batches
from worker.queue import faults
from worker.queue.liveness import ALIVE_SECONDS

if TYPE_CHECKING:
    from rq import SimpleWorker

    from worker.bootstrap import Runtime

MAX_CRASHES = 5
STUCK_GRACE_SECONDS = 10.0
log = structlog.get_logger("ladder")


def requeue_abandoned(rt: Runtime) -> int:
    """Enqueue again the events of batches whose worker died; returns how many batches."""
    registry = StartedJobRegistry(queue=rt.inbox.queue)
    now = time.time()
    requeued = 0
    for raw, score in cast(
        list[tuple[bytes, float]], rt.redis.zrange(registry.key, 0, -1, withscores=True)
    ):
        entry = raw.decode()
        job_id = entry.split(":", 1)[0]
        if not job_id.startswith(keys.BATCH_JOB_PREFIX):
            continue
        try:
            job = Job.fetch(job_id, connection=rt.redis)
        except NoSuchJobError:
            continue
        if score > now and not _worker_is_gone(rt, job, now):
            continue
        crashes = int(job.meta.get("crashes", 0)) + 1
        if job.get_status() != JobStatus.STARTED or crashes > MAX_CRASHES:
            continue  # finished meanwhile, or a poison batch: RQ's retry path takes it
        # Its own batch done (``batches.OWN_BATCH_DONE``), the worker died in a follow-on
        # batch, which is staged and recovered on its own: nothing of the job's to run again.
        done = bool(job.meta.get(OWN_BATCH_DONE))
        payloads = list(job.args[0]) if job.args and not done else []
        if payloads:
            rt.inbox.enqueue_batch(payloads, meta={"crashes": crashes})
        # RQ's Job.delete would fail on an execution record that expired with the entry.
        with rt.redis.pipeline() as pipe:
            pipe.zrem(registry.key, raw)
            pipe.delete(job.key, job.execution_registry.key)
            pipe.execute()
        log.warning(
            "abandoned_batch_requeued",
            job_id=job_id,
            events=len(payloads),
            crashes=crashes,
            own_batch_done=done,
        )
        requeued += 1
    return requeued


def _worker_is_gone(rt: Runtime, job: Job, now: float) -> bool:
    """The job's worker has sent no heartbeat for ``ALIVE_SECONDS`` (a job that started
    less than that ago may belong to a worker whose first beat is on its way)."""
    if not job.worker_name or job.started_at is None:
        return False
    started = job.started_at.replace(tzinfo=job.started_at.tzinfo or UTC).timestamp()
    if now - started < ALIVE_SECONDS:
        return False
    return not rt.redis.exists(keys.alive(job.worker_name))


def requeue_stuck(rt: Runtime, grace_seconds: float = STUCK_GRACE_SECONDS) -> int:
    """Batches left in RQ's intermediate queue (moved there by a dequeue whose worker stopped
    or died before registering it) are enqueued again as fresh batches after a grace period.

    RQ's own cleanup would only fail them into the retry back-off after a minute."""
    queue = rt.inbox.queue
    started = StartedJobRegistry(queue=queue)
    running = {
        entry.decode().split(":", 1)[0]
        for entry in cast(list[bytes], rt.redis.zrange(started.key, 0, -1))
    }
    requeued = 0
    for raw in cast(list[bytes], rt.redis.lrange(queue.intermediate_queue_key, 0, -1)):
        job_id = raw.decode()
        if not job_id.startswith(keys.BATCH_JOB_PREFIX) or job_id in running:
            continue
        marker = keys.stuck(job_id)
        if rt.redis.set(marker, time.time(), nx=True, ex=3600):
            continue  # first seen now: a live worker may be about to register it
        if time.time() - float(cast(bytes, rt.redis.get(marker)) or 0) < grace_seconds:
            continue
        try:
            job = Job.fetch(job_id, connection=rt.redis)
        except NoSuchJobError:
            rt.redis.lrem(queue.intermediate_queue_key, 0, job_id)
            continue
        payloads = list(job.args[0]) if job.args else []
        rt.inbox.enqueue_batch(payloads, meta={"crashes": int(job.meta.get("crashes", 0)) + 1})
        with rt.redis.pipeline() as pipe:
            pipe.lrem(queue.intermediate_queue_key, 0, job_id)
            pipe.delete(job.key, marker)
            pipe.execute()
        log.warning("stuck_batch_requeued", job_id=job_id, events=len(payloads))
        requeued += 1
    return requeued


def maintain(rt: Runtime, worker: SimpleWorker) -> None:
    """Each step runs even if another fails: one bad entry must not stop recovery."""
    steps = (
        rt.inbox.recover,
        lambda: requeue_abandoned(rt),  # before RQ's cleanup, which would retry with back-off
        lambda: requeue_stuck(rt),
        worker.clean_registries,
        lambda: split_failed_batches(rt),
    )
    for step in steps:
        try:
            step()
        except Exception as exc:
            log.warning("maintenance_step_failed", error=faults.said(exc))
