"""Draws, team and free-for-all games through the faults 1v1 games are tested with: a worker
SIGKILLed before and after it commits a batch, PostgreSQL stopped while games stream in, and
dead letters whose players sent raw addresses, replayed once their ladder can rate them.

``arena`` is an openskill ladder and ``chess`` a glicko2 one (SPEC 7), added to the shipped
ladders by each test's own configuration file; ``duel`` is first on gammon42's ruleset, then on
openskill.
"""

from __future__ import annotations

import json
import shutil
import signal
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from redis import Redis
from rq import Worker
from sqlalchemy import create_engine, func, select
from sqlalchemy.pool import NullPool

from engine import network_token
from tests.conftest import record_figure
from tests.e2e.conftest import Cli
from tests.e2e.invariants import check_stores
from tests.e2e.private import PrivatePostgres
from tests.e2e.test_reliability import kill_group, publish, spawn
from tests.events import iso
from tests.integration.test_privacy import everything_in_postgres, everything_in_redis
from tests.ladders import ladder as table
from tests.ladders import with_shipped
from worker.store.statements import COPY_ROWS
from worker.store.tables import dead_letters, events, game_players, rating_changes

ARENA, CHESS, DUEL = "arena", "chess", "duel"
LADDERS = table(ARENA, "openskill") + table(CHESS, "glicko2")
PLAYERS = tuple(f"tg{i}" for i in range(8))
NETWORK_KEY = "team-game-faults-network-key"
# The killed worker takes batches of FIRST events; its first batch is large enough to be written
# by COPY, a follow-on batch of the rest (and the recovering worker's batches) by the JSON
# insert: both write paths of ``game_players`` are on the way.
FIRST, COUNT = 40, 60

Game = dict[str, Any]
Scores = list[tuple[str, float]]  # ZRANGE ... WITHSCORES on a decoding client


# -- the games -------------------------------------------------------------------------------


def _side(player: str | Game) -> Game:
    return {"player_id": player} if isinstance(player, str) else player


def _team(rank: int, *members: str | Game) -> Game:
    return {"rank": rank, "players": [_side(m) for m in members]}


def _stream(count: int) -> list[Game]:
    """``count`` games seven hours apart, the last a minute ago, turning through four shapes
    over eight players: an openskill 2v2 with a player there for half the game, an openskill
    free-for-all of four with a tie for second, a draw (openskill and glicko2 in turn) and a
    glicko2 game of three teams of two, the first two tied. No pair of a two-player game plays
    twice within 24 hours, so the pair limit leaves every game rated. The last two players
    play in the first ``FIRST`` games only: what a batch of those projects to Redis, no later
    game projects again."""
    last = datetime.now(UTC) - timedelta(minutes=1)
    out = []
    for i in range(count):
        pool = PLAYERS if i < FIRST else PLAYERS[:6]
        ring = pool[i % len(pool) :] + pool[: i % len(pool)]
        a, b, c, d, e, f = ring[:6]
        shape: Game
        if i % 4 == 0:
            shape = {
                "ladder": ARENA,
                "teams": [_team(1, a, {"player_id": b, "weight": 0.5}), _team(2, c, d)],
            }
        elif i % 4 == 1:
            shape = {"ladder": ARENA, "teams": [_team(1, a), _team(2, b), _team(2, c), _team(4, d)]}
        elif i % 4 == 2:
            ladder = ARENA if i % 8 == 2 else CHESS
            shape = {"ladder": ladder, "result": "draw", "players": [_side(a), _side(e)]}
        else:
            shape = {"ladder": CHESS, "teams": [_team(1, a, b), _team(1, c, d), _team(2, e, f)]}
        ended_at = iso(last - timedelta(hours=7 * (count - 1 - i)))
        base = {"type": "game.finished", "event_id": f"tf-{i}", "mode": "ranked"}
        out.append({**base, "ended_at": ended_at, **shape})
    return out


def _teams(game: Game) -> list[Game]:
    """A game's teams; a draw's two players are two teams of one at one rank."""
    return cast(list[Game], game.get("teams") or [_team(1, p) for p in game["players"]])


