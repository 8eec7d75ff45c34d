"""The functions RQ runs, by the dotted names its queued jobs carry: ``process_batch`` for a
batch taken from the inbox, ``process_event`` for one dead-lettered event replayed.

Each hands its arguments to the handlers of the worker that runs it: ``ladder worker`` binds
them around every job it executes (``worker.queue.rqworker.Worker.execute_job``, RQ's own
hook for a worker class), so a job's stored arguments stay the payloads alone, the runtime
comes from the worker, never from a global or the environment, and the queue names nothing
of the service that handles them (``worker.entrypoints.worker.batches``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol


class Handlers(Protocol):
    """What a job is handed to."""

    def batch(self, payloads: list[str]) -> int: ...

    def event(self, payload: str) -> str: ...


_BOUND: ContextVar[Handlers | None] = ContextVar("ladder_job_handlers", default=None)


@contextmanager
def bound(handlers: Handlers) -> Iterator[None]:
    """The jobs run meanwhile, on this thread, go to ``handlers``."""
    token = _BOUND.set(handlers)
    try:
        yield
    finally:
        _BOUND.reset(token)


def _handlers() -> Handlers:
    found = _BOUND.get()
    if found is None:
        raise RuntimeError("ladder's jobs run under `ladder worker`, which passes its runtime")
    return found


def process_batch(payloads: list[str]) -> int:
    return _handlers().batch(payloads)


def process_event(payload: str) -> str:
    return _handlers().event(payload)
