"""The batches in flight: claimed from the inbox, their Redis write not yet done.

A worker commits a batch in PostgreSQL, then writes its boards and receipts to Redis; an
operator action that rewrites Redis after its own commit (an erase) must come after every
write of the events committed before it, or a late write would put back what it removed.
A batch is in flight from its claim until its Redis write is done:

- a batch a job takes itself (a follow-on batch, ``worker.entrypoints.worker.batches``) stays
  in its staging list, indexed in ``ladder:staging``, until its write is done;
- a job's own batch is written while its RQ job runs, in RQ's started-job registry.

``wait`` takes both sets once, after the caller's commit, and waits until none of those
batches is in flight any longer. Batches claimed after that started after the commit and see
it, so they are not waited for. A batch whose worker died stays in flight until ``recover``
makes it a job (or RQ's registry cleans it up): its events are then duplicates, written again
from what PostgreSQL holds, so the wait ends at a bound and names what it did not see end.
"""

from __future__ import annotations

import time
from typing import cast

from redis import Redis
from rq import Queue
from rq.registry import StartedJobRegistry

from worker import keys

POLL_SECONDS = 0.05


def in_flight(redis: Redis, queue: Queue) -> set[str]:
    """The batches in flight now: staged ones by batch id, running jobs by job id. A staged
    batch with no events is a claim still waiting for its first (``Inbox.claim_blocking``)."""
    index = cast(list[bytes | str], redis.zrange(keys.STAGING_INDEX, 0, -1))
    batches = [b.decode() if isinstance(b, bytes) else b for b in index]
    with redis.pipeline(transaction=False) as pipe:
        for batch in batches:
            pipe.llen(keys.staging(batch))
        sizes = pipe.execute()
    staged = {f"staged:{b}" for b, size in zip(batches, sizes, strict=True) if size}
    running = StartedJobRegistry(queue=queue).get_job_ids(cleanup=False)
    return staged | {f"job:{job_id}" for job_id in running}


def wait(redis: Redis, queue: Queue, timeout: float) -> set[str]:
    """Wait until none of the batches in flight now is in flight any longer, for at most
    ``timeout`` seconds; returns those still in flight then (empty when all ended)."""
    waiting = in_flight(redis, queue)
    deadline = time.monotonic() + timeout
    while waiting and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
        waiting &= in_flight(redis, queue)
    return waiting
