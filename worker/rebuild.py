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
import json
import time
import uuid
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from redis import Redis
from redis.client import Pipeline
from redis.commands.core import Script
from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from engine import PlayerState, is_provisional
from worker import keys
from worker.config import LadderConfig, RulesVersion
from worker.db import players, season_standings, seasons
from worker.progress import Progress
from worker.projection import is_public
from worker.store import PLAYER_COLUMNS, PlayerRecord

CHUNK = 5000  # rows fetched and written per round trip
SCRIPT_CHUNK = 500  # players per script call
TEMP_TTL_SECONDS = 3600
# A worker stamps ``updated_at`` when its batch starts, before it commits; a player stamped up
# to this long before the rebuild began may still have been written after its snapshot.
CATCH_UP_MARGIN = timedelta(minutes=5)
BOARDS = ("rating", "public", "boosted")

# KEYS: 1 rating, 2 public, 3 boosted, 4 the set of player ids written (build only; repair
# passes any key of the ladder and it is not touched), then one player hash per row.
# ARGV: 1 a JSON array of rows [player_id, version, on_board, rating, public, boosted, fields]
# (on_board/public 0 or 1; version, rating and boosted as strings so no digit is lost;
# fields the hash's flat field/value list); 2 "build" or "repair".
# build: the boards are temporary keys, filled from every row with one ZADD per board; each
# hash is rewritten (players changed meanwhile are re-projected after the swap).
# repair: like ``projection.lua``, but a hash holding the *same* version is rewritten too
# (that is how drift is repaired); one holding a newer version is left alone.
WRITE = """
local rows = cjson.decode(ARGV[1])
if ARGV[2] == 'build' then
  local boards, ids = {{}, {}, {}}, {}
  for k = 1, #rows do
    local row = rows[k]
    ids[k] = row[1]
    redis.call('DEL', KEYS[k + 4])
    redis.call('HSET', KEYS[k + 4], unpack(row[7]))
    if row[3] == 1 then
      table.insert(boards[1], row[4])
      table.insert(boards[1], row[1])
    end
    if row[5] == 1 then
      table.insert(boards[2], row[4])
      table.insert(boards[2], row[1])
    end
    if tonumber(row[6]) > 0 then
      table.insert(boards[3], row[6])
      table.insert(boards[3], row[1])
    end
  end
  for b = 1, 3 do
    if #boards[b] > 0 then redis.call('ZADD', KEYS[b], unpack(boards[b])) end
  end
  if #ids > 0 then redis.call('SADD', KEYS[4], unpack(ids)) end
  return #rows
end
local written = 0
for k = 1, #rows do
  local row = rows[k]
  local id, hash = row[1], KEYS[k + 4]
  local current = tonumber(redis.call('HGET', hash, 'version') or '-1')
  if current <= tonumber(row[2]) then
    if row[3] == 1 then redis.call('ZADD', KEYS[1], row[4], id)
    else redis.call('ZREM', KEYS[1], id) end
    if row[5] == 1 then redis.call('ZADD', KEYS[2], row[4], id)
    else redis.call('ZREM', KEYS[2], id) end
    if tonumber(row[6]) > 0 then redis.call('ZADD', KEYS[3], row[6], id)
    else redis.call('ZREM', KEYS[3], id) end
    redis.call('DEL', hash)
    redis.call('HSET', hash, unpack(row[7]))
    written = written + 1
  end
end
return written
"""

# KEYS: 1 the set of player ids a rebuild wrote. ARGV: 1 SCAN cursor, 2 pattern of the
# ladder's player hashes, 3 SCAN count, 4 length of the hash key prefix.
# Returns the next cursor and the ids of the hashes scanned that the rebuild did not write.
SWEEP = """
local reply = redis.call('SCAN', ARGV[1], 'MATCH', ARGV[2], 'COUNT', ARGV[3], 'TYPE', 'hash')
local stale = {}
local skip = tonumber(ARGV[4])
for _, key in ipairs(reply[2]) do
  local id = string.sub(key, skip + 1)
  if redis.call('SISMEMBER', KEYS[1], id) == 0 then table.insert(stale, id) end
end
return {reply[1], stale}
"""

# KEYS: triples (temporary, live, trash). The live key becomes the temporary one's content,
# or disappears when nothing was built; the old content is unlinked (freed in background).
SWAP = """
for i = 1, #KEYS, 3 do
  if redis.call('EXISTS', KEYS[i + 1]) == 1 then
    redis.call('RENAME', KEYS[i + 1], KEYS[i + 2])
  end
  if redis.call('EXISTS', KEYS[i]) == 1 then
    redis.call('RENAME', KEYS[i], KEYS[i + 1])
    redis.call('PERSIST', KEYS[i + 1])
  end
  redis.call('UNLINK', KEYS[i + 2])
end
return #KEYS / 3
"""


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


