"""Event contracts (SPEC 3): parsing, rejection reasons, redaction and published schemas."""

from __future__ import annotations

import copy
import json
import pickle
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas import (
    CUBE_VALUES,
    EVENT_MODELS,
    EXAMPLES,
    REASONS,
    GameFinished,
    IdentityLinked,
    InvalidEvent,
    PlayerRef,
    PlayerUpdated,
    TournamentFinished,
    export,
    parse_event,
    redact,
)

NOW = datetime(2026, 11, 29, 18, 5, 0, tzinfo=UTC)
SPEC_EXAMPLE = (
    '{"type": "game.finished", "event_id": "g-000123", "ladder": "gammon42",\n'
    ' "ended_at": "2026-11-29T18:04:05Z", "mode": "ranked",\n'
    ' "winner": {"player_id": "alice", "is_bot": false, "network": "net-7f3a"},\n'
    ' "loser":  {"player_id": "bob", "ip": "203.0.113.9"},\n'
    ' "cube": 4, "match_length": 1, "result": "gammon", "end_reason": "resign"}'
)
MINIMAL_GAME: dict[str, Any] = {
    "type": "game.finished",
    "event_id": "g-1",
    "ladder": "gammon42",
    "ended_at": "2026-11-29T18:04:05Z",
    "mode": "ranked",
    "winner": {"player_id": "alice"},
    "loser": {"player_id": "bob"},
}


def with_field(base: dict[str, Any], path: str, value: Any) -> str:
    """JSON of ``base`` with the dotted ``path`` set to ``value``."""
    payload = copy.deepcopy(base)
    *parents, leaf = path.split(".")
    node = payload
    for part in parents:
        node = node[part]
    node[leaf] = value
    return json.dumps(payload)


def without_field(base: dict[str, Any], path: str) -> str:
    """JSON of ``base`` with the dotted ``path`` removed."""
    payload = copy.deepcopy(base)
    *parents, leaf = path.split(".")
    node = payload
    for part in parents:
        node = node[part]
    del node[leaf]
    return json.dumps(payload)


def game(path: str, value: Any) -> str:
    """JSON of the minimal game with one field replaced."""
    return with_field(MINIMAL_GAME, path, value)


def rejection(raw: str | bytes, **kwargs: Any) -> InvalidEvent:
    """The InvalidEvent that parsing ``raw`` raises."""
    with pytest.raises(InvalidEvent) as info:
        parse_event(raw, now=NOW, **kwargs)
    return info.value


def stamp(moment: datetime) -> str:
    """RFC 3339 text for an aware datetime."""
    return moment.isoformat()


# --- game.finished: valid ---------------------------------------------------------------


def test_the_spec_example_parses_into_a_game_finished_event() -> None:
    """The SPEC 3 example, byte for byte, is a valid event with every field as sent."""
    event = parse_event(SPEC_EXAMPLE, now=NOW)
    assert isinstance(event, GameFinished) and event.loser is not None
    assert event.event_id == "g-000123"
    assert event.ladder == "gammon42"
    assert event.ended_at == datetime(2026, 11, 29, 18, 4, 5, tzinfo=UTC)
    assert event.mode == "ranked"
    assert event.winner == PlayerRef(player_id="alice", is_bot=False, network="net-7f3a")
    assert event.loser.player_id == "bob"
    assert event.loser.ip == "203.0.113.9"
    assert (event.cube, event.match_length, event.result, event.end_reason) == (
        4,
        1,
        "gammon",
        "resign",
    )
    assert event.tournament_id is None


def test_the_shared_example_is_the_spec_example() -> None:
    """EXAMPLES["game.finished"] (published in the schema) equals the SPEC 3 text."""
    assert EXAMPLES["game.finished"] == json.loads(SPEC_EXAMPLE)


def test_casual_mode_is_accepted_and_normalised_to_boosted() -> None:
    """The old mode name `casual` parses as `boosted`."""
    event = parse_event(game("mode", "casual"), now=NOW)
    assert isinstance(event, GameFinished)
    assert event.mode == "boosted"


@pytest.mark.parametrize("mode", ["ranked", "boosted", "tournament"])
def test_every_current_mode_parses_as_itself(mode: str) -> None:
    """ranked, boosted and tournament are kept as sent."""
    event = parse_event(game("mode", mode), now=NOW)
    assert isinstance(event, GameFinished)
    assert event.mode == mode


def test_omitted_optional_fields_take_their_spec_defaults() -> None:
    """Without optional fields: cube 1, match 1, single, normal, no tournament, no bot."""
    event = parse_event(json.dumps(MINIMAL_GAME), now=NOW)
    assert isinstance(event, GameFinished)
    assert (event.cube, event.match_length, event.result, event.end_reason) == (
        1,
        1,
        "single",
        "normal",
    )
    assert event.tournament_id is None
    assert event.winner == PlayerRef(player_id="alice", is_bot=False, network=None, ip=None)


