"""Event signing: an HMAC-SHA256 over the event's canonical body, per publisher.

A signed event carries two more fields: ``publisher`` (the game server's name) and
``signature`` (lowercase hex HMAC-SHA256 with that publisher's secret). The canonical body is
the event object without ``signature``, serialised as JSON with keys sorted, no spaces, and
non-ASCII characters kept as UTF-8: what any language's JSON library produces with those
three settings.

A publisher may be limited to some ladders; its signature on an event for another ladder is
not acceptable. When the worker stores an event it verified (a dead letter, with raw
addresses replaced), it re-signs the stored body with a key of its own (:func:`attest`), so
the stored event is still accepted as coming from its publisher when it is replayed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

SIGNATURE = "signature"
PUBLISHER = "publisher"
#: Marks a signature the worker made itself over a body it stored (never a publisher's).
ATTESTED = "ladder-verified:"


def canonical_body(event: Mapping[str, Any]) -> bytes:
    body = {k: v for k, v in event.items() if k != SIGNATURE}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8")


def signature(event: Mapping[str, Any], secret: bytes | str) -> str:
    """``secret`` as bytes, or as text (its UTF-8 bytes, as the worker reads its secrets)."""
    key = secret.encode("utf-8") if isinstance(secret, str) else secret
    return hmac.new(key, canonical_body(event), hashlib.sha256).hexdigest()


def sign(event: Mapping[str, Any], publisher: str, secret: bytes | str) -> dict[str, Any]:
    """A copy of ``event`` with ``publisher`` and its ``signature`` added; ``secret`` is bytes
    or text (the same secret either way: text is taken as its UTF-8 bytes)."""
    signed = {**event, PUBLISHER: publisher}
    signed[SIGNATURE] = signature(signed, secret)
    return signed


def attestation_key(worker_key: bytes) -> bytes:
    """The worker's own signing key, derived from its secret network key (domain-separated)."""
    return hmac.new(worker_key, b"ladder: stored-event attestation", hashlib.sha256).digest()


def attest(event: Mapping[str, Any], key: bytes) -> dict[str, Any]:
    """A copy of ``event`` (already verified, then changed by the worker) signed by the worker.

    ``publisher`` is kept: the event still counts as published by it.
    """
    attested = {k: v for k, v in event.items() if k != SIGNATURE}
    attested[SIGNATURE] = ATTESTED + signature(attested, key)
    return attested


def verify(
    event: Mapping[str, Any],
    secrets: Mapping[str, bytes],
    *,
    required: bool,
    ladders: Mapping[str, frozenset[str]] | None = None,
    attestation: bytes | None = None,
) -> str | None:
    """Why the event's signature is not acceptable, or None when it is.

    ``ladders`` limits a publisher to the ladders named (a publisher absent from it may sign
    for any ladder); ``attestation`` is the worker's own key (:func:`attestation_key`).
    """
    claimed = event.get(SIGNATURE)
    if claimed is None:
        return "the event is not signed" if required else None
    publisher = event.get(PUBLISHER)
    secret = secrets.get(publisher) if isinstance(publisher, str) else None
    if secret is None or not isinstance(publisher, str):
        return "unknown publisher"
    if isinstance(claimed, str) and attestation is not None and claimed.startswith(ATTESTED):
        secret, claimed = attestation, claimed.removeprefix(ATTESTED)
    if not isinstance(claimed, str) or not hmac.compare_digest(claimed, signature(event, secret)):
        return "the signature does not match the body"
    allowed = (ladders or {}).get(publisher)
    ladder = event.get("ladder")
    if allowed is not None and ladder not in allowed:
        shown = ladder if isinstance(ladder, str) and ladder.isprintable() else "?"
        return f"publisher {publisher!r} may not publish to ladder {shown[:64]!r}"
    return None
