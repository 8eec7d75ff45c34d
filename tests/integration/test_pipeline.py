"""The walking skeleton: inbox -> RQ -> PostgreSQL audit -> Redis leaderboard."""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from schemas import oversized
from tests.conftest import drain, publish
from tests.events import game, link
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
    first = game("alice", "bob", event_id="g-1")
    publish(runtime, first)
    drain(runtime)
    reordered = dict(reversed(list(first.items())))  # the same content, sent differently
    publish(runtime, first, reordered, {**first, "mode": "ranked", "cube": 1})
    drain(runtime)
    assert {"alice": 1516.0, "bob": 1484.0} == board(runtime, "gammon42")
    assert 1 == len(audit(runtime))
    assert [] == runtime.dead_letters.list()


def test_an_event_id_reused_with_other_content_is_dead_lettered_as_a_conflict(runtime, capfd):
    """SPEC 2.4 step 1: 'The same event_id with a different content is not a duplicate but a
    conflict: dead-lettered as event_id_conflict, never silently dropped.'"""
    first = game("alice", "bob", event_id="g-1")
    publish(runtime, first)
    drain(runtime)
    publish(runtime, {**first, "winner": {"player_id": "bob"}, "loser": {"player_id": "alice"}})
    drain(runtime)
    assert {"alice": 1516.0, "bob": 1484.0} == board(runtime, "gammon42")
    assert 1 == len(audit(runtime))
    (letter,) = runtime.dead_letters.list()
    assert ("g-1", "event_id_conflict") == (letter.event_id, letter.reason)
    (stored,) = audit(runtime)
    assert stored["digest"] in letter.detail  # both payloads' digests are in the detail
    assert 2 == len(set(re.findall(r"[0-9a-f]{64}", letter.detail)))
    logged = capfd.readouterr()
    assert "event_id_conflict" in logged.out + logged.err


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
        keys=[keys.INBOX, keys.staging("dead"), keys.STAGING_INDEX],
        args=[10, 0, "dead", runtime.inbox.max_event_bytes, oversized.MARK],
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
    from engine import Player as PlayerRecord

    stale = PlayerRecord("gammon42", "alice", rating=1516.0, rated_games=1, listed=True, version=1)
    runtime.projection.write([stale], runtime.config)
    assert 2 == int(card(runtime, "gammon42", "alice")["version"])
    assert board(runtime, "gammon42")["alice"] > 1516.0


def test_a_lost_redis_projection_is_rewritten_when_the_event_is_seen_again(runtime):
    """Commit done, Redis write lost: the retried event is a duplicate yet re-projects."""
    first = game("alice", "bob", event_id="g-1")
    publish(runtime, first)
    drain(runtime)
    runtime.redis.flushdb()
    publish(runtime, first)
    drain(runtime)
    assert {"alice": 1516.0, "bob": 1484.0} == board(runtime, "gammon42")


def test_a_batch_stranded_in_rqs_intermediate_queue_is_enqueued_again(runtime):
    """A dequeue whose worker stopped before the job started loses nothing."""
    from worker.entrypoints.worker.recovery import requeue_stuck

    publish(runtime, game("alice", "bob", event_id="g-1"))
    runtime.inbox.pump_once()
    queue = runtime.inbox.queue
    runtime.redis.lmove(queue.key, queue.intermediate_queue_key, "LEFT", "RIGHT")
    assert 0 == requeue_stuck(runtime, grace_seconds=0)  # first seen: maybe a live worker
    assert 1 == requeue_stuck(runtime, grace_seconds=0)
    assert 0 == runtime.redis.llen(queue.intermediate_queue_key)
    drain(runtime)
    assert {"alice": 1516.0, "bob": 1484.0} == board(runtime, "gammon42")


