"""The JSON documents a batch sends to PostgreSQL (``worker.jsontext.compact``): written
by orjson, they must read back exactly as ``json`` wrote them, datetimes as ``isoformat``
writes them, and what orjson refuses is still written."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from worker.jsontext import _iso
from worker.jsontext import compact as _json


def _old(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), default=_iso)


def test_datetimes_are_written_as_isoformat_writes_them() -> None:
    moments = [
        datetime(2026, 12, 1, 0, 0, tzinfo=UTC),
        datetime(2026, 12, 1, 0, 0, 0, 120, tzinfo=UTC),
        datetime(2026, 12, 1, 23, 59, 59, 999_999, tzinfo=timezone(timedelta(hours=-5))),
        datetime(2026, 12, 1, 8, 30),
    ]
    for moment in moments:
        assert _json([moment]) == _old([moment]) == json.dumps([moment.isoformat()])


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_every_rating_reads_back_to_the_same_double(value: float) -> None:
    """SPEC 2.2 (fibs): "no rounding of the stored rating": the ledger and the players keep
    the double exactly; its text may differ in form (1e-7, 1e-07), never in value."""
    (back,) = json.loads(_json([value]))
    assert back == value and math.copysign(1.0, back) == math.copysign(1.0, value)


def test_a_row_reads_back_as_json_wrote_it() -> None:
    row = {
        "ladder": "gammon42",
        "event_id": "g-1",
        "outcome": "rated",
        "reason": None,
        "ended_at": datetime(2026, 12, 1, 10, 0, 30, tzinfo=UTC),
        "payload": {"winner": {"player_id": "zoë", "points": 3}, "cube": 2, "ok": True},
        "coefficient": 1.5,
    }
    assert json.loads(_json([row])) == json.loads(_old([row]))


def test_what_orjson_refuses_is_written_by_json() -> None:
    huge = {"n": 2**70, "text": "lone \ud800 surrogate"}
    assert _json(huge) == _old(huge)