def _players(game: Game) -> list[str]:
    return [p["player_id"] for team in _teams(game) for p in team["players"]]


_SEAT_COLUMNS = [
    game_players.c[c] for c in ("ladder", "event_id", "player_id", "rank", "teams", "draw")
]


def _seats(games: list[Game]) -> list[tuple[str, str, str, int, int, bool]]:
    """The ``game_players`` rows the games make: each player's team's place (1 + the teams
    ahead of it), the number of teams, whether all tied."""
    rows = []
    for g in games:
        ranks = [team["rank"] for team in _teams(g)]
        for team in _teams(g):
            place = 1 + sum(1 for r in ranks if r < team["rank"])
            for p in team["players"]:
                rows.append(
                    (
                        g["ladder"],
                        g["event_id"],
                        p["player_id"],
                        place,
                        len(ranks),
                        len(set(ranks)) == 1,
                    )
                )
    return sorted(rows)


# -- what must hold after the faults ---------------------------------------------------------


def _stored_once(database_url: str, redis_url: str, config: Path, games: list[Game]) -> None:
    """Each game stored once and rated: one audit row, one ledger row per player, each
    player's ledger continuous and ending at its stored rating, Redis's cards and boards equal
    to PostgreSQL (boards ranked by the ruleset's board score: openskill's mu - 3 sigma;
    ``check_stores``); and one ``game_players`` row per player, as sent."""
    check_stores(database_url, redis_url, {(g["ladder"], g["event_id"]) for g in games}, config)
    engine = create_engine(database_url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            outcomes = set(conn.execute(select(events.c.outcome)).scalars())
            seated = sorted(tuple(r) for r in conn.execute(select(*_SEAT_COLUMNS)))
    finally:
        engine.dispose()
    assert {"rated"} == outcomes
    assert _seats(games) == seated


def _stream_receipts(redis_url: str) -> dict[str, list[Game]]:
    """The receipts on ``ladder:receipts``, by event id, in stream order."""
    redis = Redis.from_url(redis_url, decode_responses=True)
    try:
        entries = cast(list[tuple[str, dict[str, str]]], redis.xrange("ladder:receipts"))
    finally:
        redis.close()
    found: dict[str, list[Game]] = defaultdict(list)
    for _, fields in entries:
        body = json.loads(fields["receipt"])
        found[body["event_id"]].append(body)
    return found


def _kept_receipts(redis_url: str, games: list[Game]) -> dict[str, Game | None]:
    redis = Redis.from_url(redis_url, decode_responses=True)
    try:
        texts = [redis.get(f"ladder:receipt:{g['event_id']}") for g in games]
    finally:
        redis.close()
    return {
        g["event_id"]: None if t is None else json.loads(t)
        for g, t in zip(games, texts, strict=True)
    }


def _rated_receipts_of_each(
    database_url: str, redis_url: str, games: list[Game]
) -> dict[str, list[Game]]:
    """Every game's kept receipt is its rated one, naming its players with the numbers of
    their ledger rows; so is its first entry on the stream, and a later entry is a
    ``duplicate`` with the same numbers. Returns the stream's receipts by event id."""
    engine = create_engine(database_url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            rows = conn.execute(select(rating_changes)).mappings().all()
    finally:
        engine.dispose()
    numbers = ("rating_before", "rating_after", "delta", "deviation")
    ledger = {(r["event_id"], r["player_id"]): tuple(r[n] for n in numbers) for r in rows}
    kept = _kept_receipts(redis_url, games)
    streamed = _stream_receipts(redis_url)
    for g in games:
        event_id = g["event_id"]
        receipt = kept[event_id]
        assert receipt is not None, f"no kept receipt of {event_id}"
        assert "rated" == receipt["outcome"], event_id
        named = {p["player_id"]: tuple(p[n] for n in numbers) for p in receipt["players"]}
        assert {p: ledger[event_id, p] for p in _players(g)} == named, event_id
        assert streamed.get(event_id), f"no receipt of {event_id} on the stream"
        first, *again = streamed[event_id]
        assert receipt == first, event_id
        # a duplicate repeats the original's numbers and ranks (docs/integration.md)
        assert [("duplicate", receipt["players"])] * len(again) == [
            (r["outcome"], r["players"]) for r in again
        ], event_id
    return streamed


def _verified_and_reconciled(cli: Cli, *ladders: str) -> None:
    """``ladder verify`` finds no mismatch and exits 0; ``ladder reconcile`` finds no drift."""
    verified = cli.ladder("verify", "--json", check=False)
    report = json.loads(verified.stdout)["ladders"]
    assert {ladder: [] for ladder in ladders} == {
        ladder: report[ladder]["mismatches"] for ladder in ladders
    }
    assert 0 == verified.returncode, verified.stderr
    reconciled = cli.ladder("reconcile", check=False)
    assert 0 == reconciled.returncode, reconciled.stdout + reconciled.stderr


def _audited(database_url: str) -> int:
    engine = create_engine(database_url, poolclass=NullPool, connect_args={"connect_timeout": 3})
    try:
        with engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(events)).scalar_one())
    finally:
        engine.dispose()


