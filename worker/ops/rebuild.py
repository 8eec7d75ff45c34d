"""Rebuild a ladder's Redis read model from PostgreSQL, with no moment of an empty board.

PostgreSQL is the system of record; the Redis keys of a ladder (``keys.rating``, ``public``,
``boosted``, each player's hash and the archived ``season`` boards) are a projection of it.
A rebuild streams the ladder's ``players`` rows (server-side cursor, chunk by chunk) and:

1. builds the three leaderboards (and every closed season's archive) into temporary keys
   ``ladder:{L}:rebuild:<token>:<board>`` that share the ladder's hash tag, so all of them
   live in the ladder's Redis Cluster slot;
2. writes each player's hash in place, chunk by chunk, through a script that skips a hash
   holding a *newer* version (a worker projected a later state meanwhile) and rewrites one
   holding the same or an older version, so the projection's version guard keeps working;
3. swaps every temporary board onto its live name in one script (atomic: readers see the
   old board until the new one is complete, never an empty or half-built one); the old
   board is unlinked so Redis frees it in the background;
4. re-projects the players changed while it ran (their rows' ``updated_at`` is recent), so
   a worker's write that the swap replaced is put back;
5. deletes the hashes of players that are no longer in PostgreSQL.

Temporary keys expire after an hour, so an interrupted rebuild leaves nothing for long.
``reproject`` and ``forget`` are also what ``ladder reconcile --repair`` and a season close
use to write individual players.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from redis import Redis
from redis.cluster import RedisCluster
from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from worker import keys
from worker.boards.projection import WRITE, BoardRows, PlayerRow, boards, write_rows
from worker.ladders import LadderConfig
from worker.lua import lua_source
from worker.ops.progress import Progress
from worker.store import cursor
from worker.store.statements import PLAYER_ROW
from worker.store.tables import players, season_standings, seasons

CHUNK = 5000  # rows fetched and written per round trip
SCRIPT_CHUNK = 500  # players per script call
SENDERS = 2  # threads sending chunks to Redis (measured, 1M players: 28.8 s with 1, 25.3 with 2)
TEMP_TTL_SECONDS = 3600
# A worker stamps ``updated_at`` when its batch starts, before it commits; a player stamped up
# to this long before the rebuild began may still have been written after its snapshot.
CATCH_UP_MARGIN = timedelta(minutes=5)
BOARDS = ("rating", "public", "boosted", "active", "active:since")

# The script and what its KEYS and ARGV hold: sweep.lua.
SWEEP = lua_source("worker.ops", "sweep.lua")

# The script and what its KEYS and ARGV hold: swap.lua.
SWAP = lua_source("worker.ops", "swap.lua")


@dataclass(frozen=True)
class RebuildReport:
    ladder: str
    players: int
    boards: dict[str, int]
    seasons: int
    caught_up: int
    stale_hashes: int
    seconds: float

    def as_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def count_players(engine: Engine, ladder: str) -> int:
    with engine.connect() as conn:
        query = select(func.count()).select_from(players).where(players.c.ladder == ladder)
        return int(conn.execute(query).scalar_one())


def stream_players(
    engine: Engine, ladder: str, *, since: datetime | None = None, chunk: int = CHUNK
) -> Iterator[list[PlayerRow]]:
    """The ladder's player rows, ``chunk`` at a time (``worker.store.cursor``).

    On PostgreSQL the rows come straight from a psycopg named cursor as plain tuples (the
    session reads timestamps in UTC, see ``worker.store.tables``): for a million players
    SQLAlchemy's row objects and type processing cost seconds."""
    query = select(*PLAYER_ROW).where(players.c.ladder == ladder)
    if since is not None:
        query = query.where(players.c.updated_at >= since)
    for part in cursor.chunks(engine, query, size=chunk, binary=False):
        yield list(part)


def reproject(
    redis: Redis | RedisCluster, ladder_config: LadderConfig, rows: Iterable[PlayerRow]
) -> int:
    """Write these players' current state into every board and their hash; returns how many.

    Unlike a worker's projection this rewrites a hash holding the same version (repairing
    drift); a hash holding a newer version is left alone, so a worker's later write wins.
    """
    script = redis.register_script(WRITE)
    ladder = ladder_config.name
    maker = BoardRows(ladder_config)
    live = boards(ladder)
    written = 0
    batch: list[list[Any]] = []
    for row in rows:
        batch.append(maker.row(row))
        if len(batch) == SCRIPT_CHUNK:
            written += int(write_rows(redis, script, live, ladder, batch, "repair"))
            batch = []
    if batch:
        written += int(write_rows(redis, script, live, ladder, batch, "repair"))
    return written


def forget(redis: Redis | RedisCluster, ladder: str, player_ids: Iterable[str]) -> int:
    """Take players that have no row in PostgreSQL off every board and delete their hash."""
    ids = sorted(set(player_ids))
    if not ids:
        return 0
    with redis.pipeline(transaction=False) as pipe:
        for start in range(0, len(ids), CHUNK):
            part = ids[start : start + CHUNK]
            for board in (keys.rating, keys.public, keys.boosted, keys.active, keys.active_since):
                pipe.zrem(board(ladder), *part)
            pipe.unlink(*(keys.player(ladder, pid) for pid in part))
        pipe.execute()
    return len(ids)


