"""A batch with an event the pipeline cannot apply, and what counts as an outage."""

from __future__ import annotations

import psycopg
import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoPermissionError
from sqlalchemy.exc import OperationalError, ProgrammingError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from engine import apply as real_apply
from tests.conftest import drain, publish
from tests.events import game
from tests.integration.helpers import audit
from worker.queue import faults
from worker.service import batch


def _poison(monkeypatch: pytest.MonkeyPatch, poisoned: str, calls: list[int]) -> None:
    """The engine raises while scoring the event ``poisoned``, whatever validation said."""

    def failing_apply(event, state, rules, policy, now):
        calls.append(1)
        if event.event_id == poisoned:
            raise ArithmeticError("window start before year 1")
        return real_apply(event, state, rules, policy, now)

    monkeypatch.setattr(batch, "apply", failing_apply)


def test_an_event_that_fails_alone_is_dead_lettered_and_its_35_neighbours_applied(
    runtime, monkeypatch
):
    """SPEC 5: "only permanent failures (an invalid event, one that fails for a reason that
    is not an outage) reach the dead-letter queue, alone."
    Promised: "Any unexpected, non-transient exception while applying a batch splits the batch
    (bisection) until the failing event is alone: it goes to the dead-letter queue with
    reason processing_error and the exception text, and every other event of the batch is
    applied.\""""
    calls: list[int] = []
    _poison(monkeypatch, "poison", calls)
    valid = [game(f"a{i}", f"b{i}", event_id=f"ok-{i}") for i in range(35)]
    publish(runtime, *valid[:17], game("x", "y", event_id="poison"), *valid[17:])
    drain(runtime)
    assert sorted(e["event_id"] for e in valid) == sorted(r["event_id"] for r in audit(runtime))
    (letter,) = runtime.dead_letters.list()
    assert ("poison", "processing_error", 1) == (letter.event_id, letter.reason, letter.attempts)
    assert "ArithmeticError: window start before year 1" in letter.detail
    _, trace = runtime.dead_letters.get(letter.id) or (None, "")
    assert "failing_apply" in trace
    assert 0 == runtime.inbox.queue.scheduled_job_registry.count, "the batch was not retried"
    assert len(calls) < 36 * 4, "bisection re-ran far more events than log2 levels"


def test_an_invalid_event_in_a_split_batch_is_dead_lettered_once(runtime, monkeypatch):
    _poison(monkeypatch, "poison", [])
    written: list[str] = []
    add_many = runtime.dead_letters.add_many

    def counted(letters, attempts=None):  # every dead letter is written through it
        letters = list(letters)
        written.extend(error.event_id for _, error, _ in letters)
        return add_many(letters, attempts)

    monkeypatch.setattr(runtime.dead_letters, "add_many", counted)
    bad = game("c", "d", event_id="bad", cube=3)
    publish(runtime, game("a", "b", event_id="ok"), bad, game("x", "y", event_id="poison"))
    drain(runtime)
    assert ["ok"] == [r["event_id"] for r in audit(runtime)]
    letters = runtime.dead_letters.list()
    assert [("bad", "invalid_cube"), ("poison", "processing_error")] == sorted(
        (d.event_id, d.reason) for d in letters
    )
    assert ["bad", "poison"] == sorted(written), "the split batch wrote a dead letter twice"


@pytest.mark.parametrize(
    ("exc", "store"),
    [
        (
            OperationalError("SELECT 1", {}, psycopg.OperationalError("connection refused")),
            "postgresql",
        ),
        (PoolTimeout("QueuePool limit of size 5 overflow 5 reached"), "postgresql"),
        (RedisConnectionError("Connection refused"), "redis"),
        (TimeoutError("timed out"), "redis"),
        (ArithmeticError("year 0"), None),
        (ValueError("bad"), None),
        # A store refusing the worker's role: no event's fault, held like an outage.
        (
            ProgrammingError(
                "INSERT", {}, psycopg.errors.InsufficientPrivilege("permission denied for table")
            ),
            "postgresql",
        ),
        (psycopg.errors.InvalidPassword("password authentication failed"), "postgresql"),
        (NoPermissionError("this user has no permissions to run the 'eval' command"), "redis"),
        (ProgrammingError("INSERT", {}, psycopg.errors.UndefinedColumn("no column")), None),
    ],
)
def test_an_outage_is_told_from_a_fault_of_the_batch(exc, store):
    assert store == faults.unavailable_store(exc)


def test_an_unexpected_error_is_an_outage_when_a_store_does_not_answer_the_probe():
    def down() -> None:
        raise OSError("no answer")

    assert "postgresql" == faults.classify(
        ValueError("cut by the job timeout"), {"postgresql": down}
    )
    assert faults.classify(ValueError("a bug"), {"postgresql": lambda: None}) is None


def test_ladder_store_up_is_0_while_a_store_is_lost_and_1_once_it_is_back():
    from prometheus_client import generate_latest

    from worker.observability.collectors import StoreCollector
    from worker.observability.metrics import Metrics

    metrics = Metrics()
    metrics.registry.register(StoreCollector())
    outages = faults.Outages()
    faults.outages, saved = outages, faults.outages
    try:
        outages.lost("postgresql", OSError("refused"))
        text = generate_latest(metrics.registry).decode()
        assert 'ladder_store_up{store="postgresql"} 0.0' in text
        assert 'ladder_store_up{store="redis"} 1.0' in text
        outages.regained()
        assert (
            'ladder_store_up{store="postgresql"} 1.0' in generate_latest(metrics.registry).decode()
        )
    finally:
        faults.outages = saved


def test_each_runtime_probes_its_own_stores(make_runtime, settings):
    """The outage probes belong to the runtime: one whose PostgreSQL does not answer (probed
    first, in the same process) does not make another runtime's failures outages."""
    from tests.e2e.private import free_port
    from worker.bootstrap import Runtime

    gone = Runtime(
        settings.replace(database_url=f"postgresql+psycopg://root@127.0.0.1:{free_port()}/test")
    )
    assert "postgresql" == faults.classify(ValueError("a bug"), gone.probes)
    here = make_runtime()
    assert faults.classify(ValueError("a bug"), here.probes) is None
    gone.close()
