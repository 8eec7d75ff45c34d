"""``ladder verify`` compares the Redis boards beside the replay (SPEC 5: "replaying the
stored events in their scoring order reproduces every stored number (`ladder verify`)"; the
README's verify section: "the Redis boards and player hashes, against PostgreSQL"): what it
finds there is reported after the replay's findings, each naming the key and the player."""

from __future__ import annotations

from sqlalchemy import update

from tests.conftest import drain, publish
from tests.events import game
from worker import keys
from worker.ops.verify import verify
from worker.store.tables import players


def test_board_drift_is_reported_after_the_replays_own_mismatches(runtime):
    publish(runtime, game("alice", "bob"), game("carol", "dave"), game("alice", "carol"))
    drain(runtime)
    redis = runtime.leaderboard_redis
    redis.zadd(keys.rating("gammon42"), {"bob": 1.0})  # a wrong score
    redis.zadd(keys.rating("gammon42"), {"ghost": 1500})  # a member with no player row
    with runtime.engine.begin() as conn:
        conn.execute(
            update(players)
            .where(players.c.ladder == "gammon42", players.c.player_id == "dave")
            .values(rated_games=7)
        )
    report = verify(runtime.engine, redis, runtime.config.ladders["gammon42"])
    found = [(m.event_id, m.player_id, m.field) for m in report.mismatches]
    board = f"redis {keys.rating('gammon42')}"
    assert found[0] == (None, "dave", "rated_games")
    assert set(found[1:]) >= {(None, "bob", board), (None, "ghost", board)}
    assert report.mismatch_count == len(found)
    assert report.redis_seconds > 0
