"""The API's typed parameters: their bounds are checked before a handler runs and stated in
the OpenAPI document. A parameter that does not validate is answered 400."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import unquote

from fastapi import Depends, Path, Query, Request
from pydantic import AfterValidator

from engine import CUBE_VALUES
from worker.entrypoints.api.errors import BadRequest

MAX_LIMIT = 200
MAX_RADIUS = 50
MAX_MATCH_LENGTH = 1000
MAX_RATING = 1e6
MAX_COUNT = 10**9
MAX_PLAYER_ID = 128

# A route's ``openapi_extra`` key naming query parameters that exclude each other; the
# document states the rule as one object parameter with at most one of them (``app.document``).
EXCLUSIVE = "x-ladder-exclusive"

# Set on a request whose raw path kept %2F and %25 encoded (see ``app.EncodedSlashes``):
# a path parameter then decodes them itself, after routing.
ENCODED = "ladder.encoded_path"


def _cube(value: int) -> int:
    if value not in CUBE_VALUES:
        raise ValueError(f"must be one of {', '.join(map(str, sorted(CUBE_VALUES)))}")
    return value


def count(description: str) -> Any:
    """A whole number from 0 up to ``MAX_COUNT``."""
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


def path_id(name: str, example: str, maximum: int) -> Any:
    """The dependency for an id taken from the path (``player_id``, ``event_id``): 1 to
    ``maximum`` characters, with a '/' in it sent percent-encoded as %2F."""

    value_type = Annotated[
        str,
        Path(
            alias=name,
            description=f"The {name.removesuffix('_id')} id; percent-encode '/' as %2F.",
            examples=[example],
            json_schema_extra={"minLength": 1, "maxLength": maximum},
        ),
    ]

    def value_of(request: Request, value: str) -> str:
        # EncodedSlashes left %2F and %25 encoded so they could not split the path.
        found = unquote(value) if request.scope.get(ENCODED) else value
        if not 1 <= len(found) <= maximum:
            raise BadRequest(f"{name}: must be 1 to {maximum} characters")
        return found

    # Real objects, not this module's postponed (string) annotations: FastAPI reads the
    # path parameter's name and schema from them.
    value_of.__annotations__ = {"request": Request, "value": value_type, "return": str}
    return Depends(value_of)


PlayerId = Annotated[str, path_id("player_id", "alice", MAX_PLAYER_ID)]