def test_explicit_nulls_for_optional_strings_mean_none() -> None:
    """`network`, `ip` and `tournament_id` may be sent as null."""
    raw = with_field(json.loads(game("tournament_id", None)), "loser.network", None)
    event = parse_event(with_field(json.loads(raw), "loser.ip", None), now=NOW)
    assert isinstance(event, GameFinished) and event.loser is not None
    assert event.loser.network is None and event.loser.ip is None and event.tournament_id is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-29T19:04:05+01:00", datetime(2026, 11, 29, 18, 4, 5, tzinfo=UTC)),
        ("2026-11-29T13:34:05-04:30", datetime(2026, 11, 29, 18, 4, 5, tzinfo=UTC)),
        ("2026-11-29t18:04:05z", datetime(2026, 11, 29, 18, 4, 5, tzinfo=UTC)),
        ("2026-11-29T18:04:05-00:00", datetime(2026, 11, 29, 18, 4, 5, tzinfo=UTC)),
        ("2026-11-29T18:04:05.5Z", datetime(2026, 11, 29, 18, 4, 5, 500000, tzinfo=UTC)),
        ("2026-11-29T18:04:05.123456789Z", datetime(2026, 11, 29, 18, 4, 5, 123456, tzinfo=UTC)),
    ],
)
def test_ended_at_with_any_offset_is_normalised_to_utc(text: str, expected: datetime) -> None:
    """Offsets are applied and the result carries UTC; sub-microsecond digits are cut."""
    event = parse_event(game("ended_at", text), now=NOW)
    assert event.ended_at == expected
    assert event.ended_at is not None and event.ended_at.tzinfo is UTC


@pytest.mark.parametrize("cube", CUBE_VALUES)
def test_every_allowed_cube_value_parses(cube: int) -> None:
    """1, 2, 4, 8, 16, 32 and 64 are valid cubes."""
    event = parse_event(game("cube", cube), now=NOW)
    assert isinstance(event, GameFinished)
    assert event.cube == cube


def test_bytes_bytearray_and_text_payloads_parse_the_same() -> None:
    """The queue may hand over bytes; they parse exactly like the text."""
    text = parse_event(SPEC_EXAMPLE, now=NOW)
    assert parse_event(SPEC_EXAMPLE.encode(), now=NOW) == text
    assert parse_event(bytearray(SPEC_EXAMPLE.encode()), now=NOW) == text  # type: ignore[arg-type]


def test_unknown_extra_fields_are_ignored() -> None:
    """Servers may add fields of their own, at the top level and in player objects."""
    payload = copy.deepcopy(MINIMAL_GAME)
    payload["server_build"] = "1.2.3"
    payload["winner"]["avatar"] = {"deep": [1, 2, {"x": None}]}
    event = parse_event(json.dumps(payload), now=NOW)
    assert isinstance(event, GameFinished)
    assert not hasattr(event, "server_build")


def test_identifiers_of_exactly_128_characters_are_accepted() -> None:
    """128 characters is the inclusive limit for ids."""
    event = parse_event(game("winner.player_id", "a" * 128), now=NOW)
    assert isinstance(event, GameFinished) and event.winner is not None
    assert event.winner.player_id == "a" * 128


@pytest.mark.parametrize(
    "player_id",
    [
        "cafe\u0301",  # café with a combining accent: not NFC
        "\u200b",  # only a zero-width space
        "\u200b\u2060 \ufeff",
        "ali\u202ece",  # right-to-left override
        "ali\u2066ce",  # left-to-right isolate
        "\ufeffalice",  # a byte order mark
        "ali\u2028ce",  # line separator
        "ali\u2029ce",  # paragraph separator
    ],
)
def test_ids_a_person_cannot_tell_apart_are_invalid_field(player_id: str) -> None:
    """Non-NFC ids, invisible-only ids, bidi controls, a BOM and separators are refused."""
    error = rejection(game("winner.player_id", player_id))
    assert ("invalid_field", "winner.player_id") == (error.reason, error.detail.split(":")[0])


def test_one_name_written_two_ways_is_not_two_players() -> None:
    """café (NFC) against café (NFD) was rated as two players; the NFD one is now refused."""
    nfc, nfd = "caf\u00e9", "cafe\u0301"
    raw = with_field(json.loads(game("winner.player_id", nfc)), "loser.player_id", nfd)
    assert "invalid_field" == rejection(raw).reason
    assert isinstance(parse_event(game("winner.player_id", nfc), now=NOW), GameFinished)


def test_the_earliest_ended_at_whose_windows_are_dates_is_accepted_and_earlier_is_not() -> None:
    """The 7-day window before ended_at must be a date: 0001-01-01 is invalid_timestamp."""
    assert parse_event(game("ended_at", "0001-01-08T00:00:00Z"), now=NOW).ended_at
    error = rejection(game("ended_at", "0001-01-01T00:00:00Z"))
    assert ("invalid_timestamp", "ended_at: must not be earlier than 0001-01-08T00:00:00Z") == (
        error.reason,
        error.detail,
    )


