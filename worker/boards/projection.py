"""Redis adapter for the read model: sorted-set leaderboards and player hashes.

Every write goes through one Lua script (``WRITE``) that takes a chunk of one ladder's
players as a single JSON argument. For each player it compares the ``version`` (bumped in
PostgreSQL on every change) with the one in the player's hash and applies only a newer state
(``newer``, a worker's batch), so a slow worker's late write can never roll a leaderboard
back; a rebuild and a repair use the same script in their own modes.

The client may be a plain ``Redis`` or a ``RedisCluster``: a ladder's keys share one hash
tag, hence one slot, so each call is a single-slot script. On one Redis the calls go in one
non-transactional pipeline; a cluster pipeline refuses scripts, so there each call is sent
on its own (one round trip per ladder and chunk, not per player).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from redis import Redis
from redis.client import Pipeline
from redis.cluster import RedisCluster
from redis.commands.core import Script

from engine import Player, PlayerState, is_provisional
from engine.ladder import on_public_board
from engine.player import STORED_FIELDS, stored_player
from schemas.receipt_bodies import ReceiptWrite
from worker import keys
from worker.boards.receipts import ReceiptSink, read_ranks
from worker.jsontext import compact
from worker.ladders import RulesVersion
from worker.lua import lua_source, run

if TYPE_CHECKING:
    from worker.ladders import Config, LadderConfig

CHUNK = 256  # players per script call: keeps each call short while Redis is blocked by it


def is_public(ladder_config: LadderConfig, record: Player) -> bool:
    """On the public list (the engine's rule, under the ruleset in force now)."""
    return on_public_board(record, ladder_config.current, ladder_config.policy)


def card(ladder_config: LadderConfig, record: Player) -> dict[str, str]:
    """The player hash: ``ladder:{L}:player:<id>``."""
    state = PlayerState(
        record.rating, record.rated_games, record.experience, deviation=record.deviation
    )
    fields = {
        "rating": repr(float(record.rating)),
        "games": str(record.rated_games),
        "experience": str(record.experience),
        "provisional": "1" if is_provisional(ladder_config.current, state) else "0",
        "updated_at": record.updated_at.isoformat() if record.updated_at else "",
        "version": str(record.version),
        "listed": "1" if record.listed else "0",
        "boosted": str(record.boosted_points),
    }
    if record.last_game_at is not None:
        fields["last_game_at"] = record.last_game_at.isoformat()
    if record.linked_to:
        fields["linked_to"] = record.linked_to
    if record.banned:
        fields["banned"] = "1"
    if record.deviation is not None:
        fields["deviation"] = repr(float(record.deviation))
    if record.volatility is not None:
        fields["volatility"] = repr(float(record.volatility))
    return fields


# The script and what its KEYS and ARGV hold: write.lua.
WRITE = lua_source("worker.boards", "write.lua")


PlayerRow = Sequence[Any]
"""A stored player's values, named by ``engine.player.STORED_FIELDS`` in that order."""

# What a board row is made of, read from a player row by name (one C call per row).
_SHOWN = operator.itemgetter(
    *(
        STORED_FIELDS.index(name)
        for name in (
            "player_id",
            "rating",
            "rated_games",
            "experience",
            "listed",
            "boosted_points",
            "email_verified",
            "display_name_chosen",
            "linked_to",
            "version",
            "last_game_at",
            "updated_at",
            "banned",
            "deviation",
            "volatility",
        )
    )
)


class BoardRows:
    """Turns player rows into what ``WRITE`` reads: a player's boards and card.

    ``card`` and ``is_public`` define a player's card and public flag; for a million players
    (a rebuild) or every batch (a worker) calling them is most of the time spent. This computes
    the same fields directly and asks those functions only once per distinct input they read
    (the ruleset's provisional rule reads games and experience; public eligibility reads
    e-mail, display name and experience). A test pins the result equal to ``card`` and
    ``is_public`` for every ruleset.
    """

    def __init__(self, ladder_config: LadderConfig, now: datetime | None = None) -> None:
        self.config = frozen_rules(ladder_config)
        days = ladder_config.active_days
        # The active board holds players whose last rated game ended at or after this.
        self.active_since = (
            None if days is None else (now or datetime.now(UTC)) - timedelta(days=days)
        )
        self.rules = self.config.current
        self._provisional: dict[tuple[int, int, float | None], str] = {}
        self._public: dict[tuple[bool, bool, int, float | None], int] = {}
        self._iso: dict[tuple[datetime, Any], str] = {}

    def iso(self, when: datetime) -> str:
        """``when.isoformat()``, remembered: the players of one batch share ``updated_at``
        and the two players of a game share ``last_game_at``."""
        key = (when, when.tzinfo)
        text = self._iso.get(key)
        if text is None:
            if len(self._iso) >= 100_000:
                self._iso.clear()
            text = self._iso[key] = when.isoformat()
        return text

    def row(self, r: PlayerRow) -> list[Any]:
        (
            pid,
            rating,
            games,
            experience,
            listed,
            boosted,
            email,
            name,
            linked,
            version,
            last_game_at,
            updated_at,
            banned,
            deviation,
            volatility,
        ) = _SHOWN(r)
        shown = repr(float(rating))
        ranked_by = self.rules.board_score(rating, deviation)  # the rating, but openskill's
        score = shown if ranked_by == rating else repr(float(ranked_by))
        provisional = self._provisional.get((games, experience, deviation))
        if provisional is None:
            state = PlayerState(float(rating), games, experience, deviation=deviation)
            provisional = "1" if is_provisional(self.rules, state) else "0"
            self._provisional[(games, experience, deviation)] = provisional
        fields = [
            "rating",
            shown,
            "games",
            str(games),
            "experience",
            str(experience),
            "provisional",
            provisional,
            "updated_at",
            self.iso(updated_at) if updated_at else "",
            "version",
            str(version),
            "listed",
            "1" if listed else "0",
            "boosted",
            str(boosted),
        ]
        if last_game_at is not None:
            fields += ["last_game_at", self.iso(last_game_at)]
        if linked:
            fields += ["linked_to", linked]
        if banned:
            fields += ["banned", "1"]
        if deviation is not None:
            fields += ["deviation", repr(float(deviation))]
        if volatility is not None:
            fields += ["volatility", repr(float(volatility))]
        on_board = 1 if listed and not linked and not banned else 0  # as on_rating_board
        public = 0
        if on_board and self.config.public_board:
            found = self._public.get((email, name, experience, deviation))
            if found is None:
                record = stored_player(r)
                found = 1 if is_public(self.config, record) else 0
                self._public[(email, name, experience, deviation)] = found
            public = found
        on_boosted = "0" if linked or banned else str(boosted)  # linked or banned: off every board
        active, since = -1, "0"  # -1: the ladder keeps no active board
        if self.active_since is not None:
            recent = last_game_at is not None and last_game_at >= self.active_since
            active = 1 if on_board and recent else 0
            if last_game_at is not None:
                since = repr(last_game_at.timestamp())
        return [pid, str(version), on_board, score, public, on_boosted, fields, active, since]


as_row: Callable[[Player], PlayerRow] = operator.attrgetter(*STORED_FIELDS)
"""A player as a stored row (``STORED_FIELDS`` in order), read in one C call."""


def frozen_rules(ladder_config: LadderConfig) -> LadderConfig:
    """The ladder with only the rules in force now: ``current`` costs nothing per player."""
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    only = RulesVersion(effective_from=epoch, rules=ladder_config.current)
    return ladder_config.model_copy(update={"versions": (only,)})


def write_rows(
    client: Redis | RedisCluster | Pipeline,
    script: Script,
    boards: Sequence[str],
    ladder: str,
    rows: list[list[Any]],
    mode: str,
) -> Any:
    """``boards``: rating, public, boosted, the set of ids written, active and its index of
    last games (see ``WRITE``)."""
    ids, payload = encode_rows(rows)
    return write_payload(client, script, boards, ladder, ids, payload, mode)


def encode_rows(rows: list[list[Any]]) -> tuple[list[str], str]:
    """One ``WRITE`` call's player ids and its ARGV[1] (compact JSON of the rows)."""
    return [row[0] for row in rows], compact(rows)


def write_payload(
    client: Redis | RedisCluster | Pipeline,
    script: Script,
    boards: Sequence[str],
    ladder: str,
    player_ids: Sequence[str],
    payload: str,
    mode: str,
) -> Any:
    """``write_rows`` with the rows already encoded (``payload``; ``player_ids`` their ids in
    order)."""
    hashes = [keys.player(ladder, pid) for pid in player_ids]
    return run(script, client, [*boards, *hashes], [payload, mode])


class Projection:
    def __init__(
        self,
        redis: Redis | RedisCluster,
        receipts: ReceiptSink | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.redis = redis
        self.receipts = receipts  # None: LADDER_RECEIPTS=false
        self.clock = clock or (lambda: datetime.now(UTC))  # what "within N days" is measured from
        self._script = redis.register_script(WRITE)

    def write(
        self, records: Iterable[Player], config: Config, receipts: Sequence[ReceiptWrite] = ()
    ) -> None:
        """Project these players (newer versions only), one script call per ladder chunk;
        then the batch's receipts, in the same pipeline when the boards share the queue's
        Redis (the usual case), else right after with the ranks read from the boards."""
        sink = self.receipts if receipts else None
        by_ladder: dict[str, list[Player]] = {}
        for record in records:
            by_ladder.setdefault(record.ladder, []).append(record)
        calls: list[tuple[str, list[list[Any]]]] = []
        for ladder, ladder_records in by_ladder.items():
            maker = BoardRows(config.ladders[ladder], self.clock())
            rows = [maker.row(as_row(record)) for record in ladder_records]
            calls.extend((ladder, rows[i : i + CHUNK]) for i in range(0, len(rows), CHUNK))
        if not calls and sink is None:
            return
        if isinstance(self.redis, RedisCluster) or (
            sink is not None and sink.redis is not self.redis
        ):
            for ladder, rows in calls:
                write_rows(self.redis, self._script, boards(ladder), ladder, rows, "newer")
            if sink is not None:
                wanted = [(r.ladder, pid) for r in receipts if r.ladder for pid in r.ranks]
                ranks = read_ranks(self.redis, wanted)
                sink.write(sink.redis, receipts, boards_here=False, ranks=ranks)
            return
        pipe = self.redis.pipeline(transaction=False)
        for ladder, rows in calls:
            write_rows(pipe, self._script, boards(ladder), ladder, rows, "newer")
        if sink is not None:
            sink.write(pipe, receipts, boards_here=True)
        pipe.execute()


def boards(ladder: str) -> list[str]:
    """KEYS 1-6 of ``WRITE`` outside a build (the fourth is a placeholder it leaves alone)."""
    return [
        keys.rating(ladder),
        keys.public(ladder),
        keys.boosted(ladder),
        keys.rating(ladder),
        keys.active(ladder),
        keys.active_since(ladder),
    ]