def test_cards_show_utc_whatever_the_database_sessions_time_zone(database_url, make_runtime):
    """A player read back from PostgreSQL (here: touched again by a later batch) shows its
    timestamps in UTC on the card, as a rebuild writes them, even if the database's default
    time zone is another: reconcile finds no drift."""
    from urllib.parse import parse_qs, urlencode, urlsplit

    from tests.events import player_updated
    from worker.ops import reconcile

    parts = urlsplit(database_url)
    query = parse_qs(parts.query)  # options, and host and port on an embedded server's socket
    query["options"] = [query["options"][0] + " -cTimeZone=Asia/Tokyo"]
    url = parts._replace(query=urlencode(query, doseq=True)).geturl()
    rt = make_runtime(database_url=url)
    publish(rt, game("alice", "bob", event_id="g-1"))
    drain(rt)
    publish(rt, player_updated("fibs", "carol", True, True))
    publish(rt, player_updated("gammon42", "alice", True, True))
    drain(rt)
    shown = card(rt, "gammon42", "alice")
    assert shown["last_game_at"].endswith("+00:00"), shown
    assert shown["updated_at"].endswith("+00:00"), shown
    assert reconcile.check(rt.engine, rt.redis, rt.config.ladders["gammon42"]).clean


def test_a_batch_job_goes_on_with_the_events_waiting_in_the_inbox(runtime):
    """Under load a worker goes from batch to batch inside one job: events that arrived while
    it ran are taken from the inbox, staged like the pump's, applied, and their staging
    dropped."""
    from worker.entrypoints.worker import batches as jobs

    publish(runtime, game("alice", "bob", event_id="g-1"))
    batch, payloads = runtime.inbox.claim()
    publish(runtime, game("carol", "dave", event_id="g-2"), game("alice", "bob", event_id="g-3"))
    assert 3 == jobs.process_batch(runtime, payloads)
    runtime.inbox.release(batch)
    assert 0 == runtime.inbox.pending()
    assert 0 == runtime.redis.zcard(keys.STAGING_INDEX)
    assert {("rated", None)} == {outcome(runtime, "gammon42", e) for e in ("g-1", "g-2", "g-3")}
    assert 0 == runtime.inbox.queue.count


def test_a_follow_on_batch_that_fails_becomes_a_job_of_its_own(runtime, monkeypatch):
    """A transient error in a batch taken from the inbox loses nothing: the batch is handed
    over as an RQ job (with RQ's retries), and the job that took it still succeeds."""
    from sqlalchemy.exc import OperationalError

    from worker.entrypoints.worker import batches as jobs

    publish(runtime, game("alice", "bob", event_id="g-1"))
    batch, payloads = runtime.inbox.claim()
    publish(runtime, game("carol", "dave", event_id="g-2"))
    real = runtime.service.settle
    calls = []

    def flaky(raws, on_invalid, **given):
        calls.append(list(raws))
        if len(calls) == 2:
            raise OperationalError("SELECT 1", {}, Exception("server closed the connection"))
        return real(raws, on_invalid, **given)

    monkeypatch.setattr(runtime.service, "settle", flaky)
    assert 1 == jobs.process_batch(runtime, payloads)
    runtime.inbox.release(batch)
    assert 1 == runtime.inbox.queue.count  # g-2, as a job of its own
    assert 0 == runtime.redis.zcard(keys.STAGING_INDEX)
    monkeypatch.setattr(runtime.service, "settle", real)
    drain(runtime)
    assert ("rated", None) == outcome(runtime, "gammon42", "g-2")


