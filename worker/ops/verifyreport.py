"""What ``ladder verify`` reports: each ladder's counts and the mismatches it found."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

LISTED = 100  # mismatches kept per ladder (all are counted)


@dataclass(frozen=True)
class Mismatch:
    event_id: str | None
    player_id: str | None
    field: str
    stored: Any
    derived: Any

    def as_json(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "player_id": self.player_id,
            "field": self.field,
            "stored": _plain(self.stored),
            "derived": _plain(self.derived),
        }


@dataclass
class LadderReport:
    ladder: str
    events: int = 0
    ledger_rows: int = 0
    players: int = 0
    mismatch_count: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    seconds: float = 0.0  # the replay and the comparison with PostgreSQL
    redis_seconds: float = 0.0  # the comparison of the boards with PostgreSQL
    since: datetime | None = None  # where a verify since an instant started (None: the start)
    kept_receipts: int | None = None  # the receipts kept in Redis compared (None: receipts off)

    def differ(self, mismatch: Mismatch) -> None:
        self.mismatch_count += 1
        if len(self.mismatches) < LISTED:
            self.mismatches.append(mismatch)

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "ledger_rows": self.ledger_rows,
            "players": self.players,
            "mismatch_count": self.mismatch_count,
            "mismatches": [m.as_json() for m in self.mismatches],
            "seconds": round(self.seconds, 3),
            "events_per_second": round(self.rate),
            "redis_seconds": round(self.redis_seconds, 3),
            "since": None if self.since is None else self.since.isoformat(),
            "kept_receipts": self.kept_receipts,
        }


class Advancing(Protocol):
    """What ``verify`` reports its progress to: a ``Progress``, or a share of one."""

    def advance(self, count: int) -> None: ...


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
