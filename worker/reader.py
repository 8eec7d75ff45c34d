"""Reading leaderboards from Redis: ranks use standard competition ranking (1, 2, 2, 4)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, cast

from redis import Redis

from worker import keys

BOARDS = {"rating": keys.rating, "public": keys.public, "boosted": keys.boosted}


@dataclass(frozen=True)
class Entry:
    player_id: str
    rank: int
    rating: float

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def _decode(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def ranked(rows: list[tuple[Any, float]], first_rank: int) -> list[Entry]:
    """Entries from rows in descending score order whose first row has ``first_rank``."""
    entries: list[Entry] = []
    for index, (member, score) in enumerate(rows):
        if entries and score == entries[-1].rating:
            rank = entries[-1].rank
        else:
            rank = first_rank + index
        entries.append(Entry(_decode(member), rank, score))
    return entries


def top(redis: Redis, ladder: str, limit: int = 10, board: str = "rating") -> list[Entry]:
    key = BOARDS[board](ladder)
    rows = redis.zrevrange(key, 0, max(limit, 1) - 1, withscores=True)
    return ranked(cast(list[tuple[Any, float]], rows), 1)
