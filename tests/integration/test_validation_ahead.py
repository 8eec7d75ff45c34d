"""Under load a job validates the next batch while the batch before it commits: the batch's
last writes and its COMMIT are sent to PostgreSQL first, the next batch's events are validated
while the server runs them, then their results are read
(``worker.entrypoints.worker.batches._follow_on``, ``Service.settle``'s ``meanwhile``).
Validation reads and writes no store, so nothing else changes: each event is validated once,
an invalid one is dead-lettered with its reason once its own batch is settled, and every
other event is applied as before.
"""

from __future__ import annotations

import gc
import json
import time
import weakref
from collections import Counter
from typing import Any

from sqlalchemy import text

from tests.conftest import publish
from tests.events import game
from tests.integration.helpers import outcome
from worker import keys
from worker.entrypoints.worker import batches as jobs


def _three_batches(rt: Any, monkeypatch: Any, *second: dict[str, Any] | str) -> list[str]:
    """g-0 claimed as a job's own batch, then three follow-on batches of two events (the
    second's events ``second`` when given), each counted as large; the job run. Its own
    batch's staging is released; the follow-on batches' event ids come back."""
    monkeypatch.setattr(jobs, "THREADED_FROM", 1)
    publish(rt, game("alice", "bob", event_id="g-0"))
    batch, payloads = rt.inbox.claim()
    monkeypatch.setattr(rt.inbox, "batch_size", 2)
    events = [
        game("carol", "dave", event_id="g-1"),
        game("erin", "frank", event_id="g-2"),
        *(second or (game("gina", "hank", event_id="g-3"), game("ivan", "judy", event_id="g-4"))),
        game("carol", "erin", event_id="g-5"),
        game("dave", "frank", event_id="g-6"),
    ]
    publish(rt, *events)
    jobs.process_batch(rt, payloads)
    rt.inbox.release(batch)
    assert 0 == rt.redis.zcard(keys.STAGING_INDEX)
    return [e["event_id"] for e in events if isinstance(e, dict)]


def _validations(rt: Any, monkeypatch: Any) -> Counter[str]:
    """How many times each event (by id; an unparsable one as "?") is validated."""
    seen: Counter[str] = Counter()
    valid = rt.service.intake.valid

    def counted(raw: str | bytes, now: Any) -> Any:
        try:
            seen[json.loads(raw)["event_id"]] += 1
        except ValueError:
            seen["?"] += 1
        return valid(raw, now)

    monkeypatch.setattr(rt.service.intake, "valid", counted)
    return seen


def _raising_once(rt: Any, monkeypatch: Any, event_id: str, error: Exception) -> list[str]:
    """The first validation of ``event_id`` raises ``error``; the list names it once it has."""
    valid = rt.service.intake.valid
    raised: list[str] = []

    def once(raw: str | bytes, now: Any) -> Any:
        if json.loads(raw)["event_id"] == event_id and not raised:
            raised.append(event_id)
            raise error
        return valid(raw, now)

    monkeypatch.setattr(rt.service.intake, "valid", once)
    return raised


def test_each_event_of_a_batch_validated_ahead_is_validated_once_and_applied(runtime, monkeypatch):
    seen = _validations(runtime, monkeypatch)
    ids = _three_batches(runtime, monkeypatch)
    assert {"g-0": 1} | dict.fromkeys(ids, 1) == dict(seen)
    assert {("rated", None)} == {outcome(runtime, "gammon42", e) for e in ["g-0", *ids]}


