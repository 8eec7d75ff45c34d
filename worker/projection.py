"""Redis adapter for the read model: sorted-set leaderboards and player hashes.

Writes go through one Lua script per player that compares the player's ``version`` (bumped
in PostgreSQL on every change) with the one in Redis and applies only a newer state, so a
slow worker's late write can never roll a leaderboard back.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources
from typing import TYPE_CHECKING, Any

from redis import Redis

from engine import FibsRules, PlayerState, is_provisional
from engine import fibs as fibs_rules
from worker import keys

if TYPE_CHECKING:
    from worker.config import Config, LadderConfig
    from worker.store import PlayerRecord

SCRIPT = resources.files("worker").joinpath("projection.lua").read_text(encoding="utf-8")


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
    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self._script = redis.register_script(SCRIPT)

    def write(self, records: Iterable[PlayerRecord], config: Config) -> None:
        records = list(records)
        if not records:
            return
        pipe = self.redis.pipeline(transaction=False)
        for record in records:
            ladder_config = config.ladders[record.ladder]
            self._script(
                keys=self.keys_for(record.ladder, record.player_id),
                args=self.args_for(ladder_config, record),
                client=pipe,
            )
        pipe.execute()

    @staticmethod
    def keys_for(ladder: str, player_id: str) -> list[str]:
        return [
            keys.rating(ladder),
            keys.public(ladder),
            keys.boosted(ladder),
            keys.player(ladder, player_id),
        ]

    @staticmethod
    def args_for(ladder_config: LadderConfig, record: PlayerRecord) -> list[Any]:
        args: list[Any] = [
            record.player_id,
            record.version,
            1 if record.listed and not record.linked_to else 0,
            repr(float(record.rating)),
            1 if is_public(ladder_config, record) else 0,
            0 if record.linked_to else record.boosted_points,  # a linked id leaves every board
        ]
        for name, value in card(ladder_config, record).items():
            args.extend((name, value))
        return args