# -- a worker killed mid-batch ---------------------------------------------------------------


@pytest.mark.long
@pytest.mark.parametrize(
    ("failpoint", "committed", "written", "again"),
    [
        ("service.before_commit", 0, 0, 0),  # in the first batch's transaction
        ("service.after_commit", FIRST, 0, 0),  # the first batch committed, not written to Redis
        ("jobs.before_redis_write", COUNT, FIRST, 0),  # the follow-on committed, not written
        # the first batch written, its job not yet marked done: recovery runs it again, and
        # each of its games is a duplicate with a receipt of its own
        ("jobs.before_own_batch_done", FIRST, FIRST, FIRST),
    ],
)
def test_a_worker_killed_around_its_commit_of_team_games_leaves_each_game_once(
    cli, database_url, redis_url, tmp_path, failpoint, committed, written, again
):
    """SPEC 5: several workers "with no lost updates ... and leaderboards that end equal to the
    audit store"; "every event gets a *receipt*"; SPEC 2.4 step 1: a duplicate ``event_id`` has
    "no effect at all"; SPEC 7: team and free-for-all games and draws. A worker is SIGKILLed
    at ``failpoint`` in a stream of openskill and glicko2 team games and draws, then
    ``ladder worker --burst`` recovers: every game has one audit row, one ``game_players`` and
    one ledger row per player, its rated receipt kept and streamed, the boards equal
    PostgreSQL, and verify and reconcile agree. No receipt is streamed twice: a batch the
    killed worker had written to Redis is its job's own, which recovery does not run again
    once done (``batches.OWN_BATCH_DONE``); the follow-on batch it died in had streamed
    nothing. Killed after writing its batch and before marking its job done, the job is run
    again: its games are then duplicates, each streamed once more as ``duplicate``."""
    config = with_shipped(tmp_path, LADDERS)
    cli.env["LADDER_CONFIG"] = str(config)
    games = _stream(COUNT)
    assert FIRST + sum(len(_players(g)) for g in games[:FIRST]) >= COPY_ROWS
    assert COUNT - FIRST + sum(len(_players(g)) for g in games[FIRST:]) < COPY_ROWS
    cli.publish_with_redis_cli(games)
    env = {**cli.env, "LADDER_BATCH_SIZE": str(FIRST), "LADDER_FAILPOINTS": f"{failpoint}=1"}
    killed = spawn(env, "--burst")
    try:
        assert -signal.SIGKILL == killed.wait(timeout=60)
    finally:
        kill_group(killed)
    assert committed == _audited(database_url)
    # what the killed worker wrote to Redis: the receipts of its written batch alone
    kept = [e for e, receipt in _kept_receipts(redis_url, games).items() if receipt is not None]
    ids = [g["event_id"] for g in games]
    assert (ids[:written], set(ids[:written])) == (kept, set(_stream_receipts(redis_url)))
    started = time.monotonic()
    cli.ladder("worker", "--burst", timeout=120)  # recovers what the killed worker held
    recovery = time.monotonic() - started
    assert [] == cli.ladder_json("dlq", "list")
    _stored_once(database_url, redis_url, config, games)
    streamed = _rated_receipts_of_each(database_url, redis_url, games)
    repeated = {e for e, found in streamed.items() if len(found) > 1}
    assert set(ids[:again]) == repeated
    _verified_and_reconciled(cli, ARENA, CHESS)
    record_figure(
        f"{COUNT} team games and draws, a worker killed at {failpoint}: recovered in "
        f"{recovery:.1f} s, {len(repeated)} receipts streamed twice"
    )


