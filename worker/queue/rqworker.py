"""RQ's in-process worker as ladder runs it: its command channel stops at once.

RQ listens on a worker's command channel (``rq.command.send_shutdown_command`` and the like)
with a thread that waits up to 60 s for a message. When the worker's loop ends, RQ
unsubscribes and then stops that thread; since redis-py 8.2 stopping waits for the thread to
end, and the thread, woken by the unsubscribe's reply and no longer subscribed, first waits
out those 60 s for a new subscription. Every end of a worker's loop (each round of a burst
drain, a SIGTERM to a running worker) then took up to a minute. Here the thread waits one
second at a time (``LISTEN_SECONDS``), so it stops within a second, and a burst worker, whose
loop ends and starts again with every round of its drain, does not listen at all.

Each job it executes runs with the worker's ``handlers`` bound (``worker.queue.jobs``).
"""

from __future__ import annotations

from typing import Any

from rq import Queue, SimpleWorker
from rq.job import Job

from worker.queue import jobs

LISTEN_SECONDS = 1.0  # the longest the command channel's thread takes to stop


class Worker(SimpleWorker):
    """``listening``: the worker's command channel is listened to (a running worker's); a burst
    worker leaves it off. ``handlers``: what its jobs are handed to."""

    listening = True
    handlers: jobs.Handlers | None = None

    def execute_job(self, job: Job, queue: Queue) -> Any:
        if self.handlers is None:
            return super().execute_job(job, queue)
        with jobs.bound(self.handlers):
            return super().execute_job(job, queue)

    def subscribe(self) -> None:
        if not self.listening:
            return
        self.pubsub = self.connection.pubsub()
        self.pubsub.subscribe(**{self.pubsub_channel_name: self.handle_payload})
        self.pubsub_thread = self.pubsub.run_in_thread(  # type: ignore[assignment]
            sleep_time=LISTEN_SECONDS,
            daemon=True,
            exception_handler=self._pubsub_exception_handler,
        )
