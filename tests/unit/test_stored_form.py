"""The stored form of an event (``events.payload``) and its digest, byte for byte.

Audit rows already written keep these payloads and digests: a duplicate is told from an
``event_id`` conflict by comparing digests, so the stored form of an event may never change.
Each case is the raw event, then its stored payload as JSON text (key order included) and its
SHA-256, as the worker wrote them for this network key.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from typing import get_args

import pytest

from engine.ladder import Event, MatchFinished, Side
from schemas import EVENT_MODELS, EXAMPLES, PlayerRef, parse_event, records
from schemas.events import struct_fields

NETWORK_KEY = b"k" * 32
NOW = datetime(2026, 12, 1, tzinfo=UTC)
CASUAL_CUP_GAME = {
    **EXAMPLES["game.finished"],
    "mode": "casual",
    "tournament_id": "cup-1",
    "winner": {"player_id": "alice", "is_bot": True, "ip": "198.51.100.7"},
    "loser": {"player_id": "bob", "network": "net-b", "ip": "203.0.113.9"},
}
LATE_CUP = {**EXAMPLES["tournament.finished"], "ended_at": "2026-11-29T19:04:05.25+01:00"}

CASES = [
    (
        EXAMPLES["game.finished"],
        '{"type": "game.finished", "event_id": "g-000123", "ladder": "gammon42", "ended_at": '
        '"2026-11-29T18:04:05Z", "mode": "ranked", "winner": {"player_id": "alice", "is_bot": '
        'false, "network": "net-7f3a"}, "loser": {"player_id": "bob", "is_bot": false, '
        '"network": "ip-d07c32e952dd72a615eba0d2eb43d2fc"}, "cube": 4, "match_length": 1, '
        '"result": "gammon", "end_reason": "resign"}',
        "9027a5b3a8224542e13d93ecf1fb5f866808154c89c861b7d7c5fa20126db9eb",
    ),
    (
        EXAMPLES["tournament.finished"],
        '{"type": "tournament.finished", "event_id": "t-000042", "ladder": "gammon42", '
        '"tournament_id": "spring-cup-2026", "public": true, "podium": ["alice", "bob", '
        '"carol"]}',
        "717ddfba813a29c19dc391f1212c7ed8f2aa278f1695cdfd8117a476ffdac2b1",
    ),
    (
        EXAMPLES["identity.linked"],
        '{"type": "identity.linked", "event_id": "l-000007", "ladder": "prostriker", '
        '"anonymous_id": "anon-3f9c2d", "account_id": "acct-1001"}',
        "fefcc75d6d41ad0cd7169d5443b5e97781ef4b60a4568082390ec149670c368d",
    ),
    (
        EXAMPLES["player.updated"],
        '{"type": "player.updated", "event_id": "p-000009", "ladder": "fibs", "player_id": '
        '"alice", "email_verified": true, "display_name_chosen": true}',
        "5d291f663d57134d4a7c1b45997088fd87b3a29f271688f62ad33c182f9b95d7",
    ),
    (
        CASUAL_CUP_GAME,
        '{"type": "game.finished", "event_id": "g-000123", "ladder": "gammon42", "ended_at": '
        '"2026-11-29T18:04:05Z", "mode": "boosted", "winner": {"player_id": "alice", "is_bot": '
        'true, "network": "ip-66b1b2d7fd320774c33ff0d0d40e837c"}, "loser": {"player_id": "bob", '
        '"is_bot": false, "network": "net-b"}, "cube": 4, "match_length": 1, "result": '
        '"gammon", "end_reason": "resign", "tournament_id": "cup-1"}',
        "1f266d4d404383b896686d400eb2d881ee5ebedf04324110dc9bf634b7d66dd9",
    ),
    (
        LATE_CUP,
        '{"type": "tournament.finished", "event_id": "t-000042", "ladder": "gammon42", '
        '"tournament_id": "spring-cup-2026", "public": true, "podium": ["alice", "bob", '
        '"carol"], "ended_at": "2026-11-29T18:04:05.250000Z"}',
        "03406dd2c62ffc18cf5388fe61271c4003f72632f1474704ffed929bdb8e5641",
    ),
]


@pytest.mark.parametrize(("raw", "stored", "digest"), CASES)
def test_an_event_is_stored_and_digested_as_every_audit_row_before_it(raw, stored, digest):
    """Defaults filled in, ``casual`` as ``boosted``, ``ended_at`` in UTC, an ``ip`` as its
    network token, a field left unsent left out; the digest of that payload unchanged."""
    payload = records.stored_payload(parse_event(json.dumps(raw), now=NOW), NETWORK_KEY)
    assert stored == json.dumps(payload)
    assert digest == records.digest(payload)


def test_every_field_of_an_engine_event_is_a_field_of_its_contract_struct():
    """The engine's event is read from the stored payload by field name: each engine field
    (a side's too) names a field of the Struct the payload was stored from."""
    for kind in get_args(Event):
        if kind is MatchFinished:  # a draw's or team game's teams are read by hand (records)
            continue
        contract = {field.name for field in struct_fields(EVENT_MODELS[kind.type])}
        assert set() == {field.name for field in dataclasses.fields(kind)} - contract - {"digest"}
    sides = {field.name for field in dataclasses.fields(Side)}
    assert set() == sides - {field.name for field in struct_fields(PlayerRef)}


def test_a_draw_and_a_team_game_are_read_as_the_engine_s_match_with_ranks_and_weights():
    """A draw's two players are two teams of one with the same rank; a team game keeps its
    ranks and each player's weight; an ip is the token it hashes to (SPEC 7 shapes)."""
    sides = [{"player_id": "a", "ip": "203.0.113.9"}, {"player_id": "b", "ip": "203.0.113.10"}]
    base = {"type": "game.finished", "event_id": "d", "ladder": "chess", "mode": "ranked"}
    base["ended_at"] = "2026-11-29T18:04:05Z"
    draw = {**base, "result": "draw", "players": sides}
    lineup = [
        {"rank": 2, "players": [{"player_id": "a", "weight": 0.5}, {"player_id": "b"}]},
        {"rank": 1, "players": [{"player_id": "c"}]},
    ]
    team = {**base, "event_id": "t", "teams": lineup}
    read = [
        records.engine_event(
            records.stored_payload(parse_event(json.dumps(e), now=NOW), NETWORK_KEY)
        )
        for e in (draw, team)
    ]
    drawn, teams = read
    assert isinstance(drawn, MatchFinished) and isinstance(teams, MatchFinished)
    assert ("draw", (1, 1)) == (drawn.shape, tuple(t.rank for t in drawn.teams))
    (a,), (b,) = (t.players for t in drawn.teams)
    assert a.network is not None and a.network == b.network
    assert ("teams", ((2, (0.5, 1.0)), (1, (1.0,)))) == (
        teams.shape,
        tuple((t.rank, t.weights) for t in teams.teams),
    )