PlayerRow = Sequence[Any]
"""A ``players`` row: ladder, player_id, then ``store.PLAYER_COLUMNS`` in order."""

COLUMNS = [players.c.ladder, players.c.player_id, *(players.c[c] for c in PLAYER_COLUMNS)]


class Rows:
    """Turns player rows into what ``WRITE`` reads: the projection's values, computed fast.

    The projection computes a player's card with ``projection.card`` and their public flag
    with ``projection.is_public``; for a million players that is most of a rebuild's time.
    This computes the same fields directly and asks those functions only once per distinct
    input they read (the ruleset's provisional rule reads games and experience; public
    eligibility reads e-mail, display name and experience). A test pins the result equal to
    ``card``/``is_public``/``Projection.args_for`` for every ruleset.
    """

    def __init__(self, ladder_config: LadderConfig) -> None:
        self.config = frozen_rules(ladder_config)
        self.rules = self.config.current
        self._provisional: dict[tuple[int, int], str] = {}
        self._public: dict[tuple[bool, bool, int], int] = {}

    def row(self, r: PlayerRow) -> list[Any]:
        (_, pid, rating, games, experience, listed, boosted, email, name, linked) = r[:10]
        version, last_game_at, updated_at = r[10], r[11], r[12]
        shown = repr(float(rating))
        provisional = self._provisional.get((games, experience))
        if provisional is None:
            state = PlayerState(float(rating), games, experience)
            provisional = "1" if is_provisional(self.rules, state) else "0"
            self._provisional[(games, experience)] = provisional
        fields = [
            "rating",
            shown,
            "games",
            str(games),
            "experience",
            str(experience),
            "provisional",
            provisional,
            "updated_at",
            updated_at.isoformat() if updated_at else "",
            "version",
            str(version),
            "listed",
            "1" if listed else "0",
            "boosted",
            str(boosted),
        ]
        if last_game_at is not None:
            fields += ["last_game_at", last_game_at.isoformat()]
        if linked:
            fields += ["linked_to", linked]
        on_board = 1 if listed and not linked else 0
        public = 0
        if on_board and self.config.public_board:
            found = self._public.get((email, name, experience))
            if found is None:
                record = PlayerRecord(*r)
                found = 1 if is_public(self.config, record) else 0
                self._public[(email, name, experience)] = found
            public = found
        return [pid, str(version), on_board, shown, public, str(boosted), fields]


def as_row(record: PlayerRecord) -> PlayerRow:
    return (record.ladder, record.player_id, *(getattr(record, c) for c in PLAYER_COLUMNS))


def temp_key(ladder: str, token: str, name: str) -> str:
    return f"ladder:{{{ladder}}}:rebuild:{token}:{name}"


def frozen_rules(ladder_config: LadderConfig) -> LadderConfig:
    """The ladder with only the rules in force now: ``current`` costs nothing per player."""
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    return dataclasses.replace(
        ladder_config, versions=(RulesVersion(effective_from=epoch, rules=ladder_config.current),)
    )


def count_players(engine: Engine, ladder: str) -> int:
    with engine.connect() as conn:
        query = select(func.count()).select_from(players).where(players.c.ladder == ladder)
        return int(conn.execute(query).scalar_one())


def stream_players(
    engine: Engine, ladder: str, *, since: datetime | None = None, chunk: int = CHUNK
) -> Iterator[list[PlayerRow]]:
    """The ladder's player rows, ``chunk`` at a time, through a server-side cursor."""
    query = select(*COLUMNS).where(players.c.ladder == ladder)
    if since is not None:
        query = query.where(players.c.updated_at >= since)
    with engine.connect() as conn:
        result = conn.execution_options(yield_per=chunk).execute(query)
        for part in result.partitions():
            yield list(part)


def _write(
    client: Redis | Pipeline,
    script: Script,
    boards: Sequence[str],
    ladder: str,
    rows: list[list[Any]],
    mode: str,
) -> Any:
    """``boards``: rating, public, boosted and the set of ids written (see ``WRITE``)."""
    hashes = [keys.player(ladder, row[0]) for row in rows]
    payload = json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
    return script(keys=[*boards, *hashes], args=[payload, mode], client=client)


