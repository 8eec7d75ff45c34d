"""The cyclic garbage collector, paused where it would only walk long-lived objects again.

Two pauses, for the same reason: what is allocated is either freed as it goes (nothing of it
is cyclic) or lives as long as the process, so a collection finds almost nothing to free.

- ``paused`` switches the collector off for a block and back on after, if it was on: a
  replay keeps a ladder state that grows with every player and window entry, and the
  collector would walk that state again and again (on a million events, a quarter of a
  backtest's time). A worker's batch (``Service.settle``) holds its rows, decisions and
  players until it commits, and the collector walked them a few times each on their way to
  the oldest generation, to free nothing; paused, what a batch leaves is collected after it.
- ``pause_start_up`` / ``started``: the ``ladder`` console script (``worker.entrypoints.cli.
  launch``) pauses the collector while the program starts up. Starting up allocates about
  100,000 objects that live as long as the process (modules, classes, SQLAlchemy's,
  pydantic's and RQ's machinery) and almost no cyclic garbage, so every collection during it
  walks a growing heap for nothing, and a full collection before ``gc.freeze`` walks all of it
  once more (50 ms, to find about a thousand unreachable objects). ``started`` ends the pause
  once the command is set up: what start-up allocated is moved out of the collector's reach
  as it is, unreachable remainder included, and the collector is switched back on. Called as
  a library (``main.main``, as the tests do), nothing paused it and ``started`` does nothing.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_starting = False


@contextmanager
def paused() -> Iterator[None]:
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def pause_start_up() -> None:
    """Switch the collector off until ``started``."""
    global _starting
    gc.disable()
    _starting = True


def started() -> None:
    """The command is set up: freeze what start-up allocated and collect again from here on.
    Does nothing unless ``pause_start_up`` paused the collector."""
    global _starting
    if not _starting:
        return
    _starting = False
    gc.freeze()
    gc.enable()
