"""Export: a whole board in rank order, streamed page by page with each player's card fields.

Each page is one read of the board (``reader.page``, whose cursor resumes right after its
boundary player even while the board moves), then one pipelined read of that page's player
hashes. Memory holds one page, whatever the size of the board.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from typing import Any

from worker import keys
from worker.boards import reader

PAGE = 1000  # entries per board read
COLUMNS = (
    "player_id",
    "rank",
    "rating",
    "games",
    "experience",
    "provisional",
    "percentile",
    "last_game_at",
    "deviation",
    "volatility",
)
CARD_FIELDS = ("games", "experience", "last_game_at", "deviation", "volatility")


def lines(
    redis: reader.Client, ladder: str, board: str = "rating", size: int = PAGE
) -> Iterator[dict[str, Any]]:
    """The board's entries in rank order, one dict of ``COLUMNS`` each."""
    cursor: str | None = None
    while True:
        found = reader.page(redis, ladder, cursor=cursor, size=size, board=board)
        if not found.entries:
            return
        with redis.pipeline(transaction=False) as pipe:
            for entry in found.entries:
                pipe.hmget(keys.player(ladder, entry.player_id), CARD_FIELDS)
            cards = pipe.execute()
        for entry, card in zip(found.entries, cards, strict=True):
            games, experience, last_game_at, deviation, volatility = card
            yield {
                "player_id": entry.player_id,
                "rank": entry.rank,
                "rating": entry.rating,
                "games": int(games or 0),
                "experience": int(experience or 0),
                "provisional": entry.provisional,
                "percentile": entry.percentile if entry.percentile is not None else 0.0,
                "last_game_at": _text(last_game_at) or None,
                "deviation": None if deviation is None else float(deviation),
                "volatility": None if volatility is None else float(volatility),
            }
        if found.next_cursor is None:
            return
        cursor = found.next_cursor


def jsonl(rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    """One JSON object a line."""
    for row in rows:
        yield json.dumps(row, ensure_ascii=False) + "\n"


def csv_lines(rows: Iterable[dict[str, Any]], board: str = "rating") -> Iterator[str]:
    """A header line, then one line a player (booleans as true/false, no last game empty).

    On the boosted board the score column is headed ``points`` and holds whole numbers: it
    counts points, not a rating."""
    points = board == "boosted"
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["points" if points and c == "rating" else c for c in COLUMNS])
    for row in rows:
        cells = {c: _cell(row[c]) for c in COLUMNS}
        cells["provisional"] = "true" if row["provisional"] else "false"
        if points:
            cells["rating"] = str(int(row["rating"]))
        writer.writerow(cells.values())
        if buffer.tell() > 64 * 1024:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return repr(value) if isinstance(value, float) else str(value)


def _text(value: bytes | str | None) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value