def test_a_ten_megabyte_payload_is_refused_before_it_is_decoded(monkeypatch) -> None:
    """The size limit is checked on the raw bytes, before JSON parsing."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("json.loads called on an oversized payload")

    monkeypatch.setattr("schemas.parse.json.loads", refuse)
    raw = '{"pad": "' + "x" * 10_000_000 + '"}'
    for payload in (raw, raw.encode()):
        assert "payload_too_large" == rejection(payload).reason


def test_identifiers_are_kept_exactly_as_sent() -> None:
    """Ids are not case-folded or rewritten: `Alice  B` stays `Alice  B`."""
    event = parse_event(game("winner.player_id", "Alice  B"), now=NOW)
    assert isinstance(event, GameFinished) and event.winner is not None
    assert event.winner.player_id == "Alice  B"


@pytest.mark.parametrize(
    "path", ["event_id", "winner.player_id", "loser.player_id", "winner.network", "tournament_id"]
)
@pytest.mark.parametrize("value", ["p01 ", " p01", "p01\u00a0", "\u3000p01", "p01\u200b"])
def test_an_id_beginning_or_ending_with_white_space_is_invalid_field_in_schema_and_worker(
    path: str, value: str
) -> None:
    """Issue 36: leading or trailing white space in any id is `invalid_field`, in the JSON
    Schema files (`pattern`) and the worker alike: `"p01 "` is not a second player."""
    import jsonschema

    raw = game(path, value)
    error = rejection(raw)
    assert ("invalid_field", path) == (error.reason, error.detail.split(":")[0])
    assert "must not begin or end with white space" in error.detail
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(json.loads(raw), committed("game.finished"))
    inside = game(path, value.strip("\u0020\u00a0\u3000\u200b").replace("0", " 0"))
    jsonschema.validate(json.loads(inside), committed("game.finished"))
    assert isinstance(parse_event(inside, now=NOW), GameFinished)


def test_events_are_frozen() -> None:
    """Parsed events cannot be modified."""
    event = parse_event(SPEC_EXAMPLE, now=NOW)
    assert isinstance(event, GameFinished)
    with pytest.raises(AttributeError):
        setattr(event, "cube", 8)  # noqa: B010


# --- rejection reasons ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("", "invalid_json"),
        ("{", "invalid_json"),
        ("{'type': 'game.finished'}", "invalid_json"),
        ("[]", "not_an_object"),
        ('[{"type": "game.finished"}]', "not_an_object"),
        ('"game.finished"', "not_an_object"),
        ("42", "not_an_object"),
        ("null", "not_an_object"),
        ("{}", "missing_field"),
        ('{"event_id": "g-1"}', "missing_field"),
        ('{"type": "game.started"}', "unknown_type"),
        ('{"type": "Game.Finished"}', "unknown_type"),
        ('{"type": 5}', "unknown_type"),
        ('{"type": null}', "unknown_type"),
        ('{"type": "game.finished", "type": "player.updated"}', "invalid_json"),
        ('{"type": "game.finished", "cube": NaN}', "invalid_json"),
        ('{"type": "game.finished", "cube": Infinity}', "invalid_json"),
        ('{"type": "game.finished", "cube": -Infinity}', "invalid_json"),
        ('{"type": "game.finished", "cube": ' + "9" * 5000 + "}", "invalid_json"),
    ],
)
def test_malformed_payloads_are_rejected_with_their_reason(raw: str, reason: str) -> None:
    """Each malformed payload maps to its machine-readable reason."""
    assert rejection(raw).reason == reason


@pytest.mark.parametrize(
    "cube",
    [
        3,
        0,
        -1,
        128,
        "4",
        4.5,
        4.0,
        True,
        None,
        [4],
    ],
)
def test_any_cube_that_is_not_a_json_integer_power_of_two_up_to_64_is_invalid_cube(
    cube: Any,
) -> None:
    """Pinned: every bad cube (wrong value or wrong JSON type) is `invalid_cube`."""
    error = rejection(game("cube", cube))
    assert error.reason == "invalid_cube"
    assert error.detail.startswith("cube: ")


def test_a_player_against_themself_is_self_play() -> None:
    """Winner and loser with the same player_id is rejected as self_play."""
    error = rejection(game("loser.player_id", "alice"))
    assert error.reason == "self_play"
    assert error.event_id == "g-1"


def test_same_id_differing_only_in_case_is_not_self_play() -> None:
    """Ids are exact, so `alice` and `Alice` are different players."""
    event = parse_event(game("loser.player_id", "Alice"), now=NOW)
    assert isinstance(event, GameFinished)


@pytest.mark.parametrize(
    ("ahead", "ok"),
    [
        (timedelta(minutes=-60), True),
        (timedelta(minutes=4), True),
        (timedelta(minutes=5), True),
        (timedelta(minutes=5, microseconds=1), False),
        (timedelta(minutes=6), False),
        (timedelta(days=400), False),
    ],
)
def test_ended_at_more_than_five_minutes_ahead_of_now_is_rejected(
    ahead: timedelta, ok: bool
) -> None:
    """Up to 5 minutes of clock skew is tolerated; beyond that, ended_at_in_future."""
    raw = game("ended_at", stamp(NOW + ahead))
    if ok:
        assert isinstance(parse_event(raw, now=NOW), GameFinished)
    else:
        assert rejection(raw).reason == "ended_at_in_future"


def test_the_future_limit_compares_instants_not_wall_clock_text() -> None:
    """6 minutes ahead written with a -03:00 offset is still 6 minutes ahead."""
    ahead = (NOW + timedelta(minutes=6)).astimezone(timezone(timedelta(hours=-3)))
    assert ahead.isoformat().endswith("-03:00")
    assert rejection(game("ended_at", ahead.isoformat())).reason == "ended_at_in_future"


def test_max_future_and_max_bytes_are_configurable() -> None:
    """A caller may tighten the skew allowance and the size limit."""
    raw = game("ended_at", stamp(NOW + timedelta(minutes=2)))
    error = rejection(raw, max_future=timedelta(minutes=1))
    assert error.reason == "ended_at_in_future"
    assert rejection(raw, max_bytes=10).reason == "payload_too_large"


def test_a_naive_now_is_a_programming_error() -> None:
    """parse_event refuses a naive `now` with ValueError (a caller bug, not a bad event)."""
    with pytest.raises(ValueError, match="timezone-aware"):
        parse_event(SPEC_EXAMPLE, now=datetime(2026, 11, 29, 18, 5))


@pytest.mark.parametrize(
    "ended_at",
    [
        "2026-11-29T18:04:05",
        "2026-11-29T18:04:05.123",
        "2026-11-29T18:04",
        "2026-11-29 18:04:05Z",
        "2026-11-29",
        "2026-11-29T18:04:05+0100",
        "2026-11-29T18:04:05+01",
        "2026-11-29T18:04:05+24:00",
        "2026-11-29T18:04:05+01:60",
        "2026-13-01T00:00:00Z",
        "2026-02-30T00:00:00Z",
        "2026-11-29T24:00:00Z",
        "2026-12-31T23:59:60Z",
        "0001-01-01T00:00:00+01:00",
        "9999-12-31T23:59:59-01:00",
        "20261129T180405Z",
        "2026-W48-7T18:04:05Z",
        "２０２６-11-29T18:04:05Z",
        "yesterday",
        "",
        1764439445,
        None,
        True,
    ],
)
def test_a_bad_or_naive_ended_at_is_invalid_timestamp(ended_at: Any) -> None:
    """Only RFC 3339 date-times with an offset are accepted."""
    error = rejection(game("ended_at", ended_at))
    assert error.reason == "invalid_timestamp"
    assert error.detail.startswith("ended_at: ")


def test_a_naive_timestamp_says_the_offset_is_missing() -> None:
    """The detail for a naive timestamp tells the server what to add."""
    assert "offset" in rejection(game("ended_at", "2026-11-29T18:04:05")).detail


@pytest.mark.parametrize(
    "path",
    [
        "type",
        "event_id",
        "ladder",
        "ended_at",
        "mode",
        "winner",
        "loser",
        "winner.player_id",
        "loser.player_id",
    ],
)
def test_each_required_game_field_missing_is_missing_field_naming_it(path: str) -> None:
    """A missing required field is reported as missing_field with its dotted path."""
    error = rejection(without_field(MINIMAL_GAME, path))
    assert error.reason == "missing_field"
    assert error.detail == f"{path}: field required"


def test_a_missing_field_is_reported_before_other_errors() -> None:
    """With a bad cube and a missing loser, missing_field wins."""
    raw = with_field(json.loads(without_field(MINIMAL_GAME, "loser")), "cube", 3)
    assert rejection(raw).reason == "missing_field"


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("winner.player_id", "a" * 129),
        ("winner.player_id", ""),
        ("winner.player_id", "   "),
        ("winner.player_id", "al\nice"),
        ("winner.player_id", "al\x00ice"),
        ("winner.player_id", "al\x85ice"),
        ("winner.player_id", "\ud800"),
        ("winner.player_id", 7),
        ("winner.player_id", None),
        ("loser.player_id", "b" * 129),
        ("event_id", "e" * 129),
        ("event_id", ""),
        ("event_id", 123),
        ("ladder", ""),
        ("ladder", "l" * 65),
        ("ladder", "gammon 42"),
        ("ladder", "gammon42\n"),
        ("ladder", "gämmon"),
        ("mode", "blitz"),
        ("mode", "Ranked"),
        ("mode", None),
        ("winner", "alice"),
        ("winner", ["alice"]),
        ("winner", None),
        ("winner.is_bot", "yes"),
        ("winner.is_bot", 1),
        ("winner.is_bot", None),
        ("winner.network", ""),
        ("winner.network", "n" * 129),
        ("winner.network", 7),
        ("match_length", 0),
        ("match_length", 65),
        ("match_length", "1"),
        ("match_length", 1.0),
        ("match_length", True),
        ("result", "double"),
        ("result", None),
        ("end_reason", "quit"),
        ("tournament_id", ""),
        ("tournament_id", 9),
    ],
)
def test_a_bad_field_value_is_invalid_field_naming_its_path(path: str, value: Any) -> None:
    """Out-of-contract values are invalid_field and the detail starts with the field path."""
    error = rejection(game(path, value))
    assert error.reason == "invalid_field"
    assert error.detail.startswith(f"{path}: ")


def test_the_spec_length_limit_case_player_id_of_129_chars_is_invalid_field() -> None:
    """The SPEC limit of 128 characters is enforced on player_id."""
    error = rejection(game("winner.player_id", "x" * 129))
    assert (error.reason, error.detail.split(":")[0]) == ("invalid_field", "winner.player_id")


@pytest.mark.parametrize(
    "ip",
    [
        "203.0.113.999",
        "203.0.113",
        "10.0.0.1/24",
        " 203.0.113.9",
        "2001:db8::g",
        "not-an-ip",
        "",
        "fe80::1%eth0",  # a zone id names an interface of the sender: not in the schema either
        "198.51.100.1:5000",
    ],
)
def test_a_bad_ip_is_invalid_field_without_echoing_the_value(ip: str) -> None:
    """The detail, str, repr and exception chain never contain the raw value."""
    error = rejection(game("loser.ip", ip))
    assert error.reason == "invalid_field"
    assert error.detail.startswith("loser.ip: ")
    if ip.strip():
        for text in (error.detail, str(error), repr(error)):
            assert ip.strip() not in text
    assert error.__cause__ is None and error.__suppress_context__


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        ("mode", "'ranked', 'boosted', 'casual', 'tournament'"),
        ("result", "'single', 'gammon', 'backgammon', 'draw'"),
        ("end_reason", "'normal', 'resign', 'leave', 'disconnect', 'timeout'"),
    ],
)
def test_a_value_outside_an_enumeration_is_named_by_the_values_allowed_never_echoed(
    path: str, allowed: str
) -> None:
    """The detail lists what the field accepts and leaves out what was sent (an address, or
    text that reads like the end of msgspec's message)."""
    for sent in ("203.0.113.9", "203.0.113.9 - at `$.mode`"):
        error = rejection(game(path, sent))
        assert (error.reason, error.detail) == (
            "invalid_field",
            f"{path}: must be one of {allowed}",
        )


@pytest.mark.parametrize("ip", ["203.0.113.9", "2001:db8::1", "::ffff:203.0.113.9", "fe80::1"])
def test_valid_ipv4_and_ipv6_addresses_are_accepted(ip: str) -> None:
    """Any address ipaddress.ip_address accepts without a zone id is valid."""
    event = parse_event(game("loser.ip", ip), now=NOW)
    assert isinstance(event, GameFinished) and event.loser is not None
    assert event.loser.ip == ip


def test_the_raw_ip_is_left_out_of_the_stored_form_and_reprs() -> None:
    """The stored form and the repr of a parsed event never carry the raw address."""
    event = parse_event(SPEC_EXAMPLE, now=NOW)
    assert isinstance(event, GameFinished) and event.loser is not None
    assert event.loser.ip == "203.0.113.9"
    assert "ip" not in event.loser.stored()
    assert "203.0.113.9" not in json.dumps(event.stored())
    assert "203.0.113.9" not in repr(event) and "203.0.113.9" not in str(event)


@pytest.mark.parametrize("as_bytes", [False, True])
def test_a_payload_over_max_bytes_is_payload_too_large(as_bytes: bool) -> None:
    """The size check is on UTF-8 bytes, before any parsing."""
    raw = '{"type": "game.finished", "pad": "' + "x" * 70_000 + '"}'
    error = rejection(raw.encode() if as_bytes else raw)
    assert error.reason == "payload_too_large"
    assert error.event_id is None


def test_the_size_limit_counts_bytes_not_characters() -> None:
    """1,000 three-byte characters exceed a 2,000-byte limit."""
    raw = json.dumps({**MINIMAL_GAME, "pad": "€" * 1000}, ensure_ascii=False)
    assert len(raw) < 2000 < len(raw.encode())
    assert rejection(raw, max_bytes=2000).reason == "payload_too_large"


def test_a_payload_of_exactly_max_bytes_is_accepted() -> None:
    """The limit is inclusive."""
    raw = SPEC_EXAMPLE.encode()
    assert isinstance(parse_event(raw, now=NOW, max_bytes=len(raw)), GameFinished)
    assert rejection(raw, max_bytes=len(raw) - 1).reason == "payload_too_large"


@pytest.mark.parametrize("container", ["[", '{"a":'])
def test_ten_thousand_deep_nesting_is_invalid_json(container: str) -> None:
    """Deep nesting is refused as invalid_json instead of a RecursionError."""
    closer = "]" if container == "[" else "}"
    raw = container * 10_000 + "1" + closer * 10_000
    assert rejection(raw).reason == "invalid_json"


@pytest.mark.parametrize(
    "raw",
    [
        b"\xff\xfe{}",
        b'{"type": "game.finished", "event_id": "\xc3("}',
        b"\xef\xbb\xbf" + SPEC_EXAMPLE.encode(),
        b"\xed\xa0\x80",
    ],
)
def test_bytes_that_are_not_utf8_json_are_invalid_json(raw: bytes) -> None:
    """Bytes are decoded strictly as UTF-8 (no BOM)."""
    assert rejection(raw).reason == "invalid_json"


def test_text_with_a_lone_surrogate_is_invalid_json() -> None:
    """A str that cannot be encoded as UTF-8 is not a valid payload."""
    assert rejection('{"type": "game.finished"}\ud800').reason == "invalid_json"


@pytest.mark.parametrize("raw", [None, 42, {"type": "game.finished"}])
def test_a_payload_that_is_not_text_or_bytes_is_invalid_json(raw: Any) -> None:
    """Wrong Python types still become InvalidEvent, never TypeError."""
    assert rejection(raw).reason == "invalid_json"


# --- best-effort event_id and ladder ------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "event_id", "ladder"),
    [
        (game("cube", 3), "g-1", "gammon42"),
        ('{"type": "nope", "event_id": "e-9", "ladder": "fibs"}', "e-9", "fibs"),
        ('{"event_id": "e-9"}', "e-9", None),
        (game("ladder", "gammon 42"), "g-1", "gammon 42"),
        ('{"type": "nope", "event_id": 9, "ladder": ["fibs"]}', None, None),
        ('{"type": "nope", "event_id": "' + "e" * 129 + '"}', None, None),
        ('{"type": "nope", "event_id": "bad\\u0000id"}', None, None),
        ('{"type": "nope", "event_id": "   "}', None, None),
        ('[{"event_id": "e-9", "ladder": "fibs"}]', None, None),
        ("not json", None, None),
    ],
)
def test_event_id_and_ladder_are_extracted_best_effort(
    raw: str, event_id: str | None, ladder: str | None
) -> None:
    """String event_id/ladder from a JSON object are copied onto the InvalidEvent."""
    error = rejection(raw)
    assert (error.event_id, error.ladder) == (event_id, ladder)


