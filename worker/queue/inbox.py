"""Moving events from ``ladder:inbox`` into RQ jobs without ever losing one.

A game server publishes with ``RPUSH ladder:inbox '<json>'``. A pump takes what is waiting
(up to the batch size) with one Lua script that, atomically, pops the events, copies them
to a staging list ``ladder:staging:<batch>`` and records the batch in ``ladder:staging``.
It then enqueues one RQ job for the batch (job id ``ladder-batch-<batch>``, enqueued with
RQ's atomic ``unique`` check) and only then deletes the staging list.

If a process dies between the pop and the enqueue, the events wait in the staging list;
``recover`` (run at every worker start and periodically) enqueues every batch older than a
grace period whose job does not exist yet. A batch enqueued twice is harmless: event ids
are idempotent.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, cast

from redis import Redis
from rq import Queue, Retry
from rq.exceptions import DuplicateJobError

from schemas import oversized
from worker import failpoints, keys
from worker.lua import lua_source

PROCESS_BATCH = "worker.queue.jobs.process_batch"
RECOVERY_GRACE_SECONDS = 30.0

# The script and what its KEYS and ARGV hold: claim.lua.
CLAIM = lua_source("worker.queue", "claim.lua")


class Inbox:
    def __init__(
        self,
        redis: Redis,
        *,
        batch_size: int,
        retry: Retry | None,
        failure_ttl: int,
        job_timeout: int = 60,
        max_event_bytes: int = 65536,
    ) -> None:
        self.redis = redis
        self.batch_size = batch_size
        self.max_event_bytes = max_event_bytes
        self.retry = retry
        self.failure_ttl = failure_ttl
        self.job_timeout = job_timeout
        self.queue = Queue(keys.QUEUE_NAME, connection=redis)
        self._claim = redis.register_script(CLAIM)

    def pending(self) -> int:
        return int(self.redis.llen(keys.INBOX))

    def claim(self) -> tuple[str, list[str]] | None:
        """Take what is waiting (up to one batch) into a staging list; None if nothing waits.

        The caller then either ``hand_over``s the batch (an RQ job) or processes it and
        ``release``s it; if the process dies first, ``recover`` makes it a job.
        """
        batch = uuid.uuid4().hex
        script_keys = [keys.INBOX, keys.staging(batch), keys.STAGING_INDEX]
        args: list[str | int | float] = [self.batch_size, time.time(), batch]
        args += [self.max_event_bytes, oversized.MARK]
        items = self._claim(keys=script_keys, args=args)
        if not items:
            return None
        return batch, _staged(items)

    def release(self, batch: str) -> None:
        """The batch is settled (applied or dead-lettered): drop its staging list."""
        with self.redis.pipeline() as pipe:
            pipe.delete(keys.staging(batch))
            pipe.zrem(keys.STAGING_INDEX, batch)
            pipe.execute()

    def hand_over(self, batch: str, payloads: list[str]) -> None:
        """Make a staged batch an RQ job (retried with back-off), then drop its staging list."""
        self.enqueue_batch(payloads, batch)
        self.release(batch)

    def pump_once(self) -> int:
        """Move what is waiting (up to one batch) into an RQ job; returns how many events."""
        claimed = self.claim()
        if claimed is None:
            return 0
        self.hand_over(*claimed)
        return len(claimed[1])

    def pump_blocking(self, timeout: float) -> int:
        """Wait up to ``timeout`` seconds for the first event, then move it and the rest
        waiting (up to one batch) into an RQ job; returns how many events."""
        claimed = self.claim_blocking(timeout)
        if claimed is None:
            return 0
        self.hand_over(*claimed)
        return len(claimed[1])

    def claim_blocking(self, timeout: float) -> tuple[str, list[str]] | None:
        """``claim``, waiting up to ``timeout`` seconds for the first event (the rest is what
        waits then, up to one batch); None if none came.

        The batch is registered before the blocking move, so an event moved into its staging
        list is always findable by ``recover``.
        """
        batch = uuid.uuid4().hex
        self.redis.zadd(keys.STAGING_INDEX, {batch: time.time()})
        # Redis (6.0 and later) takes a decimal timeout; redis-py's annotation says int.
        wait: Any = timeout
        first = self.redis.blmove(keys.INBOX, keys.staging(batch), wait, "LEFT", "RIGHT")
        if first is None:
            self.redis.zrem(keys.STAGING_INDEX, batch)
            return None
        self.redis.zadd(keys.STAGING_INDEX, {batch: time.time()})
        if len(first) > self.max_event_bytes:  # arrived whole: not kept so, nor read
            first = oversized.stand_in(first)
            self.redis.lset(keys.staging(batch), 0, first)
        more = []
        if self.batch_size > 1:
            more = self._claim(
                keys=[keys.INBOX, keys.staging(batch), keys.STAGING_INDEX],
                args=[
                    self.batch_size - 1,
                    time.time(),
                    batch,
                    self.max_event_bytes,
                    oversized.MARK,
                ],
            )
        return batch, _staged([first, *(more or [])])

    def enqueue_batch(self, payloads: list[str], batch: str | None = None, **extra: Any) -> None:
        """One RQ job for these events (its id is unique: a second enqueue is a no-op)."""
        try:
            self.queue.enqueue_call(
                PROCESS_BATCH,
                args=(payloads,),
                job_id=keys.batch_job(batch or uuid.uuid4().hex),
                retry=self.retry,
                failure_ttl=self.failure_ttl,
                result_ttl=0,
                timeout=self.job_timeout,
                description=f"ladder batch of {len(payloads)} events",
                unique=True,
                **extra,
            )
        except DuplicateJobError:
            pass  # enqueued before by another process

    def recover(self, grace_seconds: float = RECOVERY_GRACE_SECONDS) -> int:
        """Enqueue batches left in staging by a process that died; returns how many events."""
        cutoff = time.time() - grace_seconds
        recovered = 0
        for raw in cast(list[bytes], self.redis.zrangebyscore(keys.STAGING_INDEX, "-inf", cutoff)):
            batch = raw.decode()
            items = self.redis.lrange(keys.staging(batch), 0, -1)
            if items:
                self.hand_over(batch, _staged(items))
                recovered += len(items)
            else:
                self.redis.zrem(keys.STAGING_INDEX, batch)
        return recovered


def _staged(items: list[bytes | str]) -> list[str]:
    """A batch's events, just staged, as text (a crash test may kill the process here)."""
    failpoints.hit("inbox.after_claim")
    return [i.decode("utf-8", "surrogateescape") if isinstance(i, bytes) else i for i in items]
