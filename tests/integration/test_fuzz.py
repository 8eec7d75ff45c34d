"""Hostile input never crashes a worker and never changes a rating it should not.

Payloads are random JSON, huge strings, deep nesting, wrong types, unicode ids, NaN and
infinities, timestamps far in the past and future, and valid events with one field broken.
Each one is run through the real batch job; afterwards it is either applied (an audit row)
or dead-lettered with a reason, and a dead-lettered one changed no rating.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from schemas import REASONS, InvalidEvent
from tests.conftest import record_figure
from tests.events import iso
from worker.entrypoints.worker import batches as jobs
from worker.privacy import storable_payload
from worker.queue.deadletter import dead_letter_id
from worker.store.tables import events, players

NOW = datetime.now(UTC)
json_leaf = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
json_value = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
ids = st.text(min_size=1, max_size=130) | st.sampled_from(["alice", "bob", "ünïcødé-🎲", "x" * 128])
timestamps = st.sampled_from(
    [
        iso(NOW - timedelta(minutes=1)),
        iso(NOW + timedelta(days=1)),
        "1900-01-01T00:00:00Z",
        "9999-12-31T23:59:59Z",
        "2026-11-29T18:04:05",
        "not a time",
        "2026-02-30T00:00:00Z",
    ]
) | st.datetimes(timezones=st.just(UTC)).map(iso)


def base_event() -> dict[str, Any]:
    return {
        "type": "game.finished",
        "event_id": "fz",
        "ladder": "gammon42",
        "ended_at": iso(NOW - timedelta(minutes=1)),
        "mode": "ranked",
        "winner": {"player_id": "alice"},
        "loser": {"player_id": "bob"},
    }


@st.composite
def broken_events(draw: st.DrawFn) -> str:
    event = base_event()
    event["event_id"] = draw(ids)
    field = draw(
        st.sampled_from(
            [
                "type",
                "ladder",
                "ended_at",
                "mode",
                "winner",
                "loser",
                "cube",
                "match_length",
                "result",
                "end_reason",
                "winner.player_id",
                "loser.is_bot",
                "winner.ip",
                "extra",
            ]
        )
    )
    value = draw(json_value | timestamps | ids | st.sampled_from([3, 0, -1, 2**70, 1e308, True]))
    if "." in field:
        side, key = field.split(".")
        event[side] = {**event[side], key: value}
    elif draw(st.booleans()):
        event.pop(field, None)
    else:
        event[field] = value
    return json.dumps(event)


special = st.sampled_from(
    [
        '{"type": "game.finished", "cube": NaN}',
        '{"cube": Infinity}',
        "[" * 5000 + "]" * 5000,
        '{"a": ' * 3000 + "1" + "}" * 3000,
        "x" * 70000,
        json.dumps({"type": "game.finished", "winner": "y" * 66000}),
        "\udcff",
        "",
        " ",
        "null",
        "[]",
        '"string"',
        "\x00\x01",
    ]
)
payloads = broken_events() | json_value.map(json.dumps) | st.text(max_size=200) | special


def ratings(rt) -> dict[tuple[str, str], float]:
    with rt.engine.connect() as conn:
        return {(r.ladder, r.player_id): r.rating for r in conn.execute(select(players))}


def was_audited(rt, ladder: str, event_id: str) -> bool:
    query = select(func.count()).where(events.c.ladder == ladder, events.c.event_id == event_id)
    with rt.engine.connect() as conn:
        return int(conn.execute(query).scalar_one()) == 1


@pytest.mark.parametrize(
    "examples",
    [pytest.param(150, id="short"), pytest.param(3000, id="long", marks=pytest.mark.soak)],
)
def test_hostile_payloads_end_applied_or_dead_lettered_and_never_crash(runtime, examples):
    """Every payload ends applied or dead-lettered with a known reason; no worker crash."""
    seen = {"applied": 0, "dead_lettered": 0}

    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))
    @given(payload=payloads)
    def one(payload: str) -> None:
        before = ratings(runtime)
        jobs.process_batch(runtime, [payload])  # must not raise
        try:
            event = runtime.intake.parse(payload, datetime.now(UTC))
        except InvalidEvent as invalid:
            letter = runtime.dead_letters.get(
                dead_letter_id(
                    storable_payload(payload, runtime.settings.network_key.get_secret_value())
                )
            )
            assert letter is not None, "an invalid payload must be in the dead-letter queue"
            assert invalid.reason == letter[0].reason and invalid.reason in REASONS
            assert before == ratings(runtime)
            seen["dead_lettered"] += 1
        else:
            assert was_audited(runtime, event.ladder, event.event_id)
            seen["applied"] += 1

    one()
    record_figure(
        f"fuzz: {examples} payloads, {seen['applied']} applied, {seen['dead_lettered']} dead-lettered, 0 crashes"
    )
