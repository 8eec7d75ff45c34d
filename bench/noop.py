"""RQ's own ceiling on this machine: how fast ``SimpleWorker`` drains jobs that do nothing.

``python -m bench.noop enqueue REDIS_URL COUNT`` enqueues COUNT jobs of :func:`noop` on the
``bench-noop`` queue; ``python -m bench.noop work REDIS_URL`` runs one burst SimpleWorker
over that queue (the worker class ``ladder worker`` uses) and exits.

The worker does not listen on RQ's command channel, as ``ladder worker --burst`` does not
(``worker.queue.rqworker``): RQ's thread for that channel reads with a 60 s timeout, and since
redis-py 8.2 stopping it waits for that read to return, so two burst workers took either about
3 s or about 63 s for the same 2,000 jobs, by chance.
"""

from __future__ import annotations

import json
import sys
import time

from redis import Redis
from rq import Queue, SimpleWorker

QUEUE = "bench-noop"
TIMINGS = "bench-noop:timings"  # list of JSON [started, finished] (time.time) per worker


def noop() -> None:
    """The job: nothing at all."""
    return None


def enqueue(redis: Redis, count: int, chunk: int = 500) -> None:
    queue = Queue(QUEUE, connection=redis)
    for start in range(0, count, chunk):
        n = min(chunk, count - start)
        with redis.pipeline() as pipe:
            queue.enqueue_many(
                [Queue.prepare_data(noop, result_ttl=0) for _ in range(n)], pipeline=pipe
            )
            pipe.execute()


class BurstWorker(SimpleWorker):
    """RQ's ``SimpleWorker``, its command channel not listened to."""

    def subscribe(self) -> None:
        return None


def work(redis: Redis) -> None:
    worker = BurstWorker([Queue(QUEUE, connection=redis)], connection=redis)
    started = time.time()
    worker.work(burst=True, logging_level="WARNING", with_scheduler=True)
    redis.rpush(TIMINGS, json.dumps([started, time.time()]))


def main(argv: list[str]) -> int:
    command, url, *rest = argv
    redis = Redis.from_url(url)
    if command == "enqueue":
        enqueue(redis, int(rest[0]))
    elif command == "work":
        work(redis)
    else:
        raise SystemExit(f"unknown command {command!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
