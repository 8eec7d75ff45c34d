"""Moderation end to end: the real ``ladder`` commands against what an independent model says.

The scenario of ``test_scenario`` is published and scored; then a cheater's games are voided
(and a player banned with ``--void-since``). The boards and every outcome must equal the same
model fed the same events *without* those games, on all three rulesets, K windows and pair
limits included. A second test voids and adjusts while workers score a steady stream.
"""

from __future__ import annotations

import math
import random
import signal
import threading
import time
from datetime import timedelta
from typing import Any, cast

import pytest
from redis import Redis
from sqlalchemy import create_engine, select

from tests.e2e.oracle import Oracle, when
from tests.e2e.test_reliability import hot_events, kill_group, publish, spawn
from tests.e2e.test_scenario import NOW, scenario
from tests.events import iso
from worker.store.tables import event_effects, events

Scores = list[tuple[str, float]]
BAN_SINCE = NOW - timedelta(minutes=125)  # the pair g5/g6: its last four games, and more


def games_of(published: list[Any], dead: set[str | None], ladder: str, player: str) -> list[str]:
    ids = []
    for e in published:
        if not isinstance(e, dict) or e.get("event_id") in dead or e["ladder"] != ladder:
            continue
        if e["type"] == "game.finished" and player in (
            e["winner"]["player_id"],
            e["loser"]["player_id"],
        ):
            ids.append(e["event_id"])
    return list(dict.fromkeys(ids))


def _pair_farm(published: list[Any], dead: set[str | None]) -> list[str]:
    """f1's rated matches against f2 in the 24 hours before the first one the pair limit
    refused (SPEC 2.2: only the first 3 rated matches within 24 hours): voided, they free
    the window, so the refused match is rated."""
    model = Oracle()
    for event in published:
        if isinstance(event, dict) and event.get("event_id") not in dead:
            model.apply(event)
    outcomes = model.ladders["fibs"].outcomes
    by_id = {e["event_id"]: e for e in published if isinstance(e, dict) and "event_id" in e}
    pair = [
        eid
        for eid in games_of(published, dead, "fibs", "f1")
        if {by_id[eid]["winner"]["player_id"], by_id[eid]["loser"]["player_id"]} == {"f1", "f2"}
    ]
    refused = next(eid for eid in pair if outcomes[eid] == ("unrated", "pair_limit"))
    limit = when(by_id[refused]["ended_at"])
    return [
        eid
        for eid in pair
        if outcomes[eid] == ("rated", None)
        and limit - timedelta(hours=24) <= when(by_id[eid]["ended_at"]) < limit
    ]


def outcomes_now(database_url: str) -> dict[tuple[str, str], tuple[str, str | None]]:
    """Each event's outcome as it stands: the audit row's, or the newest a void gave it."""
    engine = create_engine(database_url)
    with engine.connect() as conn:
        found = {
            (r.ladder, r.event_id): (r.outcome, r.reason)
            for r in conn.execute(
                select(events.c.ladder, events.c.event_id, events.c.outcome, events.c.reason)
            )
        }
        effects = conn.execute(select(event_effects).order_by(event_effects.c.action_id))
        for r in effects.mappings():
            found[(r["ladder"], r["event_id"])] = (r["outcome"], r["reason"])
    engine.dispose()
    return {k: v for k, v in found.items() if v[0] != "voided"}


