"""The audit log read in scoring order, for the commands that replay it (``ladder verify``,
``void``, ``backtest``, ``calibrate``), and the ladder's whole history (``history``).

``stream_log`` yields each audit row of a ladder in scoring order (``events.seq``) with its
ledger rows in written order, from two server-side cursors merged, so memory holds one chunk,
not the history; ``recorded_actions`` the ledger rows that are actions of
their own (season resets, imports); ``closed_seasons`` the seasons closed with their reset
policies; ``read_rows`` any query's rows the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import and_, func, select, text
from sqlalchemy.engine import Connection, Engine

from engine import Action, LedgerChange, LedgerKind, Season, in_order
from engine.ladder import Event
from engine.replay import RECORDED_KINDS
from schemas import records
from worker.store import cursor
from worker.store.tables import events, rating_changes, seasons

CHUNK = 5000  # rows per fetch from the server-side cursor
STORED_LEDGER = (
    *("player_id", "kind", "rating_before", "rating_after", "delta", "k", "expected"),
    *("deviation", "volatility"),
)
# ... and what the event's receipt showed of each player right after it (NULL: not known).
RECEIPT_LEDGER = (*STORED_LEDGER, "games", "provisional")
RECORDED = [str(kind) for kind in RECORDED_KINDS]
# Each ledger row with the audit row of its event (its scoring number, its facts).
LEDGER_WITH_EVENTS = rating_changes.join(
    events,
    and_(
        events.c.ladder == rating_changes.c.ladder,
        events.c.event_id == rating_changes.c.event_id,
    ),
)


class AuditRow(NamedTuple):
    """An audit row as the replays read it (``audit_rows``)."""

    event_id: str
    outcome: str
    reason: str | None
    version: str | None  # the ruleset version it was scored under
    payload: dict[str, Any] | None  # None for a plain game: its fields are in ``game``
    processed_at: datetime
    seq: int  # its place in scoring order
    game: Sequence[Any]  # a plain game's fields, read on the server (``_AUDIT_PG``)


class LedgerRow(NamedTuple):
    """An event's ledger row (``STORED_LEDGER``)."""

    player_id: str
    kind: str
    rating_before: float
    rating_after: float
    delta: float
    k: float | None
    expected: float | None
    deviation: float | None
    volatility: float | None


class ShownLedgerRow(NamedTuple):
    """An event's ledger row with what its receipt showed of the player (``RECEIPT_LEDGER``)."""

    player_id: str
    kind: str
    rating_before: float
    rating_after: float
    delta: float
    k: float | None
    expected: float | None
    deviation: float | None
    volatility: float | None
    games: int | None
    provisional: bool | None


def count_events(engine: Engine, ladder: str) -> int:
    with engine.connect() as conn:
        query = select(func.count()).select_from(events).where(events.c.ladder == ladder)
        return int(conn.execute(query).scalar_one())


def stream_log(
    engine: Engine,
    ladder: str,
    after: int = 0,
    ledger_columns: Sequence[str] = STORED_LEDGER,
    *,
    since: datetime | None = None,
) -> Iterator[tuple[AuditRow, list[Any]]]:
    """Each audit row numbered after ``after`` in scoring order (``audit_rows``) with its
    ledger rows (``ledger_columns``) in written order: two cursors, one over the audit rows
    and one over the ledger (ordered by its event's place), merged. ``since``: every event
    numbered after ``after`` was processed at or after it (``ledger_query``)."""
    changes = read_rows(engine, ledger_query(engine, ladder, after, ledger_columns, since=since))
    audit = audit_rows(engine, ladder, after)  # both started before either is read
    made = LedgerRow if tuple(ledger_columns) == STORED_LEDGER else ShownLedgerRow
    yield from merged(audit, changes, made)


def merged(
    rows: Iterable[Any], changes: Iterator[Sequence[Any]], made: Callable[..., Any]
) -> Iterator[tuple[Any, list[Any]]]:
    """Each of ``rows`` (audit rows in scoring order) with its ledger rows: those of
    ``changes`` (each its event's scoring number first, in the same order) made ``made``."""
    pending = next(changes, None)
    for row in rows:
        seq = row.seq
        mine: list[Any] = []
        while pending is not None and pending[0] == seq:
            mine.append(made(*pending[1:]))
            pending = next(changes, None)
        yield row, mine


def ledger_query(
    engine: Engine,
    ladder: str,
    after: int = 0,
    ledger_columns: Sequence[str] = STORED_LEDGER,
    *,
    since: datetime | None = None,
) -> Any:
    """The ladder's event ledger rows after ``after``, each with its event's scoring number
    first, in scoring order and written order (``stream_log``'s second cursor).

    ``since``, when the caller knows every event numbered after ``after`` was processed at
    or after it (``boundary.at`` refuses an instant where that fails): both sides are read
    from the partition of its month on, the months before never (that month's ledger is read
    whole: no index holds the ledger by time). An event's ledger rows are written by its
    batch with its audit row, both at the batch's time (``worker.service.rows``), so none of
    them is older than ``since``. Without it the join reads every month of the ledger."""
    order = events.c.seq
    bounds = []
    if since is not None:
        bounds = [rating_changes.c.at >= since, events.c.processed_at >= since]
    return (
        select(order, *(rating_changes.c[c] for c in ledger_columns))
        .select_from(LEDGER_WITH_EVENTS)
        .where(
            rating_changes.c.ladder == ladder,
            rating_changes.c.kind.not_in(RECORDED),
            order > after,
            *bounds,
        )
        .order_by(order, rating_changes.c.id)
    )


