"""The API's response models: what the OpenAPI document says, and what every answer is
checked against before it leaves.

A model that answers with one of the library's dataclasses (``reader.Entry``,
``reader.Card``, ``history.Change``, ``reader.Page``, ``reader.Among``, ``RatingPreview``,
``predict.Prediction``)
takes its fields from that dataclass with ``@mirrors``: the class body states only what the
HTTP contract adds (bounds, descriptions, closed vocabularies, the envelope's own fields), so
a field added to the dataclass reaches the API and its document without a second list.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from typing import Any, Literal, TypeVar, cast

from pydantic import BaseModel, Field, create_model

from worker.boards import reader
from worker.service import predict, preview
from worker.store import history

M = TypeVar("M", bound=BaseModel)


def mirrors(source: type) -> Callable[[type[M]], type[M]]:
    """A model with the fields of the dataclass ``source``, in its order, each required and
    of the dataclass's type unless the class body declares it. Fields of the class body that
    ``source`` lacks come before the mirrored ones when declared before them, after when
    declared after."""
    hints = typing.get_type_hints(source)
    names = [f.name for f in dataclasses.fields(source)]

    def build(body: type[M]) -> type[M]:
        declared = body.model_fields
        lead: list[str] = []
        tail: list[str] = []
        for name in declared:
            if name not in hints:
                (tail if any(n in hints for n in _before(declared, name)) else lead).append(name)
        fields: dict[str, Any] = {}
        for name in [*lead, *names, *tail]:
            info = declared.get(name)
            fields[name] = (info.annotation, info) if info is not None else (hints[name], ...)
        model = create_model(body.__name__, __module__=body.__module__, **fields)
        model.__doc__ = body.__doc__
        return cast("type[M]", model)

    return build


def _before(declared: dict[str, Any], name: str) -> list[str]:
    order = list(declared)
    return order[: order.index(name)]


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


@mirrors(reader.Entry)
class Entry(BaseModel):
    rank: int = Field(ge=1)
    rating: float = Field(description="The board's score: points on the boosted board")
    percentile: float | None = Field(
        None, ge=0, le=100, description="Share of the board with a strictly lower score, in %"
    )


@mirrors(reader.Page)
class Page(BaseModel):
    ladder: str
    board: str
    entries: list[Entry]
    total: int = Field(ge=0)
    next_cursor: str | None = Field(description="Follow with direction=next; null at the end")
    prev_cursor: str | None = Field(description="Follow with direction=prev; null at the start")


@mirrors(reader.Card)
class Card(BaseModel):
    rank: int | None = Field(ge=1, description="On the rating board; null while unlisted")
    percentile: float | None = Field(
        None, ge=0, le=100, description="Share of the rating board with a strictly lower score"
    )
    deviation: float | None = Field(
        None,
        description="glicko2's rating deviation or openskill's sigma after the player's last "
        "rated game; null on other rulesets and before a first rated game",
    )
    volatility: float | None = Field(None, description="glicko2's volatility, as deviation")


@mirrors(reader.Among)
class AmongAnswer(BaseModel):
    ladder: str
    board: str
    entries: list[Entry] = Field(description="The players found, in board order")
    missing: list[str] = Field(description="The ids asked for that are not on the board")
    total: int = Field(ge=0, description="Players on the board")


@mirrors(history.Change)
class Change(BaseModel):
    kind: Literal["game", "prize", "link", "season", "import", "adjustment", "correction"]
    at: str = Field(description="When the change was applied (ISO 8601)")
    result: str | None = Field(
        pattern=r"^(win|loss|draw|rank [1-9][0-9]* of [1-9][0-9]*)$",
        description="A game's: win or loss (a 1v1 win), draw, or 'rank N of M' (a team game: "
        "its team's place of M teams)",
    )
    rank: int | None = Field(
        None, ge=1, description="A draw's or team game's: the team's place (1 + teams ahead)"
    )
    teams: int | None = Field(None, ge=2, description="A draw's or team game's: how many teams")
    note: str | None = Field(None, description="A moderation row: what was done and why")
    voided: bool = Field(False, description="A game a void took back: its change is not applied")
    counted: float = Field(
        description="What the row adds to the rating as moderated: 0 for a voided game; a "
        "void's correction with the changes of the games it took back"
    )
    running: float = Field(description="The rating after the row, as moderated")
    after: int = Field(
        description="Its place in scoring order: a game's scoring number, an action's after_seq"
    )


class Side(BaseModel):  # ``preview.Side.as_json``
    player_id: str | None
    rating: float
    games: int
    experience: int
    recent_ranked_games: int


class Display(BaseModel):  # ``preview.format_preview``: as players see it
    win_probability: str
    if_win: str
    if_lose: str


@mirrors(preview.RatingPreview)
class Preview(BaseModel):
    a: Side
    b: Side
    win_probability: float = Field(ge=0, le=1)
    display: Display


@mirrors(predict.Seat)
class PredictedPlayer(BaseModel):
    rating: float = Field(description="The rating the prediction took (a new player's: the start)")
    deviation: float | None = Field(
        description="glicko2's deviation or openskill's sigma as stored (glicko2 grows it by "
        "the days since the player's last game before predicting); null on other rulesets"
    )
    games: int = Field(ge=0, description="Rated games so far")
    new: bool = Field(description="Not on the ladder yet: the ruleset's start state")
    rated_as: str | None = Field(
        description="The account a linked id's games are rated on (its state is the account's)"
    )
    banned: bool = Field(
        description="Banned on this ladder (a linked id: its account): a game with them is "
        "unrated for every player"
    )


@mirrors(predict.Team)
class PredictedTeam(BaseModel):
    players: list[PredictedPlayer]
    expected: float = Field(
        ge=0,
        le=1,
        description="The team's expected score, as rating the game would record it: in a "
        "1v1 the win probability; openskill: the chance to finish first; glicko2 teams: the "
        "mean of its players' expected scores against each other team",
    )


@mirrors(predict.Prediction)
class Prediction(BaseModel):
    match_length: int = Field(ge=1, description="The match length it was predicted for (fibs)")
    teams: list[PredictedTeam] = Field(description="The teams in the order given")
    rated: bool = Field(
        description="Whether the game would be rated: false when a player is banned (the "
        "expected scores are still the model's)"
    )


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
    deviation: float | None = Field(
        None, description="glicko2's deviation, openskill's sigma; null on the other rulesets"
    )
    volatility: float | None = Field(None, description="glicko2's volatility; null elsewhere")
