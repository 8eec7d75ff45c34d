"""One batch's audit, ledger and player rows, built from the engine's decisions."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from engine import Decision
from engine.ladder import Event, MatchFinished
from schemas.receipt_bodies import After
from worker.store import game_players

# Every audit row carries every column: rows are written together (COPY or one JSON document).
AUDIT_DEFAULTS: dict[str, Any] = dict.fromkeys(
    ("mode", "winner_id", "loser_id", "cube", "coefficient", "match_length")
)


class Rows:
    """The rows a batch writes, built from the engine's decisions."""

    def __init__(self, now: datetime) -> None:
        self.now = now
        self.audit: list[dict[str, Any]] = []
        self.changes: list[dict[str, Any]] = []
        self.links: list[dict[str, Any]] = []
        self.tournaments: list[dict[str, Any]] = []
        self.seats: list[dict[str, Any]] = []  # the players of draws and team games

    def add(
        self,
        decision: Decision,
        event: Event,
        payload: dict[str, Any],
        ruleset: str,
        after: Sequence[After],
    ) -> None:
        """``after``: each of the decision's ledger changes with the player's games and
        provisional flag right after it (``receipts.players_after``)."""
        ladder, event_id, now = decision.ladder, decision.event_id, self.now
        self.audit.append(
            {
                **AUDIT_DEFAULTS,
                "ladder": ladder,
                "event_id": event_id,
                "type": decision.type,
                "outcome": str(decision.outcome),  # plain text: a driver may dump an enum's name
                "reason": text(decision.reason),
                "ruleset": ruleset,
                "ruleset_version": decision.ruleset_version,
                "ended_at": event.ended_at,
                "processed_at": now,
                "mode": decision.mode,
                "winner_id": decision.winner_id,
                "loser_id": decision.loser_id,
                "cube": decision.cube,
                "coefficient": decision.coefficient,
                "match_length": decision.match_length,
                "payload": payload,
                "digest": event.digest,
            }
        )
        for change, games, provisional in after:
            self.changes.append(
                {
                    "ladder": ladder,
                    "player_id": change.player_id,
                    "event_id": event_id,
                    "kind": str(change.kind),
                    "rating_before": change.before,
                    "rating_after": change.after,
                    "delta": change.delta,
                    "k": change.k,
                    "expected": change.expected,
                    "deviation": change.deviation,
                    "volatility": change.volatility,
                    "at": now,
                    "games": games,
                    "provisional": provisional,
                }
            )
        if decision.link is not None:
            link = decision.link
            self.links.append(
                {
                    "ladder": ladder,
                    "anonymous_id": link.anonymous_id,
                    "account_id": link.account_id,
                    "event_id": event_id,
                    "adopted": link.adopted,
                    "linked_at": now,
                }
            )
        if decision.players:  # a draw or a team game: its players (a 1v1 win has none)
            assert isinstance(event, MatchFinished)
            ranks = [team.rank for team in event.teams]
            self.seats += game_players.rows(
                ladder, event_id, decision.players, ranks, event.ended_at, now
            )
        if decision.tournament is not None:
            self.tournaments.append(
                {
                    "ladder": ladder,
                    "tournament_id": decision.tournament.tournament_id,
                    "event_id": event_id,
                    "public": decision.tournament.public,
                    "settled_at": now,
                }
            )


def text(reason: str | None) -> str | None:
    """A reason as plain text for a row (a driver may dump an enum's name)."""
    return None if reason is None else str(reason)
