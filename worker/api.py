"""The read-only HTTP API: the reader library as JSON over GET, for browsers and CDNs.

``create_app(config, redis, engine)`` builds a small Starlette app; ``ladder serve`` runs it
under uvicorn. Every answer is JSON: 200, 400 for a bad parameter, 404 for an unknown ladder,
board or player, 503 while Redis or PostgreSQL cannot be reached (within 5 s, the body naming
the store); never a 500 for any input. Requests that read PostgreSQL run on threads of their
own, so a hung PostgreSQL never holds up the endpoints that read Redis only.
Successful reads and 404s carry a short shared-cache lifetime so a CDN can absorb traffic.
The OpenAPI document is served at ``/openapi.json``.

Player ids may contain ``/``: clients percent-encode it (``%2F``) and the app routes on the
raw path so the encoded slash stays inside the id.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

from redis.exceptions import ClusterError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as SQLAlchemyTimeout
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from engine import CUBE_VALUES, Gammon42Rules, PlayerState
from worker.boards import reader
from worker.ladders import Config, LadderConfig
from worker.store import history

CACHE_OK = "public, max-age=5, stale-while-revalidate=30"
CACHE_SCHEMA = "public, max-age=300"
NO_STORE = "no-store"
MAX_LIMIT = 200
MAX_RADIUS = 50
MAX_MATCH_LENGTH = 1000
MAX_RATING = 1e6
MAX_COUNT = 10**9

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class BadRequest(Exception):
    """A query parameter the API cannot use (400)."""


class NotFound(Exception):
    """An unknown ladder, board or player (404)."""


def create_app(config: Config, redis: reader.Client, engine: Engine) -> ASGIApp:
    """The API over these leaderboards (``redis``) and this audit store (``engine``)."""
    api = _Api(config, redis, engine)
    routes = [
        Route("/openapi.json", api.openapi, methods=["GET"]),
        Route("/ladders", api.ladders, methods=["GET"]),
        Route("/ladders/{ladder}/top", api.top, methods=["GET"]),
        Route("/ladders/{ladder}/leaderboard", api.leaderboard, methods=["GET"]),
        Route("/ladders/{ladder}/preview", api.preview, methods=["GET"]),
        Route("/ladders/{ladder}/players/{player_id}", api.card, methods=["GET"]),
        Route("/ladders/{ladder}/players/{player_id}/rank", api.rank, methods=["GET"]),
        Route("/ladders/{ladder}/players/{player_id}/around", api.around, methods=["GET"]),
        Route("/ladders/{ladder}/players/{player_id}/history", api.history, methods=["GET"]),
    ]
    handlers: dict[Any, Any] = {
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
    return _EncodedSlashes(Starlette(routes=routes, exception_handlers=handlers))


# Requests that read PostgreSQL run on threads of their own, each answered within
# POSTGRESQL_SECONDS: a hung PostgreSQL holds those threads, never the ones serving Redis.
POSTGRESQL_THREADS = 8
POSTGRESQL_SECONDS = 4.0  # so the 503 is out within 5 s


class StoreUnavailable(Exception):
    """A store did not answer in time (503 naming it)."""

    def __init__(self, store: str) -> None:
        super().__init__(store)
        self.store = store


class _Lane:
    """A bounded pool of threads, and a deadline for every call run on it."""

    def __init__(self, threads: int, seconds: float) -> None:
        self.executor = ThreadPoolExecutor(threads, thread_name_prefix="ladder-postgresql")
        self.seconds = seconds

    async def run(self, handler: Callable[[Request], Response], request: Request) -> Response:
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self.executor, handler, request)
        try:
            return await asyncio.wait_for(future, self.seconds)
        except TimeoutError:
            raise StoreUnavailable("postgresql") from None


class _Api:
    def __init__(self, config: Config, redis: reader.Client, engine: Engine) -> None:
        self.config = config
        self.redis = redis
        self.engine = engine
        self.postgresql = _Lane(POSTGRESQL_THREADS, POSTGRESQL_SECONDS)

    def openapi(self, request: Request) -> Response:
        return _json(OPENAPI, cache=CACHE_SCHEMA)

    def ladders(self, request: Request) -> Response:
        shown = [
            {
                "name": lc.name,
                "ruleset": lc.ruleset,
                "version": lc.current.version,
                "boards": [b for b in reader.BOARDS if reader.board_available(lc, b)],
            }
            for lc in self.config.ladders.values()
        ]
        return _json({"ladders": shown})

    def top(self, request: Request) -> Response:
        ladder, board = self._board(request)
        limit = _int(request, "limit", 10, 1, MAX_LIMIT)
        entries = reader.top(self.redis, ladder.name, limit, board)
        return _json([e.as_json() for e in entries])

    def leaderboard(self, request: Request) -> Response:
        ladder, board = self._board(request)
        size = _int(request, "size", 20, 1, MAX_LIMIT)
        direction = request.query_params.get("direction", "next")
        if direction not in ("next", "prev"):
            raise BadRequest(f"direction: must be next or prev, got {direction!r}")
        cursor = request.query_params.get("cursor")
        offset = _int(request, "offset", None, 0, MAX_COUNT)
        found = reader.page(
            self.redis,
            ladder.name,
            cursor=cursor,
            offset=offset,
            size=size,
            direction="next" if direction == "next" else "prev",
            board=board,
        )
        return _json({"ladder": ladder.name, "board": board, **found.as_json()})

    def card(self, request: Request) -> Response:
        ladder = self._ladder(request)
        found = reader.card(self.redis, ladder.name, _player(request))
        return _json(found.as_json())

    def rank(self, request: Request) -> Response:
        ladder, board = self._board(request)
        entry = reader.rank(self.redis, ladder.name, _player(request), board)
        return _json(entry.as_json())

    def around(self, request: Request) -> Response:
        ladder, board = self._board(request)
        radius = _int(request, "radius", 5, 0, MAX_RADIUS)
        entries = reader.around(self.redis, ladder.name, _player(request), radius, board)
        return _json([e.as_json() for e in entries])

    async def history(self, request: Request) -> Response:
        return await self.postgresql.run(self._history, request)

    async def preview(self, request: Request) -> Response:
        return await self.postgresql.run(self._preview, request)

    def _history(self, request: Request) -> Response:
        ladder = self._ladder(request)
        limit = _int(request, "limit", 20, 1, MAX_LIMIT)
        changes = history.history(self.engine, ladder.name, _player(request), limit)
        return _json([c.as_json() for c in changes])

    def _preview(self, request: Request) -> Response:
        ladder = self._ladder(request)
        cube = _int(request, "cube", 1, 1, 64)
        match_length = _int(request, "match_length", 1, 1, MAX_MATCH_LENGTH)
        a = self._side(request, ladder, "a")
        b = self._side(request, ladder, "b")
        found = reader.preview(ladder, a, b, cube=cube, match_length=match_length)
        return _json({**found.as_json(), "display": reader.format_preview(ladder, found)})

    def _side(self, request: Request, ladder: LadderConfig, side: str) -> reader.Side:
        params = request.query_params
        player = params.get(side)
        rating_text = params.get(f"{side}_rating")
        games = _int(request, f"{side}_games", None, 0, MAX_COUNT)
        experience = _int(request, f"{side}_experience", None, 0, MAX_COUNT)
        recent = _int(request, f"{side}_recent", None, 0, MAX_COUNT)
        rules = ladder.current
        if player is None:
            state = PlayerState(rules.start)
        else:
            state = reader.player_state(self.redis, ladder.name, player)
            if recent is None and isinstance(rules, Gammon42Rules) and rules.heavy_volume:
                recent = history.recent_ranked_games(
                    self.engine, ladder.name, player, datetime.now(UTC), rules.heavy_window_hours
                )
        if rating_text is not None:
            state = replace(state, rating=_rating(rating_text, f"{side}_rating"))
        state = replace(
            state,
            rated_games=state.rated_games if games is None else games,
            experience=state.experience if experience is None else experience,
            recent_ranked_games=state.recent_ranked_games if recent is None else recent,
        )
        return reader.Side(player, state)

    def _ladder(self, request: Request) -> LadderConfig:
        name = _path_param(request, "ladder")
        ladder = self.config.ladder(name)
        if ladder is None:
            raise NotFound(f"no ladder named {name!r}")
        return ladder

    def _board(self, request: Request) -> tuple[LadderConfig, str]:
        ladder = self._ladder(request)
        board = request.query_params.get("board", "rating")
        try:
            key = reader.board_key(ladder.name, board)
        except reader.InvalidArgument:
            if board.startswith(reader.SEASON_PREFIX):  # a name no season can have
                raise NotFound(f"ladder {ladder.name!r} has no archived {board}") from None
            raise
        if not reader.board_available(ladder, board):
            raise NotFound(f"ladder {ladder.name!r} has no {board} board")
        if board.startswith(reader.SEASON_PREFIX) and not self.redis.exists(key):
            raise NotFound(f"ladder {ladder.name!r} has no archived {board}")
        return ladder, board


def _player(request: Request) -> str:
    return _path_param(request, "player_id")


def _path_param(request: Request, name: str) -> str:
    value = str(request.path_params[name])
    # _EncodedSlashes left %2F and %25 encoded so they could not split the path.
    return unquote(value) if request.scope.get(_ENCODED) else value


def _int(request: Request, name: str, default: Any, low: int, high: int) -> Any:
    text = request.query_params.get(name)
    if text is None:
        return default
    if not re.fullmatch(r"[+-]?[0-9]{1,12}", text.strip()):
        raise BadRequest(f"{name}: must be a whole number from {low} to {high}, got {text!r}")
    value = int(text)
    if not low <= value <= high:
        raise BadRequest(f"{name}: must be a whole number from {low} to {high}, got {text!r}")
    return value


def _rating(text: str, name: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise BadRequest(f"{name}: must be a number, got {text!r}") from None
    if not math.isfinite(value) or abs(value) > MAX_RATING:
        raise BadRequest(f"{name}: must be a number from {-MAX_RATING:g} to {MAX_RATING:g}")
    return value


def _json(data: Any, status: int = 200, cache: str = CACHE_OK) -> Response:
    return JSONResponse(data, status_code=status, headers={"Cache-Control": cache})


def _error(status: int, error: str, detail: str, cache: str) -> Response:
    return _json({"error": error, "detail": detail}, status=status, cache=cache)


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
    body = {"error": "unavailable", "detail": f"{store} is unavailable", "store": store}
    return _json(body, status=503, cache=NO_STORE)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    error = "not_found" if exc.status_code == 404 else "http_error"
    response = _error(exc.status_code, error, str(exc.detail), NO_STORE)
    if exc.headers:
        response.headers.update(exc.headers)
    return response


_ENCODED = "ladder.encoded_path"
_KEEP_ENCODED = re.compile(r"(%2[Ff]|%25)")


class _EncodedSlashes:
    """Route on the raw path with ``%2F`` and ``%25`` still encoded (see module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = scope.get("raw_path")
        if scope["type"] == "http" and isinstance(raw, bytes) and b"%" in raw:
            text = raw.decode("latin-1")
            if unquote(text) == scope.get("path"):
                parts = _KEEP_ENCODED.split(text)
                kept = "".join(p if i % 2 else unquote(p) for i, p in enumerate(parts))
                scope = {**scope, "path": kept, _ENCODED: True}
        await self.app(scope, receive, send)


# The OpenAPI document, written out rather than generated so that it is the contract.
_ERROR = {"$ref": "#/components/schemas/Error"}


def _errors(*codes: int) -> dict[str, Any]:
    text = {
        400: "A parameter is not valid",
        404: "Unknown ladder, board or player",
        503: "Redis or PostgreSQL cannot be reached",
    }
    return {
        str(c): {"description": text[c], "content": {"application/json": {"schema": _ERROR}}}
        for c in codes
    }


def _ok(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {
        "200": {"description": description, "content": {"application/json": {"schema": schema}}}
    }


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "schema": schema,
        "description": description,
    }


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


_LADDER_PARAM = {
    "name": "ladder",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": r"^[A-Za-z0-9_.-]{1,64}$"},
    "example": "gammon42",
}
_PLAYER_PARAM = {
    "name": "player_id",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "minLength": 1, "maxLength": 128},
    "description": "The player id; percent-encode '/' as %2F.",
    "example": "alice",
}
_BOARD_PARAM = _query(
    "board",
    {
        "type": "string",
        "pattern": r"^(rating|public|boosted|season:.{1,128})$",
        "default": "rating",
    },
    "rating, public (where the ladder has one), boosted (where it has one) or season:<name>.",
)
_COUNT = {"type": "integer", "minimum": 0, "maximum": MAX_COUNT}
_NULLABLE_STR = {"type": ["string", "null"]}

OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {
        "title": "ladder leaderboards",
        "version": "1",
        "description": (
            "Read-only leaderboards. Ranks use standard competition ranking (1, 2, 2, 4); "
            "equal scores are listed by player id ascending."
        ),
    },
    "paths": {
        "/ladders": {
            "get": {
                "operationId": "listLadders",
                "summary": "The ladders and the boards each one keeps",
                "responses": {**_ok(_ref("Ladders"), "The ladders"), **_errors(503)},
            }
        },
        "/ladders/{ladder}/top": {
            "get": {
                "operationId": "top",
                "summary": "The top of a board",
                "parameters": [
                    _LADDER_PARAM,
                    _BOARD_PARAM,
                    _query(
                        "limit",
                        {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": 10},
                        "How many entries.",
                    ),
                ],
                "responses": {
                    **_ok({"type": "array", "items": _ref("Entry")}, "The first entries"),
                    **_errors(400, 404, 503),
                },
            }
        },
        "/ladders/{ladder}/leaderboard": {
            "get": {
                "operationId": "page",
                "summary": "One page of a board, forwards or backwards",
                "description": (
                    "Follow next_cursor with direction=next and prev_cursor with direction=prev. "
                    "Without a cursor, direction=next starts at offset (default 0) and "
                    "direction=prev ends just before offset (default: the last page)."
                ),
                "parameters": [
                    _LADDER_PARAM,
                    _BOARD_PARAM,
                    _query(
                        "size",
                        {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": 20},
                        "Entries per page.",
                    ),
                    _query(
                        "cursor",
                        {"type": "string", "minLength": 1, "maxLength": reader.MAX_CURSOR_LENGTH},
                        "A next_cursor or prev_cursor from an earlier page of this board.",
                    ),
                    _query("offset", _COUNT, "0-based position, when there is no cursor."),
                    _query(
                        "direction",
                        {"type": "string", "enum": ["next", "prev"], "default": "next"},
                        "Which way to page.",
                    ),
                ],
                "responses": {**_ok(_ref("Page"), "A page"), **_errors(400, 404, 503)},
            }
        },
        "/ladders/{ladder}/players/{player_id}": {
            "get": {
                "operationId": "card",
                "summary": "A player's card",
                "parameters": [_LADDER_PARAM, _PLAYER_PARAM],
                "responses": {**_ok(_ref("Card"), "The card"), **_errors(404, 503)},
            }
        },
        "/ladders/{ladder}/players/{player_id}/rank": {
            "get": {
                "operationId": "rank",
                "summary": "A player's entry on a board",
                "parameters": [_LADDER_PARAM, _PLAYER_PARAM, _BOARD_PARAM],
                "responses": {**_ok(_ref("Entry"), "The entry"), **_errors(400, 404, 503)},
            }
        },
        "/ladders/{ladder}/players/{player_id}/around": {
            "get": {
                "operationId": "around",
                "summary": "The entries around a player",
                "parameters": [
                    _LADDER_PARAM,
                    _PLAYER_PARAM,
                    _BOARD_PARAM,
                    _query(
                        "radius",
                        {"type": "integer", "minimum": 0, "maximum": MAX_RADIUS, "default": 5},
                        "Entries above and below the player (fewer at either end).",
                    ),
                ],
                "responses": {
                    **_ok({"type": "array", "items": _ref("Entry")}, "The entries"),
                    **_errors(400, 404, 503),
                },
            }
        },
        "/ladders/{ladder}/players/{player_id}/history": {
            "get": {
                "operationId": "history",
                "summary": "A player's rating changes, newest first",
                "parameters": [
                    _LADDER_PARAM,
                    _PLAYER_PARAM,
                    _query(
                        "limit",
                        {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": 20},
                        "How many changes.",
                    ),
                ],
                "responses": {
                    **_ok({"type": "array", "items": _ref("Change")}, "The changes"),
                    **_errors(400, 404, 503),
                },
            }
        },
        "/ladders/{ladder}/preview": {
            "get": {
                "operationId": "preview",
                "summary": "What one game would do to A's rating",
                "description": (
                    "Each side is a stored player (a, b), or a new player at the ladder's "
                    "start rating when none is named; a_rating, b_rating, games, experience "
                    "and recent ranked games override what is stored."
                ),
                "parameters": [
                    _LADDER_PARAM,
                    _query("a", {"type": "string", "minLength": 1, "maxLength": 128}, "Player A"),
                    _query("b", {"type": "string", "minLength": 1, "maxLength": 128}, "Player B"),
                    *[
                        _query(
                            f"{s}_rating",
                            {"type": "number", "minimum": -MAX_RATING, "maximum": MAX_RATING},
                            f"A given rating for {s.upper()}",
                        )
                        for s in "ab"
                    ],
                    *[
                        _query(f"{s}_{field}", _COUNT, text)
                        for s in "ab"
                        for field, text in (
                            ("games", "Rated games so far"),
                            ("experience", "FIBS experience"),
                            ("recent", "Gammon42 ranked games in the last 7 days"),
                        )
                    ],
                    _query(
                        "cube",
                        {"type": "integer", "enum": sorted(CUBE_VALUES), "default": 1},
                        "The doubling cube (gammon42)",
                    ),
                    _query(
                        "match_length",
                        {
                            "type": "integer",
                            "minimum": 1,
                            "maximum": MAX_MATCH_LENGTH,
                            "default": 1,
                        },
                        "Match length in points (fibs)",
                    ),
                ],
                "responses": {**_ok(_ref("Preview"), "The preview"), **_errors(400, 404, 503)},
            }
        },
    },
    "components": {
        "schemas": {
            "Error": {
                "type": "object",
                "required": ["error", "detail"],
                "properties": {"error": {"type": "string"}, "detail": {"type": "string"}},
            },
            "Ladders": {
                "type": "object",
                "required": ["ladders"],
                "properties": {
                    "ladders": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["name", "ruleset", "version", "boards"],
                            "properties": {
                                "name": {"type": "string"},
                                "ruleset": {"type": "string"},
                                "version": {"type": "string"},
                                "boards": {"type": "array", "items": {"type": "string"}},
                            },
                        },
                    }
                },
            },
            "Entry": {
                "type": "object",
                "required": ["player_id", "rank", "rating", "provisional"],
                "properties": {
                    "player_id": {"type": "string"},
                    "rank": {"type": "integer", "minimum": 1},
                    "rating": {"type": "number", "description": "points on the boosted board"},
                    "provisional": {"type": "boolean"},
                },
            },
            "Page": {
                "type": "object",
                "required": ["ladder", "board", "entries", "total", "next_cursor", "prev_cursor"],
                "properties": {
                    "ladder": {"type": "string"},
                    "board": {"type": "string"},
                    "entries": {"type": "array", "items": _ref("Entry")},
                    "total": {"type": "integer", "minimum": 0},
                    "next_cursor": _NULLABLE_STR,
                    "prev_cursor": _NULLABLE_STR,
                },
            },
            "Card": {
                "type": "object",
                "required": [
                    "player_id",
                    "rating",
                    "rank",
                    "games",
                    "experience",
                    "provisional",
                    "last_game_at",
                    "updated_at",
                    "boosted",
                    "linked_to",
                ],
                "properties": {
                    "player_id": {"type": "string"},
                    "rating": {"type": "number"},
                    "rank": {"type": ["integer", "null"], "minimum": 1},
                    "games": {"type": "integer"},
                    "experience": {"type": "integer"},
                    "provisional": {"type": "boolean"},
                    "last_game_at": _NULLABLE_STR,
                    "updated_at": _NULLABLE_STR,
                    "boosted": {"type": "integer"},
                    "linked_to": _NULLABLE_STR,
                },
            },
            "Change": {
                "type": "object",
                "required": ["event_id", "kind", "at", "rating_before", "rating_after", "delta"],
                "properties": {
                    "event_id": {"type": "string"},
                    "kind": {"type": "string", "enum": ["game", "prize", "link"]},
                    "at": {"type": "string"},
                    "rating_before": {"type": "number"},
                    "rating_after": {"type": "number"},
                    "delta": {"type": "number"},
                    "k": {"type": ["number", "null"]},
                    "expected": {"type": ["number", "null"]},
                    "ended_at": _NULLABLE_STR,
                    "opponent": _NULLABLE_STR,
                    "result": {"type": ["string", "null"], "enum": ["win", "loss", None]},
                    "cube": {"type": ["integer", "null"]},
                    "match_length": {"type": ["integer", "null"]},
                },
            },
            "Side": {
                "type": "object",
                "required": ["player_id", "rating", "games", "experience", "recent_ranked_games"],
                "properties": {
                    "player_id": _NULLABLE_STR,
                    "rating": {"type": "number"},
                    "games": {"type": "integer"},
                    "experience": {"type": "integer"},
                    "recent_ranked_games": {"type": "integer"},
                },
            },
            "Preview": {
                "type": "object",
                "required": [
                    "ladder",
                    "ruleset",
                    "version",
                    "cube",
                    "match_length",
                    "a",
                    "b",
                    "win_probability",
                    "if_win",
                    "if_lose",
                    "display",
                ],
                "properties": {
                    "ladder": {"type": "string"},
                    "ruleset": {"type": "string"},
                    "version": {"type": "string"},
                    "cube": {"type": "integer"},
                    "match_length": {"type": "integer"},
                    "a": _ref("Side"),
                    "b": _ref("Side"),
                    "win_probability": {"type": "number", "minimum": 0, "maximum": 1},
                    "if_win": {"type": "number"},
                    "if_lose": {"type": "number"},
                    "display": {
                        "type": "object",
                        "required": ["win_probability", "if_win", "if_lose"],
                        "properties": {
                            "win_probability": {"type": "string"},
                            "if_win": {"type": "string"},
                            "if_lose": {"type": "string"},
                        },
                    },
                },
            },
        }
    },
}
