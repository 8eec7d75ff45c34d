"""Bench section ``void``: how fast a void re-rates the ladder after it.

Ingest the mix with two workers (``bench.ingest.ingest``), then run
``ladder void`` on the first game of the ladder with the most events, so every later event
of that ladder is replayed with it skipped. The rate is the events replayed over the
command's own reported seconds (interpreter start-up left out, as for verify); the command
then runs again with ``--dry-run`` (nothing to do: already void, so it must not replay).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import env

GOAL_EVENTS = 1_000_000
GOAL_SECONDS = 60.0


def void(
    target: env.Target, events: int, log: Path, ingest: Callable[..., dict[str, Any]]
) -> dict[str, Any]:
    ingest(target, events, 2, None, log)
    ((ladder, count),) = target.sql(
        "SELECT ladder, count(*) FROM events GROUP BY ladder ORDER BY count(*) DESC LIMIT 1"
    )
    shown, code, command_seconds = void_first_game(target, ladder, log)
    if shown is None:
        return {"events": 0, "seconds": None, "note": f"ladder void exited {code}"}
    seconds = shown["seconds"]
    rate = shown["events_replayed"] / seconds if seconds else None
    return {
        "ladder": ladder,
        "ladder_events": int(count),
        "events_replayed": shown["events_replayed"],
        "players_corrected": len(shown["players"]),
        "outcomes_changed": shown["outcomes_changed"],
        "seconds": seconds,
        "command_seconds": round(command_seconds, 2),
        "events_per_second": round(rate) if rate else None,
        "projected_seconds_for_1m": round(GOAL_EVENTS / rate, 1) if rate else None,
        "exit": code,
    }


def void_first_game(
    target: env.Target, ladder: str, log: Path
) -> tuple[dict[str, Any] | None, int, float]:
    """``ladder void LADDER <its first game> --json``: every later event is replayed
    (``env.ladder_json``'s JSON, exit status and whole seconds)."""
    ((first,),) = target.sql(
        "SELECT event_id FROM events WHERE ladder = %s AND type = 'game.finished' "
        "ORDER BY seq LIMIT 1",
        ladder,
    )
    argv = ["void", ladder, first, "--reason", "bench", "--by", "bench", "--json"]
    return env.ladder_json(target, argv, log)


def line(found: dict[str, Any]) -> str:
    """The section's line in the bench table."""
    if not found.get("seconds"):
        return f"ladder void: {found.get('note', 'not measured')}"
    return (
        f"ladder void: {found['events_replayed']:,} events of {found['ladder']} replayed in "
        f"{found['seconds']:.2f} s ({found['events_per_second']:,} events/s; "
        f"{found['players_corrected']} players corrected); 1,000,000 events would take "
        f"about {found['projected_seconds_for_1m']} s (goal {GOAL_SECONDS:.0f} s)"
    )
