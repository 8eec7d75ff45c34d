"""The worker's Prometheus endpoint, scraped over HTTP while real events are processed."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import publish
from tests.events import game
from tests.integration.helpers import EVERYONE
from worker.entrypoints.worker import batches as jobs
from worker.observability import collectors, metrics
from worker.service import batch as service_module


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(autouse=True)
def structlog_restored() -> Iterator[None]:
    """``metrics.start`` puts its log observer in structlog's processors, as the worker does
    at start-up: each test here gets the configuration back as it found it."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


@pytest.fixture
def observed(runtime: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[metrics.WorkerMetrics]:
    """``metrics.start`` on a free port."""
    structlog.configure(cache_logger_on_first_use=False)
    # a logger cached by an earlier test would keep its old chain: give the service a fresh one
    monkeypatch.setattr(service_module, "log", structlog.get_logger("ladder"))
    started = metrics.start(runtime, port=_free_port(), host="127.0.0.1")
    yield started
    started.close()


def work(rt: Any, observed: metrics.WorkerMetrics) -> None:
    """What ``ladder worker`` does, with the metered worker: pump the inbox, run the jobs."""
    while rt.inbox.pump_once() or rt.inbox.queue.count:
        observed.worker([rt.inbox.queue], rt.redis, jobs.Handlers(rt)).work(
            burst=True, logging_level="WARNING"
        )


def scrape(observed: metrics.WorkerMetrics, path: str = "/metrics") -> dict[tuple[str, Any], float]:
    assert observed.server is not None
    url = f"http://127.0.0.1:{observed.server.port}{path}"
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: dict[tuple[str, Any], float], name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_the_endpoint_counts_processed_events_by_outcome_and_reason(runtime, observed):
    """After a batch, the counters show each event's outcome and reason, and they keep moving."""
    first = game("alice", "bob", event_id="g-1")
    publish(
        runtime,
        first,
        game("alice", "bob", event_id="g-2", mode="boosted"),
        game("alice", "bob", event_id="bad", cube=3),
    )
    before = scrape(observed)
    assert 3 == value(before, "ladder_inbox_length")
    work(runtime, observed)
    after = scrape(observed)
    assert 1 == value(after, "ladder_events_total", ladder="gammon42", outcome="rated", reason="")
    assert 1 == value(
        after, "ladder_events_total", ladder="gammon42", outcome="unrated", reason="not_ranked"
    )
    assert 1 == value(
        after,
        "ladder_events_total",
        ladder="gammon42",
        outcome="dead_lettered",
        reason="invalid_cube",
    )
    assert 3 == value(after, "ladder_event_duration_seconds_count")
    assert 1 == value(after, "ladder_batch_duration_seconds_count", status="ok")
    assert 3 == value(after, "ladder_batch_events_sum")
    assert (0, 0, 1) == (
        value(after, "ladder_inbox_length"),
        value(after, "ladder_queue_length"),
        value(after, "ladder_dead_letters"),
    )

    publish(runtime, game("carol", "dave", event_id="g-3"), first)
    work(runtime, observed)
    later = scrape(observed)
    assert 2 == value(later, "ladder_events_total", ladder="gammon42", outcome="rated", reason="")
    assert 1 == value(
        later, "ladder_events_total", ladder="gammon42", outcome="duplicate", reason=""
    )
    assert 2 == value(later, "ladder_batch_duration_seconds_count", status="ok")


def test_an_unknown_ladder_is_counted_under_other_so_label_values_stay_bounded(runtime, observed):
    """An event may name any ladder; only configured ladders become label values."""
    publish(runtime, game("alice", "bob", ladder="no-such-ladder"))
    work(runtime, observed)
    samples = scrape(observed)
    assert 1 == value(
        samples,
        "ladder_events_total",
        ladder="other",
        outcome="dead_lettered",
        reason="unknown_ladder",
    )


def test_a_batch_that_fails_once_is_counted_as_a_retry(runtime, observed, monkeypatch):
    """A batch failing for a reason that is neither an outage nor one event's (it is held
    through an outage, and an event is split out) goes back for a retry: the counter moves."""
    real = jobs.apply_isolating
    calls = []

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("dead-letter write refused")
        return real(*args, **kwargs)

    monkeypatch.setattr(jobs, "apply_isolating", flaky)
    publish(runtime, game("alice", "bob", event_id="g-1"))
    work(runtime, observed)
    samples = scrape(observed)
    assert 1 == value(samples, "ladder_batch_retries_total")
    assert 1 == value(samples, "ladder_batch_duration_seconds_count", status="failed")
    assert 1 == value(samples, "ladder_events_total", ladder="gammon42", outcome="rated", reason="")


def test_healthz_answers_ok_while_the_queue_redis_answers(observed):
    """``/healthz`` on the metrics port is 200 while Redis answers a ping."""
    assert observed.server is not None
    url = f"http://127.0.0.1:{observed.server.port}/healthz"
    with urllib.request.urlopen(url, timeout=5) as response:
        assert (200, b"ok\n") == (response.status, response.read())


def test_healthz_is_503_when_redis_does_not_answer(runtime):
    """A Redis that refuses connections makes ``/healthz`` answer 503."""
    server = metrics.serve(metrics.Metrics(), 0, alive=lambda: False, host="127.0.0.1")
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"http://127.0.0.1:{server.port}/healthz", timeout=5)
        assert 503 == refused.value.code
        refused.value.close()
    finally:
        server.close()