def test_invalid_event_renders_as_reason_colon_detail() -> None:
    """str(InvalidEvent) is "<reason>: <detail>"."""
    error = InvalidEvent("invalid_cube", "cube: bad", event_id="g-1", ladder="gammon42")
    assert str(error) == "invalid_cube: cube: bad"


def test_invalid_event_survives_pickling_with_all_attributes() -> None:
    """RQ pickles job exceptions; every attribute must survive."""
    error = rejection(game("cube", 3))
    clone = pickle.loads(pickle.dumps(error))
    assert (clone.reason, clone.detail, clone.event_id, clone.ladder) == (
        error.reason,
        error.detail,
        error.event_id,
        error.ladder,
    )


def test_reasons_are_distinct_codes() -> None:
    """REASONS names each code once."""
    assert len(set(REASONS)) == len(REASONS)


# --- the other event types ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("event_type", "model"),
    [
        ("tournament.finished", TournamentFinished),
        ("identity.linked", IdentityLinked),
        ("player.updated", PlayerUpdated),
    ],
)
def test_each_other_event_type_parses_its_example(event_type: str, model: type) -> None:
    """The published example of every type parses to its model."""
    event = parse_event(json.dumps(EXAMPLES[event_type]), now=NOW)
    assert isinstance(event, model)
    assert event.ended_at is None


