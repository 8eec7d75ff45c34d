"""Failpoints: let crash tests kill a worker (or ``ladder archive``) at exactly the moments
that matter.

Inert unless ``LADDER_FAILPOINTS`` is set (read with the other settings, and given here by the
Runtime, ``configure``), e.g.
``inbox.after_claim=0.05,service.after_commit=0.05``: each named point then kills its own
process with SIGKILL with that probability, as a power cut would; ``NAME=pause:SECONDS``
holds the process there instead (a batch kept open for a shutdown test). Only tests set it.
"""

from __future__ import annotations

import os
import random
import signal
import time

POINTS = (
    "inbox.after_claim",
    "service.before_commit",
    "service.between_primaries",
    "service.after_commit",
    "jobs.before_redis_write",
    "jobs.validating_ahead",
    "jobs.before_own_batch_done",
    "runner.before_loop",
    "archive.after_mark",
)


def parse(spec: str) -> dict[str, tuple[str, float]]:
    points: dict[str, tuple[str, float]] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, _, value = item.partition("=")
        if name not in POINTS:
            raise ValueError(f"LADDER_FAILPOINTS: unknown failpoint {name!r}")
        action, _, number = value.rpartition(":")
        points[name] = (action or "kill", float(number or 1))
    return points


_ACTIVE: dict[str, tuple[str, float]] = {}


def configure(spec: str) -> None:
    """Arm the failpoints ``spec`` names (``""``: none)."""
    global _ACTIVE
    _ACTIVE = parse(spec)


def hit(name: str) -> None:
    action, number = _ACTIVE.get(name, ("", 0.0))
    if action == "pause":
        time.sleep(number)
    elif action == "kill" and random.random() < number:
        os.kill(os.getpid(), signal.SIGKILL)
