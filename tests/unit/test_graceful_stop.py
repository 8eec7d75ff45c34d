"""SIGTERM lets the batch in hand finish; an idle worker stops at once."""

from __future__ import annotations

import signal

import pytest
from rq import Queue, SimpleWorker
from rq.exceptions import StopRequested

from worker import jobs
from worker.runner import graceful


@pytest.fixture
def worker(redis_url):
    from redis import Redis

    redis = Redis.from_url(redis_url)
    yield graceful(SimpleWorker([Queue("ladder", connection=redis)], connection=redis))
    jobs.activity.set(False)
    redis.close()


def test_sigterm_during_a_batch_lets_it_finish_and_then_stops(worker):
    """The batch is not interrupted; RQ's loop stops after it."""
    jobs.activity.set(True)
    worker.request_stop(signal.SIGTERM, None)  # must not raise into the running batch
    assert worker._stop_requested


def test_sigterm_while_idle_stops_at_once(worker):
    """An idle worker breaks out of its blocking wait."""
    jobs.activity.set(False)
    with pytest.raises(StopRequested):
        worker.request_stop(signal.SIGTERM, None)
