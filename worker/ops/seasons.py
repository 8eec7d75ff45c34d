"""Seasons (seed 004): "Season 0" is the first; closing one archives its final standings as a
leaderboard of their own and opens the next.

``close`` runs in one PostgreSQL transaction that first locks every player row of the ladder
in the workers' order (so no game is scored half before, half after the close, and the two
never deadlock), then:

1. archives the rating board (listed players not linked to an account) into
   ``season_standings`` with standard competition ranks (1, 2, 2, 4);
2. applies the ladder's reset policy to every player not linked to an account, as the ruleset
   answers it (``Ruleset.season_reset``): ``none``; ``start`` (every rating back to the start
   rating); or ``toward_start`` (each rating moves ``fraction`` of the way to the start,
   rounded half away from zero on the rulesets that keep whole ratings). A reset is a rating
   change like any other: one ``rating_changes`` row (kind ``season``, event id
   ``season:<name>``) per player whose rating moves, and the player's ``version`` is bumped.
   On a ruleset that keeps a deviation (glicko2, openskill) the reset is soft (SPEC 7): the
   deviation moves back toward (or to) the start deviation and the rating stays, so a
   returning player's next games move it more; its row records the deviation. Every replay
   of the history applies the same rule where the close falls (``engine.replay.Season``),
   so a void of a game before it resets the players as they would have been;
3. records the season as closed and opens the next one.

After the commit the archive is written to ``ladder:{L}:season:<name>`` (built aside, then
renamed into place) and every reset player is re-projected. Closing a season whose name is
already closed changes nothing. Should the process die after the commit, ``ladder rebuild``
writes both the archive and the boards from PostgreSQL.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from redis import Redis
from redis.cluster import RedisCluster
from sqlalchemy import and_, bindparam, insert, select, update
from sqlalchemy.engine import Connection, Engine

from worker import keys
from worker.ladders import SEASON_RESETS, LadderConfig, season_reset
from worker.ops.rebuild import CHUNK, SWAP, reproject, stream_players
from worker.store.moderation import last_seq, lock_ladder
from worker.store.tables import players, rating_changes, season_standings, seasons

SEASON_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$")
FIRST_SEASON = 0


class SeasonError(ValueError):
    """A season cannot be closed as asked (bad name, bad policy)."""


@dataclass(frozen=True)
class Policy:
    reset: str = "none"
    fraction: float = 0.5

    @classmethod
    def parse(cls, reset: str, fraction: float | None = None) -> Policy:
        reset = season_reset(reset)
        if reset not in SEASON_RESETS:
            raise SeasonError(f"reset must be one of {', '.join(SEASON_RESETS)}, not {reset!r}")
        value = 0.5 if fraction is None else float(fraction)
        if reset == "toward_start" and not 0.0 < value <= 1.0:
            raise SeasonError(f"fraction must be more than 0 and at most 1, not {value}")
        return cls(reset, value)

    def as_json(self) -> dict[str, Any]:
        return {"reset": self.reset, "fraction": self.fraction}


@dataclass(frozen=True)
class Closed:
    ladder: str
    name: str
    number: int
    closed_at: datetime
    players: int
    reset: int
    already: bool = False

    def as_json(self) -> dict[str, Any]:
        return {
            "ladder": self.ladder,
            "name": self.name,
            "number": self.number,
            "closed_at": self.closed_at.isoformat(),
            "players_archived": self.players,
            "ratings_reset": self.reset,
            "already_closed": self.already,
        }


def choose_policy(
    ladder_config: LadderConfig, reset: str | None, fraction: float | None
) -> tuple[Policy, str]:
    """The policy to apply and where it came from: the command line wins over the file."""
    if reset is not None:
        return Policy.parse(reset, fraction), "command line"
    season = ladder_config.season
    return Policy.parse(season.reset, season.fraction), "configuration"


def check_name(name: str) -> str:
    if not SEASON_NAME.match(name):
        raise SeasonError(
            f"season name {name!r} must be 1-64 of A-Z a-z 0-9 space _ . - (starting with a "
            "letter or digit)"
        )
    return name


def close(
    engine: Engine,
    redis: Redis | RedisCluster,
    ladder_config: LadderConfig,
    name: str,
    policy: Policy,
    now: datetime | None = None,
) -> Closed:
    check_name(name)
    ladder = ladder_config.name
    now = now or datetime.now(UTC)
    with engine.begin() as conn:
        lock_ladder(conn, ladder)
        done = (
            conn.execute(select(seasons).where(seasons.c.ladder == ladder, seasons.c.name == name))
            .mappings()
            .first()
        )
        if done is not None:
            return Closed(
                ladder,
                name,
                done["number"],
                done["closed_at"],
                done["players"] or 0,
                0,
                already=True,
            )
        current = (
            conn.execute(
                select(seasons)
                .where(seasons.c.ladder == ladder, seasons.c.closed_at.is_(None))
                .order_by(seasons.c.number.desc())
                .with_for_update()
            )
            .mappings()
            .first()
        )
        number = current["number"] if current is not None else FIRST_SEASON
        # Its place in scoring order (as a moderation action's): the events stored before it
        # took the lock, every one of them, and none a worker stores after.
        after_seq = last_seq(conn, ladder)
        archived = _archive(conn, ladder_config, name, now)
        changed = _reset(conn, ladder_config, name, policy, now)
        closing = {
            "name": name,
            "closed_at": now,
            "reset": policy.reset,
            "fraction": policy.fraction if policy.reset == "toward_start" else None,
            "players": archived,
            "after_seq": after_seq,
        }
        if current is None:
            conn.execute(insert(seasons).values(ladder=ladder, number=number, **closing))
        else:
            conn.execute(
                update(seasons)
                .where(seasons.c.ladder == ladder, seasons.c.number == number)
                .values(**closing)
            )
        conn.execute(insert(seasons).values(ladder=ladder, number=number + 1, opened_at=now))
    _write_archive(engine, redis, ladder, name)
    if changed:
        for part in stream_players(engine, ladder, since=now):
            reproject(redis, ladder_config, part)
    return Closed(ladder, name, number, now, archived, changed)


def list_seasons(engine: Engine, ladder: str) -> list[dict[str, Any]]:
    """Every season of the ladder, oldest first; the open one has no name and no end."""
    with engine.connect() as conn:
        rows = [
            dict(row)
            for row in conn.execute(
                select(seasons).where(seasons.c.ladder == ladder).order_by(seasons.c.number)
            ).mappings()
        ]
    if not rows:
        rows = [{"ladder": ladder, "number": FIRST_SEASON, "name": None, "opened_at": None}]
    shown = []
    for row in rows:
        shown.append(
            {
                "number": row["number"],
                "name": row.get("name") or f"Season {row['number']}",
                "open": row.get("closed_at") is None,
                "opened_at": _iso(row.get("opened_at")),
                "closed_at": _iso(row.get("closed_at")),
                "players": row.get("players"),
                "reset": row.get("reset"),
                "fraction": row.get("fraction"),
                "key": keys.season(ladder, row["name"]) if row.get("closed_at") else None,
            }
        )
    return shown


def standings(engine: Engine, ladder: str, name: str) -> list[dict[str, Any]]:
    query = (
        select(season_standings)
        .where(season_standings.c.ladder == ladder, season_standings.c.season == name)
        .order_by(season_standings.c.rank, season_standings.c.player_id)
    )
    with engine.connect() as conn:
        return [dict(row) for row in conn.execute(query).mappings()]


def _on_board(ladder: str) -> Any:
    return and_(
        players.c.ladder == ladder,
        players.c.listed.is_(True),
        players.c.linked_to.is_(None),
        players.c.banned.is_(False),
    )


def _archive(conn: Connection, ladder_config: LadderConfig, name: str, now: datetime) -> int:
    """The rating board into ``season_standings``, ranked 1, 2, 2, 4 by what the board ranks
    by (the rating; openskill's mu - k * sigma, which is then the standing's rating)."""
    ladder = ladder_config.name
    score = ladder_config.rules_at(now).board_score
    rows = conn.execute(
        select(
            players.c.player_id,
            players.c.rating,
            players.c.deviation,
            players.c.rated_games,
            players.c.experience,
        ).where(_on_board(ladder))
    ).all()
    scored = sorted(((score(r[1], r[2]), r) for r in rows), key=lambda s: -s[0])
    standings: list[dict[str, Any]] = []
    for place, (value, row) in enumerate(scored, start=1):
        rank = standings[-1]["rank"] if standings and standings[-1]["rating"] == value else place
        standings.append(
            {
                "ladder": ladder,
                "season": name,
                "player_id": row[0],
                "rank": rank,
                "rating": value,
                "rated_games": row[3],
                "experience": row[4],
            }
        )
    for start in range(0, len(standings), CHUNK):
        conn.execute(insert(season_standings), standings[start : start + CHUNK])
    return len(standings)


def _reset(
    conn: Connection, ladder_config: LadderConfig, name: str, policy: Policy, now: datetime
) -> int:
    """Each player's reset, as the ruleset answers it (``Ruleset.season_reset``, the rule
    every replay of the close applies too): a ``season`` row and a version more for each one
    it moves, in player order."""
    if policy.reset == "none":
        return 0
    ladder = ladder_config.name
    rules = ladder_config.rules_at(now)
    soft = rules.keeps_deviation
    rows = conn.execute(
        select(players.c.player_id, players.c.rating, players.c.deviation, players.c.volatility)
        .where(players.c.ladder == ladder, players.c.linked_to.is_(None))
        .order_by(players.c.player_id)
    ).all()
    ledger: list[dict[str, Any]] = []
    moved: list[dict[str, Any]] = []
    for player_id, rating, deviation, volatility in rows:
        after, spread = rules.season_reset(rating, deviation, policy.reset, policy.fraction)
        if after == rating and spread == deviation:
            continue
        ledger.append(
            {
                "ladder": ladder,
                "player_id": player_id,
                "event_id": f"season:{name}",
                "kind": "season",
                "rating_before": rating,
                "rating_after": after,
                "delta": after - rating,
                "at": now,
                "deviation": spread if soft else None,
                "volatility": volatility if soft else None,
            }
        )
        moved.append({"pid": player_id, "to": after, "spread": spread})
    for start in range(0, len(ledger), CHUNK):
        conn.execute(insert(rating_changes), ledger[start : start + CHUNK])
    change = (
        update(players)
        .where(players.c.ladder == ladder, players.c.player_id == bindparam("pid"))
        .values(
            rating=bindparam("to"),
            deviation=bindparam("spread"),
            version=players.c.version + 1,
            updated_at=now,
        )
    )
    for start in range(0, len(moved), CHUNK):
        conn.execute(change, moved[start : start + CHUNK])
    return len(moved)


def _write_archive(engine: Engine, redis: Redis | RedisCluster, ladder: str, name: str) -> None:
    """Build the archive aside and rename it into place: never a half-written archive."""
    token = uuid.uuid4().hex
    temp = keys.rebuild_temp(ladder, token, f"season:{name}")
    query = select(season_standings.c.player_id, season_standings.c.rating).where(
        season_standings.c.ladder == ladder, season_standings.c.season == name
    )
    try:
        with engine.connect() as conn:
            result = conn.execution_options(yield_per=CHUNK).execute(query)
            for part in result.partitions():
                redis.zadd(temp, {pid: float(rating) for pid, rating in part})
        trash = keys.rebuild_temp(ladder, token, "old")
        redis.register_script(SWAP)(keys=[temp, keys.season(ladder, name), trash])
    finally:
        redis.unlink(temp)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None