def test_a_tournament_podium_keeps_its_order() -> None:
    """podium is first, second, third in order; fewer than three is fine."""
    base = EXAMPLES["tournament.finished"]
    event = parse_event(json.dumps(base), now=NOW)
    assert isinstance(event, TournamentFinished)
    assert event.podium == ["alice", "bob", "carol"]
    short = parse_event(with_field(base, "podium", ["alice"]), now=NOW)
    assert isinstance(short, TournamentFinished) and short.podium == ["alice"]


@pytest.mark.parametrize("event_type", ["tournament.finished", "identity.linked", "player.updated"])
def test_optional_ended_at_is_parsed_and_checked_like_game_ended_at(event_type: str) -> None:
    """When present, ended_at follows the same rules as in game.finished."""
    base = EXAMPLES[event_type]
    event = parse_event(with_field(base, "ended_at", "2026-11-29T19:00:00+01:00"), now=NOW)
    assert event.ended_at == datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
    naive = rejection(with_field(base, "ended_at", "2026-11-29T18:00:00"))
    assert naive.reason == "invalid_timestamp"
    future = rejection(with_field(base, "ended_at", stamp(NOW + timedelta(minutes=6))))
    assert future.reason == "ended_at_in_future"


@pytest.mark.parametrize(
    ("event_type", "path", "value", "reason"),
    [
        ("tournament.finished", "podium", ["a", "b", "c", "d"], "invalid_field"),
        ("tournament.finished", "podium", ["a", "b", "a"], "invalid_field"),
        ("tournament.finished", "podium", [], "invalid_field"),
        ("tournament.finished", "podium", "alice", "invalid_field"),
        ("tournament.finished", "podium", ["a", ""], "invalid_field"),
        ("tournament.finished", "podium", ["a", "p" * 129], "invalid_field"),
        ("tournament.finished", "public", "true", "invalid_field"),
        ("tournament.finished", "public", 1, "invalid_field"),
        ("tournament.finished", "public", None, "invalid_field"),
        ("tournament.finished", "tournament_id", "", "invalid_field"),
        ("identity.linked", "account_id", "anon-3f9c2d", "invalid_field"),
        ("identity.linked", "account_id", "", "invalid_field"),
        ("identity.linked", "anonymous_id", "x" * 129, "invalid_field"),
        ("player.updated", "email_verified", "yes", "invalid_field"),
        ("player.updated", "display_name_chosen", 0, "invalid_field"),
        ("player.updated", "player_id", "", "invalid_field"),
        ("player.updated", "ladder", "no spaces", "invalid_field"),
    ],
)
def test_each_other_event_type_rejects_its_bad_cases(
    event_type: str, path: str, value: Any, reason: str
) -> None:
    """Bad podiums, self-links and non-bool flags are rejected with the field named."""
    error = rejection(with_field(EXAMPLES[event_type], path, value))
    assert error.reason == reason
    assert error.detail.startswith(path)