def unwritten_hashes(redis: Redis | RedisCluster, ladder: str, written: str) -> set[str]:
    """Ids of the ladder's player hashes that the rebuild did not write (compared inside
    Redis): neither on the rating board nor in ``written``, the set of the ids it wrote that
    are not on the board (most players are, and the set stays small). A player a worker took
    off the board since is a false candidate; ``missing_from_store`` checks every candidate
    against PostgreSQL before anything is deleted."""
    sweep = redis.register_script(SWEEP)
    prefix = keys.player_prefix(ladder)
    pattern = glob_escape(prefix) + "*"
    stale: set[str] = set()
    cursor: bytes | str | int = 0
    while True:
        cursor, ids = sweep(
            keys=[written, keys.rating(ladder)], args=[cursor, pattern, CHUNK, len(prefix.encode())]
        )
        stale.update(_decode(i) for i in ids)
        if int(cursor) == 0:
            return stale


def missing_from_store(engine: Engine, ladder: str, player_ids: Iterable[str]) -> set[str]:
    """Those of ``player_ids`` that have no row in PostgreSQL (checked now, not earlier)."""
    ids = sorted(set(player_ids))
    found: set[str] = set()
    with engine.connect() as conn:
        for start in range(0, len(ids), CHUNK):
            part = ids[start : start + CHUNK]
            query = select(players.c.player_id).where(
                players.c.ladder == ladder, players.c.player_id.in_(part)
            )
            found.update(conn.execute(query).scalars())
    return set(ids) - found


def rebuild(
    engine: Engine,
    redis: Redis | RedisCluster,
    ladder_config: LadderConfig,
    progress: Progress | None = None,
) -> RebuildReport:
    started_clock = time.monotonic()
    started_at = datetime.now(UTC)
    ladder = ladder_config.name
    token = uuid.uuid4().hex
    temps = [keys.rebuild_temp(ladder, token, board) for board in BOARDS]
    lives = [
        keys.rating(ladder),
        keys.public(ladder),
        keys.boosted(ladder),
        keys.active(ladder),
        keys.active_since(ladder),
    ]
    written = keys.rebuild_temp(ladder, token, "ids")
    script = redis.register_script(WRITE)
    maker = BoardRows(ladder_config)
    total = 0
    counts = dict.fromkeys(BOARDS[:3], 0)
    if ladder_config.active_days is not None:
        counts["active"] = 0
    archives: dict[str, str] = {}

    def send(parts: list[list[list[Any]]]) -> None:
        with redis.pipeline(transaction=False) as pipe:
            for rows in parts:
                write_rows(pipe, script, [*temps[:3], written, *temps[3:]], ladder, rows, "build")
            for temp in (*temps, written):
                pipe.expire(temp, TEMP_TTL_SECONDS)
            pipe.execute()

    # Redis works through chunks sent by two threads (each on its own connection, so one is
    # always queued behind the other's) while this thread reads and prepares the next ones.
    pending: deque[Future[None]] = deque()
    try:
        with ThreadPoolExecutor(max_workers=SENDERS, thread_name_prefix="ladder-rebuild") as pool:
            for part in stream_players(engine, ladder):
                rows = [maker.row(r) for r in part]
                total += len(rows)
                for row in rows:
                    counts["rating"] += row[2]
                    counts["public"] += row[4]
                    counts["boosted"] += row[5] != "0"
                    if row[7] == 1:
                        counts["active"] += 1
                chunks = [rows[i : i + SCRIPT_CHUNK] for i in range(0, len(rows), SCRIPT_CHUNK)]
                pending.append(pool.submit(send, chunks))
                while len(pending) > 2 * SENDERS:
                    pending.popleft().result()
                if progress is not None:
                    progress.advance(len(part))
            while pending:
                pending.popleft().result()
        archives = _build_archives(engine, redis, ladder, token)
        triples: list[str] = []
        for board, temp, live in zip(BOARDS, temps, lives, strict=True):
            triples.extend((temp, live, keys.rebuild_temp(ladder, token, f"old:{board}")))
        for name, temp in archives.items():
            triples.extend((temp, keys.season(ladder, name), temp + ":old"))
        redis.register_script(SWAP)(keys=triples)
        caught_up = 0
        for part in stream_players(engine, ladder, since=started_at - CATCH_UP_MARGIN):
            caught_up += reproject(redis, ladder_config, part)
        stale = missing_from_store(engine, ladder, unwritten_hashes(redis, ladder, written))
    finally:
        for future in pending:
            future.cancel()
        redis.unlink(*temps, written, *archives.values())
    forget(redis, ladder, stale)
    if progress is not None:
        progress.finish(f"{len(stale)} stale hashes deleted")
    return RebuildReport(
        ladder=ladder,
        players=total,
        boards=counts,
        seasons=len(archives),
        caught_up=caught_up,
        stale_hashes=len(stale),
        seconds=round(time.monotonic() - started_clock, 3),
    )


def _build_archives(
    engine: Engine, redis: Redis | RedisCluster, ladder: str, token: str
) -> dict[str, str]:
    """Every closed season's standings, each into its own temporary key (name -> key)."""
    built: dict[str, str] = {}
    with engine.connect() as conn:
        names = conn.execute(
            select(seasons.c.name).where(
                seasons.c.ladder == ladder, seasons.c.closed_at.is_not(None)
            )
        ).scalars()
        closed = [name for name in names if name]
        for name in closed:
            temp = keys.rebuild_temp(ladder, token, f"season:{name}")
            built[name] = temp
            query = select(season_standings.c.player_id, season_standings.c.rating).where(
                season_standings.c.ladder == ladder, season_standings.c.season == name
            )
            result = conn.execution_options(yield_per=CHUNK).execute(query)
            for part in result.partitions():
                with redis.pipeline(transaction=False) as pipe:
                    pipe.zadd(temp, {pid: float(rating) for pid, rating in part})
                    pipe.expire(temp, TEMP_TTL_SECONDS)
                    pipe.execute()
    return built


def glob_escape(text: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


def _decode(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value
