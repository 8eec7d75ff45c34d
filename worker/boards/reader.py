"""Reading leaderboards from Redis: top N, pages, ranks, neighbours, cards and previews.

Ranks use standard competition ranking (1, 2, 2, 4): a player's rank is one more than the
number of players with a strictly higher score, in every call. Equal scores are listed by
player id ascending (byte order of the UTF-8 id); ZREVRANGE alone would list them by player
id descending, so every read goes through one Lua script that fixes the order inside each
tie group, including a group cut by a page boundary, and reads the board atomically.

This module needs only ``redis`` and the pure engine; the audit-store reads (a player's
rating history) live in ``worker.store.history``.

Errors: ``UnknownPlayer`` (a ``LookupError``) for a player not on the board or without a
card; ``InvalidArgument`` (a ``ValueError``) for a bad board name, cursor, size or game;
its subclass ``InvalidCursor`` for a cursor that cannot be decoded.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import unicodedata
import weakref
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

from redis import Redis
from redis.cluster import RedisCluster

from engine import CUBE_VALUES, Game, PlayerState, display_rating
from engine import preview as engine_preview
from worker import keys

if TYPE_CHECKING:
    from worker.ladders import LadderConfig

BOARDS: dict[str, Callable[[str], str]] = {
    "rating": keys.rating,
    "public": keys.public,
    "boosted": keys.boosted,
}
SEASON_PREFIX = "season:"
RATING_BOARDS = frozenset({"rating", "public"})  # scores are ratings, so the flag applies
MAX_ID_LENGTH = 128
MAX_CURSOR_LENGTH = 1024
# Positions and counts handed to the script stay below this: Lua 5.1 turns numbers into
# command arguments with 14 significant digits, so larger ones would reach Redis as 1e+15.
MAX_POSITION = 10**12
Direction = Literal["next", "prev"]
Client = Redis | RedisCluster  # the leaderboards may live on a Redis Cluster

# KEYS[1]: the board. ARGV[1]: the operation; ARGV[2]: the key prefix of the ladder's player
# hashes, to add each entry's provisional flag (empty: no flags); then the operation's
# arguments:
#   window START COUNT                    positions START .. START+COUNT-1
#   before END SIZE                       the SIZE positions before END (END -1: the end)
#   around MEMBER RADIUS                  RADIUS positions either side of MEMBER
#   card MEMBER                           {around MEMBER 0, HGETALL KEYS[2]}: a rank and a
#                                         player hash read together (same slot: hash tag)
#   after_at / before_at MEMBER SCORE POSITION SIZE
#                                         SIZE positions after / before a cursor: MEMBER's
#                                         current position if it still has SCORE, else POSITION
# Reply: one JSON array [total, start, rank, member, score, flag, rank, member, ...] (a JSON
# string is decoded in C; a long multi-bulk reply is parsed by redis-py in Python); start is
# -1 when MEMBER is not on the board; flag is 1 for a provisional player. Member comparisons
# stay inside Redis commands because Lua's string comparison follows the server's locale, not
# byte order. The player hashes share the board's hash tag, so on a Redis Cluster they are in
# the board's slot.
_SCRIPT = """
local key = KEYS[1]
local op = ARGV[1]
local flags = ARGV[2]
local total = redis.call('ZCARD', key)

local function locate(member)
  local score = redis.call('ZSCORE', key, member)
  if not score then return nil end
  local higher = redis.call('ZCOUNT', key, '(' .. score, '+inf')
  local lower = redis.call('ZCOUNT', key, '-inf', '(' .. score)
  return higher + redis.call('ZRANK', key, member) - lower, score
end

