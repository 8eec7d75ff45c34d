"""The read-only HTTP API: the reader library as JSON over GET, for browsers and CDNs.

``create_app(config, redis, engine)`` builds a FastAPI app; ``ladder serve`` runs it under
uvicorn. Every answer is JSON: 200, 400 for a bad parameter, 404 for an unknown ladder,
board or player, 503 while Redis or PostgreSQL cannot be reached (within 5 s, the body naming
the store); never a 500 for any input. Requests that read PostgreSQL run on threads of their
own, so a hung PostgreSQL never holds up the endpoints that read Redis only.
Successful reads and 404s carry a short shared-cache lifetime so a CDN can absorb traffic.

The OpenAPI document at ``/openapi.json`` is generated from the typed parameters and the
response models below, and every answer is checked against its model, so the two cannot
drift; ``/docs`` lists the operations from that document as a plain page (no scripts, no
network).

Player ids may contain ``/``: clients percent-encode it (``%2F``) and the app routes on the
raw path so the encoded slash stays inside the id.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypeVar
from urllib.parse import unquote

from fastapi import Depends, FastAPI, Path, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, StreamingResponse
from pydantic import AfterValidator, BaseModel, Field
from redis import Redis
from redis.exceptions import ClusterError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as SQLAlchemyTimeout
from starlette.exceptions import HTTPException

from engine import CUBE_VALUES, Gammon42Rules, PlayerState
from worker.boards import export as boards_export
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
MAX_PLAYER_ID = 128

# Requests that read PostgreSQL run on threads of their own, each answered within
# POSTGRESQL_SECONDS: a hung PostgreSQL holds those threads, never the ones serving Redis.
POSTGRESQL_THREADS = 8
POSTGRESQL_SECONDS = 4.0  # so the 503 is out within 5 s

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
T = TypeVar("T")


class BadRequest(Exception):
    """A parameter the API cannot use (400)."""


class NotFound(Exception):
    """An unknown ladder, board or player (404)."""


class StoreUnavailable(Exception):
    """A store did not answer in time (503 naming it)."""

    def __init__(self, store: str) -> None:
        super().__init__(store)
        self.store = store


# -- the response models: what the OpenAPI document says, and what every answer is checked
# against before it leaves --------------------------------------------------------------------


class Error(BaseModel):
    error: Literal["bad_request", "not_found", "http_error"]
    detail: str


class Unavailable(BaseModel):
    error: Literal["unavailable"]
    detail: str
    store: Literal["redis", "postgresql"] = Field(description="The store that did not answer")


class LadderInfo(BaseModel):
    name: str
    ruleset: str
    version: str
    boards: list[str]


class Ladders(BaseModel):
    ladders: list[LadderInfo]


class Entry(BaseModel):
    player_id: str
    rank: int = Field(ge=1)
    rating: float = Field(description="The board's score: points on the boosted board")
    provisional: bool
    percentile: float | None = Field(
        None, ge=0, le=100, description="Share of the board with a strictly lower score, in %"
    )


class Page(BaseModel):
    ladder: str
    board: str
    entries: list[Entry]
    total: int = Field(ge=0)
    next_cursor: str | None = Field(description="Follow with direction=next; null at the end")
    prev_cursor: str | None = Field(description="Follow with direction=prev; null at the start")


class Card(BaseModel):
    player_id: str
    rating: float
    rank: int | None = Field(ge=1, description="On the rating board; null while unlisted")
    games: int
    experience: int
    provisional: bool
    last_game_at: str | None
    updated_at: str | None
    boosted: int
    linked_to: str | None
    percentile: float | None = Field(
        None, ge=0, le=100, description="Share of the rating board with a strictly lower score"
    )


class Change(BaseModel):
    event_id: str
    kind: Literal["game", "prize", "link", "season", "import", "adjustment", "correction"]
    at: str = Field(description="When the change was applied (ISO 8601)")
    rating_before: float
    rating_after: float
    delta: float
    k: float | None
    expected: float | None
    ended_at: str | None
    opponent: str | None
    result: Literal["win", "loss"] | None
    cube: int | None
    match_length: int | None
    note: str | None = Field(None, description="A moderation row: what was done and why")


class Side(BaseModel):
    player_id: str | None
    rating: float
    games: int
    experience: int
    recent_ranked_games: int


class Display(BaseModel):
    win_probability: str
    if_win: str
    if_lose: str


class Preview(BaseModel):
    ladder: str
    ruleset: str
    version: str
    cube: int
    match_length: int
    a: Side
    b: Side
    win_probability: float = Field(ge=0, le=1)
    if_win: float
    if_lose: float
    display: Display


_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": Error, "description": "A parameter is not valid"},
    404: {"model": Error, "description": "Unknown ladder, board or player"},
    503: {"model": Unavailable, "description": "Redis or PostgreSQL cannot be reached"},
}


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {code: _ERRORS[code] for code in codes}


# -- the parameters --------------------------------------------------------------------------


def _cube(value: int) -> int:
    if value not in CUBE_VALUES:
        raise ValueError(f"must be one of {', '.join(map(str, sorted(CUBE_VALUES)))}")
    return value


def _count(description: str) -> Any:
    return Query(ge=0, le=MAX_COUNT, description=description)


LadderName = Annotated[
    str, Path(pattern=r"^[A-Za-z0-9_.-]{1,64}$", examples=["gammon42"], description="A ladder")
]
Board = Annotated[
    str,
    Query(
        pattern=r"^(rating|public|boosted|active|season:.{1,128})$",
        description=(
            "rating, public (where the ladder has one), boosted (where it has one), "
            "active (where the ladder has active_days) or season:<name>."
        ),
    ),
]
Rating = Annotated[
    float | None,
    Query(ge=-MAX_RATING, le=MAX_RATING, allow_inf_nan=False, description="A given rating"),
]
Cube = Annotated[
    int,
    AfterValidator(_cube),
    Query(
        description="The doubling cube (gammon42)",
        json_schema_extra={"enum": sorted(CUBE_VALUES)},
    ),
]


def _player_id(
    request: Request,
    player_id: Annotated[
        str,
        Path(
            description="The player id; percent-encode '/' as %2F.",
            examples=["alice"],
            json_schema_extra={"minLength": 1, "maxLength": MAX_PLAYER_ID},
        ),
    ],
) -> str:
    # _EncodedSlashes left %2F and %25 encoded so they could not split the path.
    value = unquote(player_id) if request.scope.get(_ENCODED) else player_id
    if not 1 <= len(value) <= MAX_PLAYER_ID:
        raise BadRequest(f"player_id: must be 1 to {MAX_PLAYER_ID} characters")
    return value


PlayerId = Annotated[str, Depends(_player_id)]


# -- the app ---------------------------------------------------------------------------------


def create_app(
    config: Config, redis: reader.Client, engine: Engine, receipts: Redis | None = None
) -> ASGIApp:
    """The API over these leaderboards (``redis``) and this audit store (``engine``);
    ``receipts``: the queue's Redis, where receipts lend their ranks while they are kept."""
    app = FastAPI(
        title="ladder leaderboards",
        version="1",
        description=(
            "Read-only leaderboards. Ranks use standard competition ranking (1, 2, 2, 4); "
            "equal scores are listed by player id ascending."
        ),
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
    )
    reads = _Api(config, redis, engine)
    _routes(app, reads)
    from worker.entrypoints import api_receipts
    from worker.entrypoints.console.routes import add_routes as add_console

    api_receipts.add_routes(app, config, engine, receipts, reads.postgresql)
    add_console(app, config, redis, engine)  # the HTML console, outside the OpenAPI document
    for kind, handler in _HANDLERS.items():
        app.add_exception_handler(kind, handler)
    return _EncodedSlashes(app)


