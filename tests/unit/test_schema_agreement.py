"""The published JSON Schema files and the worker agree on every input, except the rules the
schemas state in ``x-ladder-rule`` because JSON Schema cannot express them (SPEC 3: "published
as JSON Schema files for game servers in any language, validated by the worker")."""

from __future__ import annotations

import json
import unicodedata
from datetime import UTC, datetime, timedelta
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemas import InvalidEvent, export, parse_event
from schemas.events import EARLIEST_ENDED_AT, parse_timestamp
from tests.schema_strategy import from_schema
from tests.unit.test_schemas import MINIMAL_GAME, with_field

NOW = datetime(2026, 11, 29, 18, 5, 0, tzinfo=UTC)
SCHEMAS = {t: json.loads((export.JSON_DIR / export.file_name(t)).read_text()) for t in export.RULES}
IDS = ("event_id", "player_id", "network", "tournament_id", "anonymous_id", "account_id")


def strings(value: Any, key: str = "") -> list[tuple[str, str]]:
    """(key, string) for every string value in ``value``, at any depth."""
    if isinstance(value, dict):
        return [pair for k, v in value.items() for pair in strings(v, k)]
    if isinstance(value, list):
        return [pair for item in value for pair in strings(item, key)]
    return [(key, value)] if isinstance(value, str) else []


def players_of(event: dict[str, Any]) -> list[dict[str, Any]]:
    """Every player object of a game (winner and loser, a draw's players, each team's)."""
    if event.get("type") != "game.finished":
        return []
    teams = event.get("teams") or []
    return [
        *(event[side] for side in ("winner", "loser") if isinstance(event.get(side), dict)),
        *(event.get("players") or []),
        *(player for team in teams for player in team["players"]),
    ]


def stated_rule_broken(event: dict[str, Any]) -> str | None:
    """Which ``x-ladder-rule`` the event breaks, or None."""
    if len(json.dumps(event).encode()) > 65536:
        return "size"
    for key, text in strings(event):
        if key in IDS and not unicodedata.is_normalized("NFC", text):
            return "nfc"
        if key == "podium" and not unicodedata.is_normalized("NFC", text):
            return "nfc"
    if "ended_at" in event and event["ended_at"] is not None:
        try:
            moment = parse_timestamp(event["ended_at"])
        except ValueError:
            return "timestamp range"
        if moment > NOW + timedelta(minutes=5):
            return "future"
    ids = [player["player_id"] for player in players_of(event)]
    if len(set(ids)) < len(ids):
        return "self_play"
    if len(ids) > 100:
        return "team size"
    if "anonymous_id" in event and event.get("anonymous_id") == event.get("account_id"):
        return "distinct link"
    return None


@pytest.mark.parametrize("event_type", sorted(SCHEMAS))
def test_every_event_type_states_the_rules_json_schema_cannot_express(event_type: str) -> None:
    """The size limit, NFC and the timestamp range are in description and x-ladder-rule."""
    schema = SCHEMAS[event_type]
    rules = schema["x-ladder-rule"]
    assert any("65536 bytes" in rule for rule in rules)
    assert any("NFC" in rule for rule in rules)
    assert any("0001-01-08T00:00:00Z" in rule for rule in rules)
    assert all(rule in schema["description"] for rule in rules)


