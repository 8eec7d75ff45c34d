"""The ``ladder`` console script: the command line of ``worker.entrypoints.cli.main``, with the
cyclic garbage collector paused while the program starts up.

Starting up allocates about 100,000 objects that live as long as the process (modules,
classes, SQLAlchemy's, pydantic's and RQ's machinery) and almost no cyclic garbage, so every
collection during it walks a growing heap for nothing, and a full collection before
``gc.freeze`` walks all of it once more (50 ms, to find about a thousand unreachable objects).
``started`` ends the pause once the command is set up: what start-up allocated is moved out of
the collector's reach as it is, unreachable remainder included, and the collector is switched
back on. Called as a library (``main.main``, as the tests do), nothing here touches the
collector.
"""

from __future__ import annotations

import gc
import sys

_paused = False


def main() -> int:
    global _paused
    gc.disable()
    _paused = True
    from worker.entrypoints.cli.main import main as run

    return run()


def started() -> None:
    """The command is set up: freeze what start-up allocated and collect again from here on.
    Does nothing unless ``main`` paused the collector."""
    global _paused
    if not _paused:
        return
    _paused = False
    gc.freeze()
    gc.enable()


if __name__ == "__main__":
    sys.exit(main())
