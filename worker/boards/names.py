"""The boards a ladder keeps and the Redis key of each: ``rating``, ``public``, ``boosted``,
``active`` and the archived ``season:<name>`` boards."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from schemas.errors import InvalidArgument
from schemas.ids import is_identifier
from worker import keys

if TYPE_CHECKING:
    from worker.ladders import LadderConfig

BOARDS: dict[str, Callable[[str], str]] = {
    "rating": keys.rating,
    "public": keys.public,
    "boosted": keys.boosted,
    "active": keys.active,
}
SEASON_PREFIX = "season:"
RATING_BOARDS = frozenset({"rating", "public", "active"})  # scores are ratings: flags apply


def board_key(ladder: str, board: str) -> str:
    """The zset of ``board``: rating, public, boosted, active or season:<name>."""
    if board in BOARDS:
        return BOARDS[board](ladder)
    if board.startswith(SEASON_PREFIX):
        name = board[len(SEASON_PREFIX) :]
        if is_identifier(name):
            return keys.season(ladder, name)
    raise InvalidArgument(
        f"board {board!r}: must be rating, public, boosted, active or season:<name>"
    )


def board_available(ladder_config: LadderConfig, board: str) -> bool:
    """Whether the ladder keeps this board (seasons are checked against Redis by the caller)."""
    if board == "public":
        return ladder_config.public_board
    if board == "boosted":
        return ladder_config.boosted_board
    if board == "active":
        return ladder_config.active_days is not None
    return True
