"""The walking skeleton: inbox -> RQ -> PostgreSQL audit -> Redis leaderboard."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.conftest import drain, publish
from tests.events import game
from tests.integration.helpers import audit, board, card, ledger, outcome
from worker import keys


def test_a_published_ranked_game_puts_both_players_on_the_leaderboard_with_seed_numbers(runtime):
    """Seed 002: 'Two players at 1500: ... the winner gets +16, the loser gets -16.'"""
    publish(runtime, game("alice", "bob", event_id="g-1"))
    drain(runtime)
    assert {"alice": 1516.0, "bob": 1484.0} == board(runtime, "gammon42")
    assert "1" == card(runtime, "gammon42", "alice")["games"]
    assert ("rated", None) == outcome(runtime, "gammon42", "g-1")


def test_the_audit_row_records_version_and_the_ledger_both_sides_with_k(runtime):
    """Every event's audit row names the ruleset version; the ledger has before/after/delta/K."""
    publish(runtime, game("alice", "bob", event_id="g-1", cube=4))
    drain(runtime)
    (row,) = audit(runtime, "gammon42")
    assert ("gammon42", "1.3.1", 4) == (row["ruleset"], row["ruleset_version"], row["cube"])
    assert abs(row["coefficient"] - (1 + 2 / 6)) < 1e-12
    (won,) = ledger(runtime, "gammon42", "alice")
    (lost,) = ledger(runtime, "gammon42", "bob")
    assert (1500.0, 1521.0, 21.0, 32.0) == (
        won["rating_before"],
        won["rating_after"],
        won["delta"],
        won["k"],
    )
    assert (1500.0, 1479.0, -21.0, 32.0) == (
        lost["rating_before"],
        lost["rating_after"],
        lost["delta"],
        lost["k"],
    )


def test_a_duplicate_event_id_changes_nothing_and_succeeds(runtime):
    """SPEC 2.4 step 1: a duplicate event_id has no effect at all (idempotent)."""
    publish(runtime, game("alice", "bob", event_id="g-1"))
    drain(runtime)
    publish(runtime, game("alice", "bob", event_id="g-1"), game("bob", "alice", event_id="g-1"))
    drain(runtime)
    assert {"alice": 1516.0, "bob": 1484.0} == board(runtime, "gammon42")
    assert 1 == len(audit(runtime))
    assert [] == runtime.dead_letters.list()


def test_invalid_events_are_dead_lettered_with_a_reason_and_the_rest_is_applied(runtime):
    """An invalid event goes to the dead-letter queue with a reason; nothing else changes."""
    future = datetime.now(UTC) + timedelta(minutes=10)
    publish(
        runtime,
        game("alice", "bob", event_id="bad-cube", cube=3),
        "{not json",
        game("carol", "carol", event_id="self"),
        game("alice", "bob", event_id="future", ended_at=future),
        game("alice", "bob", event_id="nowhere", ladder="no-such-ladder"),
        game("alice", "bob", event_id="good"),
    )
    drain(runtime)
    reasons = {d.event_id: d.reason for d in runtime.dead_letters.list()}
    assert {
        "bad-cube": "invalid_cube",
        None: "invalid_json",
        "self": "self_play",
        "future": "ended_at_in_future",
        "nowhere": "unknown_ladder",
    } == reasons
    assert {"alice": 1516.0, "bob": 1484.0} == board(runtime, "gammon42")
    assert ["good"] == [row["event_id"] for row in audit(runtime)]


def test_games_are_scored_in_arrival_order_each_from_the_previous_rating(runtime):
    """Two games of one player in one batch: the second starts from the first's result."""
    publish(runtime, game("alice", "bob", event_id="g-1"), game("alice", "carol", event_id="g-2"))
    drain(runtime)
    first, second = ledger(runtime, "gammon42", "alice")
    assert first["rating_after"] == second["rating_before"]
    # 1516 vs 1500 at divisor 1200: expected 0.5077, 32 * 0.4923 = 15.75 -> +16
    assert 1532.0 == second["rating_after"]


def test_an_event_stranded_between_inbox_and_rq_is_recovered_once(runtime):
    """A process dying between taking events from the inbox and enqueueing them loses nothing."""
    publish(runtime, game("alice", "bob", event_id="g-1"))
    claimed = runtime.inbox._claim(
        keys=[keys.INBOX, keys.staging("dead"), keys.STAGING_INDEX], args=[10, 0, "dead"]
    )
    assert 1 == len(claimed) and 0 == runtime.inbox.pending()
    assert 1 == runtime.inbox.recover(grace_seconds=0)
    assert 0 == runtime.inbox.recover(grace_seconds=0)
    drain(runtime)
    assert {"alice": 1516.0, "bob": 1484.0} == board(runtime, "gammon42")
    assert 0 == runtime.redis.zcard(keys.STAGING_INDEX)


def test_a_redis_write_older_than_the_stored_version_is_ignored(runtime):
    """The projection is version-guarded: a slower worker's late write never rolls it back."""
    publish(runtime, game("alice", "bob", event_id="g-1"), game("alice", "bob", event_id="g-2"))
    drain(runtime)
    from worker.store import PlayerRecord

    stale = PlayerRecord("gammon42", "alice", rating=1516.0, rated_games=1, listed=True, version=1)
    runtime.projection.write([stale], runtime.config)
    assert 2 == int(card(runtime, "gammon42", "alice")["version"])
    assert board(runtime, "gammon42")["alice"] > 1516.0


def test_a_lost_redis_projection_is_rewritten_when_the_event_is_seen_again(runtime):
    """Commit done, Redis write lost: the retried event is a duplicate yet re-projects."""
    publish(runtime, game("alice", "bob", event_id="g-1"))
    drain(runtime)
    runtime.redis.flushdb()
    publish(runtime, game("alice", "bob", event_id="g-1"))
    drain(runtime)
    assert {"alice": 1516.0, "bob": 1484.0} == board(runtime, "gammon42")


def test_a_batch_stranded_in_rqs_intermediate_queue_is_enqueued_again(runtime):
    """A dequeue whose worker stopped before the job started loses nothing."""
    from worker.recovery import requeue_stuck

    publish(runtime, game("alice", "bob", event_id="g-1"))
    runtime.inbox.drain()
    queue = runtime.inbox.queue
    runtime.redis.lmove(queue.key, queue.intermediate_queue_key, "LEFT", "RIGHT")
    assert 0 == requeue_stuck(runtime, grace_seconds=0)  # first seen: maybe a live worker
    assert 1 == requeue_stuck(runtime, grace_seconds=0)
    assert 0 == runtime.redis.llen(queue.intermediate_queue_key)
    drain(runtime)
    assert {"alice": 1516.0, "bob": 1484.0} == board(runtime, "gammon42")
