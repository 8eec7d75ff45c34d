"""The active board: rated players whose last rated game ended within ``active_days``.

``ladder:{L}:active`` (score = rating) is written with every other board by the projection,
which puts a player on it or takes them off from their last game at the moment of the write.
Time alone takes a player off it too, with no event: ``sweep`` removes the players whose last
game has grown too old, found through ``ladder:{L}:active:since`` (score = when that game
ended), so a sweep costs what it removes, not the size of the board. Every worker runs the
sweep in its maintenance thread (``worker.queue.liveness``); two workers sweeping at once
remove the same players twice, which is harmless. The same thread loads the board script of
``worker.boards.reader``, which the ``reader`` ACL user may run but not load, at the worker's
start and every minute (a restarted Redis has an empty script cache).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from redis import Redis
from redis.cluster import RedisCluster

from worker import keys
from worker.boards import reader
from worker.ladders import Config, LadderConfig
from worker.lua import lua_source

SWEEP_SECONDS = 60.0  # how often a worker sweeps (a player leaves at most this late)
SWEEP_CHUNK = 1000  # players taken off per script call, so Redis is never blocked for long

# The script and what its KEYS and ARGV hold: active.lua.
SWEEP = lua_source("worker.boards", "active.lua")


def cutoff(ladder_config: LadderConfig, now: datetime) -> datetime | None:
    """The oldest last game that still counts as active (None: no active board)."""
    if ladder_config.active_days is None:
        return None
    return now - timedelta(days=ladder_config.active_days)


def sweep_ladder(redis: Redis | RedisCluster, ladder_config: LadderConfig, now: datetime) -> int:
    """Take the players whose last rated game is too old off the ladder's active board."""
    since = cutoff(ladder_config, now)
    if since is None:
        return 0
    script = redis.register_script(SWEEP)
    ladder = ladder_config.name
    board = [keys.active(ladder), keys.active_since(ladder)]
    removed = 0
    while True:
        taken = int(script(keys=board, args=[repr(since.timestamp()), SWEEP_CHUNK]))
        removed += taken
        if taken < SWEEP_CHUNK:
            return removed


def sweep(
    redis: Redis | RedisCluster, config: Config, now: datetime | None = None
) -> dict[str, int]:
    """Sweep every ladder that keeps an active board; players removed, by ladder."""
    moment = now or datetime.now(UTC)
    return {
        name: sweep_ladder(redis, lc, moment)
        for name, lc in config.ladders.items()
        if lc.active_days is not None
    }


def sweeper(
    redis: Redis | RedisCluster, config: Config, clock: Callable[[], datetime] | None = None
) -> Callable[[], None]:
    """The maintenance call a worker runs every ``SWEEP_SECONDS``: load the board script, then
    sweep every ladder that keeps an active board."""
    sweeps = any(lc.active_days is not None for lc in config.ladders.values())
    now = clock or (lambda: datetime.now(UTC))

    def run() -> None:
        reader.load_script(redis)
        if sweeps:
            sweep(redis, config, now())

    return run
