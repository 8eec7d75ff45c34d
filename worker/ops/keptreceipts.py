"""Verify's check of the receipts kept in Redis (``ladder:receipt:<event_id>``).

SPEC 5: replaying the stored events in their scoring order reproduces every stored number,
the receipts kept under ``ladder:receipt:<event_id>`` among them. A kept receipt says what its
event did in the ladder as it stands: after a void, the receipts it changed are rewritten to
what the re-rated ladder made of their events (``worker.ops.moderation``), a voided game's to
outcome ``voided`` with no players. So each event processed since ``since`` (the oldest a kept
copy can be) whose key is still there is compared with its receipt as the replay of the
moderated ladder makes it (``engine.replay.Lived.moderated``): outcome, reason, ruleset
version, and each player's id, ratings before and after, delta, K, expected score, games and
provisional flag. The rank (``rank_after``) is the board's, not the replay's, and is not
compared. The keys are read in chunks, one ``MGET`` each. Most kept copies are the replay's
receipt as the worker wrote it, ranks aside: those are told by comparing the texts, and only
the rest are decoded and compared field by field.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from redis import Redis
from redis.cluster import RedisCluster

from engine import Decision, Replay
from engine.ladder import Event, when
from schemas import receipt_bodies as receipts
from schemas.receipt import Receipt
from schemas.receipt_bodies import same_processing
from worker import keys
from worker.boards.receipts import encode, same_but_ranks

CHUNK = 1000  # receipts read in one MGET
FACTS = ("outcome", "reason", "ruleset_version")
NOT_COMPARED = ("rank_after",)

# (event id, player id or None, field, kept, derived): one difference found
Differ = Callable[[str, str | None, str, Any, Any], None]


class KeptReceipts:
    """Collects each event's receipt as the moderated ladder makes it; compares a chunk of
    them with their kept copies at a time (``flush`` compares the rest)."""

    def __init__(self, redis: Redis | RedisCluster, since: datetime, differ: Differ) -> None:
        self.redis, self.since, self.differ = redis, since, differ
        self.made: list[tuple[str, Receipt]] = []
        self.compared = 0  # kept receipts compared

    def event(
        self,
        row: Any,
        event: Event,
        made: Decision | None,
        by: Replay,
        processed_at: datetime,
    ) -> None:
        """The stored event ``row`` (its event, the moderated decision and its replay)."""
        if processed_at < self.since:
            return
        if made is None:
            body = receipts.voided(row[0], event.ladder, event.type, row[3], processed_at)
        else:
            rules = by.rules_at(when(event, processed_at))
            body = receipts.scored(made, by.players, rules, processed_at)
        self.made.append((row[0], body))
        if len(self.made) >= CHUNK:
            self.flush()

    def flush(self) -> None:
        part, self.made = self.made, []
        if not part:
            return
        copies = self.redis.mget([keys.receipt(event_id) for event_id, _ in part])
        for (event_id, body), raw in zip(part, copies, strict=True):
            if raw is None:
                continue  # expired, or never written (the receipt is read from PostgreSQL)
            self.compared += 1
            if same_but_ranks(raw, encode(body)):
                continue  # the same text, ranks aside: the same receipt
            try:
                kept = json.loads(raw)
            except ValueError:
                self.differ(event_id, None, "receipt", "not JSON", None)
                continue
            if same_processing(kept, body):
                compare(event_id, kept, body, self.differ)


def compare(event_id: str, kept: dict[str, Any], made: Mapping[str, Any], differ: Differ) -> None:
    """A kept receipt against the one the replay makes (ranks aside)."""
    for name in FACTS:
        if kept.get(name) != made[name]:
            differ(event_id, None, f"receipt {name}", kept.get(name), made[name])
    kept_players = [_numbers(p) for p in kept.get("players") or []]
    made_players = [_numbers(p) for p in made["players"]]
    if kept_players == made_players:
        return
    for index in range(max(len(kept_players), len(made_players))):
        one = kept_players[index] if index < len(kept_players) else None
        other = made_players[index] if index < len(made_players) else None
        if one is None or other is None:
            player = (one or other or {}).get("player_id")
            differ(event_id, player, "receipt player", one, other)
            continue
        for name in sorted(set(one) | set(other)):
            if one.get(name) != other.get(name):
                field = f"receipt {name}"
                differ(event_id, other.get("player_id"), field, one.get(name), other.get(name))


def _numbers(entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict):
        return {"entry": entry}
    return {k: v for k, v in entry.items() if k not in NOT_COMPARED}
