"""The API's errors: what each refusal is, its status, and the JSON body that says so.

400 for a bad parameter, 404 for an unknown ladder, board or player, 503 naming the store
that did not answer in time; never a 500 for any input.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from redis.exceptions import ClusterError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as SQLAlchemyTimeout
from starlette.exceptions import HTTPException

from worker.boards import reader
from worker.entrypoints.api.caching import CACHE_OK, NO_STORE
from worker.entrypoints.api.models import Error, Unavailable
from worker.queue.faults import said

log = structlog.get_logger("ladder")


class BadRequest(Exception):
    """A parameter the API cannot use (400)."""


class NotFound(Exception):
    """An unknown ladder, board or player (404)."""


class StoreUnavailable(Exception):
    """A store did not answer in time (503 naming it)."""

    def __init__(self, store: str) -> None:
        super().__init__(store)
        self.store = store


_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": Error, "description": "A parameter is not valid"},
    404: {"model": Error, "description": "Unknown ladder, board or player"},
    503: {"model": Unavailable, "description": "Redis or PostgreSQL cannot be reached"},
}


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of an operation that can answer these error statuses."""
    return {code: _ERRORS[code] for code in codes}


def _json(data: Any, status: int, cache: str) -> Response:
    return JSONResponse(data, status_code=status, headers={"Cache-Control": cache})


def _error(status: int, error: str, detail: str, cache: str) -> Response:
    return _json({"error": error, "detail": detail}, status, cache)


async def _invalid(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    first = exc.errors()[0] if exc.errors() else {}
    where = first.get("loc", ())
    name = str(where[-1]) if where else "request"
    message = str(first.get("msg", "is not valid")).removeprefix("Value error, ")
    given = first.get("input")
    shown = f", got {given!r}" if isinstance(given, str) and len(given) <= 40 else ""
    return _error(400, "bad_request", f"{name}: {message}{shown}", NO_STORE)


async def _bad_request(request: Request, exc: Exception) -> Response:
    return _error(400, "bad_request", str(exc), NO_STORE)


async def _not_found(request: Request, exc: Exception) -> Response:
    detail = exc.args[0] if exc.args else "not found"
    return _error(404, "not_found", str(detail), CACHE_OK)


async def _unavailable(request: Request, exc: Exception) -> Response:
    if isinstance(exc, StoreUnavailable):
        store = exc.store
    else:
        store = "postgresql" if isinstance(exc, DBAPIError | SQLAlchemyTimeout) else "redis"
    # The driver's own error, not SQLAlchemy's text of it (which repeats the statement and
    # its parameters): what the operator needs to tell an outage from, say, a missing grant.
    cause = getattr(exc, "orig", None) or exc
    log.warning("store_unavailable", store=store, path=request.url.path, error=said(cause, 300))
    body = {"error": "unavailable", "detail": f"{store} is unavailable", "store": store}
    return _json(body, 503, NO_STORE)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    error = "not_found" if exc.status_code == 404 else "http_error"
    response = _error(exc.status_code, error, str(exc.detail), NO_STORE)
    if exc.headers:
        response.headers.update(exc.headers)
    return response


HANDLERS: dict[type[Exception], Callable[[Request, Exception], Awaitable[Response]]] = {
    RequestValidationError: _invalid,
    HTTPException: _http_error,
    BadRequest: _bad_request,
    reader.InvalidArgument: _bad_request,
    NotFound: _not_found,
    reader.UnknownPlayer: _not_found,
    RedisConnectionError: _unavailable,
    RedisTimeoutError: _unavailable,
    ClusterError: _unavailable,
    DBAPIError: _unavailable,
    SQLAlchemyTimeout: _unavailable,
    StoreUnavailable: _unavailable,
}
