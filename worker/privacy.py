"""Raw IP addresses never leave the worker: what is stored carries the network token instead.

SPEC 2.4 step 4: a server may send a player's raw ``ip``; the worker turns it into a keyed
hash of its /24 or /64 and never stores or logs the address. A dead-lettered payload keeps
everything else in meaning, so replaying it scores exactly as the original would have:

- a valid ``ip`` of a game's player (winner, loser, a draw's players, a team game's players)
  becomes the ``network`` token it would have produced
  (or nothing, for an address that is no network identity: loopback, link-local);
- an invalid one becomes :data:`SCRUBBED`, which is invalid too: the replay is refused for
  the same reason, and the address (``198.51.100.1:5000``) is not kept;
- every other ``ip`` key, at any depth, is removed (:func:`schemas.redact`), and any other
  string that parses as an address (escaped forms included, since the JSON is decoded
  first) is scrubbed;
- when the publisher's signature was verified on arrival, the stored body is re-signed by
  the worker (:func:`schemas.signing.attest`), so the replay is still the publisher's event.
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any

from engine import network_token
from schemas import redact
from schemas.events import is_ip_address
from schemas.parse import DEFAULT_MAX_BYTES
from schemas.signing import SIGNATURE, attest, attestation_key

# Anything that looks like an IPv4 or IPv6 address in text that is not a JSON object.
_IPV4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])")
_IPV6 = re.compile(r"(?<![0-9A-Fa-f:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![0-9A-Fa-f:])")
SCRUBBED = "[address removed]"


def storable_payload(
    raw: str | bytes,
    key: bytes,
    *,
    signed_by: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> str:
    """The payload as it may be stored: raw addresses replaced by tokens or scrubbed.

    ``signed_by`` is the publisher whose signature on ``raw`` was verified (None if none).
    A payload over ``max_bytes`` is never parsed: it is refused for its size alone.
    """
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    if len(text) > max_bytes:
        return scrub(text)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return scrub(text)
    if not isinstance(data, dict | list):
        return scrub(text)
    try:
        stored = _storable(data, key)
    except RecursionError:
        return scrub(text)
    serialised = _dumps(stored)
    clean = scrub(serialised)
    if stored == data and clean == serialised and scrub(text) == text:
        return text  # nothing to hide: kept byte for byte
    if clean != serialised:
        stored = json.loads(clean)
    if signed_by is not None and isinstance(stored, dict) and stored.get(SIGNATURE):
        stored = attest(stored, attestation_key(key))
    return _dumps(stored)


def _storable(data: dict[str, Any] | list[Any], key: bytes) -> Any:
    """``data`` with every ``ip`` removed; a player's own becomes a token or the marker."""
    found: dict[tuple[Any, ...], tuple[bool, str | None]] = {}
    if isinstance(data, dict):
        for path, ref in _players(data):
            if "ip" in ref:
                ip = ref["ip"]
                if ip is None:
                    continue  # an explicit null is the default: nothing to replace
                valid = is_ip_address(ip)
                found[path] = (valid, network_token(ip, key) if valid else None)
    stored = redact(data) if isinstance(data, dict) else redact({"": data})[""]
    for path, (valid, token) in found.items():
        ref = stored
        for step in path:
            ref = ref[step]
        if not valid:
            ref["ip"] = SCRUBBED  # still not an address: the replay is refused as before
        elif ref.get("network") is None and token is not None:
            ref["network"] = token
    return stored


def _players(data: dict[str, Any]) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """Where a game names its players (a 1v1's winner and loser, a draw's players, a team
    game's teams' players), each with its path in ``data``."""
    found: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((side,), data[side]) for side in ("winner", "loser") if isinstance(data.get(side), dict)
    ]
    players = data.get("players")
    if isinstance(players, list):
        found += [(("players", i), p) for i, p in enumerate(players) if isinstance(p, dict)]
    teams = data.get("teams")
    for t, team in enumerate(teams if isinstance(teams, list) else []):
        members = team.get("players") if isinstance(team, dict) else None
        for i, p in enumerate(members if isinstance(members, list) else []):
            if isinstance(p, dict):
                found.append((("teams", t, "players", i), p))
    return found


def _dumps(data: Any) -> str:
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate stays an escape, so it re-validates alike
        return json.dumps(data, separators=(",", ":"))
    return text


def _scrubbed(match: re.Match[str]) -> str:
    """Only what really parses as an address: ``18:04:05`` in a timestamp is not one."""
    try:
        ipaddress.ip_address(match.group(0))
    except ValueError:
        return match.group(0)
    return SCRUBBED


def scrub(text: str) -> str:
    return _IPV6.sub(_scrubbed, _IPV4.sub(_scrubbed, text))
