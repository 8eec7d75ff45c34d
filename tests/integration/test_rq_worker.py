"""ladder's RQ worker (``worker.queue.rqworker``): leaving its loop never waits on its command
channel, with the redis-py installed (8.2 waits for the channel's thread to end)."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

from rq import Queue
from rq.command import send_shutdown_command

from worker.queue.rqworker import Worker


def test_the_command_channel_stops_within_seconds_however_late_rq_says_stop(runtime):
    """Each of three subscribe/unsubscribe rounds (a running worker's start and end) ends
    within seconds, where RQ's own listener waited up to 60 s a round when the listening
    thread read the unsubscribe's reply before RQ told it to stop (as on a busy machine: here
    the unsubscribe is made that slow to return)."""
    worker = Worker([Queue("ladder-test", connection=runtime.redis)], connection=runtime.redis)
    for _ in range(3):
        worker.subscribe()
        pubsub = worker.pubsub
        assert pubsub is not None
        unsubscribe = pubsub.unsubscribe

        def slow_unsubscribe(*args: Any, unsubscribe: Any = unsubscribe) -> Any:
            done = unsubscribe(*args)
            time.sleep(0.3)  # the listener reads the reply meanwhile
            return done

        pubsub.unsubscribe = slow_unsubscribe  # type: ignore[method-assign]
        time.sleep(0.1)  # the thread is waiting on the channel
        started = time.monotonic()
        worker.unsubscribe()
        assert time.monotonic() - started < 5  # RQ's own listener: 60 s
        assert worker.pubsub_thread is not None and not worker.pubsub_thread.is_alive()


def test_a_running_worker_still_hears_rqs_shutdown_command(runtime):
    """The channel is still RQ's: ``send_shutdown_command`` reaches the worker, which signals
    itself as ``rq`` does (SIGINT, which RQ's loop takes as a stop request)."""
    worker = Worker([Queue("ladder-test", connection=runtime.redis)], connection=runtime.redis)
    heard = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: heard.set())
    worker.subscribe()
    try:
        time.sleep(0.1)
        send_shutdown_command(runtime.redis, worker.name)
        # The listener's thread signals the process; the handler runs on the main thread once
        # it is back in the interpreter, which a wait blocked in one call may not be for its
        # whole timeout (the signal can land on the listener's thread): wait in short steps.
        deadline = time.monotonic() + 10
        while not heard.is_set() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert heard.is_set()
    finally:
        worker.unsubscribe()
        signal.signal(signal.SIGINT, previous)


def test_a_burst_worker_does_not_listen(runtime):
    """A burst worker's loop ends and starts again every round of its drain: no channel."""
    from worker.entrypoints.worker import runner

    worker = runner._burst_worker(runtime)
    worker.subscribe()
    assert worker.pubsub_thread is None