# -- PostgreSQL stopped mid-stream -----------------------------------------------------------


@pytest.fixture
def private_postgres() -> Iterator[PrivatePostgres]:
    """A PostgreSQL cluster of the test's own, to stop and start (``tests.e2e.private``)."""
    directory = Path(tempfile.mkdtemp(prefix="ladder-pg-"))  # pytest's tmp_path: closed to it
    server = PrivatePostgres(directory)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)


OUTAGE_SECONDS = 5.0


@pytest.mark.long
def test_postgresql_stopped_while_team_games_stream_in_dead_letters_none_and_loses_none(
    cli, private_postgres, redis_url, tmp_path
):
    """SPEC 5: "transient failures (PostgreSQL or Redis unreachable) never dead-letter an
    event: workers stop taking from the inbox and retry until the store returns". A running
    worker scores a stream of openskill and glicko2 team games and draws; PostgreSQL is
    stopped while they come and started again: the worker holds its batch and leaves the rest
    in the inbox meanwhile, then every game is stored once with one receipt, nothing is
    dead-lettered, and verify and reconcile agree."""
    config = with_shipped(tmp_path, LADDERS)
    env = {
        **cli.env,
        "DATABASE_URL": private_postgres.url,
        "LADDER_CONFIG": str(config),
        "LADDER_BATCH_SIZE": "4",
        "LADDER_METRICS_PORT": "0",
    }
    on_private = Cli(env)
    on_private.ladder("migrate")
    games = _stream(48)
    redis = Redis.from_url(redis_url)
    worker = spawn(env)
    try:
        deadline = time.monotonic() + 60
        while Worker.count(connection=redis) < 1:
            assert time.monotonic() < deadline, "the worker never started"
            time.sleep(0.1)
        publish(redis, games[:16])
        while _audited(private_postgres.url) < 8:
            assert time.monotonic() < deadline, "the worker scored nothing"
            time.sleep(0.1)
        private_postgres.stop()
        stopped = time.monotonic()
        publish(redis, games[16:32])
        time.sleep(OUTAGE_SECONDS)
        waiting = int(redis.llen("ladder:inbox"))
        private_postgres.start()
        outage = time.monotonic() - stopped
        publish(redis, games[32:])
        deadline = time.monotonic() + 60
        while _audited(private_postgres.url) < len(games):
            assert time.monotonic() < deadline, "the worker did not drain the stream"
            time.sleep(0.2)
        drained = time.monotonic() - stopped - outage
        assert worker.poll() is None, "the worker died during the outage"
    finally:
        kill_group(worker, signal.SIGTERM)
        redis.close()
    # at most two batches of four left the inbox: the one held and one queued behind it
    assert waiting >= 8, f"the worker took {16 - waiting} games from the inbox without PostgreSQL"
    assert [] == on_private.ladder_json("dlq", "list")
    _stored_once(private_postgres.url, redis_url, config, games)
    streamed = _rated_receipts_of_each(private_postgres.url, redis_url, games)
    assert {g["event_id"]: 1 for g in games} == {e: len(r) for e, r in streamed.items()}
    _verified_and_reconciled(on_private, ARENA, CHESS)
    record_figure(
        f"{len(games)} team games and draws, PostgreSQL stopped {outage:.1f} s mid-stream: "
        f"{waiting} left in the inbox meanwhile, drained {drained:.1f} s after its return"
    )


# -- dead letters with raw addresses ---------------------------------------------------------

