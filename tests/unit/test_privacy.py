"""What may be stored of a payload: raw addresses out, everything else intact."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from schemas import InvalidEvent, parse_event
from schemas.signing import ATTESTED, attest, attestation_key, sign, verify
from worker.privacy import SCRUBBED, scrub, storable_payload
from worker.settings import Settings, SettingsError

KEY = b"test-key"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("from 203.0.113.9 today", f"from {SCRUBBED} today"),
        ("v6 2001:db8::1 here", f"v6 {SCRUBBED} here"),
        ("ended 2026-11-29T18:04:05Z", "ended 2026-11-29T18:04:05Z"),  # a time is no address
        ("version 1.2.3.4.5", "version 1.2.3.4.5"),
        ("999.1.1.1", "999.1.1.1"),
    ],
)
def test_scrub_removes_only_what_parses_as_an_address(text, expected):
    """Only real IPv4/IPv6 addresses are removed from text that is not a JSON object."""
    assert expected == scrub(text)


def test_a_raw_ip_is_replaced_by_its_network_token_and_the_rest_is_kept():
    """The stored payload scores as the original would: same token, same fields."""
    raw = json.dumps(
        {
            "type": "game.finished",
            "ended_at": "2026-11-29T18:04:05Z",
            "winner": {"player_id": "a", "ip": "203.0.113.9"},
            "loser": {"player_id": "b", "ip": "203.0.113.200"},
        }
    )
    stored = json.loads(storable_payload(raw, KEY))
    assert "2026-11-29T18:04:05Z" == stored["ended_at"]
    assert stored["winner"]["network"] == stored["loser"]["network"]
    assert "203.0.113" not in json.dumps(stored)


def test_a_draw_s_and_a_team_game_s_addresses_become_their_tokens_too():
    """Every player of a draw or a team game keeps the token its address hashes to, so a
    dead-lettered one (``unsupported_shape``) replays as the original would have."""
    raw = json.dumps(
        {
            "type": "game.finished",
            "players": [
                {"player_id": "a", "ip": "203.0.113.9"},
                {"player_id": "b", "ip": "198.51.100.7"},
            ],
            "teams": [
                {"rank": 1, "players": [{"player_id": "c", "ip": "203.0.113.10"}]},
                {"rank": 2, "players": [{"player_id": "d", "ip": "not an address"}]},
            ],
        }
    )
    stored = json.loads(storable_payload(raw, KEY))
    a, b = stored["players"]
    (c,), (d,) = (team["players"] for team in stored["teams"])
    assert (a["network"], c["network"]) == (c["network"], a["network"]) != b["network"]
    assert ("ip" not in a, SCRUBBED) == (True, d["ip"])
    assert "203.0.113" not in json.dumps(stored)


def test_a_payload_without_addresses_is_stored_byte_for_byte():
    """Nothing to hide, nothing changed."""
    raw = '{"type": "game.finished", "ended_at": "2026-11-29T18:04:05Z"}'
    assert raw == storable_payload(raw, KEY)


# --- a stored dead letter re-validates to the original's verdict --------------------------

NOW = datetime(2026, 11, 29, 18, 5, 0, tzinfo=UTC)


def event(**sides: dict[str, object]) -> dict[str, object]:
    return {
        "type": "game.finished",
        "event_id": "g-1",
        "ladder": "gammon42",
        "ended_at": "2026-11-29T18:04:05Z",
        "mode": "ranked",
        "winner": {"player_id": "a", **sides.get("winner", {})},
        "loser": {"player_id": "b", **sides.get("loser", {})},
    }


def verdict(raw: str) -> str:
    try:
        parse_event(raw, now=NOW)
    except InvalidEvent as error:
        return error.reason
    return "valid"


@pytest.mark.parametrize(
    "ip", ["not-an-ip", "198.51.100.1:5000", "198.51.100.1 ", " 2001:db8::1", "fe80::1%eth0", 5]
)
def test_an_invalid_address_stays_invalid_in_the_stored_payload_and_is_not_kept(ip):
    """SPEC 5: "Replay is idempotent and scores exactly as the original would have"; an
    invalid ``ip`` is refused again on replay, and the address is not stored."""
    raw = json.dumps(event(winner={"ip": ip}, loser={"ip": "198.51.100.7"}))
    stored = storable_payload(raw, KEY)
    assert ("invalid_field", "invalid_field") == (verdict(raw), verdict(stored))
    assert "198.51.100" not in stored and "2001:db8" not in stored


def test_two_players_with_invalid_addresses_do_not_come_back_as_sharing_a_network():
    """Two bad addresses used to be stored as one marker token: shared_network on replay."""
    raw = json.dumps(event(winner={"ip": "not-an-ip"}, loser={"ip": "also-not"}))
    stored = json.loads(storable_payload(raw, KEY))
    assert "network" not in stored["winner"] and "network" not in stored["loser"]
    assert "invalid_field" == verdict(json.dumps(stored))


@pytest.mark.parametrize("ip", ["127.0.0.1", "fe80::1", "169.254.3.4"])
def test_an_address_that_is_no_network_identity_is_dropped_without_a_token(ip):
    """Loopback and link-local addresses say nothing about where a player is."""
    stored = json.loads(storable_payload(json.dumps(event(winner={"ip": ip})), KEY))
    assert {"player_id": "a"} == stored["winner"]


def test_an_explicit_null_network_takes_the_token_of_the_address():
    """``"network": null`` is the default, so the address decides, as in the original."""
    raw = json.dumps(event(winner={"network": None, "ip": "203.0.113.9"}))
    stored = json.loads(storable_payload(raw, KEY))
    assert stored["winner"]["network"].startswith("ip-")


@pytest.mark.parametrize(
    "raw",
    [
        '{"type": "game.finished", "meta": {"ip": "192\\u002e0\\u002e2\\u002e88"}}',
        '{"type": "game.finished", "meta": {"seen_from": "192\\u002e0\\u002e2\\u002e88"}}',
        '{"type": "game.finished", "winner": [{"ip": "192.0.2.88"}]}',
        '{"type": "game.finished", "a": [[{"b": {"ip": "192.0.2.88"}}]]}',
        '{"type": "game.finished", "\\u0069p": "192.0.2.88"}',
        '[{"ip": "192\\u002e0\\u002e2\\u002e88"}]',
    ],
)
def test_an_address_is_removed_at_any_depth_and_in_escaped_forms(raw):
    """SPEC 2.4: raw IPs are never stored, wherever they are in the payload and however escaped."""
    stored = storable_payload(raw, KEY)
    assert "192.0.2.88" not in json.dumps(json.loads(stored), ensure_ascii=False)
    assert "192.0.2.88" not in stored and "\\u002e" not in stored


def test_an_oversized_payload_is_stored_without_being_parsed(monkeypatch):
    """A payload over the limit is refused for its size; nothing decodes 10 MB of JSON."""

    def refuse(*args, **kwargs):
        raise AssertionError("json.loads called on an oversized payload")

    monkeypatch.setattr("worker.privacy.json.loads", refuse)
    raw = '{"ip": "192.0.2.88", "pad": "' + "x" * 10_000_000 + '"}'
    stored = storable_payload(raw, KEY)
    assert "192.0.2.88" not in stored


# --- a verified signature survives the rewrite ----------------------------------------------

SECRETS = {"server-a": b"secret-a"}


def test_a_verified_event_whose_address_was_replaced_is_still_accepted_as_its_publishers():
    """The worker re-signs the stored body with its own key; the publisher is kept."""
    raw = json.dumps(sign(event(loser={"ip": "203.0.113.9"}), "server-a", SECRETS["server-a"]))
    stored = json.loads(storable_payload(raw, KEY, signed_by="server-a"))
    assert "server-a" == stored["publisher"]
    attestation = attestation_key(KEY)
    assert None is verify(stored, SECRETS, required=True, attestation=attestation)
    stored["loser"]["player_id"] = "mallory"
    assert "does not match" in (
        verify(stored, SECRETS, required=True, attestation=attestation) or ""
    )


def test_an_unverified_signature_is_kept_as_sent_and_stays_bad():
    """Without a verdict the stored event keeps the publisher's signature, which no longer
    matches: the replay is refused as the original was."""
    raw = json.dumps(sign(event(loser={"ip": "203.0.113.9"}), "server-a", b"guessed"))
    stored = json.loads(storable_payload(raw, KEY))
    assert not stored["signature"].startswith(ATTESTED)
    assert verify(stored, SECRETS, required=True, attestation=attestation_key(KEY))


def test_an_attestation_made_with_another_worker_key_is_refused():
    """Only this deployment's key makes an attestation: a publisher cannot forge one."""
    forged = attest(event(), attestation_key(b"not-the-worker-key"))
    forged["publisher"] = "server-a"
    forged = attest(forged, attestation_key(b"not-the-worker-key"))
    assert verify(forged, SECRETS, required=True, attestation=attestation_key(KEY))


