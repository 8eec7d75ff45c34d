"""Failpoints: let crash tests kill a worker at exactly the moments that matter.

Inert unless ``LADDER_FAILPOINTS`` is set, e.g.
``inbox.after_claim=0.05,service.after_commit=0.05``: each named point then kills its own
process with SIGKILL with that probability, as a power cut would. Only tests set it.
"""

from __future__ import annotations

import os
import random
import signal

POINTS = ("inbox.after_claim", "service.after_commit")


def _parse(spec: str) -> dict[str, float]:
    points: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, _, probability = item.partition("=")
        if name not in POINTS:
            raise ValueError(f"LADDER_FAILPOINTS: unknown failpoint {name!r}")
        points[name] = float(probability or 1)
    return points


_ACTIVE = _parse(os.environ.get("LADDER_FAILPOINTS", ""))


def hit(name: str) -> None:
    probability = _ACTIVE.get(name)
    if probability and random.random() < probability:
        os.kill(os.getpid(), signal.SIGKILL)
