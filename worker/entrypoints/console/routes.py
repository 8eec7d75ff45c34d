"""The console's routes on the API's FastAPI app: ``add_routes(app, config, redis, engine)``.

- ``/``: the ladders; ``/ui/ladders/{ladder}``: a board (``board``, ``cursor``, ``direction``,
  ``player`` for the search box); ``/ui/ladders/{ladder}/players/{player_id}``: a player's card,
  rating chart and games; ``/ui/ladders/{ladder}/calibration``: the calibration chart.

Pages are HTML rendered by Jinja2 with autoescaping on (player ids are chosen by players;
the SVG charts escape their own text), need no JavaScript and are left out of the OpenAPI
document. They answer callers with the ``console`` scope (a session from ``/ui/login``, or a
bearer token) and send everyone else to the login form, unless the scope is public. Errors
are pages too: 404 for an unknown ladder, board or player, 400 for a bad parameter, 503
naming the store that did not answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response
from jinja2 import Environment, PackageLoader
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as SQLAlchemyTimeout

from worker.access import Scope
from worker.boards import reader
from worker.entrypoints.api.auth import requires
from worker.entrypoints.api.errors import StoreUnavailable
from worker.entrypoints.api.params import ENCODED
from worker.entrypoints.api.reads import Lane
from worker.entrypoints.console import login, pages
from worker.ladders import Config
from worker.store.routes import Databases

CACHE_OK = "public, max-age=5, stale-while-revalidate=30"
NO_STORE = "no-store"
READ_THREADS, READ_SECONDS = 4, 4.0  # boards, cards, histories: 503 within 5 s
CALIBRATE_THREADS, CALIBRATE_SECONDS = 2, 60.0  # one pass over the ladder's rated games
MAX_PLAYER_ID = 128


def environment() -> Environment:
    return Environment(
        loader=PackageLoader("worker.entrypoints.console", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def add_routes(app: FastAPI, config: Config, redis: reader.Client, databases: Databases) -> None:
    """Add the console's pages to ``app``, reading these stores."""
    stores = pages.Stores(config, redis, databases)
    templates = environment()
    reads = Lane(READ_THREADS, READ_SECONDS)
    heavy = Lane(CALIBRATE_THREADS, CALIBRATE_SECONDS)

    def html(name: str, context: dict[str, Any], status: int = 200) -> Response:
        body = templates.get_template(name).render(**context)
        cache = CACHE_OK if status in (200, 404) else NO_STORE
        return HTMLResponse(body, status_code=status, headers={"Cache-Control": cache})

    console = requires(Scope.CONSOLE)  # a caller without a session is sent to the login form
    login.add_routes(app, html)

    def error(status: int, heading: str, detail: str) -> Response:
        return html("error.html", {"title": heading, "heading": heading, "detail": detail}, status)

    async def render(
        name: str, lane: Any, build: Callable[..., dict[str, Any]], *args: Any
    ) -> Response:
        try:
            context = await lane.run(build, stores, *args)
        except (pages.Missing, reader.UnknownPlayer) as exc:
            return error(404, "Not found", str(exc.args[0] if exc.args else exc))
        except reader.InvalidArgument as exc:
            return error(400, "Bad request", str(exc))
        except StoreUnavailable as exc:
            return error(503, "Unavailable", f"{exc.store} did not answer in time")
        except (RedisConnectionError, RedisTimeoutError, RedisError):
            return error(503, "Unavailable", "redis is unavailable")
        except (DBAPIError, SQLAlchemyTimeout):
            return error(503, "Unavailable", "postgresql is unavailable")
        return html(name, context)

    @app.get("/", include_in_schema=False, dependencies=[console])
    async def home() -> Response:
        return await render("index.html", reads, pages.index)

    @app.get("/ui/ladders/{ladder}", include_in_schema=False, dependencies=[console])
    async def board(
        ladder: str,
        board: str = "rating",
        cursor: str | None = None,
        direction: str = "next",
        player: str | None = None,
    ) -> Response:
        search = (player or "").strip() or None
        if search is not None and len(search) > MAX_PLAYER_ID:
            return error(400, "Bad request", f"player: at most {MAX_PLAYER_ID} characters")
        return await render(
            "leaderboard.html", reads, pages.leaderboard, ladder, board, cursor, direction, search
        )

    @app.get(
        "/ui/ladders/{ladder}/players/{player_id}", include_in_schema=False, dependencies=[console]
    )
    async def player(request: Request, ladder: str, player_id: str) -> Response:
        # The API's middleware kept %2F and %25 encoded so that they stay inside the id.
        value = unquote(player_id) if request.scope.get(ENCODED) else player_id
        if not 1 <= len(value) <= MAX_PLAYER_ID:
            return error(400, "Bad request", f"player_id: 1 to {MAX_PLAYER_ID} characters")
        return await render("player.html", reads, pages.player, ladder, value)

    @app.get("/ui/ladders/{ladder}/calibration", include_in_schema=False, dependencies=[console])
    async def calibration(ladder: str) -> Response:
        return await render("calibration.html", heavy, pages.calibration, ladder)
