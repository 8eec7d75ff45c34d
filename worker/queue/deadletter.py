"""The dead-letter queue: RQ's failed-job registry of the ``ladder`` queue, one job per event.

An invalid event becomes a failed RQ job of its own (function ``worker.queue.jobs.process_event``
with the raw payload as its argument), so ``rq info`` and rq-dashboard show it, RQ's requeue
replays it, and its meta carries the machine-readable reason. Its id is derived from the
payload, so dead-lettering the same payload twice (a retried batch) leaves one entry.

Entries stay for ``LADDER_DLQ_TTL_DAYS`` (30 by default; 0 or less keeps them until an
operator acts). Beyond ``LADDER_DLQ_MAX`` entries in Redis (100,000 by default) the oldest move
to PostgreSQL's ``dead_letters`` table, where they stay until an operator acts; every method
here covers both, RQ's tools see the ones in Redis. A payload is kept up to its first 64 KiB.
Replaying requeues the job itself; the event then runs through the normal
pipeline, where an event already applied is a duplicate and changes nothing.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, cast

import structlog
from redis import Redis
from rq import Queue, get_current_job
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq.job import Job, JobStatus
from rq.registry import FailedJobRegistry
from sqlalchemy.engine import Engine

from schemas import InvalidEvent
from schemas import receipt_bodies as receipts
from schemas.receipt import Receipt
from worker import keys
from worker.boards.receipts import ReceiptSink
from worker.queue import faults
from worker.store.archive import Archive
from worker.store.letters import AmbiguousReference as AmbiguousReference
from worker.store.letters import DeadLetter as DeadLetter
from worker.store.letters import Filter as Filter
from worker.store.letters import aware, filed, guess_ids, guess_type, receipt_of
from worker.store.letters import dead_letter_id as dead_letter_id

PROCESS_EVENT = "worker.queue.jobs.process_event"
PROCESS_BATCH = "worker.queue.jobs.process_batch"
KEEP_FOREVER = -1  # RQ's ttl for "never expires"
RETRIES_EXHAUSTED = "retries_exhausted"
PAGE_CHUNK = 500
ARCHIVE_CHUNK = 1000  # most dead letters moved to PostgreSQL at once
LETTER_CHUNK = 500  # most dead letters written in one transaction
log = structlog.get_logger("ladder")


class DeadLetters:
    def __init__(
        self,
        redis: Redis,
        ttl_seconds: int,
        engine: Callable[[], Engine] | None = None,
        max_in_redis: int = 100_000,
        receipts: ReceiptSink | None = None,
    ) -> None:
        self.redis = redis
        self.receipts = receipts  # each dead letter's receipt, in the same pipeline
        self.archive = Archive(engine) if engine is not None else None
        self.max_in_redis = max_in_redis
        self.ttl = ttl_seconds if ttl_seconds > 0 else KEEP_FOREVER
        self.queue = Queue(keys.QUEUE_NAME, connection=redis)
        self.registry = FailedJobRegistry(queue=self.queue)

    def add(
        self,
        raw: str | bytes,
        error: InvalidEvent,
        traceback: str = "",
        attempts: int | None = None,
    ) -> str:
        return self.add_many([(raw, error, traceback)], attempts)[0]

    def add_many(
        self,
        letters: Iterable[tuple[str | bytes, InvalidEvent, str]],
        attempts: int | None = None,
    ) -> builtins.list[str]:
        """Dead-letter each (payload, error, traceback): a batch's letters and their receipts
        are written together, one transaction and one receipt script a ``LETTER_CHUNK``, so
        refusing an event costs about what rating one does."""
        made = [self._made(raw, error, trace, attempts) for raw, error, trace in letters]
        for first in range(0, len(made), LETTER_CHUNK):
            part = made[first : first + LETTER_CHUNK]
            slips = []
            with self.redis.pipeline() as pipe:
                for job, payload, error, trace in part:
                    job.save(pipeline=pipe)  # with its meta; the registry's save leaves meta out
                    job.set_status(JobStatus.FAILED, pipeline=pipe)
                    self.registry.add(job, ttl=self.ttl, exc_string=trace, pipeline=pipe)
                    event_id = job.meta.get("event_id")
                    if isinstance(event_id, str):
                        pipe.sadd(keys.dlq_by_event(event_id), job.id)
                    slips.append(receipt_of(payload, job.meta, error))
                if self.receipts is not None and slips:
                    self.receipts.write(pipe, slips, boards_here=False)
                pipe.execute()
        self._archive_overflow()
        return [job.id for job, *_ in made]

    def _made(
        self, raw: str | bytes, error: InvalidEvent, traceback: str, attempts: int | None
    ) -> tuple[Job, str, InvalidEvent, str]:
        """The dead letter's job, kept payload, error and traceback."""
        if attempts is None:
            attempts = _attempts_of_current_batch() if error.reason == RETRIES_EXHAUSTED else 1
        payload, meta = filed(raw, error, traceback, attempts)
        job = self._job(payload, dead_letter_id(raw), meta)
        job.ended_at = datetime.now(UTC)
        return job, payload, error, traceback or str(error)

    def _job(self, payload: str, job_id: str, meta: dict[str, Any]) -> Job:
        """The RQ job of one dead-lettered event: replaying it runs ``process_event``."""
        return Job.create(
            PROCESS_EVENT,
            args=(payload,),
            connection=self.redis,
            id=job_id,
            origin=self.queue.name,
            failure_ttl=self.ttl,
            description=f"ladder event {meta.get('event_id') or '?'} ({meta['reason']})",
            meta=meta,
        )

    def _archive_overflow(self) -> None:
        """Beyond ``max_in_redis`` dead letters, move the oldest to PostgreSQL (nothing is
        dropped); a failure leaves them in Redis for the next dead letter to try again."""
        if self.archive is None:
            return
        excess = int(self.redis.zcard(self.registry.key)) - self.max_in_redis
        if excess <= 0:
            return
        chunk = self.redis.zrange(self.registry.key, 0, min(excess, ARCHIVE_CHUNK) - 1)
        ids = [i.decode() for i in cast(builtins.list[bytes], chunk)]
        try:
            jobs = [j for j in Job.fetch_many(ids, connection=self.redis) if j is not None]
            self.archive.store([(self._letter(job), _traceback(job)) for job in jobs])
        except Exception as exc:
            log.warning("dead_letter_archive_failed", error=faults.said(exc, 300))
            return
        with self.redis.pipeline() as pipe:
            for job_id in ids:
                pipe.zrem(self.registry.key, job_id)
                pipe.delete(Job.key_for(job_id))
            for job in jobs:
                event_id = (job.meta or {}).get("event_id")
                if isinstance(event_id, str):
                    pipe.srem(keys.dlq_by_event(event_id), job.id)
            pipe.execute()

    def list(self, where: Filter | None = None, now: datetime | None = None) -> list[DeadLetter]:
        """Dead letters, oldest failure first, that match ``where``."""
        now = now or datetime.now(UTC)
        ids = self.registry.get_job_ids()
        letters = []
        for job in Job.fetch_many(ids, connection=self.redis):
            if job is not None:
                letter = self._letter(job)
                if where is None or where.matches(letter, now):
                    letters.append(letter)
        if self.archive is not None:
            letters = self.archive.page(where, 0, None, now) + letters
        return letters

    def page(
        self,
        where: Filter | None = None,
        offset: int = 0,
        limit: int = 100,
        now: datetime | None = None,
    ) -> builtins.list[DeadLetter]:
        """Up to ``limit`` dead letters matching ``where``, oldest first (those moved to
        PostgreSQL, then Redis's in its registry's order: by expiry to the second, then by
        id), after skipping ``offset`` of them; Redis is read a chunk at a time."""
        now = now or datetime.now(UTC)
        found: builtins.list[DeadLetter] = []
        if self.archive is not None:
            found = self.archive.page(where, offset, limit, now)
            if len(found) == limit:
                return found
            offset = max(0, offset - self.archive.count(where, now))
        skipped = 0
        start = 0
        while len(found) < limit:
            chunk = self.redis.zrange(self.registry.key, start, start + PAGE_CHUNK - 1)
            ids = [i.decode() for i in cast(builtins.list[bytes], chunk)]
            if not ids:
                break
            start += len(ids)
            for job in Job.fetch_many(ids, connection=self.redis):
                if job is None:
                    continue
                letter = self._letter(job)
                if where is not None and not where.matches(letter, now):
                    continue
                if skipped < offset:
                    skipped += 1
                    continue
                found.append(letter)
                if len(found) == limit:
                    break
        return found

    def count(self) -> int:
        return sum(self.counts().values())

    def counts(self) -> dict[str, int]:
        """Dead letters kept in Redis (RQ's failed registry) and moved to PostgreSQL."""
        found = {"redis": int(self.redis.zcard(self.registry.key))}
        if self.archive is not None:
            found["postgresql"] = self.archive.count()
        return found

    def get(self, job_id: str) -> tuple[DeadLetter, str] | None:
        if job_id not in self.registry:
            return self.archive.get(job_id) if self.archive is not None else None
        try:
            job = Job.fetch(job_id, connection=self.redis)
        except NoSuchJobError:
            return None
        return self._letter(job), _traceback(job)

    def resolve(self, reference: str) -> str | None:
        """The dead-letter id ``reference`` names: a dead-letter id, or an unambiguous event id.

        Raises ``AmbiguousReference`` when the event id appears in more than one dead letter
        (two payloads with one event id, e.g. on two ladders).
        """
        if reference in self.registry:
            return reference
        if self.archive is not None and self.archive.get(reference) is not None:
            return reference
        ids = self.ids_of_event(reference)
        if len(ids) > 1:
            raise AmbiguousReference(reference, ids)
        return ids[0] if ids else None

    def ids_of_event(self, event_id: str) -> builtins.list[str]:
        """The dead letters of this event id: those in Redis, then the archived ones."""
        members = cast(set[bytes], self.redis.smembers(keys.dlq_by_event(event_id)))
        ids = sorted(i.decode() for i in members if i.decode() in self.registry)
        if self.archive is not None:
            ids += self.archive.ids_of_event(event_id)
        return ids

    def receipt(self, ladder: str, event_id: str) -> Receipt | None:
        """The receipt of this event's dead letter on ``ladder``, built from the letter (for
        when its Redis copy has expired); None when the event is not in the queue."""
        for letter_id in self.ids_of_event(event_id):
            found = self.get(letter_id)
            if found is None or found[0].ladder != ladder:
                continue
            letter = found[0]
            return receipts.dead_lettered(
                letter.event_id,
                letter.ladder,
                guess_type(letter.payload),
                letter.reason,
                letter.detail,
                letter.failed_at or datetime.now(UTC),
            )
        return None

    def replay(self, job_ids: Iterable[str]) -> builtins.list[str]:
        """Requeue these dead letters on the ``ladder`` queue; returns the ids requeued.

        The job keeps its id, payload and meta (``replays`` counts how often it was sent
        back); an id no longer in the registry (replayed or discarded meanwhile) is skipped.
        """
        requeued = []
        for job_id in job_ids:
            archived = self.archive.get(job_id) if self.archive is not None else None
            if archived is not None and job_id not in self.registry:
                self._replay_archived(archived[0])
                requeued.append(job_id)
                continue
            try:
                job = Job.fetch(job_id, connection=self.redis)
            except NoSuchJobError:
                self.registry.remove(job_id)
                continue
            job.meta["replays"] = int(job.meta.get("replays", 0)) + 1
            job.meta["replayed_at"] = datetime.now(UTC).isoformat()
            try:
                self.registry.requeue(job)
            except InvalidJobOperation:
                continue  # no longer in the registry: someone else acted first
            job.save_meta()  # type: ignore[no-untyped-call]
            requeued.append(job_id)
        return requeued

    def _replay_archived(self, letter: DeadLetter) -> None:
        """A dead letter from PostgreSQL goes back on the queue as the job it was."""
        job = self._job(
            letter.payload,
            letter.id,
            {
                "reason": letter.reason,
                "detail": letter.detail,
                "event_id": letter.event_id,
                "ladder": letter.ladder,
                "attempts": letter.attempts,
                "replays": 1,
                "replayed_at": datetime.now(UTC).isoformat(),
            },
        )
        self.queue.enqueue_job(job)
        if self.archive is not None:
            self.archive.delete([letter.id])

    def discard(self, job_ids: Iterable[str]) -> builtins.list[str]:
        """Delete these dead letters for good; returns the ids deleted."""
        deleted = []
        for job_id in job_ids:
            if job_id not in self.registry:
                if self.archive is not None and self.archive.delete([job_id]):
                    deleted.append(job_id)
                continue
            try:
                job = Job.fetch(job_id, connection=self.redis)
            except NoSuchJobError:
                self.registry.remove(job_id)
                deleted.append(job_id)
                continue
            event_id = (job.meta or {}).get("event_id")
            with self.redis.pipeline() as pipe:
                self.registry.remove(job, pipeline=pipe)
                job.delete(pipeline=pipe)
                if isinstance(event_id, str):
                    pipe.srem(keys.dlq_by_event(event_id), job_id)
                pipe.execute()
            deleted.append(job_id)
        return deleted

    @staticmethod
    def _letter(job: Job) -> DeadLetter:
        meta = job.meta or {}
        payload = job.args[0] if job.args else ""
        if not meta.get("reason"):
            meta = {**guess_ids(payload), **meta}
        return DeadLetter(
            id=job.id,
            event_id=meta.get("event_id"),
            ladder=meta.get("ladder"),
            reason=meta.get("reason") or "failed",
            detail=meta.get("detail") or "",
            failed_at=aware(job.ended_at),
            attempts=int(meta.get("attempts", 1)),
            payload=payload if isinstance(payload, str) else json.dumps(payload),
        )


def _traceback(job: Job) -> str:
    """The latest failure's traceback: a replay's own run, else the one stored at dead-lettering."""
    result = job.latest_result()
    if result is not None and result.exc_string:
        return str(result.exc_string)
    return str((job.meta or {}).get("traceback") or job._exc_info or "")


def _attempts_of_current_batch() -> int:
    """How often the batch job now giving up was tried: its first run plus every retry.

    A dead letter written by any other job (or outside RQ) was tried once.
    """
    job = get_current_job()
    if job is None or job.func_name != PROCESS_BATCH or job.retries_left:
        return 1
    return 1 + len(job.retry_intervals or ())
