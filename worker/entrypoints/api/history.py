"""The routes of the history scope that read the audit store: a player's rating changes, and
what one game would do to A's rating (seed 003's calculator)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from worker.access import Scope
from worker.entrypoints.api.auth import requires
from worker.entrypoints.api.caching import cached
from worker.entrypoints.api.errors import errors
from worker.entrypoints.api.models import Change, Preview
from worker.entrypoints.api.params import (
    MAX_LIMIT,
    MAX_MATCH_LENGTH,
    MAX_PLAYER_ID,
    Cube,
    LadderName,
    PlayerId,
    Rating,
    count,
)
from worker.entrypoints.api.reads import Api, Given

router = APIRouter(dependencies=[requires(Scope.HISTORY)], responses=errors(400, 404, 503))


@router.get(
    "/ladders/{ladder}/players/{player_id}/history",
    operation_id="history",
    summary="A player's rating changes, newest first",
)
async def player_history(
    response: Response,
    api: Api,
    ladder: LadderName,
    player_id: PlayerId,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="How many changes")] = 20,
) -> list[Change]:
    found = await api.postgresql.run(api.history, ladder, player_id, limit)
    return cached(response, found)


@router.get(
    "/ladders/{ladder}/preview",
    operation_id="preview",
    summary="What one game would do to A's rating",
    description=(
        "Each side is a stored player (a, b), or a new player at the ladder's start rating "
        "when none is named; a_rating, b_rating, games, experience and recent ranked games "
        "override what is stored."
    ),
)
async def preview(
    response: Response,
    api: Api,
    ladder: LadderName,
    a: Annotated[
        str | None,
        Query(min_length=1, max_length=MAX_PLAYER_ID, description="Player A, a stored player id"),
    ] = None,
    b: Annotated[
        str | None,
        Query(min_length=1, max_length=MAX_PLAYER_ID, description="Player B, a stored player id"),
    ] = None,
    a_rating: Rating = None,
    b_rating: Rating = None,
    a_games: Annotated[int | None, count("Rated games so far")] = None,
    b_games: Annotated[int | None, count("Rated games so far")] = None,
    a_experience: Annotated[int | None, count("FIBS experience")] = None,
    b_experience: Annotated[int | None, count("FIBS experience")] = None,
    a_recent: Annotated[int | None, count("Gammon42 ranked games in 7 days")] = None,
    b_recent: Annotated[int | None, count("Gammon42 ranked games in 7 days")] = None,
    cube: Cube = 1,
    match_length: Annotated[
        int, Query(ge=1, le=MAX_MATCH_LENGTH, description="Match length in points (fibs)")
    ] = 1,
) -> Preview:
    sides = (
        Given(a, a_rating, a_games, a_experience, a_recent),
        Given(b, b_rating, b_games, b_experience, b_recent),
    )
    found = await api.postgresql.run(api.preview, ladder, sides, cube, match_length)
    return cached(response, found)