def test_a_follow_on_batch_whose_redis_write_fails_becomes_a_job_and_is_written_again(
    runtime, monkeypatch
):
    """A follow-on batch's Redis write runs beside the next batch; when it fails the batch,
    committed already, is handed over as a job, whose run finds its events applied and
    writes their players and receipts again: nothing is lost, nothing applied twice."""
    from redis.exceptions import ConnectionError as RedisConnectionError

    from worker.entrypoints.worker import batches as jobs

    publish(runtime, game("alice", "bob", event_id="g-1"))
    batch, payloads = runtime.inbox.claim()
    publish(runtime, game("carol", "dave", event_id="g-2"))
    real = runtime.service.project
    calls = []

    def flaky(settled):
        calls.append(settled)
        if len(calls) == 2:  # the follow-on batch's write
            raise RedisConnectionError("Connection reset by peer")
        return real(settled)

    monkeypatch.setattr(runtime.service, "project", flaky)
    assert 2 == jobs.process_batch(runtime, payloads)  # both committed
    runtime.inbox.release(batch)
    assert 1 == runtime.inbox.queue.count  # g-2 handed over
    assert 0 == runtime.redis.zcard(keys.STAGING_INDEX)
    assert runtime.redis.zscore(keys.rating("gammon42"), "carol") is None
    assert runtime.redis.get(keys.receipt("g-2")) is None
    monkeypatch.setattr(runtime.service, "project", real)
    drain(runtime)
    assert ("rated", None) == outcome(runtime, "gammon42", "g-2")
    assert runtime.redis.zscore(keys.rating("gammon42"), "carol") is not None
    assert json.loads(runtime.redis.get(keys.receipt("g-2")))["outcome"] == "rated"
    assert 2 == len(ledger(runtime, "gammon42", "carol")) + len(ledger(runtime, "gammon42", "dave"))


def test_a_follow_on_batch_stays_staged_until_its_redis_write_is_done(runtime, monkeypatch):
    """A crash while a batch's Redis write is under way leaves the batch for ``recover``:
    its staging list is released only after the write."""
    import threading

    from worker.entrypoints.worker import batches as jobs

    publish(runtime, game("alice", "bob", event_id="g-1"))
    batch, payloads = runtime.inbox.claim()
    publish(runtime, game("carol", "dave", event_id="g-2"))
    real = runtime.service.project
    writing, go_on = threading.Event(), threading.Event()
    staged_while_writing = []

    def slow(settled):
        if any(o.event_id == "g-2" for o in settled.outcomes):
            writing.set()
            assert go_on.wait(10)
        return real(settled)

    monkeypatch.setattr(runtime.service, "project", slow)
    done = []
    job = threading.Thread(target=lambda: done.append(jobs.process_batch(runtime, payloads)))
    job.start()
    assert writing.wait(10)
    staged_while_writing.append(runtime.redis.zcard(keys.STAGING_INDEX))
    go_on.set()
    job.join(10)
    assert [2] == done
    assert [2] == staged_while_writing  # the job's own batch, and g-2's while it was written
    assert [batch.encode()] == runtime.redis.zrange(keys.STAGING_INDEX, 0, -1)


def test_under_load_the_next_batch_is_taken_before_the_redis_write_of_the_one_before(
    runtime, monkeypatch
):
    """Redis runs one command at a time: a follow-on batch large enough to be written on the
    Redis thread has the batch after the next claimed before its write starts (a claim sent
    after it would wait for the whole write), the next one having been claimed before it
    settled (its events are validated while the batch before commits); each batch is still
    settled in the order taken."""
    from worker.entrypoints.worker import batches as jobs

    monkeypatch.setattr(jobs, "THREADED_FROM", 1)  # every follow-on batch counts as large
    publish(runtime, game("alice", "bob", event_id="g-0"))
    batch, payloads = runtime.inbox.claim()
    monkeypatch.setattr(runtime.inbox, "batch_size", 1)
    pairs = [("carol", "dave"), ("erin", "frank"), ("gina", "hank")]
    publish(runtime, *(game(a, b, event_id=f"g-{n}") for n, (a, b) in enumerate(pairs, 1)))
    steps = []
    claim, start = runtime.inbox.claim, jobs._Writing.start

    def claimed():
        taken = claim()
        steps.append(("claim", taken and json.loads(taken[1][0])["event_id"]))
        return taken

    def writing(rt, batch, payloads, settled):
        steps.append(("write", json.loads(payloads[0])["event_id"]))
        return start(rt, batch, payloads, settled)

    monkeypatch.setattr(runtime.inbox, "claim", claimed)
    monkeypatch.setattr(jobs._Writing, "start", staticmethod(writing))
    assert 4 == jobs.process_batch(runtime, payloads)
    runtime.inbox.release(batch)
    assert [
        ("claim", "g-1"),
        ("claim", "g-2"),  # before g-1 settles: validated while g-1 commits
        ("claim", "g-3"),  # before g-1's write
        ("write", "g-1"),
        ("claim", None),  # after g-2's commit
        ("write", "g-2"),
        ("claim", None),  # before g-3 settles
        ("claim", None),  # after g-3's commit
        ("write", "g-3"),
        ("claim", None),  # nothing left: the job ends
    ] == steps
    assert 0 == runtime.redis.zcard(keys.STAGING_INDEX)
    assert {("rated", None)} == {outcome(runtime, "gammon42", f"g-{n}") for n in range(4)}


