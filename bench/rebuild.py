"""The ``rebuild`` section: a 1,000,000-player ladder rebuilt from PostgreSQL into Redis, and
Redis bytes per player.
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

from bench import env

REBUILD_IN_PROCESS = """
import sys
from worker.ops import rebuild
from worker.bootstrap import Runtime
from worker.settings import Settings
rt = Runtime(Settings.from_env())
rebuild.rebuild(rt.engine, rt.leaderboard_redis, rt.config.ladders[sys.argv[1]])
rt.close()
"""


def _rebuild_command(environ: dict[str, str], ladder: str) -> list[str] | None:
    """``ladder rebuild LADDER`` when the CLI has it, else ``worker.ops.rebuild.rebuild``."""
    probe = subprocess.run(
        [*env.LADDER.split(), "rebuild", "--help"], env=environ, capture_output=True, text=True
    )
    if probe.returncode == 0:
        json_flag = ["--json"] if "--json" in probe.stdout else []
        return [*env.LADDER.split(), "--log-level", "WARNING", "rebuild", ladder, *json_flag]
    fallback = subprocess.run(
        [sys.executable, "-c", "from worker.ops.rebuild import rebuild"],
        env=environ,
        capture_output=True,
    )
    if fallback.returncode == 0:
        return [sys.executable, "-c", REBUILD_IN_PROCESS, ladder]
    return None


def rebuild(target: env.Target, players: int, log: Path) -> dict[str, Any]:
    from worker import keys

    environ = target.subprocess_env()
    ladder = "gammon42"
    command = _rebuild_command(environ, ladder)
    if command is None:
        return {"players": players, "seconds": None, "note": "worker.ops.rebuild is not available"}
    target.reset()
    seeded = time.perf_counter()
    target.sql(
        """INSERT INTO players (ladder, player_id, rating, rated_games, experience, listed,
                                boosted_points, email_verified, display_name_chosen,
                                linked_to, version, last_game_at, updated_at)
           SELECT %s, 'r' || g, 1500 + floor(random() * 800 - 400), 1 + g %% 120, 1 + g %% 120,
                  true, CASE WHEN g %% 10 = 0 THEN g %% 37 ELSE 0 END, g %% 3 = 0, g %% 4 <> 0,
                  NULL, 1 + g %% 120, now() - (g %% 1000) * interval '1 minute',
                  now() - (g %% 1000) * interval '1 minute'
           FROM generate_series(1, %s) AS g""",
        ladder,
        players,
    )
    target.sql("ANALYZE players")
    seed_seconds = time.perf_counter() - seeded
    used_before = int(cast(Any, target.redis).info("memory")["used_memory"])
    started = time.perf_counter()
    run = subprocess.run(
        command,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=log.open("ab"),
        text=True,
    )
    command_seconds = time.perf_counter() - started
    if run.returncode != 0:
        return {"players": players, "seconds": None, "note": f"rebuild exited {run.returncode}"}
    # The rebuild's own time, as `ladder rebuild --json` reports it (interpreter start-up,
    # imports and connections left out, as in the ingest figures); else the command's.
    seconds = command_seconds
    try:
        seconds = float(json.loads(run.stdout.strip().splitlines()[-1])["seconds"])
    except (ValueError, KeyError, IndexError, TypeError):
        pass
    used_after = int(cast(Any, target.redis).info("memory")["used_memory"])
    r: Any = target.redis
    on_board = r.zcard(keys.rating(ladder))
    zsets = 0
    for board in (keys.rating(ladder), keys.public(ladder), keys.boosted(ladder)):
        zsets += int(r.memory_usage(board, samples=0) or 0)
    rng = random.Random(5)
    sample_ids = [f"r{rng.randrange(1, players + 1)}" for _ in range(1_000)]
    pipe = r.pipeline(transaction=False)
    for pid in sample_ids:
        pipe.memory_usage(keys.player(ladder, pid))
    hashes = [int(x or 0) for x in pipe.execute()]
    per_hash = statistics.fmean(hashes) if hashes else 0.0
    per_player = zsets / max(on_board, 1) + per_hash
    target.redis.flushdb()
    return {
        "players": players,
        "seed_seconds": round(seed_seconds, 2),
        "seconds": round(seconds, 2),
        "command_seconds": round(command_seconds, 2),
        "on_rating_board": on_board,
        "bytes_per_player_memory_usage": round(per_player),
        "bytes_per_player_used_memory_delta": round((used_after - used_before) / players),
        "zset_bytes_per_player": round(zsets / max(on_board, 1)),
        "hash_bytes_per_player": round(per_hash),
        "note": "ladder rebuild" if "rebuild" in command else "worker.ops.rebuild.rebuild()",
    }
