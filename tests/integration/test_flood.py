"""A flood of invalid events costs about what rating them would: their dead letters, and the
receipts of those, are written a batch at a time, not one transaction an event."""

from __future__ import annotations

import json

from redis.client import Pipeline

from tests.conftest import drain, publish
from tests.events import game
from tests.integration.helpers import stored_players
from worker import keys


def test_a_flood_of_invalid_events_is_dead_lettered_in_a_few_writes(runtime, monkeypatch):
    """600 invalid events (cube 3) then 5 valid ones: every invalid one is a dead letter with
    its receipt on the stream, the valid ones are rated, and the Redis writes are a handful of
    pipelines, not one an event (each dead letter was its own transaction, plus a count)."""
    sent = [game(f"a{i}", f"b{i}", event_id=f"bad-{i}", cube=3) for i in range(600)]
    sent += [game(f"c{i}", f"d{i}", event_id=f"ok-{i}") for i in range(5)]
    publish(runtime, *sent)
    executed = [0]
    execute = Pipeline.execute

    def counted(self, raise_on_error=True):
        executed[0] += 1
        return execute(self, raise_on_error)

    monkeypatch.setattr(Pipeline, "execute", counted)
    drain(runtime)
    assert executed[0] < 60, executed[0]
    letters = runtime.dead_letters.list()
    assert {f"bad-{i}" for i in range(600)} == {d.event_id for d in letters}
    assert {"invalid_cube"} == {d.reason for d in letters}
    streamed = [json.loads(f[b"receipt"]) for _, f in runtime.redis.xrange(keys.RECEIPTS)]
    outcomes = {r["event_id"]: r["outcome"] for r in streamed}
    assert {"dead_lettered"} == {outcomes[f"bad-{i}"] for i in range(600)}
    assert {"rated"} == {outcomes[f"ok-{i}"] for i in range(5)}
    assert 10 == len(stored_players(runtime, "gammon42"))


def test_an_oversized_event_is_staged_as_its_stand_in_by_either_claim(runtime):
    """``claim`` (a script) never hands the worker an element over LADDER_MAX_EVENT_BYTES, and
    ``claim_blocking`` (BLMOVE, which hands it over whole) puts the same stand-in in the
    staging list at once: its size, SHA-1 and first bytes, nothing more."""
    from schemas import oversized

    big = '{"event_id":"huge-1",' + '"pad":"' + "x" * 200_000 + '"}'
    for claim in (runtime.inbox.claim, lambda: runtime.inbox.claim_blocking(1)):
        runtime.redis.rpush(keys.INBOX, big, json.dumps(game("a", "b", event_id="ok")))
        batch, items = claim()
        assert [True, False] == [i.startswith(oversized.MARK) for i in items]
        assert len(items[0]) < 2_000 and f"{len(big)} " in items[0]
        staged = runtime.redis.lrange(keys.staging(batch), 0, -1)
        assert items == [s.decode() for s in staged]
        runtime.inbox.release(batch)


def test_a_flood_beyond_the_redis_limit_spills_to_postgresql_in_few_moves_and_keeps_each(
    make_runtime, capsys, monkeypatch
):
    """3,000 invalid events with 1,000 dead letters kept in Redis: a few pipelines and moves
    to PostgreSQL, not one each; every letter still listed, shown and replayable; the valid
    events behind them have their receipts."""
    from tests.integration.test_operations import ladder_json
    from worker.store.archive import Archive

    rt = make_runtime(dead_letters_in_redis=1000)
    flood = [json.dumps({"event_id": f"bad-{i}", "ladder": "gammon42"}) for i in range(3000)]
    publish(rt, *flood, *(game(f"a{i}", f"b{i}", event_id=f"ok-{i}") for i in range(5)))
    calls = {"pipelines": 0, "moves": 0}
    execute, store = Pipeline.execute, Archive.store

    def counted_execute(self, raise_on_error=True):
        calls["pipelines"] += 1
        return execute(self, raise_on_error)

    def counted_store(self, letters):
        calls["moves"] += 1
        return store(self, letters)

    monkeypatch.setattr(Pipeline, "execute", counted_execute)
    monkeypatch.setattr(Archive, "store", counted_store)
    drain(rt)
    assert calls["pipelines"] < 60 and calls["moves"] < 60, calls
    assert {"redis": 1000, "postgresql": 2000} == rt.dead_letters.counts()
    assert 3000 == len(ladder_json(rt, capsys, "dlq", "list", "--limit", "5000"))
    assert "bad-7" == ladder_json(rt, capsys, "dlq", "show", "bad-7")["event_id"]
    assert "bad-2999" == ladder_json(rt, capsys, "dlq", "show", "bad-2999")["event_id"]
    replayed = [rt.dead_letters.resolve("bad-7"), rt.dead_letters.resolve("bad-2999")]
    assert replayed == rt.dead_letters.replay(replayed)
    assert 5 == len(rt.redis.keys("ladder:receipt:ok-*"))