@pytest.mark.parametrize(
    ("event_type", "path"),
    [
        ("tournament.finished", "event_id"),
        ("tournament.finished", "ladder"),
        ("tournament.finished", "tournament_id"),
        ("tournament.finished", "public"),
        ("tournament.finished", "podium"),
        ("identity.linked", "anonymous_id"),
        ("identity.linked", "account_id"),
        ("player.updated", "player_id"),
        ("player.updated", "email_verified"),
        ("player.updated", "display_name_chosen"),
    ],
)
def test_each_other_event_type_requires_its_spec_fields(event_type: str, path: str) -> None:
    """A missing required field of the other types is missing_field naming it."""
    error = rejection(without_field(EXAMPLES[event_type], path))
    assert (error.reason, error.detail) == ("missing_field", f"{path}: field required")


def test_podium_errors_name_the_bad_entry() -> None:
    """An invalid podium entry is reported with its index."""
    error = rejection(with_field(EXAMPLES["tournament.finished"], "podium", ["a", 5]))
    assert error.detail.startswith("podium[1]: ")


# --- never anything but InvalidEvent ------------------------------------------------------

JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
FIELD_NAMES = sorted(
    {name for model in EVENT_MODELS.values() for name in model.__struct_fields__}
    | {"player_id", "is_bot", "network", "ip"}
)


