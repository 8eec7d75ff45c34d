"""Prometheus collectors read at scrape time: queue and dead-letter sizes, store availability."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, cast

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from redis import Redis
from rq import Queue
from rq.registry import FailedJobRegistry, ScheduledJobRegistry, StartedJobRegistry

from worker import keys
from worker.queue.deadletter import DeadLetters

if TYPE_CHECKING:
    pass


#: Dead letters by reason are read from every dead letter's metadata: at most this often.
REASONS_EVERY_SECONDS = 60.0


class QueueCollector(Collector):
    """Gauges read from the queue Redis at scrape time."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self.queue = Queue(keys.QUEUE_NAME, connection=redis)
        self._reasons: dict[str, int] = {}
        self._reasons_at = float("-inf")

    def collect(self) -> Iterator[GaugeMetricFamily]:
        up = GaugeMetricFamily("ladder_redis_up", "1 if the queue Redis answered this scrape.")
        try:
            sizes = self.sizes()
        except Exception:  # Redis away: report it down rather than fail the whole scrape
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        for name, help_text, value in sizes:
            yield GaugeMetricFamily(name, help_text, value=value)
        by_reason = GaugeMetricFamily(
            "ladder_dead_letters_by_reason",
            f"Dead letters by reason (read at most every {REASONS_EVERY_SECONDS:.0f} s).",
            labels=["reason"],
        )
        for reason, count in sorted(self.reasons().items()):
            by_reason.add_metric([reason], count)
        yield by_reason

    def reasons(self) -> dict[str, int]:
        if time.monotonic() - self._reasons_at >= REASONS_EVERY_SECONDS:
            counts: dict[str, int] = {}
            for letter in DeadLetters(self.redis, 0).list():
                counts[letter.reason] = counts.get(letter.reason, 0) + 1
            self._reasons, self._reasons_at = counts, time.monotonic()
        return self._reasons

    def staging_batches(self) -> int:
        """Batches in the staging index that hold events: a worker waiting on the inbox
        registers its next batch before anything arrives, and that one is empty."""
        batches = cast(list[bytes], self.redis.zrange(keys.STAGING_INDEX, 0, -1))
        if not batches:
            return 0
        with self.redis.pipeline(transaction=False) as pipe:
            for batch in batches:
                pipe.exists(keys.staging(batch.decode()))
            return sum(int(n) for n in pipe.execute())

    def sizes(self) -> list[tuple[str, str, int]]:
        queue = self.queue
        registries = [
            ScheduledJobRegistry(queue=queue),  # type: ignore[no-untyped-call]
            StartedJobRegistry(queue=queue),
            FailedJobRegistry(queue=queue),
        ]
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.llen(keys.INBOX)
            pipe.llen(queue.key)
            for registry in registries:
                pipe.zcard(registry.key)
            inbox, queued, scheduled, started, failed = (int(n) for n in pipe.execute())
        staging = self.staging_batches()
        return [
            ("ladder_inbox_length", f"Events waiting in {keys.INBOX}.", inbox),
            (
                "ladder_staging_batches",
                "Batches of events taken from the inbox, not yet jobs.",
                staging,
            ),
            ("ladder_queue_length", f"Jobs waiting in the RQ queue {queue.key}.", queued),
            ("ladder_retry_scheduled_jobs", "Jobs waiting for their retry back-off.", scheduled),
            ("ladder_started_jobs", "Jobs being run by a worker now.", started),
            ("ladder_dead_letters", "Jobs in the failed registry (the dead-letter queue).", failed),
        ]


# -- store availability, as this worker's batches find it --------------------------------


class StoreCollector(Collector):
    """``ladder_store_up{store}``: 0 while this worker holds a batch through that store's
    outage (``worker.queue.faults.outages``), 1 otherwise."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        from worker.queue.faults import outages

        up = GaugeMetricFamily(
            "ladder_store_up",
            "0 while this worker's batches find the store unreachable, else 1.",
            labels=["store"],
        )
        for store in outages.STORES:
            up.add_metric([store], 1.0 if outages.up(store) else 0.0)
        yield up


# -- dead letters, wherever they are kept --------------------------------------------------


class DeadLetterCollector(Collector):
    """``ladder_dead_letters_stored{store}``: dead letters in Redis (RQ's failed registry)
    and those moved to PostgreSQL beyond ``LADDER_DLQ_MAX``, read at scrape time."""

    def __init__(self, counts: Callable[[], dict[str, int]]) -> None:
        self.counts = counts

    def collect(self) -> Iterator[GaugeMetricFamily]:
        stored = GaugeMetricFamily(
            "ladder_dead_letters_stored",
            "Dead letters kept, by store (redis, postgresql).",
            labels=["store"],
        )
        try:
            for store, count in self.counts().items():
                stored.add_metric([store], float(count))
        except Exception:  # a store away: report what is known, never fail the scrape
            pass
        yield stored
