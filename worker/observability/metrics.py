"""Prometheus metrics of a worker, served over HTTP by ``ladder worker``.

Three sources, none of which needs the service to know about metrics:

- the service's one ``batch`` log line per batch (its events counted by ladder, outcome and
  reason, and its duration), and the ``event`` line of an event dead-lettered outside a
  batch (``processing_error``): ``observe_event`` is a structlog processor placed in front
  of the chain that counts them;
- the RQ worker: ``MeteredWorker`` times each batch job and counts batches put back for a
  retry after a transient error;
- Redis, read at scrape time: inbox, queue, staging, retry-scheduled, started and
  dead-letter sizes. These are the same for every worker, so aggregate them with ``max``.

The HTTP server answers ``/healthz`` (the queue Redis answers a ping: 200, else 503) and
serves the metrics on every other path. Port 0 turns the server off. Every registry also
carries the process and platform collectors (``process_*``, ``python_*``).

``ladder serve`` gets ``/metrics`` and ``/healthz`` too, from :func:`operations_app`, which
wraps the API without changing it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterable, MutableMapping
from dataclasses import dataclass
from socketserver import ThreadingMixIn
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import structlog
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    make_wsgi_app,
)
from redis import Redis
from rq import Queue

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIEnvironment

    from worker.bootstrap import Runtime
from worker.observability.collectors import DeadLetterCollector, QueueCollector, StoreCollector
from worker.queue.jobs import Handlers
from worker.queue.rqworker import Worker

log = structlog.get_logger("ladder")
DEFAULT_PORT = 9108
OTHER_LADDER = "other"  # an invalid event may name any ladder: keep label values bounded
EVENT_SECONDS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
BATCH_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
BATCH_SIZES = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000)


class Metrics:
    """The worker's own metrics, in a registry of their own (never the global one)."""

    def __init__(self, ladders: Collection[str] = (), registry: CollectorRegistry | None = None):
        self.registry = registry or process_registry()
        self.ladders = frozenset(ladders)
        self.events = Counter(
            "ladder_events",
            "Events processed, by ladder, outcome and reason (the 'batch' log lines).",
            ["ladder", "outcome", "reason"],
            registry=self.registry,
        )
        self.event_seconds = Histogram(
            "ladder_event_duration_seconds",
            "Processing time per event (its batch's time divided by the batch's events).",
            buckets=EVENT_SECONDS,
            registry=self.registry,
        )
        self.batch_seconds = Histogram(
            "ladder_batch_duration_seconds",
            "Time to run one RQ job (a batch, or one replayed event), by status.",
            ["status"],
            buckets=BATCH_SECONDS,
            registry=self.registry,
        )
        self.batch_events = Histogram(
            "ladder_batch_events",
            "Events per batch job.",
            buckets=BATCH_SIZES,
            registry=self.registry,
        )
        self.retries = Counter(
            "ladder_batch_retries",
            "Jobs put back for a retry after a transient error.",
            registry=self.registry,
        )

    def observe_event(
        self, logger: Any, method_name: str, event_dict: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        """structlog processor: count a ``batch`` line's events, and an ``event`` line that
        is not a batch's own (a batch's events are logged at DEBUG, and counted by its
        ``batch`` line); pass every line on unchanged."""
        name = event_dict.get("event")
        try:
            if name == "batch":
                events = event_dict.get("events")
                duration_ms = event_dict.get("duration_ms")
                for count in event_dict.get("counts") or ():
                    self._count(
                        count.get("ladder"),
                        count.get("outcome"),
                        count.get("reason"),
                        count.get("events", 0),
                    )
                if isinstance(events, int) and events and isinstance(duration_ms, int | float):
                    each = duration_ms / events / 1000  # the batch's time shared by its events
                    for _ in range(events):
                        self.event_seconds.observe(each)
            elif name == "event" and method_name != "debug":
                self._count(
                    event_dict.get("ladder"), event_dict.get("outcome"), event_dict.get("reason"), 1
                )
                duration_ms = event_dict.get("duration_ms")
                if isinstance(duration_ms, int | float):
                    self.event_seconds.observe(duration_ms / 1000)
        except Exception:  # a metrics fault must never fail the batch that logs
            pass
        return event_dict

    def _count(self, ladder: Any, outcome: Any, reason: Any, events: int) -> None:
        self.events.labels(
            ladder=ladder if ladder in self.ladders else OTHER_LADDER,
            outcome=str(outcome or ""),
            reason=str(reason or ""),
        ).inc(events)

    def collect_from(self, redis: Redis) -> None:
        """Add the queue sizes, read from ``redis`` at every scrape, and the stores' state."""
        self.registry.register(QueueCollector(redis))
        self.registry.register(StoreCollector())


def process_registry() -> CollectorRegistry:
    """A registry of our own with the process, platform and GC collectors in it."""
    registry = CollectorRegistry()
    for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
        registry.register(collector)
    return registry


def install_log_observer(metrics: Metrics) -> None:
    """Put ``metrics.observe_event`` in front of structlog's processors.

    Call it before the first log line of the process: loggers cached on first use keep the
    chain they were built with.
    """
    processors = list(structlog.get_config()["processors"])
    processors = [
        p for p in processors if getattr(p, "__func__", None) is not Metrics.observe_event
    ]
    structlog.configure(processors=[metrics.observe_event, *processors])


class MeteredWorker(Worker):
    """ladder's RQ worker (``worker.queue.rqworker``), timing every job and counting retries."""

    metrics: Metrics | None = None

    def perform_job(self, job: Any, queue: Any, execution: Any) -> bool:
        metrics = self.metrics
        if metrics is None:
            return bool(super().perform_job(job, queue, execution))
        started = time.perf_counter()
        ok = False
        try:
            ok = bool(super().perform_job(job, queue, execution))
            return ok
        finally:
            status = "ok" if ok else "failed"
            metrics.batch_seconds.labels(status=status).observe(time.perf_counter() - started)
            if job.args and isinstance(job.args[0], list):
                metrics.batch_events.observe(len(job.args[0]))

    def handle_job_failure(self, job: Any, queue: Any, *args: Any, **kwargs: Any) -> None:
        if self.metrics is not None and job.should_retry:
            self.metrics.retries.inc()
        super().handle_job_failure(job, queue, *args, **kwargs)


# -- HTTP --------------------------------------------------------------------------------


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes every few seconds would drown the event log lines."""


def wsgi_app(
    metrics: Metrics, alive: Callable[[], bool]
) -> Callable[[WSGIEnvironment, StartResponse], Iterable[bytes]]:
    serve_metrics = make_wsgi_app(metrics.registry)

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == "/healthz":
            try:
                ok = alive()
            except Exception:
                ok = False
            status = "200 OK" if ok else "503 Service Unavailable"
            start_response(status, [("Content-Type", "text/plain; charset=utf-8")])
            return [b"ok\n" if ok else b"unavailable\n"]
        body: Iterable[bytes] = serve_metrics(environ, start_response)
        return body

    return app


@dataclass
class MetricsServer:
    server: WSGIServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        return int(self.server.server_port)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def serve(
    metrics: Metrics, port: int, alive: Callable[[], bool], host: str = "0.0.0.0"
) -> MetricsServer:
    """Serve metrics and ``/healthz`` on ``host:port`` from a daemon thread."""
    server = make_server(
        host, port, wsgi_app(metrics, alive), server_class=_Server, handler_class=_QuietHandler
    )
    thread = threading.Thread(target=server.serve_forever, name="ladder-metrics", daemon=True)
    thread.start()
    return MetricsServer(server, thread)


@dataclass
class WorkerMetrics:
    """What ``start`` set up for one worker process."""

    metrics: Metrics
    server: MetricsServer | None

    def worker(self, queues: list[Queue], connection: Redis, handlers: Handlers) -> MeteredWorker:
        """ladder's RQ worker, its jobs handed to ``handlers``, reporting to these metrics."""
        worker = MeteredWorker(queues, connection=connection)
        worker.metrics = self.metrics
        worker.handlers = handlers
        return worker

    def close(self) -> None:
        if self.server is not None:
            self.server.close()


def start(rt: Runtime, port: int, host: str = "0.0.0.0") -> WorkerMetrics:
    """Set up a worker's metrics: the log observer, the worker class, and (port > 0) HTTP.

    Call it first thing in the worker, before anything logs.
    """
    metrics = Metrics(ladders=rt.config.ladders.keys())
    metrics.collect_from(rt.redis)
    metrics.registry.register(DeadLetterCollector(rt.dead_letters.counts))
    install_log_observer(metrics)
    server = None
    if port:
        try:
            server = serve(metrics, port, alive=lambda: bool(rt.redis.ping()), host=host)
        except OSError as exc:  # e.g. a second worker on one host: work on, unscraped
            log.warning("metrics_port_unavailable", port=port, error=str(exc))
    return WorkerMetrics(metrics, server)


# -- ladder serve ----------------------------------------------------------------------------


ASGIApp = Callable[..., Any]


def operations_app(app: ASGIApp, alive: Callable[[], bool]) -> ASGIApp:
    """``app`` with ``GET /metrics`` (process and platform collectors, and the API's own
    responses by status) and ``GET /healthz`` (200 while ``alive()``, else 503) in front."""
    registry = process_registry()
    responses = Counter(
        "ladder_api_responses",
        "HTTP responses of the read API, by status code.",
        ["status"],
        registry=registry,
    )

    async def plain(send: Any, status: int, body: bytes, content_type: str) -> None:
        headers = [(b"content-type", content_type.encode()), (b"cache-control", b"no-store")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path") if scope.get("type") == "http" else None
        if path == "/metrics":
            await plain(send, 200, generate_latest(registry), CONTENT_TYPE_LATEST)
            return
        if path == "/healthz":
            try:
                ok = alive()
            except Exception:
                ok = False
            await plain(send, 200 if ok else 503, b"ok\n" if ok else b"unavailable\n", "text/plain")
            return

        async def counted(message: Any) -> None:
            if message.get("type") == "http.response.start":
                responses.labels(status=str(message.get("status"))).inc()
            await send(message)

        await app(scope, receive, counted)

    return wrapped
