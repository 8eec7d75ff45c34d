"""Event signing: an HMAC-SHA256 over the event's canonical body, per publisher.

A signed event carries two more fields: ``publisher`` (the game server's name) and
``signature`` (lowercase hex HMAC-SHA256 with that publisher's secret). The canonical body is
the event object without ``signature``, serialised as JSON with keys sorted, no spaces, and
non-ASCII characters kept as UTF-8: what any language's JSON library produces with those
three settings.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

SIGNATURE = "signature"
PUBLISHER = "publisher"


def canonical_body(event: Mapping[str, Any]) -> bytes:
    body = {k: v for k, v in event.items() if k != SIGNATURE}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8")


def signature(event: Mapping[str, Any], secret: bytes) -> str:
    return hmac.new(secret, canonical_body(event), hashlib.sha256).hexdigest()


def sign(event: Mapping[str, Any], publisher: str, secret: bytes) -> dict[str, Any]:
    """A copy of ``event`` with ``publisher`` and its ``signature`` added."""
    signed = {**event, PUBLISHER: publisher}
    signed[SIGNATURE] = signature(signed, secret)
    return signed


def verify(event: Mapping[str, Any], secrets: Mapping[str, bytes], *, required: bool) -> str | None:
    """Why the event's signature is not acceptable, or None when it is."""
    claimed = event.get(SIGNATURE)
    if claimed is None:
        return "the event is not signed" if required else None
    publisher = event.get(PUBLISHER)
    secret = secrets.get(publisher) if isinstance(publisher, str) else None
    if secret is None:
        return "unknown publisher"
    if not isinstance(claimed, str) or not hmac.compare_digest(claimed, signature(event, secret)):
        return "the signature does not match the body"
    return None