def _routes(app: FastAPI, api: _Api) -> None:
    @app.get("/openapi.json", include_in_schema=False)
    def openapi() -> Response:
        return JSONResponse(document(app), headers={"Cache-Control": CACHE_SCHEMA})

    @app.get("/docs", include_in_schema=False)
    def docs() -> Response:
        return HTMLResponse(docs_page(document(app)), headers={"Cache-Control": CACHE_SCHEMA})

    @app.get(
        "/ladders",
        operation_id="listLadders",
        summary="The ladders and the boards each one keeps",
        responses=_errors(503),
    )
    def ladders(response: Response) -> Ladders:
        return _cached(response, api.ladders())

    @app.get(
        "/ladders/{ladder}/top",
        operation_id="top",
        summary="The top of a board",
        responses=_errors(400, 404, 503),
    )
    def top(
        response: Response,
        ladder: LadderName,
        board: Board = "rating",
        limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="How many entries")] = 10,
    ) -> list[Entry]:
        return _cached(response, api.top(ladder, board, limit))

    @app.get(
        "/ladders/{ladder}/leaderboard",
        operation_id="page",
        summary="One page of a board, forwards or backwards",
        description=(
            "Follow next_cursor with direction=next and prev_cursor with direction=prev. "
            "Give a cursor or an offset, not both. Without a cursor, direction=next starts at "
            "offset (default 0) and direction=prev ends just before offset (default: the last "
            "page). A cursor is opaque: one not produced by an earlier page of this board is "
            "refused with 400."
        ),
        responses=_errors(400, 404, 503),
    )
    def page(
        response: Response,
        ladder: LadderName,
        board: Board = "rating",
        size: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="Entries per page")] = 20,
        cursor: Annotated[
            str | None,
            Query(
                min_length=1,
                max_length=reader.MAX_CURSOR_LENGTH,
                description="A next_cursor or prev_cursor from an earlier page of this board",
            ),
        ] = None,
        offset: Annotated[int | None, _count("0-based position, when there is no cursor")] = None,
        direction: Annotated[
            Literal["next", "prev"], Query(description="Which way to page")
        ] = "next",
    ) -> Page:
        return _cached(response, api.page(ladder, board, size, cursor, offset, direction))

    @app.get(
        "/ladders/{ladder}/players/{player_id}",
        operation_id="card",
        summary="A player's card",
        responses=_errors(400, 404, 503),
    )
    def card(response: Response, ladder: LadderName, player_id: PlayerId) -> Card:
        return _cached(response, api.card(ladder, player_id))

    @app.get(
        "/ladders/{ladder}/players/{player_id}/rank",
        operation_id="rank",
        summary="A player's entry on a board",
        responses=_errors(400, 404, 503),
    )
    def rank(
        response: Response, ladder: LadderName, player_id: PlayerId, board: Board = "rating"
    ) -> Entry:
        return _cached(response, api.rank(ladder, player_id, board))

    @app.get(
        "/ladders/{ladder}/players/{player_id}/around",
        operation_id="around",
        summary="The entries around a player",
        responses=_errors(400, 404, 503),
    )
    def around(
        response: Response,
        ladder: LadderName,
        player_id: PlayerId,
        board: Board = "rating",
        radius: Annotated[
            int,
            Query(
                ge=0,
                le=MAX_RADIUS,
                description="Entries above and below the player (fewer at either end)",
            ),
        ] = 5,
    ) -> list[Entry]:
        return _cached(response, api.around(ladder, player_id, board, radius))

    @app.get(
        "/ladders/{ladder}/players/{player_id}/history",
        operation_id="history",
        summary="A player's rating changes, newest first",
        responses=_errors(400, 404, 503),
    )
    async def player_history(
        response: Response,
        ladder: LadderName,
        player_id: PlayerId,
        limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="How many changes")] = 20,
    ) -> list[Change]:
        found = await api.postgresql.run(api.history, ladder, player_id, limit)
        return _cached(response, found)

    @app.get(
        "/ladders/{ladder}/preview",
        operation_id="preview",
        summary="What one game would do to A's rating",
        description=(
            "Each side is a stored player (a, b), or a new player at the ladder's start rating "
            "when none is named; a_rating, b_rating, games, experience and recent ranked games "
            "override what is stored."
        ),
        responses=_errors(400, 404, 503),
    )
    async def preview(
        response: Response,
        ladder: LadderName,
        a: Annotated[str | None, Query(min_length=1, max_length=MAX_PLAYER_ID)] = None,
        b: Annotated[str | None, Query(min_length=1, max_length=MAX_PLAYER_ID)] = None,
        a_rating: Rating = None,
        b_rating: Rating = None,
        a_games: Annotated[int | None, _count("Rated games so far")] = None,
        b_games: Annotated[int | None, _count("Rated games so far")] = None,
        a_experience: Annotated[int | None, _count("FIBS experience")] = None,
        b_experience: Annotated[int | None, _count("FIBS experience")] = None,
        a_recent: Annotated[int | None, _count("Gammon42 ranked games in 7 days")] = None,
        b_recent: Annotated[int | None, _count("Gammon42 ranked games in 7 days")] = None,
        cube: Cube = 1,
        match_length: Annotated[
            int, Query(ge=1, le=MAX_MATCH_LENGTH, description="Match length in points (fibs)")
        ] = 1,
    ) -> Preview:
        sides = (
            _Given(a, a_rating, a_games, a_experience, a_recent),
            _Given(b, b_rating, b_games, b_experience, b_recent),
        )
        found = await api.postgresql.run(api.preview, ladder, sides, cube, match_length)
        return _cached(response, found)

    _board_routes(app, api)


