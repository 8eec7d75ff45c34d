"""Bench section ``void``: how fast a void re-rates the ladder after it.

Ingest the mix with two workers (``bench.ingest.ingest``), then run
``ladder void`` on the first game of the ladder with the most events, so every later event
of that ladder is replayed with it skipped. The rate is the events replayed over the
command's own reported seconds (interpreter start-up left out, as for verify); the command
then runs again with ``--dry-run`` (nothing to do: already void, so it must not replay).

``voided_ladder`` builds the ladder ``ladder verify`` is measured on in ``bench.history``'s
many-voids step: ``games`` gammon42 games (``generate_hot``) ingested in ``voids`` chunks,
each chunk drained and then one of its games voided, so the voids are spread over the
history as a moderator's are (each of a recent game). It runs in a child process
(``python -m bench.moderation``), the burst worker and the voids in process: the voids are
what is generated here, not measured.
"""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import env
from bench.events import generate_hot

GOAL_EVENTS = 1_000_000
GOAL_SECONDS = 60.0


def void(
    target: env.Target, events: int, log: Path, ingest: Callable[..., dict[str, Any]]
) -> dict[str, Any]:
    ingest(target, events, 2, None, log)
    ((ladder, count),) = target.sql(
        "SELECT ladder, count(*) FROM events GROUP BY ladder ORDER BY count(*) DESC LIMIT 1"
    )
    ran = void_first_game(target, ladder, log)
    shown, code, command_seconds = ran.shown, ran.code, ran.seconds
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
        # the whole command's CPU (start-up included): steadier than the rate
        "command_cpu_us_per_event": ran.cpu_us_per_event(shown["events_replayed"]),
        "projected_seconds_for_1m": round(GOAL_EVENTS / rate, 1) if rate else None,
        "exit": code,
    }


def void_first_game(target: env.Target, ladder: str, log: Path) -> env.Ran:
    """``ladder void LADDER <its first game> --json``: every later event is replayed."""
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
        f"{found['players_corrected']} players corrected{env.cpu_text(found)}); 1,000,000 events "
        f"would take about {found['projected_seconds_for_1m']} s (goal {GOAL_SECONDS:.0f} s)"
    )


def voided_ladder(target: env.Target, games: int, players: int, voids: int, log: Path) -> None:
    """Reset ``target`` and build one gammon42 ladder of ``games`` games with ``voids`` voids
    spread over it (see the module's text); its output goes to ``log``."""
    target.reset()
    argv = [sys.executable, "-m", "bench.moderation", str(games), str(players), str(voids)]
    with log.open("ab") as out:
        subprocess.run(argv, env=target.subprocess_env(), stdout=out, stderr=out, check=True)


def _build(games: int, players: int, voids: int) -> None:
    """The child's part of ``voided_ladder``: chunk, drain, void one of the chunk's games."""
    from worker import keys
    from worker.bootstrap import Runtime
    from worker.entrypoints.worker import runner
    from worker.ops.void import void
    from worker.settings import Settings

    rt = Runtime(Settings.from_env())
    config = rt.config.ladders["gammon42"]
    payloads, _ = generate_hot(games, players=players, tag="v")
    rng = random.Random(7)
    chunk = max(1, games // voids)
    for number in range(voids):
        first = number * chunk
        part = payloads[first : first + chunk] if number < voids - 1 else payloads[first:]
        rt.redis.rpush(keys.INBOX, *part)
        runner.run_burst(rt)
        chosen = f"v-{first + rng.randrange(len(part))}"
        void(
            rt.databases.for_ladder("gammon42"),
            rt.leaderboard_redis,
            config,
            [chosen],
            "bench",
            "bench",
            receipt_sink=rt.receipts,
        )


if __name__ == "__main__":
    _build(*(int(a) for a in sys.argv[1:4]))