# A stored game.finished payload whose fields all have the JSON types that decoding the
# whole payload gives (``records.engine_event``), absent ones taking its defaults: its
# fields are read one by one on the server, and the payload itself is not sent. Anything
# else (another event type, a field of another type) comes as the whole payload.
_PLAIN_GAME = """
    p->>'type' = 'game.finished'
    AND jsonb_typeof(p->'event_id') = 'string' AND jsonb_typeof(p->'ladder') = 'string'
    AND jsonb_typeof(p->'ended_at') = 'string' AND jsonb_typeof(p->'mode') = 'string'
    AND coalesce(jsonb_typeof(p->'result'), 'string') = 'string'
    AND coalesce(jsonb_typeof(p->'cube'), 'number') = 'number'
    AND coalesce(p->>'cube', '1') ~ '^-?[0-9]+$'
    AND coalesce(jsonb_typeof(p->'match_length'), 'number') = 'number'
    AND coalesce(p->>'match_length', '1') ~ '^-?[0-9]+$'
    AND jsonb_typeof(p->'winner') = 'object' AND jsonb_typeof(p->'loser') = 'object'
    AND jsonb_typeof(p->'winner'->'player_id') = 'string'
    AND jsonb_typeof(p->'loser'->'player_id') = 'string'
    AND coalesce(jsonb_typeof(p->'winner'->'is_bot'), 'boolean') = 'boolean'
    AND coalesce(jsonb_typeof(p->'loser'->'is_bot'), 'boolean') = 'boolean'
    AND coalesce(jsonb_typeof(p->'winner'->'network'), 'string') = 'string'
    AND coalesce(jsonb_typeof(p->'loser'->'network'), 'string') = 'string'
"""
_AUDIT_PG = f"""
SELECT e.event_id, e.outcome, e.reason, e.ruleset_version,
       CASE WHEN g.plain THEN NULL ELSE e.payload END, e.processed_at, e.seq,
       p->>'event_id', p->>'ladder', p->>'ended_at', p->>'mode',
       p->'winner'->>'player_id', coalesce(p->'winner'->>'is_bot' = 'true', false),
       p->'winner'->>'network',
       p->'loser'->>'player_id', coalesce(p->'loser'->>'is_bot' = 'true', false),
       p->'loser'->>'network',
       coalesce(p->>'cube', '{records.GAME_DEFAULTS["cube"]}'),
       coalesce(p->>'match_length', '{records.GAME_DEFAULTS["match_length"]}'),
       coalesce(p->>'result', '{records.GAME_DEFAULTS["result"]}')
FROM events e
CROSS JOIN LATERAL (SELECT e.payload AS p) j
CROSS JOIN LATERAL (SELECT coalesce({_PLAIN_GAME}, false) AS plain) g
WHERE e.ladder = :ladder AND e.seq > :after AND e.seq <= :through
ORDER BY e.seq
"""


THROUGH_END = 2**63 - 1  # the highest scoring number there can be


def audit_rows(
    engine: Engine, ladder: str, after: int = 0, through: int = THROUGH_END
) -> Iterator[AuditRow]:
    """The ladder's audit rows numbered after ``after`` (through ``through``), in scoring
    order; a plain game's payload is ``None`` and its fields are read on the server
    (``event_of`` reads either)."""
    plain = text(_AUDIT_PG).bindparams(ladder=ladder, after=after, through=through)
    rows = read_rows(engine, plain, in_index_order=True)  # events_scoring_order
    return (AuditRow._make((*row[:7], row[7:])) for row in rows)


def event_of(row: AuditRow) -> Event:
    """The engine's event for an audit row of ``audit_rows`` (KeyError, ValueError or
    TypeError when its payload is not one)."""
    payload = row.payload
    if payload is not None:
        return records.engine_event(payload)
    (
        event_id,
        ladder,
        ended_at,
        mode,
        winner_id,
        winner_bot,
        winner_network,
        loser_id,
        loser_bot,
        loser_network,
        cube,
        match_length,
        result,
    ) = row.game
    return records.game_from_fields(
        event_id,
        ladder,
        ended_at,
        mode,
        (winner_id, winner_bot, winner_network),
        (loser_id, loser_bot, loser_network),
        int(cube),
        int(match_length),
        result,
    )


def read_rows(
    engine: Engine, query: Any, *, in_index_order: bool = False
) -> Iterator[Sequence[Any]]:
    """The query's rows, streamed (``worker.store.cursor.rows``)."""
    return cursor.rows(engine, query, size=CHUNK, in_index_order=in_index_order)


