"""The prediction route: each team's expected score for a proposed game (SPEC 7), from the
cards in Redis alone, so it is read with the boards' scope."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from worker.access import Scope
from worker.entrypoints.api.auth import requires
from worker.entrypoints.api.caching import cached
from worker.entrypoints.api.errors import errors
from worker.entrypoints.api.models import Prediction
from worker.entrypoints.api.params import MAX_MATCH_LENGTH, LadderName
from worker.entrypoints.api.reads import Api
from worker.service.predict import MAX_PLAYERS, MAX_TEAMS, MIN_TEAMS

router = APIRouter(responses=errors(400, 404, 503))


@router.get(
    "/ladders/{ladder}/predict",
    operation_id="predict",
    dependencies=[requires(Scope.BOARDS)],
    summary="Each team's expected score for a proposed game",
    description=(
        "One team parameter per team, in order, each its player ids joined by commas: "
        "team=alice&team=bob is a 1v1, team=alice,bob&team=carol,dan a 2v2, three or more "
        f"teams a free-for-all ({MIN_TEAMS} to {MAX_TEAMS} teams, at most {MAX_PLAYERS} players "
        "in all, no id twice). Computed by the ladder's ruleset in force now, by the function "
        "that rates a game: a player as their card stands now, an id not on the ladder at the "
        "ruleset's start. A team game on a ruleset that rates 1v1 games only is a 400."
    ),
)
def predict(
    response: Response,
    api: Api,
    ladder: LadderName,
    team: Annotated[
        list[str],
        Query(
            min_length=MIN_TEAMS,
            max_length=MAX_TEAMS,
            description="A team: its player ids, comma-separated; once per team, in order",
            examples=[["alice,bob", "carol,dan"]],
        ),
    ],
    match_length: Annotated[
        int, Query(ge=1, le=MAX_MATCH_LENGTH, description="Match length in points (fibs)")
    ] = 1,
) -> Prediction:
    return cached(response, api.predict(ladder, team, match_length))
