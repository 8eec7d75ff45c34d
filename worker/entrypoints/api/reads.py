"""What the routes read: ``Reads`` turns a request's parameters into library calls over the
leaderboards (Redis) and the audit store (PostgreSQL), and refuses unknown ladders and boards.

Requests that read PostgreSQL run on a ``Lane`` of their own: a bounded pool of threads with
a deadline on every call, so a hung PostgreSQL holds those threads, never the ones serving
Redis, and its 503 is out within 5 s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

from fastapi import Depends, Request

from worker.boards import reader
from worker.entrypoints.api.errors import NotFound, StoreUnavailable
from worker.entrypoints.api.models import (
    AmongAnswer,
    Card,
    Change,
    Display,
    Entry,
    LadderInfo,
    Ladders,
    Page,
    Prediction,
    Preview,
)
from worker.ladders import Config, LadderConfig
from worker.service import cards
from worker.service import predict as predictions
from worker.service import preview as previews
from worker.store import history
from worker.store.routes import Databases

POSTGRESQL_THREADS = 8
POSTGRESQL_SECONDS = 4.0  # so the 503 is out within 5 s

T = TypeVar("T")


@dataclass(frozen=True)
class Given:
    """What a preview request says about one side."""

    player: str | None
    rating: float | None
    games: int | None
    experience: int | None
    recent: int | None


class Lane:
    """A bounded pool of threads, and a deadline for every call run on it."""

    def __init__(self, threads: int, seconds: float) -> None:
        self.executor = ThreadPoolExecutor(threads, thread_name_prefix="ladder-postgresql")
        self.seconds = seconds

    async def run(self, call: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self.executor, call, *args)
        try:
            return await asyncio.wait_for(future, self.seconds)
        except TimeoutError:
            raise StoreUnavailable("postgresql") from None


class Reads:
    def __init__(self, config: Config, redis: reader.Client, databases: Databases) -> None:
        self.config = config
        self.redis = redis
        self.databases = databases
        self.postgresql = Lane(POSTGRESQL_THREADS, POSTGRESQL_SECONDS)

    def ladders(self) -> Ladders:
        return Ladders(
            ladders=[
                LadderInfo(
                    name=lc.name,
                    ruleset=lc.current.kind,
                    version=lc.current.version,
                    boards=[b for b in reader.BOARDS if reader.board_available(lc, b)],
                )
                for lc in self.config.ladders.values()
            ]
        )

    def top(self, ladder: str, board: str, limit: int) -> list[Entry]:
        name = self.board(ladder, board)
        return [Entry(**e.as_json()) for e in reader.top(self.redis, name, limit, board)]

    def page(
        self,
        ladder: str,
        board: str,
        size: int,
        cursor: str | None,
        offset: int | None,
        direction: Literal["next", "prev"],
    ) -> Page:
        name = self.board(ladder, board)
        found = reader.page(
            self.redis,
            name,
            cursor=cursor,
            offset=offset,
            size=size,
            direction=direction,
            board=board,
        )
        return Page(ladder=name, board=board, **found.as_json())

    def card(self, ladder: str, player: str) -> Card:
        name = self.ladder(ladder).name
        return Card(
            **cards.card(self.redis, self.databases.for_ladder(name), name, player).as_json()
        )

    def rank(self, ladder: str, player: str, board: str) -> Entry:
        name = self.board(ladder, board)
        return Entry(**reader.rank(self.redis, name, player, board).as_json())

    def around(self, ladder: str, player: str, board: str, radius: int) -> list[Entry]:
        name = self.board(ladder, board)
        found = reader.around(self.redis, name, player, radius, board)
        return [Entry(**e.as_json()) for e in found]

    def among(self, ladder: str, board: str, ids: list[str]) -> AmongAnswer:
        name = self.board(ladder, board)
        found = reader.among(self.redis, name, ids, board)
        return AmongAnswer(ladder=name, board=board, **found.as_json())

    def history(self, ladder: str, player: str, limit: int) -> list[Change]:
        name = self.ladder(ladder).name
        return [
            Change(**c.as_json())
            for c in history.history(self.databases.for_ladder(name), name, player, limit)
        ]

    def preview(
        self, ladder: str, sides: tuple[Given, Given], cube: int, match_length: int
    ) -> Preview:
        config = self.ladder(ladder)
        a, b = (self._side(config, side) for side in sides)
        found = previews.preview(config, a, b, cube=cube, match_length=match_length)
        display = Display(**previews.format_preview(config, found))
        return Preview(**found.as_json(), display=display)

    def predict(self, ladder: str, teams: list[str], match_length: int) -> Prediction:
        config = self.ladder(ladder)
        ids = [predictions.parse_team(text, n) for n, text in enumerate(teams, 1)]
        found = predictions.predict(config, ids, self.redis, match_length=match_length)
        return Prediction(**found.as_json())

    def _side(self, ladder: LadderConfig, given: Given) -> previews.Side:
        return previews.given_side(
            ladder,
            given.player,
            self.redis,
            self.databases.for_ladder(ladder.name),
            rating=given.rating,
            games=given.games,
            experience=given.experience,
            recent=given.recent,
        )

    def ladder(self, name: str) -> LadderConfig:
        """The configured ladder ``name``; ``NotFound`` if there is none."""
        ladder = self.config.ladder(name)
        if ladder is None:
            raise NotFound(f"no ladder named {name!r}")
        return ladder

    def board(self, name: str, board: str) -> str:
        """The ladder's name, once ``board`` is known to exist on it."""
        ladder = self.ladder(name)
        try:
            key = reader.board_key(ladder.name, board)
        except reader.InvalidArgument:
            if board.startswith(reader.SEASON_PREFIX):  # a name no season can have
                raise NotFound(f"ladder {ladder.name!r} has no archived {board}") from None
            raise
        if not reader.board_available(ladder, board):
            raise NotFound(f"ladder {ladder.name!r} has no {board} board")
        if board.startswith(reader.SEASON_PREFIX) and not self.redis.exists(key):
            raise NotFound(f"ladder {ladder.name!r} has no archived {board}")
        return ladder.name


async def _current(request: Request) -> Reads:
    reads: Reads = request.app.state.reads
    return reads


# The app's ``Reads``, for a route: ``api: Api`` (no parameter of the request).
Api = Annotated[Reads, Depends(_current)]