# -- among ids and export ----------------------------------------------------------------------


class AmongAnswer(BaseModel):
    ladder: str
    board: str
    entries: list[Entry] = Field(description="The players found, in board order")
    missing: list[str] = Field(description="The ids asked for that are not on the board")
    total: int = Field(ge=0, description="Players on the board")


class ExportLine(BaseModel):
    """One line of an export (JSON lines, in rank order)."""

    player_id: str
    rank: int = Field(ge=1)
    rating: float
    games: int
    experience: int
    provisional: bool
    percentile: float = Field(ge=0, le=100)
    last_game_at: str | None


def _board_routes(app: FastAPI, api: _Api) -> None:
    @app.get(
        "/ladders/{ladder}/among",
        operation_id="among",
        summary="These players (friends) as the board ranks them",
        description=(
            f"Up to {reader.MAX_AMONG} comma-separated ids; the players found come in board "
            "order with their global rank, the others are listed under missing."
        ),
        responses=_errors(400, 404, 503),
    )
    def among(
        response: Response,
        ladder: LadderName,
        ids: Annotated[str, Query(min_length=1, description="Player ids, comma-separated")],
        board: Board = "rating",
    ) -> AmongAnswer:
        wanted = [pid for pid in ids.split(",") if pid]
        if len(set(wanted)) > reader.MAX_AMONG:
            raise BadRequest(f"ids: at most {reader.MAX_AMONG}, got {len(set(wanted))}")
        return _cached(response, api.among(ladder, board, wanted))

    @app.get(
        "/ladders/{ladder}/export",
        operation_id="export",
        summary="The whole board in rank order, as JSON lines",
        description="One ExportLine object per line (application/x-ndjson), streamed.",
        responses={
            200: {
                "description": "One ExportLine per line",
                "content": {
                    "application/x-ndjson": {"schema": {"$ref": "#/components/schemas/ExportLine"}}
                },
            },
            **_errors(400, 404, 503),
        },
        response_class=StreamingResponse,
    )
    def export(ladder: LadderName, board: Board = "rating") -> StreamingResponse:
        name = api._board(ladder, board)
        lines = boards_export.lines(api.redis, name, board)
        first = next(lines, None)  # Redis unreachable: a 503, before the 200 is sent

        def body() -> Iterator[bytes]:
            if first is not None:
                yield _ndjson(first)
            for line in lines:
                yield _ndjson(line)

        return StreamingResponse(
            body(), media_type="application/x-ndjson", headers={"Cache-Control": NO_STORE}
        )


