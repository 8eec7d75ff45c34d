"""The API's response models take their fields from the library's dataclasses (one
definition per shape), so the HTTP contract follows what the reader, the history, the preview
and the prediction return."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from pydantic import BaseModel, Field, ValidationError

from worker.boards import reader
from worker.entrypoints.api import models
from worker.entrypoints.api.models import mirrors
from worker.service import predict, preview
from worker.store import history


def _names(source: type) -> list[str]:
    return [f.name for f in dataclasses.fields(source)]


@pytest.mark.parametrize(
    ("model", "source", "lead", "tail"),
    [
        (models.Entry, reader.Entry, [], []),
        (models.Card, reader.Card, [], []),
        (models.Change, history.Change, [], []),
        (models.Page, reader.Page, ["ladder", "board"], []),
        (models.AmongAnswer, reader.Among, ["ladder", "board"], []),
        (models.Preview, preview.RatingPreview, [], ["display"]),
        (models.Prediction, predict.Prediction, [], []),
        (models.PredictedTeam, predict.Team, [], []),
        (models.PredictedPlayer, predict.Seat, [], []),
    ],
)
def test_each_answer_model_has_its_dataclass_fields_in_order(
    model: type[BaseModel], source: type, lead: list[str], tail: list[str]
) -> None:
    """A field of the dataclass is a field of the answer, where the dataclass has it."""
    assert [*lead, *_names(source), *tail] == list(model.model_fields)


def test_a_field_added_to_a_dataclass_reaches_the_model_and_its_schema() -> None:
    """Only the bounds are stated twice: a new field needs no second list."""

    @dataclasses.dataclass(frozen=True)
    class Row:
        player_id: str
        rank: int
        note: str | None

    @mirrors(Row)
    class RowModel(BaseModel):
        ladder: str
        rank: int = Field(ge=1)
        extra: bool

    schema = RowModel.model_json_schema()
    assert ["ladder", "player_id", "rank", "note", "extra"] == list(schema["properties"])
    assert ["ladder", "player_id", "rank", "note", "extra"] == schema["required"]
    assert 1 == schema["properties"]["rank"]["minimum"]
    assert "RowModel" == schema["title"]
    row: dict[str, Any] = {"ladder": "l", "player_id": "p", "note": None, "extra": True}
    with pytest.raises(ValidationError):
        RowModel(**row, rank=0)


def test_the_answers_check_what_the_library_returns() -> None:
    """An entry, a card and a change from the library validate as their answers."""
    entry = reader.Entry("amy", 1, 1500.0, True, 50.0)
    assert entry.as_json() == models.Entry(**entry.as_json()).model_dump()
    with pytest.raises(ValidationError):
        models.Entry(**{**entry.as_json(), "rank": 0})
    change = history.Change(
        "e1", "prize", "2026-12-01T00:00:00+00:00", 1500.0, 1510.0, 10.0,
        None, None, None, None, None, None, None,
    )  # fmt: skip
    assert change.as_json() == models.Change(**change.as_json()).model_dump()
    with pytest.raises(ValidationError):  # the kinds are a closed vocabulary over HTTP
        models.Change(**{**change.as_json(), "kind": "bonus"})