local function emit(out, rank, member, score)
  out[#out + 1] = rank
  out[#out + 1] = member
  out[#out + 1] = score
  local flag = 0
  if flags ~= '' and redis.call('HGET', flags .. member, 'provisional') == '1' then flag = 1 end
  out[#out + 1] = flag
end

local function window(start, count)
  local out = {total, start}
  if count <= 0 then return out end
  -- one row more than asked: whether the last tie group goes on past the window
  local rows = redis.call('ZREVRANGE', key, start, start + count, 'WITHSCORES')
  local n = math.min(#rows / 2, count)
  local k = 0
  while k < n do
    local score = rows[2 * k + 2]
    local j = k + 1
    while j < n and rows[2 * j + 2] == score do j = j + 1 end
    -- rows k..j-1 share a score. ZREVRANGE lists a tie group by id descending: a group wholly
    -- inside the window is listed reversed; one cut by an edge of the window is read again in
    -- id order, at the same positions of its group.
    local higher = start + k
    local cut = false
    if k == 0 and start > 0 then
      higher = redis.call('ZCOUNT', key, '(' .. score, '+inf')
      cut = higher < start
    end
    if j == n and #rows / 2 > n and rows[2 * n + 2] == score then cut = true end
    if cut then
      local members = redis.call(
        'ZRANGEBYSCORE', key, score, score, 'LIMIT', start + k - higher, j - k)
      for _, member in ipairs(members) do emit(out, higher + 1, member, score) end
    else
      for i = j - 1, k, -1 do emit(out, higher + 1, rows[2 * i + 1], score) end
    end
    k = j
  end
  return out
end

if op == 'window' then
  return cjson.encode(window(tonumber(ARGV[3]), tonumber(ARGV[4])))
elseif op == 'before' then
  local stop = tonumber(ARGV[3])
  if stop < 0 or stop > total then stop = total end
  local start = math.max(0, stop - tonumber(ARGV[4]))
  return cjson.encode(window(start, stop - start))
elseif op == 'around' or op == 'card' then
  local position = locate(ARGV[3])
  local found = {total, -1}
  if position then
    local radius = tonumber(ARGV[4])
    local start = math.max(0, position - radius)
    found = window(start, position + radius + 1 - start)
  end
  if op == 'card' then return {cjson.encode(found), redis.call('HGETALL', KEYS[2])} end
  return cjson.encode(found)
else
  local position, score = locate(ARGV[3])
  if not position or tonumber(score) ~= tonumber(ARGV[4]) then
    position = tonumber(ARGV[5])
  end
  local size = tonumber(ARGV[6])
  if op == 'after_at' then
    return cjson.encode(window(position + 1, size))
  end
  position = math.min(position, total)
  local start = math.max(0, position - size)
  return cjson.encode(window(start, position - start))
end
"""


class InvalidArgument(ValueError):
    """A parameter that can never be satisfied: bad board name, size, cube, ..."""


class InvalidCursor(InvalidArgument):
    """A page cursor that was not produced by ``page`` for this ladder and board."""


class UnknownPlayer(LookupError):
    """The player is not on the board, or has no card on the ladder."""


@dataclass(frozen=True)
class Entry:
    """One line of a board; ``rating`` is the board's score (points on the boosted board)."""

    player_id: str
    rank: int
    rating: float
    provisional: bool = False

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Page:
    """A slice of a board and the cursors to the slices either side (None at either end)."""

    entries: list[Entry]
    total: int
    next_cursor: str | None
    prev_cursor: str | None

    def as_json(self) -> dict[str, Any]:
        return {
            "entries": [e.as_json() for e in self.entries],
            "total": self.total,
            "next_cursor": self.next_cursor,
            "prev_cursor": self.prev_cursor,
        }


@dataclass(frozen=True)
class Card:
    """A player's card: the player hash plus the rank on the rating board (None if unlisted)."""

    player_id: str
    rating: float
    rank: int | None
    games: int
    experience: int
    provisional: bool
    last_game_at: str | None
    updated_at: str | None
    boosted: int
    linked_to: str | None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Side:
    """One player of a preview: a stored player (``player_id`` set) or given numbers."""

    player_id: str | None
    state: PlayerState

    def as_json(self) -> dict[str, Any]:
        return {
            "player_id": self.player_id,
            "rating": self.state.rating,
            "games": self.state.rated_games,
            "experience": self.state.experience,
            "recent_ranked_games": self.state.recent_ranked_games,
        }


@dataclass(frozen=True)
class RatingPreview:
    """What one game between A and B would do to A's rating (seed 003's calculator)."""

    ladder: str
    ruleset: str
    version: str
    cube: int
    match_length: int
    a: Side
    b: Side
    win_probability: float
    if_win: float
    if_lose: float

    def as_json(self) -> dict[str, Any]:
        return {
            "ladder": self.ladder,
            "ruleset": self.ruleset,
            "version": self.version,
            "cube": self.cube,
            "match_length": self.match_length,
            "a": self.a.as_json(),
            "b": self.b.as_json(),
            "win_probability": self.win_probability,
            "if_win": self.if_win,
            "if_lose": self.if_lose,
        }


def board_key(ladder: str, board: str) -> str:
    """The zset of ``board``: rating, public, boosted or season:<name>."""
    if board in BOARDS:
        return BOARDS[board](ladder)
    if board.startswith(SEASON_PREFIX):
        name = board[len(SEASON_PREFIX) :]
        if _is_identifier(name):
            return keys.season(ladder, name)
    raise InvalidArgument(f"board {board!r}: must be rating, public, boosted or season:<name>")


def board_available(ladder_config: LadderConfig, board: str) -> bool:
    """Whether the ladder keeps this board (seasons are checked against Redis by the caller)."""
    if board == "public":
        return ladder_config.public_board
    if board == "boosted":
        return ladder_config.boosted_board
    return True


def top(redis: Client, ladder: str, limit: int = 10, board: str = "rating") -> list[Entry]:
    """The first ``limit`` entries of the board."""
    key = board_key(ladder, board)
    if limit <= 0:
        return []
    _, _, entries = _run(redis, ladder, board, key, "window", 0, min(limit, MAX_POSITION))
    return entries


def page(
    redis: Client,
    ladder: str,
    cursor: str | None = None,
    offset: int | None = None,
    size: int = 20,
    direction: Direction = "next",
    board: str = "rating",
) -> Page:
    """A page of ``size`` entries, forwards or backwards.

    With a cursor: the entries after it (``direction="next"``, use ``next_cursor``) or before
    it (``"prev"``, use ``prev_cursor``). A cursor remembers its boundary player, so a page
    resumes right after that player even when players above have moved; if the boundary
    player has moved or left, it resumes at the position the player held. Without a cursor:
    forwards from position ``offset`` (0-based, default 0), or backwards ending just before
    ``offset`` (default: the last page).
    """
    key = board_key(ladder, board)
    if size < 1:
        raise InvalidArgument(f"size: must be >= 1, got {size!r}")
    if direction not in ("next", "prev"):
        raise InvalidArgument(f"direction: must be next or prev, got {direction!r}")
    if offset is not None and offset < 0:
        raise InvalidArgument(f"offset: must be >= 0, got {offset!r}")
    size = min(size, MAX_POSITION)
    offset = None if offset is None else min(offset, MAX_POSITION)
    if cursor is not None:
        if offset is not None:
            raise InvalidArgument("give a cursor or an offset, not both")
        member, score, position = decode_cursor(cursor, ladder, board)
        op = "after_at" if direction == "next" else "before_at"
        total, start, entries = _run(redis, ladder, board, key, op, member, score, position, size)
    elif direction == "next":
        total, start, entries = _run(redis, ladder, board, key, "window", offset or 0, size)
    else:
        end = -1 if offset is None else offset
        total, start, entries = _run(redis, ladder, board, key, "before", end, size)
    if not entries:
        return Page([], total, None, None)
    last = start + len(entries) - 1
    first_cursor = encode_cursor(ladder, board, entries[0], start)
    last_cursor = encode_cursor(ladder, board, entries[-1], last)
    return Page(
        entries,
        total,
        next_cursor=last_cursor if last < total - 1 else None,
        prev_cursor=first_cursor if start > 0 else None,
    )


def rank(redis: Client, ladder: str, player: str, board: str = "rating") -> Entry:
    """The player's entry on the board; ``UnknownPlayer`` if they are not on it."""
    entries = around(redis, ladder, player, 0, board)
    return entries[0]


def around(
    redis: Client, ladder: str, player: str, radius: int = 5, board: str = "rating"
) -> list[Entry]:
    """The player's entry with up to ``radius`` entries above and below it.

    Near either end of the board the window is simply shorter, so the player is the first
    entry when they are first and the last when they are last.
    """
    key = board_key(ladder, board)
    if radius < 0:
        raise InvalidArgument(f"radius: must be >= 0, got {radius!r}")
    if not _is_identifier(player):
        raise UnknownPlayer(f"no player {player!r} on the {board} board of {ladder}")
    radius = min(radius, MAX_POSITION)
    _, start, entries = _run(redis, ladder, board, key, "around", player, radius)
    if start < 0:
        raise UnknownPlayer(f"no player {player!r} on the {board} board of {ladder}")
    return entries


def card(redis: Client, ladder: str, player: str) -> Card:
    """The player's card; ``UnknownPlayer`` if the ladder has no player hash for them."""
    if not _is_identifier(player):
        raise UnknownPlayer(f"no player {player!r} on {ladder}")
    board = [keys.rating(ladder), keys.player(ladder, player)]
    reply, raw = _script(redis)(keys=board, args=["card", "", player, 0])
    if not raw:
        raise UnknownPlayer(f"no player {player!r} on {ladder}")
    fields = {_decode(raw[i]): _decode(raw[i + 1]) for i in range(0, len(raw), 2)}
    _, start, entries = _parse(reply)
    return Card(
        player_id=player,
        rating=float(fields.get("rating") or 0.0),
        rank=entries[0].rank if start >= 0 and entries else None,
        games=int(fields.get("games") or 0),
        experience=int(fields.get("experience") or 0),
        provisional=fields.get("provisional") == "1",
        last_game_at=fields.get("last_game_at") or None,
        updated_at=fields.get("updated_at") or None,
        boosted=int(fields.get("boosted") or 0),
        linked_to=fields.get("linked_to") or None,
    )


def player_state(redis: Client, ladder: str, player: str) -> PlayerState:
    """A stored player's state for a preview (their recent ranked games are not in Redis)."""
    found = card(redis, ladder, player)
    return PlayerState(found.rating, found.games, found.experience)


def preview(
    ladder_config: LadderConfig,
    a: str | float | PlayerState | Side,
    b: str | float | PlayerState | Side,
    *,
    cube: int = 1,
    match_length: int = 1,
    redis: Client | None = None,
) -> RatingPreview:
    """A's win probability and A's change if A wins and if A loses, under the current rules.

    Each side is a player id (read from the player hash: needs ``redis``), a rating (a player
    with no games or experience), a full ``PlayerState``, or a ``Side`` (a stored player's
    state as the caller adjusted it). Gammon42's weekly volume is not in Redis: a player id
    counts as having played no ranked games this week; pass a ``Side`` whose state has
    ``recent_ranked_games`` (``worker.store.history.recent_ranked_games``) for the real K.
    """
    if isinstance(cube, bool) or cube not in CUBE_VALUES:
        raise InvalidArgument(f"cube: must be one of {sorted(CUBE_VALUES)}, got {cube!r}")
    if isinstance(match_length, bool) or match_length < 1:
        raise InvalidArgument(f"match_length: must be >= 1, got {match_length!r}")
    side_a = _side(ladder_config.name, a, redis)
    side_b = _side(ladder_config.name, b, redis)
    if side_a.player_id is not None and side_a.player_id == side_b.player_id:
        raise InvalidArgument("a player cannot play against themself")
    rules = ladder_config.current
    result = engine_preview(rules, side_a.state, side_b.state, Game(cube, match_length))
    return RatingPreview(
        ladder=ladder_config.name,
        ruleset=ladder_config.ruleset,
        version=rules.version,
        cube=cube,
        match_length=match_length,
        a=side_a,
        b=side_b,
        win_probability=result.win_probability,
        if_win=result.if_win,
        if_lose=result.if_lose,
    )


def format_preview(ladder_config: LadderConfig, found: RatingPreview) -> dict[str, str]:
    """The preview as players see it: '43.6 %', '+25.0', '-19.3'."""
    rules = ladder_config.current

    def signed(delta: float) -> str:
        shown = display_rating(rules, delta)
        return shown if shown.startswith("-") else f"+{shown}"

    return {
        "win_probability": f"{found.win_probability * 100:.1f} %",
        "if_win": signed(found.if_win),
        "if_lose": signed(found.if_lose),
    }


def encode_cursor(ladder: str, board: str, entry: Entry, position: int) -> str:
    """An opaque cursor naming a boundary entry: its player, score and position."""
    payload = {"l": ladder, "b": board, "m": entry.player_id, "s": entry.rating, "p": position}
    raw = json.dumps(payload, separators=(",", ":")).encode("utf-8", "surrogateescape")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def decode_cursor(cursor: str, ladder: str, board: str) -> tuple[str, float, int]:
    """The boundary (player, score, position) of a cursor made by ``page`` for this board."""
    if not isinstance(cursor, str) or not cursor or len(cursor) > MAX_CURSOR_LENGTH:
        raise InvalidCursor("cursor: not a cursor returned by this board")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        data = json.loads(raw.decode("utf-8", "surrogateescape"))
    except (binascii.Error, ValueError, UnicodeError):
        raise InvalidCursor("cursor: not a cursor returned by this board") from None
    if not isinstance(data, dict) or data.get("l") != ladder or data.get("b") != board:
        raise InvalidCursor("cursor: not a cursor returned by this board")
    member, score, position = data.get("m"), data.get("s"), data.get("p")
    if (
        not isinstance(member, str)
        or isinstance(score, bool)
        or not isinstance(score, int | float)
        or not math.isfinite(score)
        or isinstance(position, bool)
        or not isinstance(position, int)
        or not 0 <= position < MAX_POSITION
        or not _is_identifier(member)
    ):
        raise InvalidCursor("cursor: not a cursor returned by this board")
    return member, float(score), position


def _side(ladder: str, value: str | float | PlayerState | Side, redis: Client | None) -> Side:
    if isinstance(value, Side):
        return value
    if isinstance(value, PlayerState):
        return Side(None, value)
    if isinstance(value, str):
        if redis is None:
            raise InvalidArgument("a stored player's preview needs a Redis client")
        return Side(value, player_state(redis, ladder, value))
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidArgument(f"rating: must be a finite number, got {value!r}")
    return Side(None, PlayerState(float(value)))


_SCRIPTS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _script(redis: Client) -> Any:
    """The board script for this client, hashed once (it is loaded on first use)."""
    script = _SCRIPTS.get(redis)
    if script is None:
        script = _SCRIPTS[redis] = redis.register_script(_SCRIPT)
    return script


def _run(
    redis: Client, ladder: str, board: str, key: str, op: str, *args: Any
) -> tuple[int, int, list[Entry]]:
    """One script call: the entries, and on a rating board their provisional flags too."""
    flags = keys.player_prefix(ladder) if board in RATING_BOARDS else ""
    return _parse(_script(redis)(keys=[key], args=[op, flags, *args]))


def _parse(reply: bytes | str) -> tuple[int, int, list[Entry]]:
    data = json.loads(_decode(reply))
    total, start = int(data[0]), int(data[1])
    entries = [
        Entry(data[i + 1], int(data[i]), float(data[i + 2]), data[i + 3] == 1)
        for i in range(2, len(data), 4)
    ]
    return total, start, entries


def _decode(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def _is_identifier(value: str) -> bool:
    """Whether ``value`` could be a player id or season name (SPEC 3: 1-128 characters)."""
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_ID_LENGTH or value.isspace():
        return False
    return not any(unicodedata.category(c) in ("Cc", "Cs") for c in value)
