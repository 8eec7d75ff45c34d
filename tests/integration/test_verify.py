"""Replay of the audit store (``worker.ops.verify``): the stored ladder follows from its events."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from sqlalchemy import insert, select, update

from bench.events import generate
from tests.conftest import drain, publish
from tests.e2e.test_scenario import scenario
from tests.events import game, link, tournament
from worker.ops import seasons
from worker.ops.verify import verify
from worker.store.tables import players, rating_changes


def verify_all(rt):
    redis = rt.leaderboard_redis
    return {name: verify(rt.engine, redis, cfg) for name, cfg in rt.config.ladders.items()}


def test_the_scenario_and_the_benchmark_mix_replay_with_no_mismatch_and_tampering_is_found(
    runtime,
):
    """SPEC 5: 'replaying the stored events in their scoring order reproduces every stored
    number (ladder verify)'; a ledger row and a player row altered by hand are reported."""
    published, _ = scenario(random.Random(5))
    publish(runtime, *published)
    raws, mix = generate(3000, seed=3, players=300)
    publish(runtime, *raws)
    drain(runtime)
    reports = verify_all(runtime)
    assert {name: [] for name in reports} == {n: r.mismatches for n, r in reports.items()}
    assert sum(r.events for r in reports.values()) >= mix.unique_valid
    assert all(r.ledger_rows > 0 and r.players > 0 for r in reports.values())

    with runtime.engine.begin() as conn:
        row = conn.execute(
            select(rating_changes.c.id, rating_changes.c.event_id, rating_changes.c.player_id)
            .where(rating_changes.c.ladder == "fibs", rating_changes.c.kind == "game")
            .order_by(rating_changes.c.id)
            .limit(1)
        ).one()
        conn.execute(
            update(rating_changes)
            .where(rating_changes.c.id == row.id)
            .values(rating_after=rating_changes.c.rating_after + 0.001)
        )
        victim = conn.execute(
            select(players.c.player_id).where(players.c.ladder == "prostriker").limit(1)
        ).scalar_one()
        conn.execute(
            update(players)
            .where(players.c.ladder == "prostriker", players.c.player_id == victim)
            .values(rated_games=players.c.rated_games + 7)
        )
    reports = verify_all(runtime)
    fibs = [(m.event_id, m.player_id, m.field) for m in reports["fibs"].mismatches]
    assert (row.event_id, row.player_id, "rating_after") in fibs
    pro = [(m.event_id, m.player_id, m.field) for m in reports["prostriker"].mismatches]
    assert (None, victim, "rated_games") in pro
    assert [] == reports["gammon42"].mismatches


def test_links_prizes_and_a_season_reset_replay_exactly(runtime):
    """Links, tournament prizes and a season's recorded reset are replayed where they fell."""
    publish(
        runtime,
        game("anon", "b", ladder="prostriker"),
        link("prostriker", "anon", "acct"),
        game("acct", "b", ladder="prostriker"),
        tournament("gammon42", "t1", ["a", "b", "c"]),
        tournament("gammon42", "t1", ["a", "b", "c"]),
        game("a", "b"),
    )
    drain(runtime)
    config = runtime.config.ladders["prostriker"]
    seasons.close(
        runtime.engine,
        runtime.leaderboard_redis,
        config,
        "s0",
        seasons.Policy("toward_start", 0.5),
        datetime.now(UTC),
    )
    publish(runtime, game("b", "acct", ladder="prostriker"))
    drain(runtime)
    reports = verify_all(runtime)
    assert {name: [] for name in reports} == {n: r.mismatches for n, r in reports.items()}
    assert reports["prostriker"].ledger_rows >= 7  # 3 games x 2, the adoption, the resets


def test_a_ledger_row_stored_beside_an_events_derived_ones_is_reported(runtime):
    """SPEC 5: replaying the stored events "reproduces every stored number": a ledger row of a
    game that the replay derives no row for (one written by hand) is a mismatch that names
    the event, the player and the row, and verify goes on to the end."""
    publish(runtime, game("a", "b", event_id="g1"), game("b", "a", event_id="g2"))
    drain(runtime)
    columns = [c for c in rating_changes.columns if c.name != "id"]
    with runtime.engine.begin() as conn:
        conn.execute(
            insert(rating_changes).from_select(
                [c.name for c in columns],
                select(*columns).where(
                    rating_changes.c.event_id == "g1", rating_changes.c.player_id == "a"
                ),
            )
        )
    report = verify(runtime.engine, runtime.leaderboard_redis, runtime.config.ladders["gammon42"])
    found = [(m.event_id, m.player_id, m.field, m.derived) for m in report.mismatches]
    assert [("g1", "a", "ledger row", None)] == found
    assert "a" == report.mismatches[0].stored["player_id"]
    assert 2 == report.events