def _ndjson(line: dict[str, Any]) -> bytes:
    return (json.dumps(ExportLine(**line).model_dump(), ensure_ascii=False) + "\n").encode()


def _cached(response: Response, body: T) -> T:
    response.headers["Cache-Control"] = CACHE_OK
    return body


def document(app: FastAPI) -> dict[str, Any]:
    """The OpenAPI document FastAPI generates, without the 422 it assumes: a parameter that
    does not validate is answered 400 like every other bad parameter."""
    if app.openapi_schema is None:
        schema = app.openapi()
        for item in schema.get("paths", {}).values():
            for operation in item.values():
                operation.get("responses", {}).pop("422", None)
        for name in ("HTTPValidationError", "ValidationError"):
            schema.get("components", {}).get("schemas", {}).pop(name, None)
        # The export's lines are not a response model FastAPI sees: add their schema.
        schema.setdefault("components", {}).setdefault("schemas", {})["ExportLine"] = (
            ExportLine.model_json_schema(ref_template="#/components/schemas/{model}")
        )
        app.openapi_schema = schema
    return app.openapi_schema


def docs_page(schema: dict[str, Any]) -> str:
    """A self-contained HTML page listing the operations of ``schema``."""
    rows = []
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            params = ", ".join(
                f"{p['name']}{'' if p.get('required') else '?'}"
                for p in operation.get("parameters", [])
            )
            codes = ", ".join(sorted(operation.get("responses", {})))
            rows.append(
                "<tr>"
                f"<td><code>{html.escape(method.upper())} {html.escape(path)}</code></td>"
                f"<td>{html.escape(operation.get('summary', ''))}"
                f"<p>{html.escape(operation.get('description', ''))}</p></td>"
                f"<td>{html.escape(params)}</td><td>{html.escape(codes)}</td>"
                "</tr>"
            )
    info = schema["info"]
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(info['title'])}</title>"
        "<style>body{font-family:sans-serif;margin:2em}td,th{border-bottom:1px solid #ddd;"
        "padding:.4em;text-align:left;vertical-align:top}p{color:#555;margin:.2em 0}</style>"
        f"</head><body><h1>{html.escape(info['title'])}</h1>"
        f"<p>{html.escape(info.get('description', ''))}</p>"
        "<p>The full contract: <a href='/openapi.json'>/openapi.json</a> (OpenAPI "
        f"{html.escape(schema['openapi'])}). Errors are JSON: "
        '<code>{"error": ..., "detail": ...}</code>.</p>'
        "<table><tr><th>Operation</th><th>What</th><th>Parameters</th><th>Statuses</th></tr>"
        + "".join(rows)
        + "</table></body></html>"
    )


