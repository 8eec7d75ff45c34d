"""The dead-letter queue stays small and fast to read: pages, an event-id index, a capped
payload, and discard by filter."""

from __future__ import annotations

import hashlib
import json
import time

from rq.job import Job

from schemas import InvalidEvent
from tests.integration.test_operations import ladder, ladder_json
from worker.queue import deadletter


def _add(rt, event_id: str, reason: str = "invalid_cube", ladder_name: str = "gammon42") -> str:
    payload = json.dumps({"event_id": event_id, "ladder": ladder_name})
    return rt.dead_letters.add(
        payload, InvalidEvent(reason, "test", event_id=event_id, ladder=ladder_name)
    )


def test_dlq_list_shows_a_page_oldest_first_and_offset_goes_on(runtime, capsys):
    """Promised: "dlq list pages": --limit and --offset."""
    for i in range(7):
        _add(runtime, f"e-{i}")
    first = ladder_json(runtime, capsys, "dlq", "list", "--limit", "3")
    rest = ladder_json(runtime, capsys, "dlq", "list", "--limit", "10", "--offset", "3")
    shown = [d["event_id"] for d in first + rest]
    assert (3, 4) == (len(first), len(rest))
    assert sorted(shown) == [f"e-{i}" for i in range(7)]
    assert 2 == ladder(runtime, "dlq", "list", "--limit", "0")


def test_a_page_reads_the_registry_a_chunk_at_a_time(runtime, monkeypatch):
    monkeypatch.setattr(deadletter, "PAGE_CHUNK", 4)
    for i in range(10):
        _add(runtime, f"e-{i}", reason="unknown_ladder")
    fetched: list[int] = []
    fetch_many = Job.fetch_many

    def counted(ids, **kwargs):
        fetched.append(len(ids))
        return fetch_many(ids, **kwargs)

    monkeypatch.setattr(Job, "fetch_many", counted)
    page = runtime.dead_letters.page(deadletter.Filter(reason="unknown_ladder"), limit=2)
    assert 2 == len(page) and {"unknown_ladder"} == {d.reason for d in page}
    assert [4] == fetched, "the page was read a chunk at a time, not all at once"


def test_dlq_show_finds_an_event_id_through_the_index_not_a_scan(runtime, capsys, monkeypatch):
    """Promised: "dlq show <event_id> finds one entry without reading all.\""""
    for i in range(5):
        _add(runtime, f"e-{i}")

    def no_scan(*args, **kwargs):
        raise AssertionError("show read every dead letter")

    monkeypatch.setattr(runtime.dead_letters, "list", no_scan)
    assert "e-3" == ladder_json(runtime, capsys, "dlq", "show", "e-3")["event_id"]
    assert 1 == ladder(runtime, "dlq", "show", "e-99")


def test_a_discarded_dead_letter_leaves_the_event_id_index(runtime):
    letter = _add(runtime, "gone")
    assert letter == runtime.dead_letters.resolve("gone")
    runtime.dead_letters.discard([letter])
    assert runtime.dead_letters.resolve("gone") is None
    assert not runtime.redis.exists("ladder:dlq:event:gone")


def test_an_oversized_payload_keeps_its_first_64_kib_and_a_digest(runtime):
    """Promised: "A dead letter of an oversized payload stores at most the first 64 KiB plus a
    digest.\""""
    raw = json.dumps({"event_id": "huge", "padding": "x" * 1_000_000})
    letter_id = runtime.dead_letters.add(raw, InvalidEvent("too_large", "1 MB"))
    letter, _ = runtime.dead_letters.get(letter_id)
    assert raw[:65536] == letter.payload
    assert "huge" == letter.event_id, "the event id is found in the payload's head"
    meta = Job.fetch(letter_id, connection=runtime.redis).meta
    assert (len(raw), hashlib.sha256(raw.encode()).hexdigest()) == (
        meta["payload_bytes"],
        meta["payload_sha256"],
    )


def test_dlq_discard_takes_the_filters_of_replay(runtime, capsys):
    """Promised: "dlq discard takes the same filters as replay (--all, --reason, --ladder,
    --older-than).\""""
    _add(runtime, "a", reason="invalid_cube")
    _add(runtime, "b", reason="unknown_ladder", ladder_name="arena")
    _add(runtime, "c", reason="invalid_cube", ladder_name="fibs")
    assert 0 == ladder(runtime, "dlq", "discard", "--reason", "unknown_ladder", "--yes")
    assert ["a", "c"] == sorted(d.event_id for d in runtime.dead_letters.list())
    assert 0 == ladder(runtime, "dlq", "discard", "--ladder", "fibs", "--yes")
    assert 0 == ladder(runtime, "dlq", "discard", "--older-than", "1h", "--yes")
    assert ["a"] == [d.event_id for d in runtime.dead_letters.list()]
    assert 2 == ladder(runtime, "dlq", "discard", "--all", "a", "--yes")
    assert 2 == ladder(runtime, "dlq", "discard", "--yes")
    assert 0 == ladder(runtime, "dlq", "discard", "--all", "--yes")
    assert [] == runtime.dead_letters.list()


def test_beyond_the_redis_limit_the_oldest_dead_letters_move_to_postgresql(make_runtime, capsys):
    """SPEC 5: "beyond a configured count the oldest move to PostgreSQL, still listed and
    replayable. RQ's own tools (rq info, rq-dashboard) still show the ones in Redis."""
    rt = make_runtime(dead_letters_in_redis=3)
    ids = []
    for i in range(5):
        ids.append(_add(rt, f"e-{i}", reason="unknown_ladder", ladder_name="gammon42"))
        time.sleep(1.05)  # RQ orders its registry by the second
    assert {"redis": 3, "postgresql": 2} == rt.dead_letters.counts()
    assert 3 == rt.dead_letters.registry.count  # what rq info shows
    listed = ladder_json(rt, capsys, "dlq", "list")
    assert [f"e-{i}" for i in range(5)] == sorted(d["event_id"] for d in listed)
    first = ladder_json(rt, capsys, "dlq", "list", "--limit", "2")
    rest = ladder_json(rt, capsys, "dlq", "list", "--offset", "2", "--limit", "5")
    assert ["e-0", "e-1"] == [d["event_id"] for d in first], "the oldest come first"
    assert [f"e-{i}" for i in range(2, 5)] == sorted(d["event_id"] for d in rest)
    assert "e-0" == ladder_json(rt, capsys, "dlq", "show", "e-0")["event_id"]
    assert 0 == ladder(rt, "dlq", "discard", "e-1", "--yes")
    assert [ids[0]] == rt.dead_letters.replay([ids[0]])
    assert {"redis": 3, "postgresql": 0} == rt.dead_letters.counts()
    assert 1 == rt.inbox.queue.count, "the archived dead letter is back on the queue"


def test_a_metric_counts_dead_letters_in_redis_and_in_postgresql(make_runtime):
    from prometheus_client import generate_latest

    from worker.observability.collectors import DeadLetterCollector
    from worker.observability.metrics import Metrics

    rt = make_runtime(dead_letters_in_redis=1)
    _add(rt, "a")
    time.sleep(1.05)
    _add(rt, "b")
    metrics = Metrics()
    metrics.registry.register(DeadLetterCollector(rt.dead_letters.counts))
    text = generate_latest(metrics.registry).decode()
    assert 'ladder_dead_letters_stored{store="redis"} 1.0' in text
    assert 'ladder_dead_letters_stored{store="postgresql"} 1.0' in text
