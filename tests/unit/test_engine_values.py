"""``engine.values.quick``: a faster ``__init__`` for the engine's frozen values, with
nothing else changed (signature, defaults, equality, hashing, immutability)."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from dataclasses import dataclass
from typing import Any

import pytest

from engine.ladder import Decision, GameFinished, LedgerChange, Side
from engine.reasons import LedgerKind, Outcome
from engine.values import quick


@dataclass(frozen=True, slots=True)
class Plain:
    a: str
    b: int = 1
    c: tuple[int, ...] = ()


@quick
@dataclass(frozen=True, slots=True)
class Quick:
    a: str
    b: int = 1
    c: tuple[int, ...] = ()


def test_a_quick_value_is_the_dataclass_value_it_stands_for():
    assert str(inspect.signature(Quick)) == str(inspect.signature(Plain))
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        (("x",), {}),
        (("x", 2), {}),
        ((), {"a": "x", "c": (1, 2)}),
    ]
    for args, kwargs in calls:
        made, plain = Quick(*args, **kwargs), Plain(*args, **kwargs)
        assert dataclasses.astuple(made) == dataclasses.astuple(plain)
        assert repr(made).removeprefix("Quick") == repr(plain).removeprefix("Plain")
    assert Quick("x", 2) == Quick("x", 2) and hash(Quick("x", 2)) == hash(Quick("x", 2))
    assert Quick("x") != Quick("y")
    assert pickle.loads(pickle.dumps(Quick("x", 3))) == Quick("x", 3)


def test_a_quick_value_stays_immutable_and_refuses_what_its_dataclass_refuses():
    made = Quick("x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.a = "y"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Quick()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Quick("x", 1, (), 4)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Quick("x", d=4)  # type: ignore[call-arg]


def test_quick_takes_only_what_it_can_make_the_same():
    @dataclass(slots=True)
    class Mutable:
        a: int

    @dataclass(frozen=True, slots=True)
    class WithFactory:
        a: list[int] = dataclasses.field(default_factory=list)

    @dataclass(frozen=True, slots=True)
    class Checked:
        a: int

        def __post_init__(self) -> None:
            raise ValueError

    for cls in (Mutable, WithFactory, Checked):
        with pytest.raises(TypeError):
            quick(cls)


def test_the_engine_values_made_quick_are_equal_to_their_fields():
    change = LedgerChange("p", LedgerKind.GAME, 1500.0, 1516.0, 16.0, 32.0, 0.5)
    assert dataclasses.astuple(change) == ("p", LedgerKind.GAME, 1500.0, 1516.0, 16.0, 32.0, 0.5)
    assert LedgerChange("p", LedgerKind.GAME, 1.0, 2.0, 1.0).k is None
    side = Side("w")
    assert (side.player_id, side.is_bot, side.network) == ("w", False, None)
    decision = Decision("e", "gammon42", "game.finished", Outcome.RATED)
    assert (decision.changes, decision.boosted, decision.digests) == ((), (), (None, None))
    with pytest.raises(dataclasses.FrozenInstanceError):
        decision.outcome = Outcome.UNRATED  # type: ignore[misc]
    assert GameFinished.__init__.__qualname__ == "GameFinished.__init__"
