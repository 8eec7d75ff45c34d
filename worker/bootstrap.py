"""The composition root: real objects wired together once per process from ``Settings``."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from redis import Redis
from redis.cluster import RedisCluster
from rq import Retry
from sqlalchemy.engine import Engine

from schemas import InvalidEvent
from worker import datadir, embedded, failpoints
from worker.boards.projection import Projection
from worker.boards.receipts import ReceiptSink
from worker.boards.redis_clients import leaderboard_client
from worker.ladders import Config, load_config
from worker.observability import health
from worker.privacy import scrub, storable_payload
from worker.queue.deadletter import DeadLetters
from worker.queue.inbox import Inbox
from worker.service.batch import Service
from worker.service.intake import Intake
from worker.settings import DEFAULT_DATA_DIR, Settings, normalise_database_url
from worker.store.routes import Databases, resolve


def _say(line: str) -> None:
    print(f"ladder: {line}", file=sys.stderr)


@dataclass
class Runtime:
    """The process's objects. With REDIS_URL or DATABASE_URL unset, the embedded server under
    ``settings.data_dir`` is started (or found running) when the first object that needs it
    is made, and ``say`` is given one line saying where it is."""

    given: Settings
    # Set by ``ladder worker`` (not ``--burst``) while it serves: a batch job whose inbox is
    # empty then waits a moment for the next event (``worker.entrypoints.worker.batches``).
    serving: threading.Event = field(default_factory=threading.Event)
    say: Callable[[str], None] = _say
    # Where a ladder's ``database`` key finds its URL: the environment as the process started.
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))

    def __post_init__(self) -> None:
        failpoints.configure(self.given.failpoints)  # armed only where a crash test sets them

    @cached_property
    def home(self) -> datadir.Home:
        """Where the embedded servers are: LADDER_DATA_DIR, or, unset, ``./.ladder/`` unless
        no server runs there and those ``ladder dev env`` started from another folder do."""
        given = self.given.data_dir
        found = datadir.home(given, chosen=given != DEFAULT_DATA_DIR.absolute())
        if found.found:
            self.say(
                f"no embedded server runs under {given}: using those under {found.path}, "
                "which `ladder dev env` started (LADDER_DATA_DIR chooses others)"
            )
        return found

    def _started(self, server: embedded.Server, variable: str) -> None:
        self.say(server.notice(variable))
        if server.started and self.home.others is not None:
            self.say(
                f"the embedded {server.name} just started under {self.home.path} is NEW and "
                f"EMPTY: the servers under {self.home.others} run too "
                f"(LADDER_DATA_DIR={self.home.others} uses them)"
            )

    @cached_property
    def redis_url(self) -> str:
        """REDIS_URL, or the embedded Redis's."""
        if self.given.redis_url:
            return self.given.redis_url
        server = embedded.redis(self.home.path)
        self._started(server, "REDIS_URL")
        return server.url

    @cached_property
    def database_url(self) -> str:
        """DATABASE_URL, or the embedded PostgreSQL's."""
        if self.given.database_url:
            return self.given.database_url
        server = embedded.postgres(self.home.path)
        self._started(server, "DATABASE_URL")
        return normalise_database_url(server.url)

    @cached_property
    def settings(self) -> Settings:
        """The settings with both URLs filled in (so both servers started): for what is handed
        them whole, such as the health checks."""
        return self.given.replace(
            redis_url=self.redis_url,
            database_url=self.database_url,
            database_routes=self.databases.routes,
        )

    @cached_property
    def config(self) -> Config:
        return load_config(self.given.ladder_config)

    @cached_property
    def redis(self) -> Redis:
        return Redis.from_url(self.redis_url, health_check_interval=30)

    @cached_property
    def leaderboard_redis(self) -> Redis | RedisCluster:
        """Where the leaderboards live: the queue's Redis unless LEADERBOARD_REDIS_URL is set.

        A ``redis+cluster://`` URL selects a Redis Cluster (see ``worker.boards.redis_clients``).
        """
        url = self.given.leaderboard_redis_url
        if not url:
            return self.redis
        return leaderboard_client(url)

    @cached_property
    def databases(self) -> Databases:
        """Each ladder's PostgreSQL (``worker.store.routes``); the routes are checked against
        the ladder configuration when first asked for."""
        routes = resolve(self.given.database_routes, self.config, self.environ)
        return Databases(lambda: self.database_url, routes)

    @property
    def engine(self) -> Engine:
        """The default primary: dead letters, and the ladders not routed elsewhere. An
        operation on one ladder uses ``databases.for_ladder``; one over every ladder,
        ``databases.all()``."""
        return self.databases.default

    @cached_property
    def probes(self) -> dict[str, Callable[[], object]]:
        """A quick check of each store, each raising when its store does not answer: a batch's
        failure is an outage when one of them fails right after it (``worker.queue.faults``)."""
        return health.probes(self.settings)

    @cached_property
    def dead_letters(self) -> DeadLetters:
        return DeadLetters(
            self.redis,
            self.given.dead_letter_ttl_days * 86400,
            engine=lambda: self.engine,
            max_in_redis=self.given.dead_letters_in_redis,
            receipts=self.receipts,
        )

    @cached_property
    def projection(self) -> Projection:
        return Projection(self.leaderboard_redis, receipts=self.receipts)

    @cached_property
    def receipts(self) -> ReceiptSink | None:
        """Where receipts go (the queue's Redis); None when LADDER_RECEIPTS=false."""
        if not self.given.receipts:
            return None
        return ReceiptSink(
            self.redis,
            ttl=self.given.receipt_ttl,
            maxlen=self.given.receipts_maxlen,
            settle_seconds=self.given.job_timeout,
        )

    @cached_property
    def inbox(self) -> Inbox:
        retry = (
            Retry(max=self.given.job_retries, interval=list(self.given.job_retry_intervals))
            if self.given.job_retries > 0
            else None  # RQ refuses Retry(max=0); no retry: the first failure dead-letters
        )
        return Inbox(
            self.redis,
            batch_size=self.given.batch_size,
            retry=retry,
            failure_ttl=self.given.dead_letter_ttl_days * 86400,
            job_timeout=self.given.job_timeout,
            max_event_bytes=self.given.max_event_bytes,
        )

    @cached_property
    def intake(self) -> Intake:
        return Intake(
            self.config,
            network_key=self.given.network_key.get_secret_value(),
            max_event_bytes=self.given.max_event_bytes,
            publisher_secrets=self.given.secrets(),
            publisher_ladders=self.given.publisher_ladders,
            require_signature=self.given.require_signature,
        )

    @cached_property
    def service(self) -> Service:
        return Service(
            self.intake,
            self.databases,
            self.projection,
            receipt_ttl=self.given.receipt_ttl if self.given.receipts else None,
        )

    def dead_letter(self, raw: str | bytes, error: InvalidEvent, traceback: str = "") -> None:
        """Dead-letter one event; raw IP addresses in it are replaced before it is stored."""
        self.dead_letter_many([(raw, error, traceback)])

    def dead_letter_many(self, letters: list[tuple[str | bytes, InvalidEvent, str]]) -> None:
        """Dead-letter these events together (``DeadLetters.add_many``), each as
        ``dead_letter`` stores it."""
        key = self.given.network_key.get_secret_value()
        self.dead_letters.add_many(
            (storable_payload(raw, key, signed_by=self.intake.signer(raw)), error, scrub(trace))
            for raw, error, trace in letters
        )

    def close(self) -> None:
        if "databases" in self.__dict__:
            self.databases.dispose()
        if "leaderboard_redis" in self.__dict__ and self.leaderboard_redis is not self.redis:
            self.leaderboard_redis.close()
        if "redis" in self.__dict__:
            self.redis.close()