def test_an_invalid_event_of_a_batch_validated_ahead_is_dead_lettered_after_its_batch(
    runtime, monkeypatch
):
    """SPEC: an invalid event goes to the dead-letter queue with a reason; the rest of its batch
    is applied. Validated while the batch before it commits, it is dead-lettered only when its
    own batch is settled: after the batch before it is committed, never with it."""
    letters_then: list[int] = []
    real = runtime.service.settle

    def settling(raws: Any, on_invalid: Any, **given: Any) -> Any:
        letters_then.append(len(runtime.dead_letters.list()))
        return real(raws, on_invalid, **given)

    monkeypatch.setattr(runtime.service, "settle", settling)
    ids = _three_batches(
        runtime,
        monkeypatch,
        game("gina", "gina", event_id="self"),
        game("ivan", "judy", event_id="g-4"),
    )
    assert [("self", "self_play")] == [(d.event_id, d.reason) for d in runtime.dead_letters.list()]
    # settled: g-0, then g-1 + g-2 (validating "self" meanwhile), then "self" + g-4: no letter
    # before the batch that holds it
    assert [0, 0, 0, 1] == letters_then
    assert {("rated", None)} == {outcome(runtime, "gammon42", e) for e in ids if e != "self"}


def test_a_batch_whose_validation_ahead_fails_is_validated_again_when_it_is_settled(
    runtime, monkeypatch
):
    """A failure of the validation ahead (not an invalid event: a fault of the validation
    itself) costs nothing but the time: the batch is validated again, as any batch is, when
    its turn comes."""
    seen = _validations(runtime, monkeypatch)
    failed = _raising_once(runtime, monkeypatch, "g-3", MemoryError("validation ahead lost"))
    ids = _three_batches(runtime, monkeypatch)
    assert ["g-3"] == failed
    assert 1 == seen["g-3"]  # its second validation, in its own settle
    assert {("rated", None)} == {outcome(runtime, "gammon42", e) for e in ids}


def test_the_work_meanwhile_runs_while_the_server_commits(runtime):
    """``meanwhile`` runs once the batch's writes and its COMMIT have been sent, before their
    results are read: the server commits meanwhile, so another session sees the batch's rows
    while it runs."""
    visible: list[int] = []

    def meanwhile() -> None:
        with runtime.engine.connect() as conn:
            for _ in range(500):  # up to 5 s
                seen = conn.execute(text("SELECT count(*) FROM events")).scalar_one()
                conn.rollback()
                if seen:
                    break
                time.sleep(0.01)
        visible.append(seen)

    raws = [json.dumps(game(f"p{n}", f"q{n}", event_id=f"m-{n}")) for n in range(300)]
    runtime.service.settle(raws, lambda raw, exc: None, meanwhile=meanwhile)
    assert [300] == visible


def test_the_jobs_timeout_during_the_validation_ahead_ends_the_job_and_loses_nothing(
    runtime, monkeypatch
):
    """RQ's timeout, raised while the next batch is validated, is not taken for a fault of
    the validation: the job stops taking batches, hands over the ones it holds, and every
    event is applied once those jobs run."""
    from rq.timeouts import JobTimeoutException

    from tests.conftest import drain

    timeout = JobTimeoutException("Task exceeded maximum timeout value (180 seconds)")
    fired = _raising_once(runtime, monkeypatch, "g-3", timeout)
    ids = _three_batches(runtime, monkeypatch)
    assert ["g-3"] == fired
    assert runtime.inbox.queue.count  # what the job held, handed over
    drain(runtime)
    assert {("rated", None)} == {outcome(runtime, "gammon42", e) for e in ids}


def test_a_validated_batch_with_an_invalid_event_is_freed_without_the_collector(runtime):
    """A batch validated ahead outlives a collection: were it held in a reference cycle (an
    invalid event's traceback leads back to the frame that holds the batch), it would wait
    for an older generation's collection, a batch's worth of memory each."""
    raws = ['{"type": "game.finished"', json.dumps(game("alice", "bob", event_id="g-1"))]
    collecting = gc.isenabled()
    gc.disable()
    try:
        prepared = runtime.service.prepare(raws)
        assert ["invalid_json"] == [exc.reason for _, exc in prepared.invalid]
        kept = weakref.ref(prepared.valid[0])
        del prepared
        assert kept() is None
    finally:
        if collecting:
            gc.enable()
