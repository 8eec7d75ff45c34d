"""Which failures are outages: the one question the batch job asks of an exception.

An outage (PostgreSQL or Redis unreachable, hung, restarting) is *transient*: the batch is
kept and tried again until the store is back, and no event is dead-lettered for it. So is a
store's refusal of the worker's role (PostgreSQL's ``insufficient_privilege`` or a failed
login, Redis's ``NOPERM``): a grant the deployment forgot is no event's fault, and the batch
goes through once it is given. Any other exception while applying a batch is the batch's own
fault: the batch is split until the one event that fails is alone
(``worker.entrypoints.worker.batches``).

An exception of an unexpected type counts as an outage too when a store does not answer a
short probe right after it (a statement cut by the job's timeout because PostgreSQL hung).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import structlog
from redis.exceptions import (
    BusyLoadingError,
    ClusterDownError,
    ClusterError,
    NoPermissionError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from sqlalchemy.exc import DBAPIError, DisconnectionError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

log = structlog.get_logger("ladder")
POSTGRESQL = "postgresql"
REDIS = "redis"
_REDIS_DOWN = (
    RedisConnectionError,
    RedisTimeoutError,
    BusyLoadingError,
    ClusterDownError,
    ClusterError,
    TryAgainError,
    NoPermissionError,
)
_POSTGRESQL_DOWN = (OperationalError, InterfaceError, DisconnectionError, PoolTimeout)
# SQLSTATEs of PostgreSQL refusing the role: insufficient_privilege; the class of a failed login.
_REFUSED = ("42501", "28")


def unavailable_store(exc: BaseException) -> str | None:
    """The store an exception says is unreachable (``postgresql``, ``redis``), else None."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, _REDIS_DOWN):
            return REDIS
        if isinstance(current, _POSTGRESQL_DOWN):
            return POSTGRESQL
        if isinstance(current, DBAPIError) and current.connection_invalidated:
            return POSTGRESQL
        if _refuses(getattr(getattr(current, "orig", current), "sqlstate", None)):
            return POSTGRESQL  # a psycopg error, or SQLAlchemy's wrapping of one
        if isinstance(current, (ConnectionError, socket.timeout, TimeoutError)):
            return POSTGRESQL if "psycopg" in type(current).__module__ else REDIS
        current = current.__cause__ or current.__context__
    return None


def _refuses(sqlstate: object) -> bool:
    return isinstance(sqlstate, str) and sqlstate.startswith(_REFUSED)


def classify(exc: BaseException, probes: dict[str, Callable[[], object]]) -> str | None:
    """The store whose outage explains ``exc``, or None if it is the batch's own fault.

    ``probes`` maps a store's name to a quick check that raises when it does not answer.
    """
    store = unavailable_store(exc)
    if store is not None:
        return store
    for name, probe in probes.items():
        try:
            probe()
        except Exception:
            return name
    return None


class Outages:
    """The stores this process finds unreachable now, for one warning when a store is lost,
    one when it is back (with how long it was away), and the ``ladder_store_up`` metric."""

    STORES = (POSTGRESQL, REDIS)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._down: dict[str, float] = {}

    def lost(self, store: str, exc: BaseException) -> None:
        with self._lock:
            if store in self._down:
                return
            self._down[store] = time.monotonic()
        log.warning("store_unavailable", store=store, error=said(exc, 300))

    def regained(self) -> None:
        with self._lock:
            back, self._down = self._down, {}
        for store, since in back.items():
            log.warning(
                "store_available", store=store, outage_seconds=round(time.monotonic() - since, 1)
            )

    def up(self, store: str) -> bool:
        with self._lock:
            return store not in self._down


outages = Outages()


def said(exc: BaseException, most: int = 500) -> str:
    """An exception as one log field: its type and message, at most ``most`` characters."""
    return f"{type(exc).__name__}: {exc}"[:most]
