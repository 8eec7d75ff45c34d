"""A few hundred events across the three ladders, published with redis-cli and drained by
``ladder worker --burst``; the final boards and every outcome must equal the oracle's."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest
from redis import Redis
from sqlalchemy import create_engine, select

from tests.e2e.oracle import Oracle
from tests.events import iso
from worker.store.tables import events as events_table
from worker.store.tables import rating_changes

Scores = list[tuple[str, float]]  # ZRANGE ... WITHSCORES on a decoding client

NOW = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1)


def g(eid: str, ladder: str, w: str, lo: str, at: datetime, **extra: Any) -> dict[str, Any]:
    winner = {"player_id": w, **extra.pop("wx", {})}
    loser = {"player_id": lo, **extra.pop("lx", {})}
    return {
        "type": "game.finished",
        "event_id": eid,
        "ladder": ladder,
        "ended_at": iso(at),
        "mode": extra.pop("mode", "ranked"),
        "winner": winner,
        "loser": loser,
        **extra,
    }


def scenario(rng: random.Random) -> tuple[list[dict[str, Any] | str], set[str | None]]:
    """The published events in arrival order, and the event ids that must be dead-lettered."""
    out: list[dict[str, Any] | str] = []
    start = NOW - timedelta(days=6)

    # gammon42: a grinder with 60 ranked games this week (K drops to 16 after 50) ...
    gp = [f"g{i}" for i in range(1, 8)]
    for i in range(60):
        opp = gp[i % 7]
        at = start + timedelta(hours=2 * i)
        w, lo = ("g0", opp) if rng.random() < 0.55 else (opp, "g0")
        extra: dict[str, Any] = {"cube": rng.choice([1, 1, 2, 4, 8, 64])}
        if i % 10 == 4:  # the 50th game (i = 49) must be rated: it pins the K boundary
            extra["lx"] = {"is_bot": True}
        out.append(g(f"grind-{i}", "gammon42", w, lo, at, **extra))
    # ... everyone else playing at random, with early endings, gammons and shared networks
    for i in range(60):
        a, b = rng.sample(gp, 2)
        at = start + timedelta(minutes=rng.randrange(0, 6 * 24 * 60))
        extra = {
            "cube": rng.choice([1, 2, 4, 16, 32]),
            "result": rng.choice(["single", "gammon", "backgammon"]),
            "end_reason": rng.choice(["normal", "resign", "leave", "disconnect", "timeout"]),
        }
        if i % 12 == 0:
            extra["wx"], extra["lx"] = {"ip": "203.0.113.5"}, {"ip": "203.0.113.77"}
        elif i % 12 == 6:
            extra["wx"], extra["lx"] = {"network": "net-a"}, {"network": "net-a"}
        elif i % 12 == 3:
            extra["wx"], extra["lx"] = {"ip": "198.51.100.1"}, {"ip": "2001:db8::1"}
        out.append(g(f"rand-{i}", "gammon42", a, b, at, **extra))
    # a pair that plays six times in three hours
    for i in range(6):
        w, lo = ("g5", "g6") if i % 2 else ("g6", "g5")
        out.append(g(f"pair-{i}", "gammon42", w, lo, NOW - timedelta(minutes=180 - 30 * i)))
    for i in range(12):
        a, b = rng.sample(gp, 2)
        mode = ["boosted", "casual", "tournament"][i % 3]
        out.append(
            g(
                f"fun-{i}",
                "gammon42",
                a,
                b,
                NOW - timedelta(hours=i),
                mode=mode,
                cube=rng.choice([1, 2, 4]),
                result=rng.choice(["single", "gammon", "backgammon"]),
            )
        )
    out.append(
        {
            "type": "tournament.finished",
            "event_id": "cup-end",
            "ladder": "gammon42",
            "tournament_id": "cup",
            "public": True,
            "podium": ["g3", "g1", "g7"],
        }
    )
    out.append(
        {
            "type": "tournament.finished",
            "event_id": "cup-again",
            "ladder": "gammon42",
            "tournament_id": "cup",
            "public": True,
            "podium": ["g1", "g3", "g7"],
        }
    )
    out.append(
        {
            "type": "tournament.finished",
            "event_id": "club-end",
            "ladder": "gammon42",
            "tournament_id": "club",
            "public": False,
            "podium": ["g2", "g4", "g6"],
        }
    )

    # fibs: profiles, matches of 1 to 7 points, a pair limit, a game against the AI
    fp = [f"f{i}" for i in range(6)]
    for i, pid in enumerate(fp):
        out.append(
            {
                "type": "player.updated",
                "event_id": f"prof-{pid}",
                "ladder": "fibs",
                "player_id": pid,
                "email_verified": i % 3 != 2,
                "display_name_chosen": i != 1,
            }
        )
    for i in range(60):
        a, b = rng.sample(fp, 2)
        at = start + timedelta(minutes=rng.randrange(0, 6 * 24 * 60))
        out.append(g(f"fibs-{i}", "fibs", a, b, at, match_length=rng.choice([1, 3, 5, 7, 11])))
    for i in range(5):
        out.append(
            g(
                f"fibs-pair-{i}",
                "fibs",
                "f1",
                "f2",
                NOW - timedelta(minutes=100 - 10 * i),
                match_length=3,
            )
        )
    out.append(g("fibs-ai", "fibs", "f0", "gnubg", NOW, lx={"is_bot": True}, match_length=5))

    # prostriker: device ids and accounts, links (adopted, kept, refused), bots
    pp = ["anon-0", "anon-1", "anon-2", "anon-3", "acct-a", "acct-b"]
    for i in range(50):
        a, b = rng.sample(pp, 2)
        out.append(
            g(
                f"ps-{i}",
                "prostriker",
                a,
                b,
                start + timedelta(hours=2 * i),
                **({"wx": {"is_bot": True}} if i % 11 == 10 else {}),
            )
        )
    out.append(
        {
            "type": "identity.linked",
            "event_id": "link-adopt",
            "ladder": "prostriker",
            "anonymous_id": "anon-0",
            "account_id": "acct-new",
        }
    )
    out.append(
        {
            "type": "identity.linked",
            "event_id": "link-kept",
            "ladder": "prostriker",
            "anonymous_id": "anon-1",
            "account_id": "acct-a",
        }
    )
    out.append(
        {
            "type": "identity.linked",
            "event_id": "link-anon-again",
            "ladder": "prostriker",
            "anonymous_id": "anon-0",
            "account_id": "acct-b",
        }
    )
    out.append(
        {
            "type": "identity.linked",
            "event_id": "link-acct-again",
            "ladder": "prostriker",
            "anonymous_id": "anon-2",
            "account_id": "acct-new",
        }
    )
    for i in range(15):
        a, b = rng.sample(pp, 2)
        out.append(g(f"ps-late-{i}", "prostriker", a, b, NOW - timedelta(hours=15 - i)))

    # duplicates (same id, same content) and invalid events, mixed in
    for i in rng.sample(range(len(out)), 12):
        item = out[i]
        dup = dict(item) if isinstance(item, dict) else item
        out.insert(rng.randrange(i + 1, len(out) + 1), dup)
    invalid: list[dict[str, Any] | str] = [
        g("bad-cube", "gammon42", "g1", "g2", NOW, cube=3),
        g("bad-self", "fibs", "f1", "f1", NOW),
        g("bad-ladder", "chess", "x", "y", NOW),
        # ahead of the clock when it is published, however long after import the test runs
        g("bad-future", "gammon42", "g1", "g2", datetime.now(UTC) + timedelta(days=1)),
        '{"type": "game.finished", "event_id": "bad-json"',
        {
            "type": "game.finished",
            "event_id": "bad-missing",
            "ladder": "gammon42",
            "mode": "ranked",
        },
    ]
    for item in invalid:
        out.insert(rng.randrange(0, len(out)), item)
    dead = {"bad-cube", "bad-self", "bad-ladder", "bad-future", None, "bad-missing"}
    return out, dead


@pytest.mark.parametrize("seed", [7, 2026])
def test_the_pipeline_agrees_with_an_independent_model_on_every_board_and_outcome(
    cli, database_url, seed
):
    """Every rule of SPEC 2 at once: K by weekly volume, cube, fair play, boosted points,
    tournaments, FIBS experience and public list, ProStriker links; duplicates and invalid
    events mixed in, through the store's own statements (arrays, COPY, upserts)."""
    published, dead = scenario(random.Random(seed))
    oracle = Oracle()
    for event in published:
        if isinstance(event, dict) and event.get("event_id") not in dead:
            oracle.apply(event)
    cli.publish_with_redis_cli(published)
    cli.ladder("worker", "--burst")

    redis = Redis.from_url(cli.env["REDIS_URL"], decode_responses=True)
    for ladder in ("gammon42", "fibs", "prostriker"):
        actual = dict(
            cast(Scores, redis.zrange(f"ladder:{{{ladder}}}:rating", 0, -1, withscores=True))
        )
        expected = oracle.rating_board(ladder)
        assert sorted(expected) == sorted(actual), ladder
        wrong = {
            p: (expected[p], actual[p])
            for p in expected
            if not math.isclose(expected[p], actual[p], abs_tol=1e-6)
        }
        assert {} == wrong, ladder
    assert oracle.boosted_board("gammon42") == dict(
        cast(Scores, redis.zrange("ladder:{gammon42}:boosted", 0, -1, withscores=True))
    )
    assert oracle.public_board("fibs") == set(redis.zrange("ladder:{fibs}:public", 0, -1))

    engine = create_engine(database_url)
    with engine.connect() as conn:
        rows = conn.execute(
            select(
                events_table.c.ladder,
                events_table.c.event_id,
                events_table.c.outcome,
                events_table.c.reason,
            )
        )
        actual_outcomes = {(r.ladder, r.event_id): (r.outcome, r.reason) for r in rows}
    expected_outcomes = {
        (ladder, eid): result
        for ladder, lad in oracle.ladders.items()
        for eid, result in lad.outcomes.items()
    }
    assert expected_outcomes == actual_outcomes
    assert dead == {d["event_id"] for d in cli.ladder_json("dlq", "list")}
    reasons = {r for _, r in actual_outcomes.values()}
    assert {
        "bot",
        "shared_network",
        "pair_limit",
        "not_ranked",
        "adopted",
        "account_kept",
        "anonymous_already_linked",
        "account_already_linked",
        "tournament_already_settled",
        "private_tournament",
    } <= reasons
    # the grinder's K really dropped to 16 late in the week, and only then
    with engine.connect() as conn:
        ks = [
            k
            for (k,) in conn.execute(
                select(rating_changes.c.k)
                .where(rating_changes.c.player_id == "g0", rating_changes.c.kind == "game")
                .order_by(rating_changes.c.id)
            )
        ]
    engine.dispose()
    redis.close()
    assert 32.0 == ks[0] and 16.0 == ks[-1]
