"""``GET /ladders/{ladder}/events/{event_id}``: an event's receipt over HTTP.

Read from PostgreSQL, so it works after the Redis copy expired (``LADDER_RECEIPT_TTL``);
``rank_after`` comes from that copy while it is kept and is null after. 404 for an unknown
ladder or an event the ladder neither applied nor dead-lettered; a dead letter's receipt is
its Redis copy while kept, else built from the dead-letter queue (Redis or its PostgreSQL
archive). The answer is checked against the
published receipt model (``schemas.receipt.Receipt``), which the OpenAPI document shows.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Request, Response
from redis import Redis
from redis.exceptions import RedisError

from schemas.receipt import Receipt
from schemas.receipt_bodies import with_ranks
from worker.access import Scope
from worker.boards.receipts import stored
from worker.entrypoints.api.auth import requires
from worker.entrypoints.api.caching import cached
from worker.entrypoints.api.errors import NotFound, errors
from worker.entrypoints.api.params import LadderName, path_id
from worker.entrypoints.api.reads import Api
from worker.ladders import Config
from worker.service.dead_letter_receipts import dead_letter_receipt
from worker.store.receipts import stored_receipt
from worker.store.routes import Databases

MAX_EVENT_ID = 128


EventId = Annotated[str, path_id("event_id", "g-000123", MAX_EVENT_ID)]


class _Receipts:
    def __init__(self, config: Config, databases: Databases, redis: Redis | None) -> None:
        self.config = config
        self.databases = databases
        self.redis = redis

    def receipt(self, ladder: str, event_id: str) -> Receipt:
        found_ladder = self.config.ladder(ladder)
        if found_ladder is None:
            raise NotFound(f"no ladder named {ladder!r}")
        found = stored_receipt(
            self.databases.for_ladder(found_ladder.name), found_ladder.name, event_id
        )
        if found is not None:
            return with_ranks(found, self._copy(event_id))
        letter = self._dead_letter(found_ladder.name, event_id)
        if letter is None:
            raise NotFound(f"no event {event_id!r} on {found_ladder.name}")
        return letter

    def _dead_letter(self, ladder: str, event_id: str) -> Receipt | None:
        """A dead letter's receipt, for an event the ladder never applied: its Redis copy while
        it is kept, else built from the dead-letter queue (Redis or its PostgreSQL archive)."""
        if self.redis is None:
            return None
        # every dead letter is on the default primary (``worker.store.routes``)
        return dead_letter_receipt(self.redis, self.databases.default, ladder, event_id)

    def _copy(self, event_id: str) -> dict[str, Any] | None:
        if self.redis is None:
            return None
        try:
            return stored(self.redis, event_id)
        except RedisError:  # the ranks are a bonus: PostgreSQL has the receipt
            return None


def receipts_of(request: Request) -> _Receipts:
    """The app's receipt reads (``create_app`` puts them in ``app.state``)."""
    found: _Receipts = request.app.state.receipts
    return found


def install(app: FastAPI, config: Config, databases: Databases, redis: Redis | None) -> None:
    """Give the app what ``router`` reads through: the audit store and the queue's Redis."""
    app.state.receipts = _Receipts(config, databases, redis)


router = APIRouter()


@router.get(
    "/ladders/{ladder}/events/{event_id}",
    operation_id="eventReceipt",
    dependencies=[requires(Scope.HISTORY)],
    summary="An event's receipt: outcome, reason and every rating it moved",
    responses=errors(400, 404, 503),
)
async def event_receipt(
    response: Response,
    api: Api,
    receipts: Annotated[_Receipts, Depends(receipts_of)],
    ladder: LadderName,
    event_id: EventId,
) -> Receipt:
    found: Receipt = await api.postgresql.run(receipts.receipt, ladder, event_id)
    return cached(response, found)