def parses_or_rejects(raw: str | bytes) -> None:
    """parse_event either returns an event or raises InvalidEvent with a known reason."""
    try:
        parse_event(raw, now=NOW)
    except InvalidEvent as error:
        assert error.reason in REASONS
        assert error.detail


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_arbitrary_text_never_raises_anything_but_invalid_event(raw: str) -> None:
    """Any str input is either an event or an InvalidEvent."""
    parses_or_rejects(raw)


@settings(max_examples=300, deadline=None)
@given(st.binary())
def test_arbitrary_bytes_never_raise_anything_but_invalid_event(raw: bytes) -> None:
    """Any bytes input is either an event or an InvalidEvent."""
    parses_or_rejects(raw)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES)
def test_arbitrary_json_values_never_raise_anything_but_invalid_event(value: Any) -> None:
    """Any JSON document is either an event or an InvalidEvent."""
    parses_or_rejects(json.dumps(value))


@settings(max_examples=500, deadline=None)
@given(
    st.sampled_from(sorted(EXAMPLES)),
    st.dictionaries(st.sampled_from(FIELD_NAMES), JSON_VALUES, max_size=4),
    st.sampled_from(["", "winner", "loser"]),
)
def test_examples_with_arbitrary_field_values_never_raise_anything_but_invalid_event(
    event_type: str, overrides: dict[str, Any], where: str
) -> None:
    """Valid examples with fields replaced by arbitrary JSON still never crash."""
    payload = copy.deepcopy(EXAMPLES[event_type])
    target = payload.get(where) if where else payload
    if isinstance(target, dict):
        target.update(overrides)
    parses_or_rejects(json.dumps(payload))


# --- redact ---------------------------------------------------------------------------------


def test_redact_removes_every_player_ip_and_keeps_everything_else() -> None:
    """Raw addresses disappear; all other fields are copied unchanged."""
    payload = json.loads(SPEC_EXAMPLE)
    payload["winner"]["ip"] = "2001:db8::1"
    clean = redact(payload)
    assert "ip" not in clean["winner"] and "ip" not in clean["loser"]
    assert "203.0.113.9" not in json.dumps(clean)
    expected = json.loads(SPEC_EXAMPLE)
    del expected["loser"]["ip"]
    assert clean == expected


def test_redact_does_not_modify_its_input() -> None:
    """The original payload keeps its ip fields."""
    payload = json.loads(SPEC_EXAMPLE)
    before = copy.deepcopy(payload)
    clean = redact(payload)
    assert payload == before
    clean["winner"]["player_id"] = "mallory"
    assert payload["winner"]["player_id"] == "alice"


def test_redact_removes_ip_keys_at_any_depth_including_lists() -> None:
    """Server-added objects carrying `ip` are cleaned too."""
    payload = {"ip": "1.2.3.4", "spectators": [{"id": "s", "ip": "5.6.7.8"}, [{"ip": "x"}]]}
    assert redact(payload) == {"spectators": [{"id": "s"}, [{}]]}


def test_redact_handles_very_deep_payloads() -> None:
    """Redaction is iterative, so depth never causes a RecursionError."""
    payload: dict[str, Any] = {"ip": "1.2.3.4"}
    for _ in range(5000):
        payload = {"next": payload}
    node = redact(payload)
    for _ in range(5000):
        node = node["next"]
    assert node == {}


# --- published JSON Schema ----------------------------------------------------------------

SCHEMA_FILES = {
    "game.finished": "game.finished.v1.json",
    "tournament.finished": "tournament.finished.v1.json",
    "identity.linked": "identity.linked.v1.json",
    "player.updated": "player.updated.v1.json",
}
REQUIRED = {
    "game.finished": ["type", "event_id", "ladder", "ended_at", "mode"],  # and one shape
    "tournament.finished": ["type", "event_id", "ladder", "tournament_id", "public", "podium"],
    "identity.linked": ["type", "event_id", "ladder", "anonymous_id", "account_id"],
    "player.updated": [
        "type",
        "event_id",
        "ladder",
        "player_id",
        "email_verified",
        "display_name_chosen",
    ],
}


def committed(event_type: str) -> dict[str, Any]:
    """The schema file committed for ``event_type``."""
    path = export.JSON_DIR / SCHEMA_FILES[event_type]
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def test_the_committed_schema_files_equal_a_fresh_export() -> None:
    """`python -m schemas.export --check` passes: the files are up to date."""
    assert sorted(export.build_all()) == sorted([*SCHEMA_FILES.values(), "receipt.v1.json"])
    assert export.stale() == []
    assert export.main(["--check"]) == 0


def test_the_export_check_fails_on_a_stale_or_missing_file(tmp_path: Path) -> None:
    """--check exits 1 when a file differs from the models or is missing."""
    assert export.main(["--dir", str(tmp_path)]) == 0
    assert export.main(["--check", "--dir", str(tmp_path)]) == 0
    (tmp_path / "game.finished.v1.json").write_text("{}\n", encoding="utf-8")
    (tmp_path / "player.updated.v1.json").unlink()
    assert export.stale(tmp_path) == ["game.finished.v1.json", "player.updated.v1.json"]
    assert export.main(["--check", "--dir", str(tmp_path)]) == 1


