"""Builders for test events (the contract of SPEC section 3)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

_ids = itertools.count(1)


def iso(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def game(
    winner: str,
    loser: str,
    *,
    ladder: str = "gammon42",
    ended_at: datetime | None = None,
    event_id: str | None = None,
    mode: str = "ranked",
    **extra: Any,
) -> dict[str, Any]:
    winner_ref = {"player_id": winner, **extra.pop("winner_extra", {})}
    loser_ref = {"player_id": loser, **extra.pop("loser_extra", {})}
    return {
        "type": "game.finished",
        "event_id": event_id or f"e-{next(_ids)}",
        "ladder": ladder,
        "ended_at": iso(ended_at or datetime.now(UTC) - timedelta(seconds=1)),
        "mode": mode,
        "winner": winner_ref,
        "loser": loser_ref,
        **extra,
    }


def tournament(
    ladder: str, tournament_id: str, podium: list[str], public: bool = True, **extra: Any
) -> dict[str, Any]:
    return {
        "type": "tournament.finished",
        "event_id": extra.pop("event_id", f"t-{next(_ids)}"),
        "ladder": ladder,
        "tournament_id": tournament_id,
        "public": public,
        "podium": podium,
        **extra,
    }


def link(ladder: str, anonymous_id: str, account_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "identity.linked",
        "event_id": extra.pop("event_id", f"l-{next(_ids)}"),
        "ladder": ladder,
        "anonymous_id": anonymous_id,
        "account_id": account_id,
    }


def player_updated(ladder: str, player_id: str, email: bool, name: bool) -> dict[str, Any]:
    return {
        "type": "player.updated",
        "event_id": f"p-{next(_ids)}",
        "ladder": ladder,
        "player_id": player_id,
        "email_verified": email,
        "display_name_chosen": name,
    }
