"""An erase racing a worker, made deterministic: a new player of the erased id scores between
the erase's commit and its Redis part; and the wait for the batches in flight at the commit."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.conftest import drain, publish
from tests.events import game
from tests.integration.helpers import board, stored_players
from tests.integration.test_moderation import clean, ladder
from worker import keys
from worker.queue import inflight

ID = "zed-7"
T0 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=10)


@pytest.mark.parametrize(("before", "after"), [(1, 3), (4, 2)])
def test_a_new_player_of_the_id_who_scores_during_the_erase_keeps_card_board_and_receipts(
    runtime, capsys, monkeypatch, before, after
):
    """SPEC 6 "Erase": the erased player's entries go; games stored after the erase's commit
    are a new player's of the same id, whose card, board entry and receipts stay, whether
    their version is below the erased player's (their write was refused as older) or above."""
    for n in range(before):
        publish(runtime, game(ID, "amy", event_id=f"old{n}", ended_at=T0 + timedelta(hours=n)))
    drain(runtime)

    def a_worker_scores_meanwhile(redis: Any, queue: Any, timeout: float) -> set[str]:
        for n in range(after):
            at = T0 + timedelta(hours=5 + n)
            publish(runtime, game("bob", ID, event_id=f"new{n}", ended_at=at))
        drain(runtime)
        return set()

    monkeypatch.setattr(inflight, "wait", a_worker_scores_meanwhile)
    capsys.readouterr()
    assert 0 == ladder(runtime, "player", "erase", "gammon42", ID, "--yes", "--json")
    gone = json.loads(capsys.readouterr().out.splitlines()[-1])["pseudonym"]  # after the logs
    stored = stored_players(runtime, "gammon42")
    assert stored[ID]["rating"] == board(runtime, "gammon42")[ID]
    assert gone not in board(runtime, "gammon42")
    card = runtime.leaderboard_redis.hgetall(keys.player("gammon42", ID))
    assert str(stored[ID]["version"]).encode() == card[b"version"]
    for n in range(after):
        kept = json.loads(runtime.redis.get(keys.receipt(f"new{n}")))
        assert ID in {p["player_id"] for p in kept["players"]}
    for n in range(min(before, 3)):  # the pair's 4th game of the day is unrated: no players
        kept = json.loads(runtime.redis.get(keys.receipt(f"old{n}")))
        assert {gone, "amy"} == {p["player_id"] for p in kept["players"]}
    streamed = [json.loads(f[b"receipt"]) for _, f in runtime.redis.xrange(keys.RECEIPTS)]
    old = [f"old{n}" for n in range(3, before)]  # an unrated game's receipt names no one
    assert old + [f"new{n}" for n in range(after)] == [r["event_id"] for r in streamed]
    clean(runtime, "gammon42")


def test_the_wait_ends_when_the_batches_in_flight_at_its_start_are_written(runtime):
    """A staged batch in flight when the wait starts is waited for until it is released; one
    claimed after the start is not; an empty staged claim is not a batch in flight."""
    redis, queue = runtime.redis, runtime.inbox.queue
    publish(runtime, game("amy", "bob", event_id="g1"))
    batch, _ = runtime.inbox.claim()
    redis.zadd(keys.STAGING_INDEX, {"waiting-for-its-first": time.time()})  # no events yet

    def release_later() -> None:
        time.sleep(0.4)
        publish(runtime, game("amy", "bob", event_id="g2"))
        assert runtime.inbox.claim() is not None  # in flight, but claimed after the start
        time.sleep(0.2)
        runtime.inbox.release(batch)

    started = time.monotonic()
    releaser = threading.Thread(target=release_later)
    releaser.start()
    assert set() == inflight.wait(redis, queue, timeout=10)
    releaser.join()
    assert 0.6 <= time.monotonic() - started < 5


def test_the_wait_names_what_is_still_in_flight_at_its_bound(runtime):
    """A batch whose worker stopped holding it is still in flight at the bound: named."""
    publish(runtime, game("amy", "bob", event_id="g1"))
    batch, _ = runtime.inbox.claim()
    assert {f"staged:{batch}"} == inflight.wait(runtime.redis, runtime.inbox.queue, timeout=0.2)
