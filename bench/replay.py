"""The ``replay`` section: ``ladder verify`` over every ladder after the mix is ingested."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench import env
from bench.ingest import ingest


def replay(target: env.Target, events: int, log: Path) -> dict[str, Any]:
    """Ingest ``events`` with two workers, then ``ladder verify --json`` over every ladder:
    its rate is the command's own reported seconds (interpreter start-up left out, as in the
    ingest figures), and the mismatches must be 0. Its CPU an event is the whole command's,
    steadier than the rate on a shared machine."""
    ingest(target, events, 2, None, log)
    ran = env.ladder_json(target, ["verify", "--json"], log)
    shown, code, command_seconds = ran.shown, ran.code, ran.seconds
    if shown is None or not {"ladders", "events", "seconds"} <= shown.keys():
        return {"events": 0, "seconds": None, "note": f"ladder verify exited {code}"}
    ladders, checked, seconds = shown["ladders"], shown["events"], shown["seconds"]
    replayed = max(entry["seconds"] for entry in ladders.values())
    return {
        "events": checked,
        "seconds": round(seconds, 3),
        "replay_seconds_longest_ladder": round(replayed, 3),
        "redis_seconds": round(sum(entry["redis_seconds"] for entry in ladders.values()), 3),
        "command_seconds": round(command_seconds, 2),
        "events_per_second": round(checked / seconds) if seconds else None,
        # the whole command's CPU (start-up, and the processes it forks, included)
        "command_cpu_us_per_event": ran.cpu_us_per_event(checked),
        "mismatches": sum(entry["mismatch_count"] for entry in ladders.values()),
        "exit": code,
    }


# -- the table -------------------------------------------------------------------------------