def test_a_batch_claimed_before_a_write_that_never_starts_becomes_a_job(runtime, monkeypatch):
    """A job stopped between the next batch's claim and the Redis write before it (its
    timeout's alarm, say) hands the claimed batch over as a job at once, rather than leaving
    it staged for ``recover``; the batch whose write never started stays staged for it."""
    from worker.entrypoints.worker import batches as jobs

    monkeypatch.setattr(jobs, "THREADED_FROM", 1)
    publish(runtime, game("alice", "bob", event_id="g-0"))
    batch, payloads = runtime.inbox.claim()
    monkeypatch.setattr(runtime.inbox, "batch_size", 1)
    publish(runtime, game("carol", "dave", event_id="g-1"), game("erin", "frank", event_id="g-2"))

    def stopped(*_):
        raise TimeoutError("the job's time is up")

    monkeypatch.setattr(jobs._Writing, "start", staticmethod(stopped))
    with pytest.raises(TimeoutError):
        jobs.process_batch(runtime, payloads)
    runtime.inbox.release(batch)
    assert 1 == runtime.inbox.queue.count  # g-2, claimed before g-1's write
    (left,) = runtime.redis.zrange(keys.STAGING_INDEX, 0, -1)  # g-1: committed, not written
    assert ["g-1"] == [
        json.loads(e)["event_id"] for e in runtime.redis.lrange(keys.staging(left.decode()), 0, -1)
    ]
    assert ("rated", None) == outcome(runtime, "gammon42", "g-1")
    assert runtime.redis.get(keys.receipt("g-1")) is None


def test_a_serving_workers_job_takes_an_event_published_while_it_waits(runtime, monkeypatch):
    """A worker that runs until stopped keeps its batch job a moment when the inbox is empty:
    an event published then is applied in that job, with no RQ job enqueued for it."""
    import threading

    from worker.entrypoints.worker import batches as jobs

    monkeypatch.setattr(jobs, "FOLLOW_ON_WAIT_SECONDS", 2.0)
    publish(runtime, game("alice", "bob", event_id="g-1"))
    batch, payloads = runtime.inbox.claim()
    later = threading.Timer(0.3, publish, (runtime, game("carol", "dave", event_id="g-2")))
    runtime.serving.set()
    try:
        later.start()
        assert 2 == jobs.process_batch(runtime, payloads)
    finally:
        runtime.serving.clear()
        later.join()
    runtime.inbox.release(batch)
    assert {("rated", None)} == {outcome(runtime, "gammon42", e) for e in ("g-1", "g-2")}
    assert 0 == runtime.inbox.queue.count
    assert 0 == runtime.redis.zcard(keys.STAGING_INDEX)


def test_a_burst_workers_job_ends_when_the_inbox_is_empty(runtime, monkeypatch):
    """``ladder worker --burst`` drains what was published: a job waits for nothing more, and
    an event published after it ends waits in the inbox for the next job."""
    import time

    from worker.entrypoints.worker import batches as jobs

    monkeypatch.setattr(jobs, "FOLLOW_ON_WAIT_SECONDS", 2.0)
    publish(runtime, game("alice", "bob", event_id="g-1"))
    batch, payloads = runtime.inbox.claim()
    started = time.monotonic()
    assert 1 == jobs.process_batch(runtime, payloads)
    assert time.monotonic() - started < 1.0
    runtime.inbox.release(batch)