class _Given:
    """What a preview request says about one side."""

    def __init__(
        self,
        player: str | None,
        rating: float | None,
        games: int | None,
        experience: int | None,
        recent: int | None,
    ) -> None:
        self.player = player
        self.rating = rating
        self.games = games
        self.experience = experience
        self.recent = recent


class _Lane:
    """A bounded pool of threads, and a deadline for every call run on it."""

    def __init__(self, threads: int, seconds: float) -> None:
        self.executor = ThreadPoolExecutor(threads, thread_name_prefix="ladder-postgresql")
        self.seconds = seconds

    async def run(self, call: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self.executor, call, *args)
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

    def ladders(self) -> Ladders:
        return Ladders(
            ladders=[
                LadderInfo(
                    name=lc.name,
                    ruleset=lc.ruleset,
                    version=lc.current.version,
                    boards=[b for b in reader.BOARDS if reader.board_available(lc, b)],
                )
                for lc in self.config.ladders.values()
            ]
        )

    def top(self, ladder: str, board: str, limit: int) -> list[Entry]:
        name = self._board(ladder, board)
        return [Entry(**e.as_json()) for e in reader.top(self.redis, name, limit, board)]

    def page(
        self,
        ladder: str,
        board: str,
        size: int,
        cursor: str | None,
        offset: int | None,
        direction: Literal["next", "prev"],
    ) -> Page:
        name = self._board(ladder, board)
        found = reader.page(
            self.redis,
            name,
            cursor=cursor,
            offset=offset,
            size=size,
            direction=direction,
            board=board,
        )
        return Page(ladder=name, board=board, **found.as_json())

    def card(self, ladder: str, player: str) -> Card:
        name = self._ladder(ladder).name
        return Card(**reader.card(self.redis, name, player).as_json())

    def rank(self, ladder: str, player: str, board: str) -> Entry:
        name = self._board(ladder, board)
        return Entry(**reader.rank(self.redis, name, player, board).as_json())

    def around(self, ladder: str, player: str, board: str, radius: int) -> list[Entry]:
        name = self._board(ladder, board)
        found = reader.around(self.redis, name, player, radius, board)
        return [Entry(**e.as_json()) for e in found]

    def among(self, ladder: str, board: str, ids: list[str]) -> AmongAnswer:
        name = self._board(ladder, board)
        found = reader.among(self.redis, name, ids, board)
        entries = [Entry(**e.as_json()) for e in found.entries]
        return AmongAnswer(
            ladder=name, board=board, entries=entries, missing=found.missing, total=found.total
        )

    def history(self, ladder: str, player: str, limit: int) -> list[Change]:
        name = self._ladder(ladder).name
        return [Change(**c.as_json()) for c in history.history(self.engine, name, player, limit)]

    def preview(
        self, ladder: str, sides: tuple[_Given, _Given], cube: int, match_length: int
    ) -> Preview:
        config = self._ladder(ladder)
        a, b = (self._side(config, side) for side in sides)
        found = reader.preview(config, a, b, cube=cube, match_length=match_length)
        display = Display(**reader.format_preview(config, found))
        return Preview(**found.as_json(), display=display)

    def _side(self, ladder: LadderConfig, given: _Given) -> reader.Side:
        rules = ladder.current
        recent = given.recent
        if given.player is None:
            state = PlayerState(rules.start)
        else:
            state = reader.player_state(self.redis, ladder.name, given.player)
            if recent is None and isinstance(rules, Gammon42Rules) and rules.heavy_volume:
                recent = history.recent_ranked_games(
                    self.engine,
                    ladder.name,
                    given.player,
                    datetime.now(UTC),
                    rules.heavy_window_hours,
                )
        if given.rating is not None:
            state = replace(state, rating=given.rating)
        state = replace(
            state,
            rated_games=state.rated_games if given.games is None else given.games,
            experience=state.experience if given.experience is None else given.experience,
            recent_ranked_games=state.recent_ranked_games if recent is None else recent,
        )
        return reader.Side(given.player, state)

    def _ladder(self, name: str) -> LadderConfig:
        ladder = self.config.ladder(name)
        if ladder is None:
            raise NotFound(f"no ladder named {name!r}")
        return ladder

    def _board(self, name: str, board: str) -> str:
        """The ladder's name, once ``board`` is known to exist on it."""
        ladder = self._ladder(name)
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
        return ladder.name


# -- errors ----------------------------------------------------------------------------------


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
    body = {"error": "unavailable", "detail": f"{store} is unavailable", "store": store}
    return _json(body, 503, NO_STORE)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    error = "not_found" if exc.status_code == 404 else "http_error"
    response = _error(exc.status_code, error, str(exc.detail), NO_STORE)
    if exc.headers:
        response.headers.update(exc.headers)
    return response


_HANDLERS: dict[type[Exception], Callable[[Request, Exception], Awaitable[Response]]] = {
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
