"""The two ways :func:`schemas.parse_event` reads a payload give one verdict on every payload.

Well-formed JSON is decoded by msgspec into the event Structs in one call; anything that does
not decode so is read step by step to name what is wrong. Both end in the same Structs, so an
event accepted one way is accepted the other way as the same event, and a payload refused one
way is refused the other way with the same reason and detail. The JSON object handed on with
the event (a signature is checked on it) is the one ``json.loads`` reads either way."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemas import DEFAULT_MAX_BYTES, DEFAULT_MAX_FUTURE, EXAMPLES, InvalidEvent, parse_event
from schemas.events import GameFinished
from schemas.parse import _step_by_step, parse_event_and_object
from schemas.signing import canonical_body
from tests.schema_strategy import from_schema
from tests.unit.test_schema_agreement import NOW, SCHEMAS

Verdict = tuple[str, Any]


def at_once(raw: str | bytes) -> Verdict:
    try:
        event, obj = parse_event_and_object(raw, now=NOW)
    except InvalidEvent as error:
        return "refused", (error.reason, error.detail, error.event_id, error.ladder)
    assert parse_event(raw, now=NOW) == event
    return "accepted", (event, event.stored(), canonical_body(obj))


def step_by_step(raw: str | bytes) -> Verdict:
    """The reading of a payload that does not decode at once (its object by json.loads)."""
    try:
        event, obj = _step_by_step(raw, NOW, DEFAULT_MAX_BYTES, DEFAULT_MAX_FUTURE)
    except InvalidEvent as error:
        return "refused", (error.reason, error.detail, error.event_id, error.ladder)
    return "accepted", (event, event.stored(), canonical_body(obj))


def mutated(event: dict[str, Any], data: st.DataObject) -> dict[str, Any]:
    """The event with one field replaced, removed or wrapped: near the edge of validity (the
    event's own, or a player's or a team's of a game)."""
    out: dict[str, Any] = json.loads(json.dumps(event))
    teams: list[dict[str, Any]] = out.get("teams") or [] if out["type"] == "game.finished" else []
    inner: list[dict[str, Any]] = [
        *(out[side] for side in ("winner", "loser") if isinstance(out.get(side), dict)),
        *(out.get("players") or [] if out["type"] == "game.finished" else []),
        *teams,
        *(player for team in teams for player in team["players"]),
    ]
    target = out
    if len(inner) > 0 and data.draw(st.booleans()):
        target = data.draw(st.sampled_from(inner))
    key = data.draw(st.sampled_from(sorted(target)))
    value = data.draw(
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(-(2**70), 2**70),
            st.floats(allow_nan=False),
            st.text(max_size=140),
            st.sampled_from(
                [
                    "",
                    " a",
                    "a ",
                    "café",
                    "cafe\u0301",
                    "\u200b",
                    "casual",
                    "2026-11-29T18:04:05+01:00",
                    "2026-11-29T18:04:05",
                    "0.0.0.0",
                    "::1",
                    "fe80::1%eth0",
                ]
            ),
            st.lists(st.text(max_size=3), max_size=4),
            st.just({"a": 1}),
        )
    )
    if data.draw(st.booleans()):
        target.pop(key)
    else:
        target[key] = value
    return out


@pytest.mark.parametrize("event_type", sorted(SCHEMAS))
def test_both_readings_agree_on_events_from_the_schema(event_type: str) -> None:
    """Events generated from the published schema file, and each one broken in one field."""

    @settings(
        max_examples=150,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(from_schema(SCHEMAS[event_type]), st.data())
    def check(event: Any, data: st.DataObject) -> None:
        for candidate in (event, mutated(event, data)):
            try:
                raw = json.dumps(candidate, ensure_ascii=False)
                raw.encode("utf-8")
            except UnicodeEncodeError:
                raw = json.dumps(candidate)
            assert at_once(raw) == step_by_step(raw), raw
            assert at_once(raw.encode("utf-8")) == step_by_step(raw.encode("utf-8")), raw

    check()


GAME = json.dumps(EXAMPLES["game.finished"])


@pytest.mark.parametrize(
    "raw",
    [
        GAME.replace('"cube": 4', '"cube": 4, "cube": 4'),  # a repeated key
        GAME.replace('"cube": 4', '"x": {"a": 1, "a": 2}, "cube": 4'),  # nested, unknown field
        GAME.replace('"cube": 4', '"x": "\\":", "cube": 4'),  # a key-like value
        GAME.replace('"cube": 4', '"x": ' + "[" * 40 + "]" * 40 + ', "cube": 4'),  # deep
        GAME.replace('"cube": 4', '"cube": true'),
        GAME.replace('"cube": 4', '"cube": 4.0'),
        GAME.replace('"cube": 4', '"cube": 3'),
        GAME.replace('"ranked"', '"casual"'),
        GAME.replace("2026-11-29T18:04:05Z", "2026-11-29T19:04:05.1234567+01:00"),
        GAME.replace("2026-11-29T18:04:05Z", "2026-11-29T18:20:00Z"),  # in the future
        GAME.replace("2026-11-29T18:04:05Z", "0001-01-08T00:00:00Z"),
        GAME.replace('"alice"', '"al\\ud800ice"'),
        GAME.replace('"alice"', '"caf\\u00e9"'),
        GAME.replace('"alice"', '"cafe\\u0301"'),
        GAME.replace('"alice"', '"alice "'),
        GAME.replace('"alice"', '"' + "a" * 129 + '"'),
        GAME.replace('"gammon42"', '"gammon42\\n"'),
        GAME.replace('"203.0.113.9"', '"::ffff:203.0.113.9"'),
        GAME.replace('"203.0.113.9"', '"203.0.113.9:80"'),
        GAME.replace('"game.finished"', '"game.started"'),
        GAME[:-1],
        "NaN",
        '{"type": "game.finished", "cube": NaN}',
        "[]",
        "x" * 70000,
    ],
)
def test_both_readings_agree_at_the_edges(raw: str) -> None:
    """Repeated keys at any depth, nesting, JSON types, normalisation, time and size."""
    assert at_once(raw) == step_by_step(raw)
    assert at_once(raw.encode("utf-8", "surrogatepass")) == step_by_step(
        raw.encode("utf-8", "surrogatepass")
    )


def test_an_accepted_event_is_a_struct_with_its_stored_form() -> None:
    event = parse_event(GAME, now=NOW)
    assert isinstance(event, GameFinished) and event.loser is not None
    assert event.loser.ip == "203.0.113.9"
    assert "ip" not in json.dumps(event.stored())
    assert event.stored()["ended_at"] == "2026-11-29T18:04:05Z"


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.text(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
        max_leaves=12,
    )
)
def test_the_digest_is_the_canonical_json_it_always_was(payload: Any) -> None:
    """A stored event's digest tells a duplicate from an id conflict across versions of the
    worker: sha256 of the keys-sorted, compact, unescaped-UTF-8 JSON that ``json.dumps``
    writes (SPEC 2.4 step 1)."""
    import hashlib

    from schemas.records import digest

    stored = {"event": payload}
    text = json.dumps(stored, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    try:
        expected = hashlib.sha256(text.encode("utf-8")).hexdigest()
    except UnicodeEncodeError:  # a lone surrogate: never in a valid event
        return
    assert digest(stored) == expected