@pytest.mark.parametrize("seed", [7, 2026])
def test_voided_games_leave_the_ladder_as_if_never_published(cli, database_url, seed):
    """the scenario with a cheater's games voided (and a ban with
    --void-since) equals the same scenario published without those games, player for player,
    on all three rulesets: gammon42's 7-day K (g3's games counted in g0's week), the 24-hour
    pair limit (a game it refused is rated once an earlier one is void), links on prostriker."""
    published, dead = scenario(random.Random(seed))
    cli.publish_with_redis_cli(published)
    cli.ladder("worker", "--burst")
    first_pass_limited = {
        k for k, v in outcomes_now(database_url).items() if v == ("unrated", "pair_limit")
    }

    voids = {
        "gammon42": games_of(published, dead, "gammon42", "g3"),
        "fibs": [*_pair_farm(published, dead), *games_of(published, dead, "fibs", "f4")],
        "prostriker": games_of(published, dead, "prostriker", "anon-3"),
    }
    for ladder, ids in voids.items():
        cli.ladder("void", ladder, *ids, "--reason", "cheating", "--by", "moderator")
    banned = [
        e
        for e in games_of(published, dead, "gammon42", "g6")
        if when(
            next(x for x in published if isinstance(x, dict) and x.get("event_id") == e)["ended_at"]
        )
        >= BAN_SINCE
    ]
    assert banned  # the pair's late games, at least
    cli.ladder(
        "ban", "gammon42", "g6", "--reason", "boosting", "--void-since", BAN_SINCE.isoformat()
    )
    gone = {eid for ids in voids.values() for eid in ids} | set(banned)

    oracle = Oracle()
    for event in published:
        if isinstance(event, dict) and event.get("event_id") not in dead | gone:
            oracle.apply(event)
    redis = Redis.from_url(cli.env["REDIS_URL"], decode_responses=True)
    for ladder in ("gammon42", "fibs", "prostriker"):
        actual = dict(
            cast(Scores, redis.zrange(f"ladder:{{{ladder}}}:rating", 0, -1, withscores=True))
        )
        expected = oracle.rating_board(ladder)
        if ladder == "gammon42":
            expected.pop("g6")  # banned: off every board
        assert sorted(expected) == sorted(actual), ladder
        wrong = {
            p: (expected[p], actual[p])
            for p in expected
            if not math.isclose(expected[p], actual[p], abs_tol=1e-6)
        }
        assert {} == wrong, ladder
    assert oracle.public_board("fibs") == set(redis.zrange("ladder:{fibs}:public", 0, -1))
    boosted = oracle.boosted_board("gammon42")
    boosted.pop("g6", None)
    assert boosted == dict(
        cast(Scores, redis.zrange("ladder:{gammon42}:boosted", 0, -1, withscores=True))
    )
    redis.close()
    expected_outcomes = {
        (ladder, eid): result
        for ladder, lad in oracle.ladders.items()
        for eid, result in lad.outcomes.items()
    }
    now = outcomes_now(database_url)
    assert expected_outcomes == now
    # the windows really moved: a pair-limited game is rated now, and g0's week lost the
    # nine games against g3, so K fell to 16 nine games later than it did
    flipped = {k for k, v in now.items() if v == ("rated", None) and k in first_pass_limited}
    assert flipped
    assert 51 == len(oracle.ladders["gammon42"].ranked["g0"])
    # the log verifies and the boards have no drift
    assert [] == _mismatches(cli)
    cli.ladder("reconcile")
    # idempotent: voiding the same games again changes nothing
    again = cli.ladder_json("void", "gammon42", *voids["gammon42"], "--reason", "again")
    assert again["action"] is None and set(again["refused"]) == set(voids["gammon42"])


@pytest.mark.long
def test_moderation_while_workers_score_a_steady_stream_loses_nothing(cli, database_url):
    """workers may wait on the ladder while a correction commits, but lose
    nothing, double nothing and never fail for it: two real ``ladder worker`` processes
    score 1,500 events arriving over several seconds while voids and adjustments run; every
    event is stored once, no dead letter, the ladder verifies and equals the model fed the
    events in their scoring order without the voided games."""
    rng = random.Random(11)
    stream = hot_events(1500, 12, rng)
    for i, event in enumerate(stream):  # a minute apart: one ruleset version, busy windows
        event["ended_at"] = iso(NOW - timedelta(minutes=len(stream) - i))
    redis = Redis.from_url(cli.env["REDIS_URL"], decode_responses=True)
    workers = [spawn(cli.env), spawn(cli.env)]
    done = threading.Event()

    def feed() -> None:
        for start in range(0, len(stream), 50):
            publish(redis, stream[start : start + 50])
            time.sleep(0.05)
        done.set()

    feeder = threading.Thread(target=feed)
    feeder.start()
    voided: list[str] = []
    try:
        for round_ in range(4):
            deadline = time.monotonic() + 60
            while len(scored := _scored(database_url, "gammon42")) < 60 * (round_ + 1):
                assert time.monotonic() < deadline, "the workers scored nothing"
                time.sleep(0.1)
            pick = scored[len(scored) // 3 : len(scored) // 3 + 2]
            cli.ladder("void", "gammon42", *pick, "--reason", f"round {round_}")
            voided += pick
            cli.ladder("adjust", "fibs", "p1", "--delta", "1.5", "--reason", "goodwill")
            time.sleep(0.3)
        feeder.join(timeout=120)
        assert done.is_set()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and (
            redis.llen("ladder:inbox") or len(_scored(database_url)) < len(stream)
        ):
            time.sleep(0.5)
    finally:
        feeder.join(timeout=5)
        for worker in workers:
            kill_group(worker, signal.SIGTERM)
    assert [] == cli.ladder_json("dlq", "list")
    scored = _scored(database_url)
    assert sorted(scored) == sorted(e["event_id"] for e in stream)  # once each
    assert [] == _mismatches(cli)
    cli.ladder("reconcile")
    oracle = Oracle()
    by_id = {e["event_id"]: e for e in stream}
    for eid in _scored(database_url, "gammon42"):
        if eid not in voided:
            oracle.apply(by_id[eid])
    actual = dict(cast(Scores, redis.zrange("ladder:{gammon42}:rating", 0, -1, withscores=True)))
    assert oracle.rating_board("gammon42") == actual
    redis.close()


def _scored(database_url: str, ladder: str | None = None) -> list[str]:
    engine = create_engine(database_url)
    query = select(events.c.event_id).order_by(events.c.seq)
    if ladder is not None:
        query = query.where(events.c.ladder == ladder)
    with engine.connect() as conn:
        found = list(conn.execute(query).scalars())
    engine.dispose()
    return found


def _mismatches(cli: Any) -> list[Any]:
    """``ladder verify --json``: every ladder's mismatches (none, when it passes)."""
    ladders = cli.ladder_json("verify")["ladders"]
    return [m for report in ladders.values() for m in report["mismatches"]]
