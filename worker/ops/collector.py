"""The cyclic garbage collector paused while a ladder is replayed.

What a replay allocates per event is freed as it goes (nothing it makes is cyclic), while the
ladder state it keeps grows with every player and window entry: the collector would only walk
that state again and again (on a million events, a quarter of a backtest's time). ``paused``
switches it off for the block and back on after, if it was on.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
