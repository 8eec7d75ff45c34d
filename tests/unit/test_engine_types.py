"""What the engine is given (``engine.types``, ``engine.fairplay``): immutable values, each
checked as it is built, however it is built."""

from __future__ import annotations

import copy
import math
import pickle
from collections.abc import Callable
from typing import Any

import pytest

from engine.fairplay import FairPlayFacts
from engine.types import Game, PlayerState

STATE = PlayerState(1500.0, rated_games=3, experience=9, recent_ranked_games=2)
GAME = Game(cube=2, match_length=5)
FACTS = FairPlayFacts("ranked", False, False, "net-a", "net-b", 0)


@pytest.mark.parametrize("value", [STATE, GAME, FACTS], ids=["state", "game", "facts"])
def test_a_given_value_cannot_change(value: Any) -> None:
    with pytest.raises(AttributeError):
        value.cube = 4
    with pytest.raises(AttributeError):
        value.__dict__  # noqa: B018 - no instance dictionary to add attributes to
    assert hash(value) == hash(copy.deepcopy(value))
    assert value == pickle.loads(pickle.dumps(value))
    assert type(value) is type(copy.copy(value))


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: PlayerState(math.nan), "rating: must be a finite number"),
        (lambda: PlayerState(1500.0, rated_games=-1), "rated_games: must be >= 0"),
        (lambda: PlayerState(1500.0, experience=-1), "experience: must be >= 0"),
        (lambda: STATE._replace(recent_ranked_games=-2), "recent_ranked_games: must be >= 0"),
        (lambda: STATE._replace(rating=math.inf), "rating: must be a finite number"),
        (lambda: Game(match_length=0), "match_length: must be >= 1"),
        (lambda: GAME._replace(match_length=0), "match_length: must be >= 1"),
        (lambda: FACTS._replace(mode="casual"), "mode: must be one of"),
        (lambda: FACTS._replace(pair_rated_games=-1), "pair_rated_games: must be >= 0"),
        (lambda: FairPlayFacts._make(("ranked", False, False, None, None, -1)), "pair_rated"),
    ],
)
def test_a_given_value_is_checked_however_it_is_built(
    build: Callable[[], Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        build()


def test_a_replaced_value_keeps_the_rest() -> None:
    assert PlayerState(1600.0, 3, 9, 2) == STATE._replace(rating=1600.0)
    assert (2, 7) == tuple(GAME._replace(match_length=7))