ADDRESSES = {
    "ta": "203.0.113.10",
    "tb": "203.0.113.11",  # ta's teammate, on ta's network
    "tc": "198.51.100.20",
    "td": "2001:db8:1::5",
    "te": "192.0.2.1",
    "tf": "192.0.2.200",  # te's opponent, on te's network
    "tg": "198.51.100.99",
    "th": "::ffff:192.0.2.7",  # IPv4-mapped: te's and tf's network again
    "ua": "203.0.113.30",
    "ub": "198.51.100.40",
}


def _with_ip(player: str) -> Game:
    return {"player_id": player, "ip": ADDRESSES[player]}


def _letters_games() -> list[Game]:
    """Three games for ``arena`` before it is configured (a 2v2 whose teammates share a
    network, a free-for-all with a tie whose first two opponents share one, a draw) and a
    free-for-all for ``duel`` while its ruleset is gammon42's, which rates 1v1 wins only: every
    player sends a raw ``ip``."""
    ended_at = iso(datetime.now(UTC) - timedelta(minutes=5))
    base = {"type": "game.finished", "mode": "ranked", "ended_at": ended_at}
    return [
        {
            **base,
            "event_id": "dl-2v2",
            "ladder": ARENA,
            "teams": [
                _team(1, _with_ip("ta"), _with_ip("tb")),
                _team(2, _with_ip("tc"), _with_ip("td")),
            ],
        },
        {
            **base,
            "event_id": "dl-ffa",
            "ladder": ARENA,
            "teams": [_team(1, _with_ip("te")), _team(2, _with_ip("tf")), _team(2, _with_ip("tg"))],
        },
        {
            **base,
            "event_id": "dl-draw",
            "ladder": ARENA,
            "result": "draw",
            "players": [_with_ip("td"), _with_ip("th")],
        },
        {
            **base,
            "event_id": "dl-duel",
            "ladder": DUEL,
            "teams": [_team(1, _with_ip("ua")), _team(2, _with_ip("ub"))],
        },
    ]


def _found_addresses(database_url: str, redis_url: str, *logs: str) -> set[tuple[str, str]]:
    """Where a raw address of ``ADDRESSES`` is: every table, every Redis key (RQ's compressed
    job data too: ``tests.integration.test_privacy``), the logs."""
    engine = create_engine(database_url, poolclass=NullPool)
    redis = Redis.from_url(redis_url)
    try:
        stores = {
            "postgresql": everything_in_postgres(SimpleNamespace(engine=engine)),
            "redis": everything_in_redis(SimpleNamespace(redis=redis)),
            "logs": "\n".join(logs),
        }
    finally:
        engine.dispose()
        redis.close()
    return {
        (where, ip) for where, blob in stores.items() for ip in ADDRESSES.values() if ip in blob
    }


def _tokens_only(payload: Game) -> None:
    """Each player of a stored payload carries its address's network token and no ``ip``."""
    for team in _teams(payload):
        for p in team["players"]:
            token = network_token(ADDRESSES[p["player_id"]], NETWORK_KEY.encode())
            assert (None, token) == (p.get("ip"), p.get("network")), (payload["event_id"], p)