@pytest.mark.parametrize("event_type", sorted(SCHEMAS))
def test_events_generated_from_the_schema_files_are_accepted_except_for_stated_rules(
    event_type: str,
) -> None:
    """Any event the schema file allows is accepted by the worker, or breaks a stated rule."""

    @settings(
        max_examples=150,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(from_schema(SCHEMAS[event_type]))
    def check(event: Any) -> None:
        try:
            raw = json.dumps(event, ensure_ascii=False)
            raw.encode("utf-8")
        except UnicodeEncodeError:
            raw = json.dumps(event)
        try:
            parse_event(raw, now=NOW)
        except InvalidEvent as error:
            assert stated_rule_broken(event) is not None, f"{error} for {raw}"

    check()


def variant(path: str, value: Any) -> dict[str, Any]:
    """The minimal game with one field set."""
    event: dict[str, Any] = json.loads(with_field(MINIMAL_GAME, path, value))
    return event


def schema_accepts(event: dict[str, Any]) -> bool:
    validator = jsonschema.Draft202012Validator(
        SCHEMAS[event["type"]], format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    return validator.is_valid(event)


def worker_accepts(event: dict[str, Any]) -> bool:
    try:
        parse_event(json.dumps(event), now=NOW)
    except InvalidEvent:
        return False
    return True


@pytest.mark.parametrize(
    "event",
    [
        variant("ended_at", "2016-12-31T23:59:60Z"),  # a leap second
        variant("ended_at", "0000-06-01T00:00:00Z"),  # year 0000
        variant("ended_at", "2026-11-29T18:04:05+24:00"),
        variant("ended_at", "2026-13-01T00:00:00Z"),
        variant("winner.player_id", "al\ud800ice"),  # a lone surrogate
        variant("winner.player_id", "\u200b"),  # only invisible
        variant("winner.player_id", "al\u202eice"),  # a bidi override
        variant("winner.player_id", "\ufeffalice"),  # a BOM
        variant("winner.player_id", "al\u2028ice"),  # a line separator
        variant("loser.ip", "fe80::1%eth0"),  # an IPv6 zone id
        variant("loser.ip", "198.51.100.1:5000"),
    ],
)
def test_what_the_worker_refuses_the_schema_refuses_too(event: dict[str, Any]) -> None:
    """The schema file and the worker give one verdict for inputs a pattern can express."""
    assert (False, False) == (schema_accepts(event), worker_accepts(event))


@pytest.mark.parametrize(
    "event",
    [
        variant("ended_at", "0001-01-01T00:30:00+01:00"),  # before year 1 in UTC
        variant("ended_at", "0001-01-01T00:00:00Z"),  # its 7-day window is not a date
        variant("winner.player_id", "cafe\u0301"),  # not NFC
        variant("loser.player_id", "alice"),  # self_play
        {
            "type": "identity.linked",
            "event_id": "l-1",
            "ladder": "prostriker",
            "anonymous_id": "same",
            "account_id": "same",
        },
        variant("meta", "x" * 70000),  # over 64 KiB
    ],
)
def test_what_only_the_worker_refuses_is_a_stated_rule(event: dict[str, Any]) -> None:
    """Where the schema cannot say it, the worker refuses and x-ladder-rule names the rule."""
    assert (True, False) == (schema_accepts(event), worker_accepts(event))
    assert stated_rule_broken(event) is not None


def shaped(**fields: Any) -> dict[str, Any]:
    """The minimal game's common fields with the shape fields given (no winner, no loser)."""
    base = {k: v for k, v in MINIMAL_GAME.items() if k not in ("winner", "loser")}
    return {**base, **fields}


def team(rank: Any, *ids: str, **player: Any) -> dict[str, Any]:
    """A team of the players ``ids``, each with ``player``'s fields."""
    return {"rank": rank, "players": [{"player_id": i, **player} for i in ids]}


DRAW = [{"player_id": "alice"}, {"player_id": "bob"}]
TEAMS = [team(1, "alice", "bob"), team(2, "carol")]
WIN = {"winner": {"player_id": "alice"}, "loser": {"player_id": "bob"}}


@pytest.mark.parametrize(
    "event",
    [
        shaped(result="draw", players=DRAW),
        shaped(teams=TEAMS),
        shaped(teams=TEAMS, result="single"),
        shaped(teams=[team(1, "a"), team(1, "b"), team(1, "c")]),  # everyone tied
        shaped(teams=[team(1, "a", weight=1), team(1000, "b", weight=0.001)]),
        shaped(teams=[team(r, f"p{r}") for r in range(1, 65)]),  # 64 teams of one
        shaped(
            teams=[team(1, *(f"a{i}" for i in range(64))), team(2, *(f"b{i}" for i in range(36)))]
        ),
        shaped(result="draw", players=DRAW, cube=2, match_length=3, end_reason="leave"),
        shaped(result="draw", players=[{"player_id": "a", "weight": 2}, {"player_id": "b"}]),
        {**MINIMAL_GAME, "result": "backgammon"},
    ],
)
def test_every_shape_of_a_game_is_accepted_by_the_schema_and_the_worker(
    event: dict[str, Any],
) -> None:
    """A 1v1 win, a draw, a team game and a free-for-all, at their limits: both accept (a
    draw's player has no weight: one sent is an unknown field, ignored)."""
    assert (True, True) == (schema_accepts(event), worker_accepts(event))


@pytest.mark.parametrize(
    "event",
    [
        shaped(),  # no shape
        shaped(result="draw"),
        {**shaped(), "winner": {"player_id": "alice"}},  # a winner without a loser
        {**shaped(), "loser": {"player_id": "bob"}},
        shaped(players=DRAW),  # a draw without result draw
        shaped(players=DRAW, result="gammon"),
        shaped(players=DRAW[:1], result="draw"),
        shaped(players=[*DRAW, {"player_id": "carol"}], result="draw"),
        shaped(**WIN, result="draw"),  # a draw has no winner
        shaped(**WIN, teams=TEAMS),
        shaped(**WIN, players=DRAW),
        shaped(result="draw", players=DRAW, teams=TEAMS),
        shaped(teams=TEAMS, result="draw"),
        shaped(teams=TEAMS, result="gammon"),
        shaped(teams=TEAMS[:1]),  # one team
        shaped(teams=[team(r, f"p{r}") for r in range(1, 66)]),  # 65 teams
        shaped(teams=[team(1, *(f"p{i}" for i in range(65))), team(2, "q")]),  # 65 in a team
        shaped(teams=[team(1), team(2, "b")]),  # a team of nobody
        shaped(teams=[team(0, "a"), team(2, "b")]),
        shaped(teams=[team(1001, "a"), team(2, "b")]),
        shaped(teams=[team("1", "a"), team(2, "b")]),
        shaped(teams=[team(1.5, "a"), team(2, "b")]),
        shaped(teams=[team(None, "a"), team(2, "b")]),
        shaped(teams=[{"players": [{"player_id": "a"}]}, team(2, "b")]),  # no rank
        shaped(teams=[team(1, "a", weight=0), team(2, "b")]),
        shaped(teams=[team(1, "a", weight=-0.5), team(2, "b")]),
        shaped(teams=[team(1, "a", weight=1.01), team(2, "b")]),
        shaped(teams=[team(1, "a", weight="1"), team(2, "b")]),
        shaped(teams=[team(1, "a", weight=True), team(2, "b")]),
        shaped(teams=[team(1, "a", weight=None), team(2, "b")]),
        shaped(teams=[team(1, "a", ip="fe80::1%eth0"), team(2, "b")]),
        shaped(teams=[team(1, "al\u200bice"), team(2, "b")]),
        shaped(teams=[team(1, "a"), team(2, "b")], players=None),  # null is no shape
        shaped(teams=None, result="draw", players=DRAW),
        shaped(**WIN, teams=None),
        {**shaped(teams=TEAMS), "winner": None, "loser": None},
        {**shaped(result="draw", players=DRAW), "winner": None},
        shaped(result="draw", players=[{"player_id": ""}, {"player_id": "b"}]),
        shaped(result="draw", players=[{"player_id": "a", "is_bot": "no"}, {"player_id": "b"}]),
    ],
)
def test_what_the_worker_refuses_of_a_game_shape_the_schema_refuses_too(
    event: dict[str, Any],
) -> None:
    """A game that is not exactly one whole shape, or whose shape is out of its limits, is
    refused by the schema file and the worker alike."""
    assert (False, False) == (schema_accepts(event), worker_accepts(event))


@pytest.mark.parametrize(
    ("event", "rule"),
    [
        (shaped(result="draw", players=[{"player_id": "a"}, {"player_id": "a"}]), "self_play"),
        (
            shaped(result="draw", players=[{"player_id": "a"}, {"player_id": "a", "is_bot": True}]),
            "self_play",
        ),
        (shaped(teams=[team(1, "a", "b"), team(2, "c", "a")]), "self_play"),
        (shaped(teams=[team(1, "a", "a"), team(2, "c")]), "self_play"),
        (
            shaped(
                teams=[
                    team(1, *(f"a{i}" for i in range(64))),
                    team(2, *(f"b{i}" for i in range(37))),
                ]
            ),
            "team size",
        ),
        (shaped(teams=[team(1, "cafe\u0301"), team(2, "b")]), "nfc"),
    ],
)
def test_what_only_the_worker_refuses_of_a_game_shape_is_a_stated_rule(
    event: dict[str, Any], rule: str
) -> None:
    """A player twice in one game and over 100 players are x-ladder-rule: the worker refuses."""
    assert (True, False) == (schema_accepts(event), worker_accepts(event))
    assert rule == stated_rule_broken(event)


def test_the_earliest_scorable_ended_at_is_accepted() -> None:
    """0001-01-08T00:00:00Z: its 7-day window starts at the first representable instant."""
    event = variant("ended_at", EARLIEST_ENDED_AT.isoformat().replace("+00:00", "Z"))
    assert (True, True) == (schema_accepts(event), worker_accepts(event))


@given(st.sampled_from(sorted(SCHEMAS)))
def test_the_schema_files_are_valid_draft_2020_12(event_type: str) -> None:
    """Each file is itself a valid JSON Schema (what ajv/dist/2020 compiles)."""
    jsonschema.Draft202012Validator.check_schema(SCHEMAS[event_type])


def test_every_format_character_inside_an_id_is_refused_by_the_schema_and_the_worker() -> None:
    """Unicode Cf (zero-width, bidi, BOM...) inside any id is refused: no look-alike players."""
    import sys

    from schemas.events import EXAMPLES

    formats = [c for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"]
    tournament, linked, updated = (
        EXAMPLES[name] for name in ("tournament.finished", "identity.linked", "player.updated")
    )
    for code in formats:
        bad = f"h-al{chr(code)}ice"
        for event in (
            variant("winner.player_id", bad),
            variant("loser.player_id", bad),
            variant("event_id", bad),
            variant("tournament_id", bad),
            {**tournament, "podium": ["alice", bad]},
            {**linked, "anonymous_id": bad},
            {**linked, "account_id": bad},
            {**updated, "player_id": bad},
        ):
            assert (False, False) == (schema_accepts(event), worker_accepts(event)), hex(code)
    for event in (tournament, linked, updated):
        assert (True, True) == (schema_accepts(event), worker_accepts(event))


def test_the_format_characters_beyond_the_bmp_are_those_of_unicodedata() -> None:
    """The pattern's Cf ranges past U+FFFF are written out; Python's Unicode data has no more."""
    from schemas.events import ASTRAL_FORMAT_CHARACTERS

    found = [c for c in range(0x10000, 0x110000) if unicodedata.category(chr(c)) == "Cf"]
    written = [c for low, high in ASTRAL_FORMAT_CHARACTERS for c in range(low, high + 1)]
    assert found == written
