"""The dead-letter archive: dead letters moved out of Redis into PostgreSQL's ``dead_letters``."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.engine import Engine

from worker.store import tables as db
from worker.store.letters import DeadLetter, Filter, aware


class Archive:
    """Dead letters moved out of Redis: the ``dead_letters`` table (migration 0004)."""

    def __init__(self, engine: Callable[[], Engine]) -> None:
        self._engine = engine

    def store(self, letters: builtins.list[tuple[DeadLetter, str]]) -> None:
        if not letters:
            return
        engine = self._engine()
        rows = [
            {
                "id": letter.id,
                "event_id": letter.event_id,
                "ladder": letter.ladder,
                "reason": letter.reason,
                "detail": letter.detail,
                "failed_at": letter.failed_at,
                "attempts": letter.attempts,
                "payload": letter.payload,
                "traceback": trace,
            }
            for letter, trace in letters
        ]
        with engine.begin() as conn:
            conn.execute(insert(db.dead_letters).on_conflict_do_nothing(), rows)

    def page(
        self, where: Filter | None, offset: int, limit: int | None, now: datetime
    ) -> builtins.list[DeadLetter]:
        table = db.dead_letters
        query = select(table).order_by(table.c.failed_at, table.c.id).offset(max(offset, 0))
        if limit is not None:
            query = query.limit(limit)
        with self._engine().connect() as conn:
            return [_archived(row) for row in conn.execute(_matching(query, where, now))]

    def get(self, letter_id: str) -> tuple[DeadLetter, str] | None:
        table = db.dead_letters
        with self._engine().connect() as conn:
            row = conn.execute(select(table).where(table.c.id == letter_id)).first()
        return (_archived(row), str(row.traceback)) if row is not None else None

    def ids_of_event(self, event_id: str) -> builtins.list[str]:
        table = db.dead_letters
        with self._engine().connect() as conn:
            found = conn.execute(select(table.c.id).where(table.c.event_id == event_id))
            return sorted(str(i) for i in found.scalars())

    def delete(self, ids: builtins.list[str]) -> int:
        table = db.dead_letters
        with self._engine().begin() as conn:
            return int(conn.execute(delete(table).where(table.c.id.in_(ids))).rowcount)

    def count(self, where: Filter | None = None, now: datetime | None = None) -> int:
        query = select(func.count()).select_from(db.dead_letters)
        with self._engine().connect() as conn:
            found = conn.execute(_matching(query, where, now or datetime.now(UTC)))
            return int(found.scalar_one())


def _matching(query: Any, where: Filter | None, now: datetime) -> Any:
    """``query`` narrowed to the archived dead letters that ``where`` selects."""
    table = db.dead_letters
    if where is None:
        return query
    if where.reason is not None:
        query = query.where(table.c.reason == where.reason)
    if where.ladder is not None:
        query = query.where(table.c.ladder == where.ladder)
    if where.older_than is not None:
        query = query.where(table.c.failed_at <= now - where.older_than)
    if where.newer_than is not None:
        query = query.where(table.c.failed_at >= now - where.newer_than)
    return query


def _archived(row: Any) -> DeadLetter:
    return DeadLetter(
        id=row.id,
        event_id=row.event_id,
        ladder=row.ladder,
        reason=row.reason,
        detail=row.detail,
        failed_at=aware(row.failed_at),
        attempts=int(row.attempts),
        payload=row.payload,
    )
