"""Redis adapter for the read model: sorted-set leaderboards and player hashes.

Writes go through one Lua script call per ladder (in chunks) that, for each player, compares
the ``version`` (bumped in PostgreSQL on every change) with the one in Redis and applies only
a newer state, so a slow worker's late write can never roll a leaderboard back.

The client may be a plain ``Redis`` or a ``RedisCluster``: a ladder's keys share one hash
tag, hence one slot, so each call is a single-slot script. On one Redis the calls go in one
non-transactional pipeline; a cluster pipeline refuses scripts, so there each call is sent
on its own (one round trip per ladder and chunk, not per player).
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources
from typing import TYPE_CHECKING, Any

from redis import Redis
from redis.cluster import RedisCluster

from engine import FibsRules, PlayerState, is_provisional
from engine import fibs as fibs_rules
from worker import keys

if TYPE_CHECKING:
    from worker.config import Config, LadderConfig
    from worker.store import PlayerRecord

SCRIPT = resources.files("worker").joinpath("projection.lua").read_text(encoding="utf-8")
CHUNK = 256  # players per script call: keeps each call short while Redis is blocked by it


def is_public(ladder_config: LadderConfig, record: PlayerRecord) -> bool:
    """On the public list: a listed player who meets the ruleset's eligibility rule."""
    if not ladder_config.public_board or not record.listed or record.linked_to:
        return False
    rules = ladder_config.current
    if isinstance(rules, FibsRules):
        return fibs_rules.is_public_eligible(
            record.email_verified, record.display_name_chosen, record.experience, rules
        )
    return True


def card(ladder_config: LadderConfig, record: PlayerRecord) -> dict[str, str]:
    """The player hash: ``ladder:{L}:player:<id>``."""
    state = PlayerState(record.rating, record.rated_games, record.experience)
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
    return fields


class Projection:
    def __init__(self, redis: Redis | RedisCluster) -> None:
        self.redis = redis
        self._script = redis.register_script(SCRIPT)

    def write(self, records: Iterable[PlayerRecord], config: Config) -> None:
        by_ladder: dict[str, list[PlayerRecord]] = {}
        for record in records:
            by_ladder.setdefault(record.ladder, []).append(record)
        if not by_ladder:
            return
        calls = [
            self.call_for(config.ladders[ladder], chunk)
            for ladder, ladder_records in by_ladder.items()
            for chunk in _chunks(ladder_records, CHUNK)
        ]
        if isinstance(self.redis, RedisCluster):
            for call_keys, call_args in calls:
                self._script(keys=call_keys, args=call_args)
            return
        pipe = self.redis.pipeline(transaction=False)
        for call_keys, call_args in calls:
            self._script(keys=call_keys, args=call_args, client=pipe)
        pipe.execute()

    @classmethod
    def call_for(
        cls, ladder_config: LadderConfig, records: list[PlayerRecord]
    ) -> tuple[list[str], list[Any]]:
        """KEYS and ARGV of one script call for some players of one ladder."""
        ladder = ladder_config.name
        call_keys = [keys.rating(ladder), keys.public(ladder), keys.boosted(ladder)]
        call_args: list[Any] = []
        for record in records:
            call_keys.append(keys.player(ladder, record.player_id))
            call_args.extend(cls.args_for(ladder_config, record))
        return call_keys, call_args

    @staticmethod
    def args_for(ladder_config: LadderConfig, record: PlayerRecord) -> list[Any]:
        """One player's ARGV: six values, the number of card fields, then the card's pairs."""
        fields = card(ladder_config, record)
        args: list[Any] = [
            record.player_id,
            record.version,
            1 if record.listed and not record.linked_to else 0,
            repr(float(record.rating)),
            1 if is_public(ladder_config, record) else 0,
            0 if record.linked_to else record.boosted_points,  # a linked id leaves every board
            len(fields),
        ]
        for name, value in fields.items():
            args.extend((name, value))
        return args


def _chunks(records: list[PlayerRecord], size: int) -> list[list[PlayerRecord]]:
    return [records[i : i + size] for i in range(0, len(records), size)]