@pytest.mark.parametrize("event_type", sorted(SCHEMA_FILES))
def test_each_schema_file_is_draft_2020_12_with_its_id_and_spec_required_fields(
    event_type: str,
) -> None:
    """$schema, $id, title, required list and type const are as published."""
    schema = committed(event_type)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == f"https://ladder.dev/schemas/{event_type}.v1.json"
    assert schema["title"] and schema["description"]
    assert schema["required"] == REQUIRED[event_type]
    assert schema["properties"]["type"]["const"] == event_type
    assert schema["type"] == "object"


@pytest.mark.parametrize("event_type", sorted(SCHEMA_FILES))
def test_each_schema_example_is_accepted_by_the_parser_and_uses_only_known_fields(
    event_type: str,
) -> None:
    """The published examples are valid events and carry every required field: the type's
    example first, then its others (``<type>/<what>``: a game's draw and team games)."""
    schema = committed(event_type)
    others = [example for key, example in EXAMPLES.items() if key.startswith(f"{event_type}/")]
    assert [EXAMPLES[event_type], *others] == schema["examples"]
    for example in schema["examples"]:
        assert set(schema["required"]) <= set(example) <= set(schema["properties"])
        assert parse_event(json.dumps(example), now=NOW).type == event_type


def test_the_game_schema_expresses_the_server_facing_constraints() -> None:
    """Cube enum, casual mode, date-time with offset, player_id limits and ip formats."""
    schema = committed("game.finished")
    props = schema["properties"]
    assert props["cube"]["enum"] == [1, 2, 4, 8, 16, 32, 64]
    assert props["cube"]["type"] == "integer" and props["cube"]["default"] == 1
    assert props["mode"]["enum"] == ["ranked", "boosted", "casual", "tournament"]
    assert props["ended_at"]["format"] == "date-time"
    assert props["ended_at"]["pattern"].endswith("([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$")
    assert (props["match_length"]["minimum"], props["match_length"]["maximum"]) == (1, 64)
    assert props["result"]["default"] == "single"
    assert props["end_reason"]["default"] == "normal"
    assert (props["event_id"]["minLength"], props["event_id"]["maxLength"]) == (1, 128)
    assert props["ladder"]["pattern"] == "^[A-Za-z0-9_.-]+$"
    player = schema["$defs"]["PlayerRef"]
    assert player["required"] == ["player_id"]
    assert (
        player["properties"]["player_id"]["minLength"],
        player["properties"]["player_id"]["maxLength"],
    ) == (1, 128)
    assert player["properties"]["is_bot"]["default"] is False
    ip_string = player["properties"]["ip"]["anyOf"][0]
    assert ip_string["anyOf"] == [{"format": "ipv4"}, {"format": "ipv6"}]
    assert props["winner"] == props["loser"] == {"$ref": "#/$defs/PlayerRef"}


def test_the_tournament_schema_limits_the_podium_to_three_distinct_entries() -> None:
    """podium: 1 to 3 unique player ids; public is a boolean."""
    props = committed("tournament.finished")["properties"]
    assert (props["podium"]["minItems"], props["podium"]["maxItems"]) == (1, 3)
    assert props["podium"]["uniqueItems"] is True
    assert props["public"] == {"type": "boolean"}


def test_forbidden_characters_are_unicode_cc_cs_and_cf_plus_separators():
    """Identifiers refuse control characters and lone surrogates (Unicode Cc and Cs), format
    characters (Cf: bidi controls, zero-width spaces and joiners, the BOM...) and line and
    paragraph separators (Zl, Zp): the character class used for speed matches ``unicodedata``
    on every code point of the Basic Multilingual Plane, and ``check_identifier`` refuses every
    Cf code point beyond it too."""
    import unicodedata

    from schemas.events import FORBIDDEN_CHARACTERS, check_identifier

    for code in range(0x10000):
        ch = chr(code)
        expected = unicodedata.category(ch) in {"Cc", "Cs", "Cf", "Zl", "Zp"}
        assert expected == bool(FORBIDDEN_CHARACTERS.search(ch)), hex(code)
    astral = [c for c in range(0x10000, 0x110000) if unicodedata.category(chr(c)) == "Cf"]
    assert astral  # U+110BD, U+1D173...
    for code in astral:
        with pytest.raises(ValueError, match="format"):
            check_identifier(f"h-al{chr(code)}ice")


def test_an_id_with_a_zero_width_character_inside_is_refused_by_the_schema_and_the_worker():
    """ "h-al\u200bice" would be a second player beside "h-alice": every format character
    (Cf) inside an id is refused, by the published pattern and by the worker alike."""
    import unicodedata

    from schemas.events import IDENTIFIER_PATTERN, check_identifier

    pattern = re.compile(IDENTIFIER_PATTERN)
    for code in range(0x10000):
        if unicodedata.category(chr(code)) == "Cf":
            sneaky = f"h-al{chr(code)}ice"
            assert pattern.search(sneaky) is None, hex(code)
            with pytest.raises(ValueError):
                check_identifier(sneaky)
    assert pattern.search("h-alice") is not None