def test_a_job_goes_on_past_its_follow_on_time_only_while_no_other_job_waits(runtime, monkeypatch):
    """A batch job takes follow-on batches for ``FOLLOW_ON_SECONDS``, and after that while no
    other job waits in the queue (up to a quarter of the job timeout): with one waiting it
    ends at its next batch, and the events left wait in the inbox for the next job."""
    from worker.entrypoints.worker import batches as jobs

    monkeypatch.setattr(jobs, "FOLLOW_ON_SECONDS", 0.0)  # past it from the start
    monkeypatch.setattr(runtime.inbox, "batch_size", 1)
    publish(runtime, *(game("alice", "bob", event_id=f"g-{n}") for n in range(3)))
    batch, payloads = runtime.inbox.claim()
    assert 3 == jobs.process_batch(runtime, payloads)  # nobody waits: all three in this job
    runtime.inbox.release(batch)
    publish(runtime, *(game("carol", "dave", event_id=f"h-{n}") for n in range(3)))
    batch, payloads = runtime.inbox.claim()
    runtime.inbox.queue.enqueue(len, [])  # another job waits (a replay, say)
    assert 1 == jobs.process_batch(runtime, payloads)  # its own batch only
    runtime.inbox.release(batch)
    assert 2 == runtime.inbox.pending()  # h-1 and h-2, for the next job


def test_a_job_takes_follow_on_batches_for_a_quarter_of_its_timeout_at_most(make_runtime):
    """However short the job timeout (``LADDER_JOB_TIMEOUT``), a job stops taking follow-on
    batches at a quarter of it, waiting job or not: RQ never stops it for its follow-ons."""
    import time

    from worker.entrypoints.worker import batches as jobs

    rt = make_runtime(job_timeout=1)
    deadline = jobs._Deadline.of(rt)
    assert deadline.soft == deadline.hard <= time.monotonic() + 0.25  # not FOLLOW_ON_SECONDS
    assert not deadline.passed(rt)
    time.sleep(0.3)
    assert deadline.passed(rt) and 0 == rt.inbox.queue.count


def test_a_claim_that_waits_registers_its_batch_before_it_blocks(runtime):
    """An event moved by the blocking claim is in a staging list ``recover`` can find."""
    assert runtime.inbox.claim_blocking(0.05) is None
    assert 0 == runtime.redis.zcard(keys.STAGING_INDEX)
    publish(runtime, game("alice", "bob", event_id="g-1"), game("carol", "dave", event_id="g-2"))
    claimed = runtime.inbox.claim_blocking(0.05)
    assert claimed is not None
    batch, payloads = claimed
    assert ["g-1", "g-2"] == [json.loads(p)["event_id"] for p in payloads]
    assert [batch.encode()] == runtime.redis.zrange(keys.STAGING_INDEX, 0, -1)
    assert 2 == runtime.redis.llen(keys.staging(batch))
    assert 2 == runtime.inbox.recover(grace_seconds=0)
    assert 1 == runtime.inbox.queue.count


def _transaction_after_writes(runtime, monkeypatch) -> list[str]:
    """The batch transaction's state right after each ``write_batch``, as psycopg sees it."""
    from worker.store import statements

    seen: list[str] = []
    write = statements.write_batch

    def spy(conn, *args, **kwargs):
        counts = write(conn, *args, **kwargs)
        seen.append(conn.connection.driver_connection.info.transaction_status.name)
        return counts

    monkeypatch.setattr(statements, "write_batch", spy)
    return seen