def test_a_scrape_while_redis_is_away_reports_it_down_instead_of_failing():
    """The queue gauges are skipped and ``ladder_redis_up`` is 0 when Redis is unreachable."""
    from redis import Redis

    dead = Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.5)
    collected = {m.name: m for m in collectors.QueueCollector(dead).collect()}
    assert ["ladder_redis_up"] == list(collected)
    assert 0 == collected["ladder_redis_up"].samples[0].value


def test_port_zero_serves_nothing(runtime):
    """``LADDER_METRICS_PORT=0`` keeps the counters but opens no port."""
    started = metrics.start(runtime, port=0)
    assert started.server is None


def test_a_port_already_taken_leaves_the_worker_running_without_a_server(runtime):
    """A second worker on one host cannot bind the port: it works on, unscraped."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        started = metrics.start(runtime, port=taken.getsockname()[1], host="127.0.0.1")
        assert started.server is None


def test_the_endpoint_carries_the_process_and_platform_collectors(observed):
    """process_* and python_* beside ladder's own metrics."""
    samples = scrape(observed)
    names = {name for name, _ in samples}
    assert "process_resident_memory_bytes" in names and "python_info" in names
    assert "python_gc_collections_total" in names


def test_an_idle_worker_waiting_on_the_inbox_shows_no_staging_batch(runtime, observed):
    """The batch a waiting worker registers before anything arrives holds no events."""
    runtime.redis.zadd("ladder:staging", {"waiting": 1.0})  # registered, nothing moved yet
    assert 0 == value(scrape(observed), "ladder_staging_batches")
    claimed = runtime.inbox
    publish(runtime, game("a", "b"))
    batch, _ = claimed.claim()
    assert 1 == value(scrape(observed), "ladder_staging_batches")
    claimed.release(batch)


def test_dead_letters_are_counted_by_reason(runtime, observed, monkeypatch):
    """ladder_dead_letters_by_reason{reason=...}."""
    monkeypatch.setattr(collectors, "REASONS_EVERY_SECONDS", 0.0)
    publish(
        runtime,
        game("a", "b", cube=3),
        game("c", "d", cube=5),
        game("e", "e"),
    )
    work(runtime, observed)
    samples = scrape(observed)
    assert (2, 1) == (
        value(samples, "ladder_dead_letters_by_reason", reason="invalid_cube"),
        value(samples, "ladder_dead_letters_by_reason", reason="self_play"),
    )


def test_ladder_serve_answers_metrics_and_healthz(runtime):
    """/metrics and /healthz on the read API, the API's own routes unchanged."""
    from starlette.testclient import TestClient

    from worker.entrypoints.api.app import create_app

    up = {"ok": True}
    app = metrics.operations_app(
        create_app(runtime.config, runtime.leaderboard_redis, runtime.engine, access=EVERYONE),
        alive=lambda: up["ok"],
    )
    with TestClient(app) as client:
        assert 200 == client.get("/ladders").status_code
        assert (200, "ok\n") == (client.get("/healthz").status_code, client.get("/healthz").text)
        shown = client.get("/metrics").text
        assert 'ladder_api_responses_total{status="200"} 1.0' in shown
        assert "process_resident_memory_bytes" in shown
        up["ok"] = False
        assert 503 == client.get("/healthz").status_code


def test_an_event_id_conflict_is_counted_under_its_reason(runtime, observed):
    """SPEC 2.4 step 1: a reused id with other content is dead-lettered, and counted as such."""
    first = game("alice", "bob", event_id="g-1")
    publish(runtime, first)
    work(runtime, observed)
    publish(runtime, {**first, "cube": 2})
    work(runtime, observed)
    assert 1 == value(
        scrape(observed),
        "ladder_events_total",
        ladder="gammon42",
        outcome="dead_lettered",
        reason="event_id_conflict",
    )