def recorded_actions(
    source: Engine | Connection, ladder: str, since: datetime | None = None
) -> list[Sequence[Any]]:
    """The ladder's recorded ledger actions (season resets, imports), oldest first: event_id,
    at, then ``STORED_LEDGER``; read on ``source``'s connection when it is one (inside its
    transaction, as a void does under the ladder's lock). ``since``: those recorded at or
    after it only (the months before are not read).

    They are found by the index of the rows that are no event's (``rating_changes_actions``,
    migration 0010): a probe of each month, however many games the ledger holds."""
    recorded = [rating_changes.c.ladder == ladder, rating_changes.c.kind.in_(RECORDED)]
    if since is not None:
        recorded.append(rating_changes.c.at >= since)
    query = (
        select(
            rating_changes.c.event_id,
            rating_changes.c.at,
            *(rating_changes.c[c] for c in STORED_LEDGER),
        )
        .where(*recorded)
        .order_by(rating_changes.c.id)
    )
    if isinstance(source, Connection):
        return [tuple(row) for row in source.execute(query)]
    with source.connect() as conn:
        return [tuple(row) for row in conn.execute(query)]


def closed_seasons(
    source: Engine | Connection, ladder: str, since: datetime | None = None
) -> list[Season]:
    """The ladder's closed seasons with their reset policies, oldest first; ``since``: those
    closed at or after it only."""
    closed = [seasons.c.ladder == ladder, seasons.c.closed_at.is_not(None)]
    if since is not None:
        closed.append(seasons.c.closed_at >= since)
    query = (
        select(
            seasons.c.name,
            seasons.c.closed_at,
            seasons.c.reset,
            seasons.c.fraction,
            seasons.c.after_seq,
        )
        .where(*closed)
        .order_by(seasons.c.closed_at, seasons.c.number)
    )
    if isinstance(source, Connection):
        rows = source.execute(query).all()
    else:
        with source.connect() as conn:
            rows = conn.execute(query).all()
    return [
        Season(name, at, reset or "none", 0.5 if f is None else f, after_seq or 0)
        for name, at, reset, f, after_seq in rows
    ]


def first_processed_since(
    engine: Engine, ladder: str, since: datetime, after: int = 0
) -> int | None:
    """The lowest scoring number after ``after`` of an event of the ladder processed at or
    after ``since``, or None: no event numbered before it was processed since then."""
    query = select(func.min(events.c.seq)).where(
        events.c.ladder == ladder, events.c.seq > after, events.c.processed_at >= since
    )
    with engine.connect() as conn:
        found = conn.execute(query).scalar()
    return None if found is None else int(found)


# -- the history: events, recorded rows and moderation actions in the one replay's order --------


class Logged(NamedTuple):
    """A stored event of the history: its audit row (``audit_rows``) and its ledger rows."""

    row: AuditRow
    ledger: Sequence[Any]  # LedgerRow or ShownLedgerRow


@dataclass(frozen=True, slots=True)
class Recorded:
    """A recorded ledger row of the history (an import)."""

    event_id: str
    at: datetime
    change: LedgerChange


def recorded_of(row: Sequence[Any]) -> Recorded:
    """A row of ``recorded_actions`` as a history entry."""
    event_id, at, player_id, kind, *values = row
    change = LedgerChange(player_id, LedgerKind(kind), *values)
    return Recorded(event_id, at, change)


def recorded_entries(recorded: Sequence[Sequence[Any]]) -> list[Recorded]:
    """The history's imports, oldest first: ``recorded_actions``' rows but a season's reset
    rows (what its close derived: the close is an entry of its own, ``closed_seasons``)."""
    season = str(LedgerKind.SEASON)
    return [recorded_of(r) for r in recorded if r[3] != season]


def season_rows(recorded: Sequence[Sequence[Any]]) -> dict[str, list[Sequence[Any]]]:
    """The stored ledger rows of each season's reset (``recorded_actions``' rows, as
    ``STORED_LEDGER``), by its event id."""
    season = str(LedgerKind.SEASON)
    found: dict[str, list[Sequence[Any]]] = {}
    for row in recorded:
        if row[3] == season:
            found.setdefault(str(row[0]), []).append(tuple(row[2:]))
    return found


Entry = Logged | Recorded | Season | Action


def history(
    logged: Iterable[tuple[AuditRow, Sequence[Any]]],
    recorded: Sequence[Recorded],
    actions: Sequence[Action | Season],
    *,
    tail: bool = True,
) -> Iterator[Entry]:
    """The ladder's history (SPEC 6 "One history") from its logged events (``stream_log`` or
    ``audit_rows`` with their ledger rows), its imports (``recorded_entries``) and its
    moderation actions and season closes (``engine.replay.placed``), in the order
    ``engine.replay.in_order`` gives every replay."""
    events = map(Logged._make, logged)
    return in_order(
        events,
        recorded,
        actions,
        lambda e: (e.row.processed_at, e.row.seq),
        lambda r: r.at,
        tail=tail,
    )
