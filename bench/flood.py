"""A garbage flood: invalid events, then valid ones behind them, drained by one burst worker.

Three drains on a fresh target each, measured in the same run:

- ``flood``: ``invalid`` events (a cube of 3: refused at validation) then ``valid`` ones; the
  valid ones' wait is the seconds from the end of their publish to the end of the drain (they
  are the last of it).
- the ``invalid`` events alone: the dead-letter rate (events per second).
- as many valid events alone: the rated rate.

The goal is a ratio: refusing an event must cost about what rating one does, so the
dead-letter rate is at least ``GOAL_RATIO`` of the rated rate (before dead letters were
written a batch at a time it was 0.13).
"""

from __future__ import annotations

import json
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench import env

GOAL_RATIO = 0.5


def _game(event_id: str, index: int, cube: int, ended: str) -> str:
    return json.dumps(
        {
            "type": "game.finished",
            "event_id": event_id,
            "ladder": "gammon42",
            "ended_at": ended,
            "mode": "ranked",
            "winner": {"player_id": f"w{index % 5000}"},
            "loser": {"player_id": f"l{index % 5000}"},
            "cube": cube,
        },
        separators=(",", ":"),
    )


def _drain(target: env.Target, payloads: list[str], log: Path) -> tuple[float, float]:
    """Publish on a fresh target, then drain with one burst worker: (publish's end, seconds
    to drain from it)."""
    target.reset()
    target.publish(payloads)
    published = time.perf_counter()
    with log.open("ab") as out:
        subprocess.run(
            [*env.LADDER.split(), "--log-level", "WARNING", "worker", "--burst"],
            env=target.subprocess_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            check=True,
            timeout=3600,
        )
    return published, time.perf_counter() - published


def run(target: env.Target, invalid: int, valid: int, log: Path) -> dict[str, Any]:
    """The flood's figures (see the module docstring)."""
    ended = (datetime.now(UTC) - timedelta(days=1)).isoformat().replace("+00:00", "Z")
    bad = [_game(f"bad-{i}", i, 3, ended) for i in range(invalid)]
    behind = [_game(f"ok-{i}", i, 1, ended) for i in range(valid)]
    good = [_game(f"good-{i}", i, 1, ended) for i in range(invalid)]
    print(f"bench: flood, {invalid:,} invalid then {valid:,} valid events", flush=True)
    _, flooded = _drain(target, bad + behind, log)
    letters = target.redis.zcard("rq:failed:ladder")
    print(f"bench: flood, {invalid:,} invalid events alone", flush=True)
    _, refusing = _drain(target, bad, log)
    print(f"bench: flood, {invalid:,} valid events alone", flush=True)
    _, rating = _drain(target, good, log)
    dead_rate, rated_rate = invalid / refusing, invalid / rating
    return {
        "invalid": invalid,
        "valid": valid,
        "dead_letters": letters,
        "valid_wait_seconds": round(flooded, 2),
        "dead_letters_per_second": round(dead_rate),
        "rated_per_second": round(rated_rate),
        "ratio": round(dead_rate / rated_rate, 2),
    }


def goals(result: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    flood = result.get("flood")
    if not flood:
        return []
    ratio = flood["ratio"]
    return [
        (
            f"flood: dead letters >= {GOAL_RATIO}x the rated rate",
            f"{ratio:.2f}x, wait {flood['valid_wait_seconds']:.1f} s",
            ratio >= GOAL_RATIO and flood["dead_letters"] == flood["invalid"],
        )
    ]