def test_a_batch_commits_with_its_writes_and_a_duplicates_receipt_reads_first(runtime, monkeypatch):
    """A batch's COMMIT goes with its writes (one round trip). A duplicate of an event
    applied before the batch has its original read with the claim, so the commit still goes
    with the writes; a duplicate of an event of the same batch must read its original after
    the writes: then the commit follows that read. All commit, and the duplicates' receipts
    repeat their originals'."""
    seen = _transaction_after_writes(runtime, monkeypatch)
    first = game("alice", "bob", event_id="g-1")
    publish(runtime, first)
    drain(runtime)
    publish(runtime, first, game("bob", "alice", event_id="g-2"))  # g-1 again: a duplicate
    drain(runtime)
    third = game("carol", "dave", event_id="g-3")
    publish(runtime, third, third)  # g-3 twice in one batch
    drain(runtime)
    assert ["IDLE", "IDLE", "INTRANS"] == seen
    assert {"g-1", "g-2", "g-3"} == {row["event_id"] for row in audit(runtime, "gammon42")}
    ratings = board(runtime, "gammon42")
    assert (ratings["alice"], ratings["bob"]) == (1500.0, 1500.0)  # one win each
    assert ratings["carol"] > 1500.0 > ratings["dave"]  # g-3 scored once
    sent = [json.loads(f[b"receipt"]) for _, f in runtime.redis.xrange(keys.RECEIPTS)]
    originals = {b["event_id"]: b for b in sent if b["outcome"] != "duplicate"}
    duplicates = [b for b in sent if b["outcome"] == "duplicate"]
    assert sorted(b["event_id"] for b in duplicates) == ["g-1", "g-3"]
    for dup in duplicates:
        assert dup["players"] == originals[dup["event_id"]]["players"]
        assert dup["processed_at"] == originals[dup["event_id"]]["processed_at"]


@pytest.mark.parametrize(
    ("copy_rows", "linked"),
    [(10**9, False), (1, False), (10**9, True), (1, True)],
    ids=["json-insert", "copy", "json-insert-with-a-link", "copy-with-a-link"],
)
def test_a_connection_killed_before_the_commit_that_goes_with_the_writes_loses_nothing(
    make_runtime, database_url, monkeypatch, copy_rows, linked
):
    """The batch's connection is killed by the server (``pg_terminate_backend``) just before
    the pipeline that writes and commits, or before the COPY of a large batch's rows, with or
    without a link among its rows: the batch is held as for an outage and tried again on a
    new connection; every event is applied once, the link stored once."""
    from sqlalchemy import text

    from worker import failpoints
    from worker.store import statements
    from worker.store.engines import make_engine

    monkeypatch.setattr(statements, "COPY_ROWS", copy_rows)
    # The test's own connections are named, so the kill reaches no other test session's.
    tag = f"ladder-kill-{uuid.uuid4().hex[:12]}"
    runtime = make_runtime(database_url=f"{database_url}&application_name={tag}")

    killed: list[int] = []
    admin = make_engine(runtime.settings.database_url)
    hit = failpoints.hit

    def kill_once(name: str) -> None:
        if name == "service.before_commit" and not killed:
            with admin.connect() as conn:
                killed.extend(
                    conn.execute(
                        text(
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                            "AND state = 'idle in transaction' AND application_name = :tag"
                        ),
                        {"tag": tag},
                    ).scalars()
                )
        hit(name)

    monkeypatch.setattr(failpoints, "hit", kill_once)
    try:
        extra = [link("gammon42", "guest-9", "dave", event_id="l-1")] if linked else []
        publish(
            runtime,
            game("alice", "bob", event_id="g-1"),
            game("bob", "carol", event_id="g-2"),
            *extra,
        )
        drain(runtime)
    finally:
        admin.dispose()
    assert [True] == killed
    stored = sorted(row["event_id"] for row in audit(runtime, "gammon42"))
    assert ["g-1", "g-2", *(["l-1"] if linked else [])] == stored
    with runtime.engine.connect() as conn:
        links = conn.execute(text("SELECT anonymous_id, account_id FROM links")).all()
    assert ([("guest-9", "dave")] if linked else []) == [tuple(row) for row in links]
    assert 2 == len(ledger(runtime, "gammon42", "bob"))
    assert {"alice": 1516.0, "bob": 1500.0, "carol": 1484.0} == board(runtime, "gammon42")
