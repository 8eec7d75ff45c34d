"""A batch runs with the cyclic garbage collector paused (``Service.settle`` under
``worker.gcpause.paused``) and leaves it as it found it: on again after a batch that commits
and after one that fails (a poison event, which splits the batch), still off when the caller
had switched it off."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

from engine import apply as real_apply
from tests.conftest import drain, publish
from tests.events import game
from tests.integration.helpers import audit
from worker.service import batch


@pytest.fixture(autouse=True)
def collecting() -> Iterator[None]:
    """The collector on, as a worker process has it; afterwards as the test found it."""
    was = gc.isenabled()
    gc.enable()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def _watched(rt: Any, monkeypatch: pytest.MonkeyPatch, poisoned: str = "") -> set[str]:
    """Whether the collector was on while each event was scored, and once each batch had
    settled or failed ("scoring: on", "settled: off", ...); the engine raises while scoring
    the event ``poisoned``."""
    seen: set[str] = set()

    def on(when: str) -> None:
        seen.add(f"{when}: {'on' if gc.isenabled() else 'off'}")

    def scoring(event: Any, state: Any, rules: Any, policy: Any, now: Any) -> Any:
        on("scoring")
        if event.event_id == poisoned:
            raise ArithmeticError("window start before year 1")
        return real_apply(event, state, rules, policy, now)

    settle = rt.service.settle

    def settling(raws: Any, on_invalid: Any, **given: Any) -> Any:
        try:
            settled = settle(raws, on_invalid, **given)
        except Exception:
            on("failed")
            raise
        on("settled")
        return settled

    monkeypatch.setattr(batch, "apply", scoring)
    monkeypatch.setattr(rt.service, "settle", settling)
    return seen


def _games(poisoned: bool) -> list[dict[str, Any]]:
    games = [game(f"a{i}", f"b{i}", event_id=f"ok-{i}") for i in range(5)]
    return games + [game("x", "y", event_id="poison")] if poisoned else games


def test_the_collector_is_paused_while_a_batch_settles_and_on_again_after_it(runtime, monkeypatch):
    """A batch that commits: paused while its events are scored, on once it has settled."""
    seen = _watched(runtime, monkeypatch)
    publish(runtime, *_games(poisoned=False))
    drain(runtime)
    assert 5 == len(audit(runtime))
    assert {"scoring: off", "settled: on"} == seen
    assert gc.isenabled()


def test_the_collector_is_on_again_after_a_batch_that_fails(runtime, monkeypatch):
    """A poison event makes its batch fail (the batch is split until it fails alone): on again
    as each failing part leaves ``settle``, and after the batch's every part."""
    seen = _watched(runtime, monkeypatch, poisoned="poison")
    publish(runtime, *_games(poisoned=True))
    drain(runtime)
    assert 5 == len(audit(runtime))
    assert [("poison", "processing_error")] == [
        (d.event_id, d.reason) for d in runtime.dead_letters.list()
    ]
    assert {"scoring: off", "failed: on", "settled: on"} == seen
    assert gc.isenabled()


@pytest.mark.parametrize("poisoned", [False, True])
def test_a_collector_the_caller_switched_off_stays_off_after_a_batch(
    runtime, monkeypatch, poisoned
):
    """``gcpause.paused`` switches the collector back on only if it was on: off before the
    batches, it is off after each, whether it settled or failed."""
    seen = _watched(runtime, monkeypatch, poisoned="poison")
    gc.disable()
    publish(runtime, *_games(poisoned))
    drain(runtime)
    assert 5 == len(audit(runtime))
    failed = {"failed: off"} if poisoned else set()
    assert {"scoring: off", "settled: off"} | failed == seen
    assert not gc.isenabled()
