"""What may be stored of a payload: raw addresses out, everything else intact."""

from __future__ import annotations

import json

import pytest

from worker.privacy import SCRUBBED, scrub, storable_payload

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


def test_a_payload_without_addresses_is_stored_byte_for_byte():
    """Nothing to hide, nothing changed."""
    raw = '{"type": "game.finished", "ended_at": "2026-11-29T18:04:05Z"}'
    assert raw == storable_payload(raw, KEY)
