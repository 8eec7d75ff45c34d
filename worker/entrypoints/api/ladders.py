"""The routes of the boards scope over ladders, boards and players: ``/ladders``, a board's top
and pages, and a player's card, rank and neighbours."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response

from worker.access import Scope
from worker.boards import reader
from worker.entrypoints.api.auth import requires
from worker.entrypoints.api.caching import cached
from worker.entrypoints.api.errors import errors
from worker.entrypoints.api.models import Card, Entry, Ladders, Page
from worker.entrypoints.api.params import (
    EXCLUSIVE,
    MAX_LIMIT,
    MAX_RADIUS,
    Board,
    LadderName,
    PlayerId,
    count,
)
from worker.entrypoints.api.reads import Api

router = APIRouter(dependencies=[requires(Scope.BOARDS)])


@router.get(
    "/ladders",
    operation_id="listLadders",
    summary="The ladders and the boards each one keeps",
    responses=errors(503),
)
def ladders(response: Response, api: Api) -> Ladders:
    return cached(response, api.ladders())


@router.get(
    "/ladders/{ladder}/top",
    operation_id="top",
    summary="The top of a board",
    responses=errors(400, 404, 503),
)
def top(
    response: Response,
    api: Api,
    ladder: LadderName,
    board: Board = "rating",
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="How many entries")] = 10,
) -> list[Entry]:
    return cached(response, api.top(ladder, board, limit))


@router.get(
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
    responses=errors(400, 404, 503),
    openapi_extra={EXCLUSIVE: ["cursor", "offset"]},
)
def page(
    response: Response,
    api: Api,
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
    offset: Annotated[int | None, count("0-based position, when there is no cursor")] = None,
    direction: Annotated[Literal["next", "prev"], Query(description="Which way to page")] = "next",
) -> Page:
    return cached(response, api.page(ladder, board, size, cursor, offset, direction))


@router.get(
    "/ladders/{ladder}/players/{player_id}",
    operation_id="card",
    summary="A player's card",
    responses=errors(400, 404, 503),
)
def card(response: Response, api: Api, ladder: LadderName, player_id: PlayerId) -> Card:
    return cached(response, api.card(ladder, player_id))


@router.get(
    "/ladders/{ladder}/players/{player_id}/rank",
    operation_id="rank",
    summary="A player's entry on a board",
    responses=errors(400, 404, 503),
)
def rank(
    response: Response, api: Api, ladder: LadderName, player_id: PlayerId, board: Board = "rating"
) -> Entry:
    return cached(response, api.rank(ladder, player_id, board))


@router.get(
    "/ladders/{ladder}/players/{player_id}/around",
    operation_id="around",
    summary="The entries around a player",
    responses=errors(400, 404, 503),
)
def around(
    response: Response,
    api: Api,
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
    return cached(response, api.around(ladder, player_id, board, radius))
