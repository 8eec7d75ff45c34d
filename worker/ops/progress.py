"""Progress of a long operation (rebuild, reconcile): a bar on a terminal, plain lines otherwise.

On a terminal the bar redraws in place at most ten times a second. Anywhere else (a log file,
a CI job, a pipe) it prints one plain line every ``every`` seconds and one at the end, so a
log shows that a long run is alive without thousands of carriage returns.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

BAR_WIDTH = 30


class Progress:
    def __init__(
        self,
        label: str,
        total: int | None = None,
        *,
        stream: TextIO | None = None,
        every: float = 5.0,
        unit: str = "players",
    ) -> None:
        self.label = label
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.every = every
        self.unit = unit
        self.done = 0
        self.terminal = is_terminal(self.stream)
        self._started = time.monotonic()
        self._shown = 0.0

    def advance(self, count: int) -> None:
        self.done += count
        now = time.monotonic()
        if now - self._shown >= (0.1 if self.terminal else self.every):
            self._shown = now
            self._show(final=False)

    def finish(self, note: str = "") -> None:
        self._show(final=True, note=note)

    def _show(self, *, final: bool, note: str = "") -> None:
        elapsed = time.monotonic() - self._started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        counted = f"{self.done}/{self.total}" if self.total else f"{self.done}"
        text = f"{self.label}: {counted} {self.unit}, {elapsed:.1f}s ({rate:,.0f}/s)"
        if note:
            text = f"{text}, {note}"
        if self.terminal:
            share = min(self.done / self.total, 1.0) if self.total else (1.0 if final else 0.0)
            filled = int(share * BAR_WIDTH)
            bar = "#" * filled + "." * (BAR_WIDTH - filled)
            self.stream.write(f"\r[{bar}] {share:4.0%} {text}\x1b[K" + ("\n" if final else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