def test_a_publisher_limited_to_ladders_cannot_sign_for_another():
    """LADDER_PUBLISHER_SECRETS=name:secret:ladder1|ladder2 limits a publisher's ladders."""
    ladders = {"server-a": frozenset({"fibs", "prostriker"})}
    signed = sign(event(), "server-a", SECRETS["server-a"])  # for gammon42
    problem = verify(signed, SECRETS, required=True, ladders=ladders)
    assert "publisher 'server-a' may not publish to ladder 'gammon42'" == problem
    allowed = sign({**event(), "ladder": "fibs"}, "server-a", SECRETS["server-a"])
    assert None is verify(allowed, SECRETS, required=True, ladders=ladders)


@pytest.mark.parametrize(
    ("spec", "secrets", "ladders"),
    [
        ("a:s1", {"a": b"s1"}, {}),
        ("a:s1:fibs", {"a": b"s1"}, {"a": frozenset({"fibs"})}),
        (
            "a:s1:fibs|gammon42, b:s2",
            {"a": b"s1", "b": b"s2"},
            {"a": frozenset({"fibs", "gammon42"})},
        ),
        ("a:s:1:*", {"a": b"s:1"}, {}),
        ("a:s:1:fibs", {"a": b"s:1"}, {"a": frozenset({"fibs"})}),
    ],
)
def test_publisher_secrets_may_name_the_ladders_of_each_publisher(spec, secrets, ladders):
    """name:secret[:ladder1|ladder2]; ``*`` or no list means every ladder."""
    settings = Settings.from_env({"LADDER_PUBLISHER_SECRETS": spec, "LADDER_NETWORK_KEY": "k"})
    assert (secrets, ladders) == (settings.secrets(), settings.publisher_ladders)


@pytest.mark.parametrize("spec", ["a", "a:", ":s", "a:s1,a:s2"])
def test_a_malformed_or_repeated_publisher_is_a_settings_error(spec):
    """A mistake in LADDER_PUBLISHER_SECRETS stops the process with a clear message."""
    with pytest.raises(SettingsError, match="LADDER_PUBLISHER_SECRETS"):
        Settings.from_env({"LADDER_PUBLISHER_SECRETS": spec})
