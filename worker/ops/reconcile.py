"""Reconcile: compare a ladder's Redis read model with PostgreSQL, and repair the drift.

Expected state is what a rebuild would write (``projection.Rows``: the projection's values) for
every ``players`` row. Each difference is one entry naming the ladder, the Redis key and the
player:

- ``missing``: PostgreSQL says the player belongs in that key, Redis does not have them;
- ``extra``: Redis has the player in that key, PostgreSQL says they do not belong there
  (off the board, or no such player at all);
- ``wrong``: both have the player, with another score or other hash fields.

A player whose Redis hash holds a *newer* version than the row read is being written by a
worker right now and is skipped, not reported. ``repair`` re-projects every affected player
from a fresh read of PostgreSQL (rewriting same-version hashes, never a newer one) and takes
players that have no row off every board.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from redis import Redis
from redis.cluster import RedisCluster
from sqlalchemy import select
from sqlalchemy.engine import Engine

from worker import keys
from worker.boards.projection import PlayerRow, Rows
from worker.ladders import LadderConfig
from worker.lua import lua_source
from worker.ops.progress import Progress
from worker.ops.rebuild import (
    CHUNK,
    forget,
    missing_from_store,
    player_ids_with_hash,
    reproject,
    stream_players,
)
from worker.store.statements import PLAYER_ROW
from worker.store.tables import players

KINDS = ("missing", "extra", "wrong")
# The script and what its KEYS and ARGV hold: cards.lua.
CARDS = lua_source("worker.ops", "cards.lua")
SEPARATOR = "\x1f"


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
    maker = Rows(ladder_config)
    cards_script = redis.register_script(CARDS)
    report = Report()
    known: set[str] = set()
    for part in stream_players(engine, ladder):
        rows = [maker.row(r) for r in part]
        ids = [row[0] for row in rows]
        known.update(ids)
        hashes = [keys.player(ladder, pid) for pid in ids]
        with redis.pipeline(transaction=False) as pipe:
            for key in boards.values():
                pipe.zmscore(key, ids)
            replies = pipe.execute()
        cards = cards_script(keys=hashes, client=redis)
        scores = dict(zip(boards, replies, strict=True))
        for index, row in enumerate(rows):
            pid, version, on_board, rating, public, boosted, flat, active, _ = row
            actual_hash = _card(cards[index])
            if int(actual_hash.get("version", "-1")) > int(version):
                report.skipped += 1  # a worker wrote a newer state after this row was read
                continue
            expected = {
                "rating": float(rating) if on_board else None,
                "public": float(rating) if public else None,
                "boosted": float(boosted) if int(boosted) > 0 else None,
                "active": float(rating) if active == 1 else None,
            }
            for board, key in boards.items():
                _compare(report, ladder, key, pid, expected[board], scores[board][index])
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
    for key in boards.values():
        for member, score in redis.zscan_iter(key, count=CHUNK):
            pid = _text(member)
            if pid not in known:
                strays.append(Drift(ladder, key, pid, actual=score))
    for pid in player_ids_with_hash(redis, ladder):
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
