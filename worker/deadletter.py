"""The dead-letter queue: RQ's failed-job registry of the ``ladder`` queue, one job per event.

An invalid event becomes a failed RQ job of its own (function ``worker.jobs.process_event``
with the raw payload as its argument), so ``rq info`` and rq-dashboard show it, RQ's requeue
replays it, and its meta carries the machine-readable reason. Its id is derived from the
payload, so dead-lettering the same payload twice (a retried batch) leaves one entry.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from redis import Redis
from rq import Queue
from rq.job import Job, JobStatus
from rq.registry import FailedJobRegistry

from schemas import InvalidEvent
from worker import keys

PROCESS_EVENT = "worker.jobs.process_event"


def dead_letter_id(raw: str | bytes) -> str:
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    return "ladder-dead-" + hashlib.sha256(data).hexdigest()[:32]


@dataclass(frozen=True)
class DeadLetter:
    id: str
    event_id: str | None
    ladder: str | None
    reason: str
    detail: str
    failed_at: datetime | None
    attempts: int
    payload: str

    def as_json(self, now: datetime) -> dict[str, Any]:
        age = (now - self.failed_at).total_seconds() if self.failed_at else None
        return {
            "id": self.id,
            "event_id": self.event_id,
            "ladder": self.ladder,
            "reason": self.reason,
            "detail": self.detail,
            "failed_at": self.failed_at.isoformat() if self.failed_at else None,
            "age_seconds": round(age, 1) if age is not None else None,
            "attempts": self.attempts,
        }


class DeadLetters:
    def __init__(self, redis: Redis, ttl_seconds: int) -> None:
        self.redis = redis
        self.ttl = ttl_seconds
        self.queue = Queue(keys.QUEUE_NAME, connection=redis)
        self.registry = FailedJobRegistry(queue=self.queue)

    def add(self, raw: str | bytes, error: InvalidEvent, traceback: str = "") -> str:
        payload = raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
        guessed = _guess_meta(payload)
        job = Job.create(
            PROCESS_EVENT,
            args=(payload,),
            connection=self.redis,
            id=dead_letter_id(raw),
            origin=self.queue.name,
            failure_ttl=self.ttl,
            description=f"ladder event {error.event_id or '?'} ({error.reason})",
            meta={
                "reason": error.reason,
                "detail": error.detail,
                "event_id": error.event_id or guessed.get("event_id"),
                "ladder": error.ladder or guessed.get("ladder"),
                "dead_lettered_at": datetime.now(UTC).isoformat(),
            },
        )
        job.ended_at = datetime.now(UTC)
        with self.redis.pipeline() as pipe:
            job.save(pipeline=pipe)  # with its meta; the registry's own save leaves meta out
            job.set_status(JobStatus.FAILED, pipeline=pipe)
            self.registry.add(job, ttl=self.ttl, exc_string=traceback or str(error), pipeline=pipe)
            pipe.execute()
        return job.id

    def list(self) -> list[DeadLetter]:
        ids = self.registry.get_job_ids()
        letters = []
        for job in Job.fetch_many(ids, connection=self.redis):
            if job is not None:
                letters.append(self._letter(job))
        return letters

    def get(self, job_id: str) -> tuple[DeadLetter, str] | None:
        if job_id not in self.registry:
            return None
        job = Job.fetch(job_id, connection=self.redis)
        return self._letter(job), job.exc_info or ""

    @staticmethod
    def _letter(job: Job) -> DeadLetter:
        meta = job.meta or {}
        payload = job.args[0] if job.args else ""
        if not meta.get("reason"):
            meta = {**_guess_meta(payload), **meta}
        return DeadLetter(
            id=job.id,
            event_id=meta.get("event_id"),
            ladder=meta.get("ladder"),
            reason=meta.get("reason") or "failed",
            detail=meta.get("detail") or "",
            failed_at=_aware(job.ended_at),
            attempts=int(meta.get("attempts", 1)),
            payload=payload if isinstance(payload, str) else json.dumps(payload),
        )


def _aware(when: datetime | None) -> datetime | None:
    if when is not None and when.tzinfo is None:
        return when.replace(tzinfo=UTC)
    return when


def _guess_meta(payload: Any) -> dict[str, Any]:
    try:
        data = json.loads(payload)
    except (TypeError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: data[k] for k in ("event_id", "ladder") if isinstance(data.get(k), str)}
