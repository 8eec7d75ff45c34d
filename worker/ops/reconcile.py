"""Reconcile: compare a ladder's Redis read model with PostgreSQL, and repair the drift.

Expected state is what a rebuild would write (``projection.BoardRows``: the projection's values)
for every ``players`` row. Each difference is one entry naming the ladder, the Redis key and the
player:

- ``missing``: PostgreSQL says the player belongs in that key, Redis does not have them;
- ``extra``: Redis has the player in that key, PostgreSQL says they do not belong there
  (off the board, or no such player at all);
- ``wrong``: both have the player, with another score or other hash fields.

A player whose Redis hash holds a *newer* version than the row read is being written by a
worker right now and is skipped, not reported. ``repair`` re-projects every affected player
from a fresh read of PostgreSQL (rewriting same-version hashes, never a newer one) and takes
players that have no row off every board.

``heal`` is the repair run for a moderation action whose Redis write failed after its commit
(its ``moderation_actions`` row still marked not projected): the next worker batch of the
ladder, ``ladder reconcile --repair`` and the action's command run again call it, and it
takes the mark off once Redis holds what PostgreSQL says.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from redis import Redis
from redis.cluster import RedisCluster
from sqlalchemy import select
from sqlalchemy.engine import Engine

from worker import keys
from worker.boards.projection import BoardRows, PlayerRow
from worker.boards.receipts import ReceiptSink
from worker.ladders import LadderConfig
from worker.lua import lua_source, run
from worker.ops.logreplay import refresh_receipts
from worker.ops.progress import Progress
from worker.ops.rebuild import (
    CHUNK,
    forget,
    glob_escape,
    missing_from_store,
    reproject,
    stream_players,
)
from worker.store import moderation
from worker.store.statements import PLAYER_ROW
from worker.store.tables import players

KINDS = ("missing", "extra", "wrong")
# The script and what its KEYS and ARGV hold: cards.lua.
CARDS = lua_source("worker.ops", "cards.lua")
# The scripts and what their KEYS and ARGV hold: check.lua, hashes.lua.
CHECK = lua_source("worker.ops", "check.lua")
HASHES = lua_source("worker.ops", "hashes.lua")
SCRIPT_CHUNK = 1000  # players per check.lua call: each call stays short while Redis runs it
SEPARATOR = "\x1f"
RECORD = "\x1e"


@dataclass(frozen=True)
class Drift:
    ladder: str
    key: str
    player: str
    expected: Any = None
    actual: Any = None

    def as_json(self) -> dict[str, Any]:
        shown = dataclasses.asdict(self)
        return {k: v for k, v in shown.items() if v is not None or k in ("ladder", "key")}


@dataclass
class Report:
    players: int = 0
    skipped: int = 0
    missing: list[Drift] = field(default_factory=list)
    extra: list[Drift] = field(default_factory=list)
    wrong: list[Drift] = field(default_factory=list)
    repaired: int = 0

    @property
    def clean(self) -> bool:
        return not (self.missing or self.extra or self.wrong)

    def affected(self, ladder: str) -> set[str]:
        return {d.player for d in (*self.missing, *self.extra, *self.wrong) if d.ladder == ladder}

    def merge(self, other: Report) -> None:
        self.players += other.players
        self.skipped += other.skipped
        self.missing += other.missing
        self.extra += other.extra
        self.wrong += other.wrong
        self.repaired += other.repaired

    def as_json(self) -> dict[str, Any]:
        return {
            "players": self.players,
            "skipped_in_flight": self.skipped,
            **{kind: [d.as_json() for d in getattr(self, kind)] for kind in KINDS},
            "repaired": self.repaired,
        }


def check(
    engine: Engine,
    redis: Redis | RedisCluster,
    ladder_config: LadderConfig,
    progress: Progress | None = None,
) -> Report:
    ladder = ladder_config.name
    boards = {
        "rating": keys.rating(ladder),
        "public": keys.public(ladder),
        "boosted": keys.boosted(ladder),
    }
    if ladder_config.active_days is not None:
        boards["active"] = keys.active(ladder)  # as of now: a swept player is expected off it
    active = "active" in boards
    maker = BoardRows(ladder_config)
    reader = _Reader(redis, list(boards.values()), ladder)
    report = Report()
    known: set[str] = set()
    present = dict.fromkeys(boards, 0)  # known players found on each board
    for part in stream_players(engine, ladder):
        rows = [maker.row(r) for r in part]
        ids = [row[0] for row in rows]
        known.update(ids)
        expected_scores = [_scores(row, active) for row in rows]
        found = reader.read(ids, expected_scores, [SEPARATOR.join(row[6]) for row in rows])
        for index, row in enumerate(rows):
            expected = expected_scores[index]
            differing = found.get(index)
            if differing is None:  # Redis holds exactly the scores and card expected
                for board, score in zip(boards, expected, strict=True):
                    if score is not None:
                        present[board] += 1
                continue
            scores, text = differing
            pid, version, flat = row[0], row[1], row[6]
            for board, score in zip(boards, scores, strict=True):
                if score is not None:
                    present[board] += 1
            actual_hash = _card(text)
            if int(actual_hash.get("version", "-1")) > int(version):
                report.skipped += 1  # a worker wrote a newer state after this row was read
                continue
            for key, wanted_score, score in zip(boards.values(), expected, scores, strict=True):
                _compare(report, ladder, key, pid, wanted_score, score)
            wanted = dict(zip(flat[::2], flat[1::2], strict=True))
            hash_key = keys.player(ladder, pid)
            if not actual_hash:
                report.missing.append(Drift(ladder, hash_key, pid))
            elif actual_hash != wanted:
                differ = sorted(set(wanted) | set(actual_hash))
                differ = [f for f in differ if wanted.get(f) != actual_hash.get(f)]
                report.wrong.append(
                    Drift(
                        ladder,
                        hash_key,
                        pid,
                        expected={f: wanted.get(f) for f in differ},
                        actual={f: actual_hash.get(f) for f in differ},
                    )
                )
        report.players += len(rows)
        if progress is not None:
            progress.advance(len(rows))
    strays: list[Drift] = []
    for board, key in boards.items():
        # Every member of a board is a known player or a stray: when the board holds no more
        # members than the known players found on it, there is nothing to scan for.
        if int(redis.zcard(key)) <= present[board]:
            continue
        for member, score in redis.zscan_iter(key, count=CHUNK):
            pid = _text(member)
            if pid not in known:
                strays.append(Drift(ladder, key, pid, actual=score))
    for pid in reader.hash_ids():
        if pid not in known:
            strays.append(Drift(ladder, keys.player(ladder, pid), pid))
    # A player created while this ran is not a stray: ask PostgreSQL again.
    gone = missing_from_store(engine, ladder, {d.player for d in strays})
    report.extra += [d for d in strays if d.player in gone]
    if progress is not None:
        progress.finish(
            f"{len(report.missing)} missing, {len(report.extra)} extra, {len(report.wrong)} wrong"
        )
    return report


Scores = tuple[float | None, ...]  # a player's score on each board (None: not on it)
Found = tuple[Scores, str]  # a player's scores in Redis, and its card as sent (joined)


class _Reader:
    """Reads players' board scores and cards, a chunk in one round trip (``check.lua``: one
    reply string per script call), and the ids of the ladder's player hashes (``hashes.lua``:
    one reply string per SCAN page)."""

    def __init__(self, redis: Redis | RedisCluster, boards: list[str], ladder: str) -> None:
        self.redis = redis
        self.boards = boards
        self.ladder = ladder
        self.skip = len(keys.player_prefix(ladder).encode())
        self.script = redis.register_script(CHECK)
        self.cards = redis.register_script(CARDS)

    def read(self, ids: list[str], scores: list[Scores], cards: list[str]) -> dict[int, Found]:
        """The players (by position) whose scores or card differ from those expected."""
        hashes = [keys.player(self.ladder, pid) for pid in ids]
        calls = []
        for start in range(0, len(ids), SCRIPT_CHUNK):
            end = min(start + SCRIPT_CHUNK, len(ids))
            wanted = RECORD.join(
                SEPARATOR.join(
                    ["" if s is None else repr(s) for s in scores[index]] + [cards[index]]
                )
                for index in range(start, end)
            )
            args: list[str | int] = [self.skip, wanted, len(self.boards)]
            calls.append((start, [*self.boards, *hashes[start:end]], args))
        if isinstance(self.redis, RedisCluster):  # a cluster pipeline refuses scripts
            replies = [self.script(keys=k, args=a) for _, k, a in calls]
        else:
            with self.redis.pipeline(transaction=False) as pipe:
                for _, k, a in calls:
                    run(self.script, pipe, k, a)
                replies = pipe.execute()
        found: dict[int, Found] = {}
        for (start, _, _), (text, odd) in zip(calls, replies, strict=True):
            end = min(start + SCRIPT_CHUNK, len(ids))
            parsed = None if int(odd) else _parse(_text(text), end - start, len(self.boards))
            if parsed is None:
                parsed = self._one_by_one(ids[start:end], hashes[start:end])
            found.update((start + index, f) for index, f in parsed.items())
        return found

    def _one_by_one(self, ids: list[str], hashes: list[str]) -> dict[int, Found]:
        """A chunk whose reply does not split into its players (a hash value holds the
        record separator): the scores by ZMSCORE and each card as its own reply element."""
        with self.redis.pipeline(transaction=False) as pipe:
            for key in self.boards:
                pipe.zmscore(key, ids)
            scores = pipe.execute()
        cards = self.cards(keys=hashes, client=self.redis)
        return {
            index: (tuple(board[index] for board in scores), _text(cards[index]))
            for index in range(len(ids))
        }

    def hash_ids(self) -> Iterator[str]:
        """Every player id that has a hash in Redis (SCAN, so Redis is never blocked)."""
        prefix = keys.player_prefix(self.ladder)
        script = self.redis.register_script(HASHES)
        args: list[str | int] = [glob_escape(prefix) + "*", CHUNK, len(prefix.encode())]
        cursor: bytes | str | int = 0
        while True:
            cursor, joined, odd = script(keys=[keys.rating(self.ladder)], args=[cursor, *args])
            text = _text(joined)
            if text:
                yield from text.split(SEPARATOR)
            yield from (_text(pid) for pid in odd)
            if int(cursor) == 0:
                return


def _scores(row: Sequence[Any], active: bool) -> Scores:
    """The rating, public, boosted (and, where the ladder has one, active) scores a player's
    row puts on the boards."""
    on_board, rating, public, boosted = row[2], row[3], row[4], row[5]
    scores = (
        float(rating) if on_board else None,
        float(rating) if public else None,
        float(boosted) if int(boosted) > 0 else None,
    )
    return (*scores, float(rating) if row[7] == 1 else None) if active else scores


def _parse(text: str, count: int, boards: int) -> dict[int, Found] | None:
    """``check.lua``'s reply: the differing players by position (0-based), or ``None`` when
    it does not split into records of players of this chunk."""
    found: dict[int, Found] = {}
    if not text:
        return found
    for record in text.split(RECORD):
        parts = record.split(SEPARATOR, boards + 1)
        if len(parts) < boards + 2 or not parts[0].isdigit() or not 1 <= int(parts[0]) <= count:
            return None
        scores = tuple(float(part) if part else None for part in parts[1 : boards + 1])
        found[int(parts[0]) - 1] = (scores, parts[boards + 1])
    return found


def repair(
    engine: Engine, redis: Redis | RedisCluster, ladder_config: LadderConfig, report: Report
) -> int:
    """Re-project every player the report names from a fresh read; returns how many."""
    ladder = ladder_config.name
    ids = sorted(report.affected(ladder))
    found: list[PlayerRow] = []
    with engine.connect() as conn:
        for start in range(0, len(ids), CHUNK):
            part = ids[start : start + CHUNK]
            query = select(*PLAYER_ROW).where(
                players.c.ladder == ladder, players.c.player_id.in_(part)
            )
            found.extend(conn.execute(query))
    reproject(redis, ladder_config, found)
    present = {row[1] for row in found}
    forget(redis, ladder, [pid for pid in ids if pid not in present])
    report.repaired += len(ids)
    return len(ids)


def marked(engine: Engine, ladder: str) -> int | None:
    """The newest of the ladder's moderation actions marked not projected (one read of the
    partial index of marked actions), or None."""
    with engine.connect() as conn:
        return moderation.unprojected(conn, [ladder]).get(ladder)


def settle(engine: Engine, ladder: str, through: int) -> None:
    """Take the not-projected mark off the ladder's actions numbered up to ``through``."""
    with engine.begin() as conn:
        moderation.mark_projected(conn, ladder, through, datetime.now(UTC))