def reproject(redis: Redis, ladder_config: LadderConfig, rows: Iterable[PlayerRow]) -> int:
    """Write these players' current state into every board and their hash; returns how many.

    Unlike a worker's projection this rewrites a hash holding the same version (repairing
    drift); a hash holding a newer version is left alone, so a worker's later write wins.
    """
    script = redis.register_script(WRITE)
    ladder = ladder_config.name
    maker = Rows(ladder_config)
    boards = [keys.rating(ladder), keys.public(ladder), keys.boosted(ladder), keys.rating(ladder)]
    written = 0
    batch: list[list[Any]] = []
    for row in rows:
        batch.append(maker.row(row))
        if len(batch) == SCRIPT_CHUNK:
            written += int(_write(redis, script, boards, ladder, batch, "repair"))
            batch = []
    if batch:
        written += int(_write(redis, script, boards, ladder, batch, "repair"))
    return written


def forget(redis: Redis, ladder: str, player_ids: Iterable[str]) -> int:
    """Take players that have no row in PostgreSQL off every board and delete their hash."""
    ids = sorted(set(player_ids))
    if not ids:
        return 0
    with redis.pipeline(transaction=False) as pipe:
        for start in range(0, len(ids), CHUNK):
            part = ids[start : start + CHUNK]
            for board in (keys.rating, keys.public, keys.boosted):
                pipe.zrem(board(ladder), *part)
            pipe.unlink(*(keys.player(ladder, pid) for pid in part))
        pipe.execute()
    return len(ids)


def player_ids_with_hash(redis: Redis, ladder: str) -> Iterator[str]:
    """Every player id that has a hash in Redis (SCAN, so Redis is never blocked)."""
    prefix = keys.player_prefix(ladder)
    for key in redis.scan_iter(match=_glob_escape(prefix) + "*", count=CHUNK, _type="hash"):
        name = _decode(key)
        if name.startswith(prefix):
            yield name[len(prefix) :]


def unwritten_hashes(redis: Redis, ladder: str, written: str) -> set[str]:
    """Ids of the ladder's player hashes not in the set ``written`` (compared inside Redis)."""
    sweep = redis.register_script(SWEEP)
    prefix = keys.player_prefix(ladder)
    pattern = _glob_escape(prefix) + "*"
    stale: set[str] = set()
    cursor: bytes | str | int = 0
    while True:
        cursor, ids = sweep(keys=[written], args=[cursor, pattern, CHUNK, len(prefix.encode())])
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
    redis: Redis,
    ladder_config: LadderConfig,
    progress: Progress | None = None,
) -> RebuildReport:
    started_clock = time.monotonic()
    started_at = datetime.now(UTC)
    ladder = ladder_config.name
    token = uuid.uuid4().hex
    temps = [temp_key(ladder, token, board) for board in BOARDS]
    lives = [keys.rating(ladder), keys.public(ladder), keys.boosted(ladder)]
    written = temp_key(ladder, token, "ids")
    script = redis.register_script(WRITE)
    maker = Rows(ladder_config)
    total = 0
    counts = dict.fromkeys(BOARDS, 0)
    archives: dict[str, str] = {}

    def send(parts: list[list[list[Any]]]) -> None:
        with redis.pipeline(transaction=False) as pipe:
            for rows in parts:
                _write(pipe, script, [*temps, written], ladder, rows, "build")
            for temp in (*temps, written):
                pipe.expire(temp, TEMP_TTL_SECONDS)
            pipe.execute()

    # Redis works through one chunk while this thread reads and prepares the next.
    pending: deque[Future[None]] = deque()
    try:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ladder-rebuild") as pool:
            for part in stream_players(engine, ladder):
                rows = [maker.row(r) for r in part]
                total += len(rows)
                for row in rows:
                    counts["rating"] += row[2]
                    counts["public"] += row[4]
                    counts["boosted"] += row[5] != "0"
                chunks = [rows[i : i + SCRIPT_CHUNK] for i in range(0, len(rows), SCRIPT_CHUNK)]
                pending.append(pool.submit(send, chunks))
                while len(pending) > 2:
                    pending.popleft().result()
                if progress is not None:
                    progress.advance(len(part))
            while pending:
                pending.popleft().result()
        archives = _build_archives(engine, redis, ladder, token)
        triples: list[str] = []
        for board, temp, live in zip(BOARDS, temps, lives, strict=True):
            triples.extend((temp, live, temp_key(ladder, token, f"old:{board}")))
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


def _build_archives(engine: Engine, redis: Redis, ladder: str, token: str) -> dict[str, str]:
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
            temp = temp_key(ladder, token, f"season:{name}")
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


def _glob_escape(text: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


def _decode(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value
