"""Raw IP addresses never leave the worker: what is stored carries the network token instead.

SPEC 2.4 step 4: a server may send a player's raw ``ip``; the worker turns it into a keyed
hash of its /24 or /64 and never stores or logs the address. A dead-lettered payload keeps
everything else byte for byte in meaning: ``ip`` is replaced by the ``network`` token it
would have produced, so replaying it scores exactly as the original would have.
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any

from engine import network_token

# Anything that looks like an IPv4 or IPv6 address in text that is not a JSON object.
_IPV4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])")
_IPV6 = re.compile(r"(?<![0-9A-Fa-f:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![0-9A-Fa-f:])")
SCRUBBED = "[address removed]"


def storable_payload(raw: str | bytes, key: bytes) -> str:
    """The payload as it may be stored: raw addresses replaced by tokens or scrubbed."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return scrub(text)
    if not isinstance(data, dict):
        return scrub(text)
    changed = False
    for side in ("winner", "loser"):
        ref = data.get(side)
        if isinstance(ref, dict) and "ip" in ref:
            ip = ref.pop("ip")
            changed = True
            if "network" not in ref:
                ref["network"] = _token_or_marker(ip, key)
    if not changed:
        return text if not _contains_address(text) else scrub(text)
    return scrub(json.dumps(data, separators=(",", ":"), ensure_ascii=False))


def _token_or_marker(ip: Any, key: bytes) -> str:
    try:
        return network_token(str(ip), key)
    except ValueError:
        return SCRUBBED  # not an address: the event stays invalid, and nothing leaks


def _contains_address(text: str) -> bool:
    return scrub(text) != text


def _scrubbed(match: re.Match[str]) -> str:
    """Only what really parses as an address: ``18:04:05`` in a timestamp is not one."""
    try:
        ipaddress.ip_address(match.group(0))
    except ValueError:
        return match.group(0)
    return SCRUBBED


def scrub(text: str) -> str:
    return _IPV6.sub(_scrubbed, _IPV4.sub(_scrubbed, text))