def test_team_games_with_raw_addresses_are_dead_lettered_and_replayed_with_tokens_only(
    cli, database_url, redis_url, tmp_path
):
    """SPEC 2.4 step 4: "if a server sends a raw IP instead, the worker turns it into such a
    keyed hash and never stores or logs the raw address"; SPEC 7: "A ruleset that cannot rate
    a shape dead-letters it with a named reason"; SPEC 5: dead letters "beyond a configured
    count the oldest move to PostgreSQL, still listed and replayable", and "Replay ... scores
    exactly as the original would have". Team games and a draw whose players send raw
    addresses are dead-lettered (``unknown_ladder``: ``arena`` is not configured yet;
    ``unsupported_shape``: ``duel`` is on gammon42's ruleset), in Redis and in PostgreSQL's
    archive, with each player's network token and no address. Once both ladders are openskill
    ones, ``ladder dlq replay`` scores the games as the 2v2 sent again then is scored: rated,
    with receipts naming their players, and the free-for-all whose opponents share a network
    unrated for it; still no raw address in PostgreSQL, Redis or the logs."""
    config = with_shipped(tmp_path, table(DUEL, "gammon42"))
    cli.env |= {
        "LADDER_CONFIG": str(config),
        "LADDER_NETWORK_KEY": NETWORK_KEY,
        "LADDER_DLQ_MAX": "1",
    }
    games = _letters_games()
    cli.publish_with_redis_cli(games)
    refused = cli.ladder("--log-level", "DEBUG", "worker", "--burst")
    letters = {x["event_id"]: x for x in cli.ladder_json("dlq", "list")}
    unknown, shape = "unknown_ladder", "unsupported_shape"
    assert {"dl-2v2": unknown, "dl-ffa": unknown, "dl-draw": unknown, "dl-duel": shape} == {
        event_id: letter["reason"] for event_id, letter in letters.items()
    }
    for letter in letters.values():
        _tokens_only(json.loads(cli.ladder_json("dlq", "show", letter["id"])["payload"]))
    assert (1, 3) == _dead_letters_kept(database_url, redis_url)  # the oldest 3 moved
    assert set() == _found_addresses(database_url, redis_url, refused.stdout, refused.stderr)

    with_shipped(tmp_path, table(ARENA, "openskill") + table(DUEL, "openskill"))
    replayed = cli.ladder("dlq", "replay", "--all")
    # the 2v2 again, sent now that arena exists: its addresses become the same tokens
    again = {**games[0], "event_id": "dl-2v2-again"}
    cli.publish_with_redis_cli([again])
    scored = cli.ladder("--log-level", "DEBUG", "worker", "--burst")
    assert [] == cli.ladder_json("dlq", "list")
    assert (0, 0) == _dead_letters_kept(database_url, redis_url)
    games.append(again)
    kept = _kept_receipts(redis_url, games)
    assert {
        "dl-2v2": ("rated", None, ["ta", "tb", "tc", "td"]),
        "dl-ffa": ("unrated", "shared_network", []),
        "dl-draw": ("rated", None, ["td", "th"]),
        "dl-duel": ("rated", None, ["ua", "ub"]),
        "dl-2v2-again": ("rated", None, ["ta", "tb", "tc", "td"]),
    } == {
        e: (r["outcome"], r["reason"], sorted(p["player_id"] for p in r["players"]))
        for e, r in kept.items()
        if r is not None
    }
    streamed = _stream_receipts(redis_url)
    # each dead letter's receipt, then its game's scored one, which its key keeps
    assert {
        "dl-2v2": ["dead_lettered", "rated"],
        "dl-ffa": ["dead_lettered", "unrated"],
        "dl-draw": ["dead_lettered", "rated"],
        "dl-duel": ["dead_lettered", "rated"],
        "dl-2v2-again": ["rated"],
    } == {e: [r["outcome"] for r in streamed[e]] for e in kept}
    assert all(streamed[e][-1] == kept[e] for e in kept)
    engine = create_engine(database_url, poolclass=NullPool)
    with engine.connect() as conn:
        stored = dict(conn.execute(select(events.c.event_id, events.c.payload)).all())
        seated = sorted(tuple(r) for r in conn.execute(select(*_SEAT_COLUMNS)))
    engine.dispose()
    assert sorted(g["event_id"] for g in games) == sorted(stored)
    for payload in stored.values():
        _tokens_only(payload)
    assert _seats(games) == seated
    logs = (refused, replayed, scored)
    found = _found_addresses(database_url, redis_url, *(x.stdout + x.stderr for x in logs))
    assert set() == found
    _verified_and_reconciled(cli, ARENA, DUEL)


def _dead_letters_kept(database_url: str, redis_url: str) -> tuple[int, int]:
    """How many dead letters RQ's failed registry holds, and PostgreSQL's archive."""
    engine = create_engine(database_url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            archived = conn.execute(select(func.count()).select_from(dead_letters)).scalar_one()
    finally:
        engine.dispose()
    redis = Redis.from_url(redis_url)
    try:
        return int(redis.zcard("rq:failed:ladder")), int(archived)
    finally:
        redis.close()