def heal(
    engine: Engine,
    redis: Redis | RedisCluster,
    ladder_config: LadderConfig,
    through: int | None = None,
    *,
    receipts: ReceiptSink | None = None,
) -> int | None:
    """Re-project the ladder as ``reconcile --repair`` does when one of its moderation actions
    (numbered up to ``through``; by default the newest marked) is marked not projected, make
    its kept receipts true again when it has voids and ``receipts`` are on
    (``logreplay.refresh_receipts``), then take those marks off; the players repaired, or None
    when no action was marked. A Redis error is raised with the marks left."""
    ladder = ladder_config.name
    if through is None:
        through = marked(engine, ladder)
        if through is None:
            return None
    report = check(engine, redis, ladder_config)
    if not report.clean:
        repair(engine, redis, ladder_config, report)
    if receipts is not None:
        refresh_receipts(engine, ladder_config, receipts)
    settle(engine, ladder, through)
    return report.repaired


def _compare(
    report: Report,
    ladder: str,
    key: str,
    pid: str,
    expected: float | None,
    actual: float | None,
) -> None:
    if expected is None and actual is not None:
        report.extra.append(Drift(ladder, key, pid, actual=actual))
    elif expected is not None and actual is None:
        report.missing.append(Drift(ladder, key, pid, expected=expected))
    elif expected is not None and actual is not None and float(actual) != expected:
        report.wrong.append(Drift(ladder, key, pid, expected=expected, actual=float(actual)))


def _card(raw: bytes | str) -> dict[str, str]:
    text = _text(raw)
    if not text:
        return {}
    parts = text.split(SEPARATOR)
    return dict(zip(parts[::2], parts[1::2], strict=True))


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value
