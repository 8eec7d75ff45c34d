"""PostgreSQL adapter: everything the service reads and writes inside one batch transaction.

Concurrency: a batch creates its missing players and locks every player it touches in one
sorted key order (``claim_players``), so two games of one player never both start from the
same old rating and two workers cannot deadlock on player rows.

Speed: every statement of the batch path has a constant text, whatever the
batch size: key sets travel as arrays (``unnest``), not as ``IN (...)`` lists whose text
changes with their length. psycopg then prepares each statement once per connection, and
neither SQLAlchemy nor the server parses it again (``worker.store.tables`` keeps each run
planned for the tables as they are). Audit rows, ledger rows, the players of draws and team
games (``game_players``) and the changed players each travel as one JSON document; from
``COPY_ROWS`` audit and ledger rows on, the first three go by COPY instead. A batch makes
three round trips, with psycopg's pipeline mode: ``before_claim`` (with the transaction's
BEGIN), ``claim_players`` (with the reads once its players are locked, ``after_reads``) and
``write_batch`` (with the COMMIT, unless the caller reads after it), and two more for each
COPY of a large batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import String, Table
from sqlalchemy.engine import Connection

from engine import Player, PlayerKey, Windows
from engine.needs import WindowAsk
from engine.player import STATE_FIELDS, STORED_FIELDS, stored_player
from schemas.receipt import Receipt
from worker.jsontext import compact
from worker.store import locks, marks, windowcache, windows
from worker.store.copying import DIALECT as _DIALECT
from worker.store.copying import copy_into, copy_rows
from worker.store.driver import KEYS, Read, items, listed, pipeline, run_all, sent, split
from worker.store.receipts import made_originals, original_reads
from worker.store.tables import events, game_players, links, players, rating_changes, tournaments
from worker.store.windowcache import CacheUse, WindowCache
from worker.store.windows import WindowFacts

__all__ = [  # the windows' types are the batch's as much as the rest
    "COPY_ROWS",
    "PLAYER_COLUMNS",
    "PLAYER_ROW",
    "AfterClaim",
    "WindowAsk",
    "WindowFacts",
    "after_reads",
    "before_claim",
    "chunks",
    "claim_players",
    "load_players",
    "write_batch",
]
PLAYER_COLUMNS = STATE_FIELDS  # the players columns besides the key: the engine Player's fields


def _read_as(table: Table, column: str) -> str:
    """The type a JSON row's value of ``column`` is read as: the column's own, but ``text``
    for text columns, so a value too long for its column is refused by the INSERT, not cut by
    a cast."""
    kind = table.c[column].type
    return "text" if isinstance(kind, String) else str(kind.compile(dialect=_DIALECT))


# PostgreSQL types of PLAYER_COLUMNS, as the table declares them (the JSON rows' record type).
PLAYER_TYPES = tuple(_read_as(players, c) for c in PLAYER_COLUMNS)
# A players row as the store, the projection and rebuild read it: the columns named by
# STORED_FIELDS, in that order (``stored_player(row)`` pairs each value with its name).
PLAYER_ROW = tuple(players.c[c] for c in STORED_FIELDS)
# ``seq`` (the scoring order) is the store's own: PostgreSQL numbers rows as they are written.
AUDIT_COLUMNS = tuple(c.name for c in events.columns if c.name != "seq")
LEDGER_COLUMNS = tuple(c.name for c in rating_changes.columns if c.name != "id")


def chunks(items: Sequence[Any], size: int = 500) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


_SELECT_PLAYER = ", ".join(f"p.{c}" for c in STORED_FIELDS)

_PG_CLAIM_PLAYERS = f"""
INSERT INTO players (ladder, player_id, rating, updated_at)
SELECT k.ladder, k.player_id, k.rating, %(now)s
FROM unnest({items("ladders")}, {items("ids")}, {items("ratings")}::float8[])
     WITH ORDINALITY AS k(ladder, player_id, rating, n)
ORDER BY k.n
ON CONFLICT (ladder, player_id) DO UPDATE SET version = players.version WHERE false
"""
# Every lookup by key runs one index probe per key, whatever the planner's statistics say: a
# lateral subquery that ``OFFSET 0`` keeps from being flattened into a join (which, while a
# table's statistics are stale, can become a scan of the whole table). The plan is therefore
# the same for every batch and every table size.
_PG_SELECT_PLAYERS = f"""
SELECT {_SELECT_PLAYER} FROM {KEYS} AS k(ladder, player_id) CROSS JOIN LATERAL (
  SELECT * FROM players WHERE ladder = k.ladder AND player_id = k.player_id OFFSET 0) AS p
"""
# The duplicate check reads ``event_ids`` (every stored id, one key across the audit log's
# monthly partitions, archived months included): one probe per key, whatever the log holds.
_PG_EXISTING_EVENTS = f"""
SELECT e.ladder, e.event_id, e.digest FROM {KEYS} AS k(ladder, event_id) CROSS JOIN LATERAL (
  SELECT ladder, event_id, digest FROM event_ids
  WHERE ladder = k.ladder AND event_id = k.event_id OFFSET 0) AS e
"""
_PG_LINKS_SIDE = f"""
SELECT l.ladder, l.anonymous_id, l.account_id FROM {KEYS} AS k(ladder, id) CROSS JOIN LATERAL (
  SELECT ladder, anonymous_id, account_id FROM links
  WHERE ladder = k.ladder AND {{side}} = k.id OFFSET 0) AS l
"""
_PG_LINKS = (
    _PG_LINKS_SIDE.format(side="anonymous_id") + "UNION" + _PG_LINKS_SIDE.format(side="account_id")
)
# Each ladder's newest moderation action marked not projected: a read of the partial index
# ``moderation_actions_unprojected`` (which holds only them), not of the table.
UNPROJECTED = """
SELECT ladder, max(id) FROM moderation_actions
WHERE projected_at IS NULL AND ladder = ANY(%(ladders)s) GROUP BY ladder
"""
_PG_TOURNAMENTS = f"""
SELECT t.ladder, t.tournament_id FROM {KEYS} AS k(ladder, id) CROSS JOIN LATERAL (
  SELECT ladder, tournament_id FROM tournaments
  WHERE ladder = k.ladder AND tournament_id = k.id OFFSET 0) AS t
"""


def _json_insert(table: Table, columns: tuple[str, ...]) -> str:
    """An INSERT of rows sent as one JSON document (a list of objects keyed by column), in
    the document's order: ``seq`` and ``id`` number a batch's audit and ledger rows as they
    were scored. Each value is read as ``_read_as`` says."""
    names = ", ".join(columns)
    defined = ", ".join(f"{c} {_read_as(table, c)}" for c in columns)
    return (
        f"INSERT INTO {table.name} ({names}) SELECT {names} FROM ROWS FROM "
        f"(json_to_recordset(%(rows)s::json) AS ({defined})) WITH ORDINALITY AS v({names}, n) "
        "ORDER BY v.n"
    )


_PG_INSERT_AUDIT = _json_insert(events, AUDIT_COLUMNS)
_PG_INSERT_LEDGER = _json_insert(rating_changes, LEDGER_COLUMNS)
_PG_INSERT_LINKS = _json_insert(links, tuple(c.name for c in links.columns))
_PG_INSERT_TOURNAMENTS = _json_insert(tournaments, tuple(c.name for c in tournaments.columns))
SEAT_COLUMNS = tuple(c.name for c in game_players.columns)
_PG_INSERT_SEATS = _json_insert(game_players, SEAT_COLUMNS)

# Changed players are written back as an upsert of the locked rows: like the claim, it finds
# each row through the primary key, with no join for the planner to get wrong. The rows travel
# as one JSON document (cheaper to send than one array per column).
_PG_WRITE_PLAYERS = (
    f"INSERT INTO players (ladder, player_id, {', '.join(PLAYER_COLUMNS)}) "
    f"SELECT ladder, player_id, {', '.join(PLAYER_COLUMNS)} "
    "FROM json_to_recordset(%(rows)s::json) AS v(ladder text, player_id text, "
    + ", ".join(f"{c} {t}" for c, t in zip(PLAYER_COLUMNS, PLAYER_TYPES, strict=True))
    + ") ON CONFLICT (ladder, player_id) DO UPDATE SET "
    + ", ".join(f"{c} = EXCLUDED.{c}" for c in PLAYER_COLUMNS)
)


def claim_players(
    conn: Connection,
    starts: dict[PlayerKey, float],
    now: datetime,
    existing: Iterable[PlayerKey] = (),
    then: Sequence[Read[Any]] = (),
) -> tuple[dict[PlayerKey, Player], list[Any]]:
    """Create the missing players and lock every one of them, in sorted key order; read
    ``existing`` too, the ones of them that exist, without creating or locking them. Then
    the reads ``then`` (what the batch reads once its players are locked, ``after_reads``),
    in the same round trip: the server runs them after the claim, so after its locks; their
    results come back beside the players.

    ``starts`` holds every player the batch may change with the rating a new row starts at.
    One ``INSERT ... ON CONFLICT DO UPDATE ... WHERE false`` walks the keys in
    sorted order: it inserts a missing row and locks an existing one without changing it
    (PostgreSQL locks every conflicting row even when the ``WHERE`` is false). Every batch
    locks in this one order, so concurrent workers queue behind each other and never
    deadlock, and creating and locking share the batch's transaction. Before it, the
    batch's ladders' advisory locks, shared (``worker.store.locks``): a moderation action of one
    of them holds the claim until it commits.
    """
    ordered = sorted(starts)
    extra = set(existing)
    read = split([*starts, *extra])
    with pipeline(conn) as driver:  # the claim, the read of the locked rows, then ``then``
        if starts:
            ladders = sorted({ladder for ladder, _ in ordered})
            driver.execute(locks.SHARE_LADDERS, {"ladders": ladders})
            ratings = listed(repr(float(starts[k])) for k in ordered)
            driver.execute(_PG_CLAIM_PLAYERS, {**split(ordered), "ratings": ratings, "now": now})
        locked = driver.execute(_PG_SELECT_PLAYERS, read) if read["ladders"] else None
        cursors = [driver.execute(r.sql, r.params) for r in then]
    players = {(r[0], r[1]): stored_player(r) for r in locked.fetchall()} if locked else {}
    return players, [r.make(cursor.fetchall()) for r, cursor in zip(then, cursors, strict=True)]


def load_players(conn: Connection, keys: Iterable[PlayerKey]) -> dict[PlayerKey, Player]:
    """Read player rows without locking (for read-only projection rebuilds)."""
    rows = conn.exec_driver_sql(_PG_SELECT_PLAYERS, split(keys))
    return {(r[0], r[1]): stored_player(r) for r in rows}


def before_claim(
    conn: Connection, named: dict[str, set[str]], event_keys: Iterable[tuple[str, str]]
) -> tuple[dict[str, dict[str, str]], dict[tuple[str, str], str | None]]:
    """What a batch reads before its players are locked, in one round trip: per ladder, the
    links in which any named id takes part, on either side (every named ladder is in the
    answer, ``{}`` when it has none); and the event ids applied before, with their digests."""
    links, seen = run_all(conn, [_links_read(named), _existing_read(event_keys)])
    return links, seen


class AfterClaim(NamedTuple):
    """What a batch reads once its players are locked."""

    links: dict[str, dict[str, str]]  # ``before_claim``'s again: a link committed meanwhile?
    settled: set[tuple[str, str]]  # the batch's tournaments already settled
    windows: Windows  # the windows (``WindowAsk``)
    seen: dict[tuple[str, str], str | None]  # of the keys asked, those applied meanwhile
    # the batch's ladders with a moderation action marked not projected: its newest such
    # action (its command committed, then could not write Redis; the worker heals them)
    unprojected: dict[str, int]
    cached: CacheUse | None  # the windows kept in memory, when the batch used them
    # the latest mark of the batch's ladders at or after the batch's instant, if any (an
    # import's instant, an archive's boundary: ``worker.store.marks``): it starts again, later
    marked: datetime | None = None
    # the stored receipt of each id asked for (``after_reads(originals=...)``), None where
    # none is stored
    originals: Mapping[tuple[str, str], Receipt | None] = {}


class AfterReads(NamedTuple):
    """What a batch reads once its players are locked (``after_reads``): the reads, and what
    makes ``AfterClaim`` of their results."""

    reads: list[Read[Any]]
    facts: WindowFacts
    tournaments: bool
    cached: CacheUse | None  # the windows kept in memory, when the batch uses them
    originals: Sequence[tuple[str, str]] = ()  # their stored receipts read after the above

    def made(self, conn: Connection, results: Sequence[Any]) -> AfterClaim:
        """``AfterClaim`` from the reads' results; the windows taken from memory of a ladder
        someone else wrote meanwhile are read from the log first (one more round trip)."""
        if self.cached is not None:
            again = self.cached.again()
            if again:
                run_all(conn, again)
            self.cached.facts(self.facts)
        return AfterClaim(
            links=results[0],
            seen=results[1],
            unprojected=results[2],
            marked=results[3],
            settled=results[4] if self.tournaments else set(),
            windows=self.facts.windows(),
            cached=self.cached,
            originals=self._originals(results[4 + self.tournaments :][:3]),
        )

    def _originals(self, results: Sequence[Any]) -> dict[tuple[str, str], Receipt | None]:
        found = made_originals(results) if self.originals else {}
        return {key: found.get(key) for key in self.originals}


def after_reads(
    named: dict[str, set[str]],
    tournament_keys: Iterable[tuple[str, str]],
    asks: Sequence[WindowAsk],
    event_keys: Iterable[tuple[str, str]],
    now: datetime,
    cache: WindowCache | None = None,
    originals: Iterable[tuple[str, str]] = (),
) -> AfterReads:
    """The reads a batch processed at ``now`` makes once its players are locked (sent with
    the claim, ``claim_players(then=...)``, so the server runs them after its locks, in the
    batch's transaction). ``event_keys``: the batch's ids not applied before it claimed,
    asked again (another worker may have applied one while this one waited for the locks).
    ``cache``: the worker's windows in memory, used for the asks it keeps
    (``windowcache.cached``); the archived games of every ask are read beside them
    (``windows.archived``). ``originals``: ids applied before, whose stored receipts a
    duplicate's receipt repeats (``worker.store.receipts.original_reads``)."""
    tournament_keys = sorted(set(tournament_keys))
    facts = WindowFacts([], [], [], [])
    reads: list[Read[Any]] = [
        _links_read(named),
        _existing_read(event_keys),
        Read(UNPROJECTED, {"ladders": sorted(named)}, dict),
        marks.since(named, now),
    ]
    if tournament_keys:
        reads.append(_tournaments_read(tournament_keys))
    originals = sorted(set(originals))
    if originals:
        reads += original_reads(originals)
    kept = [ask for ask in asks if windowcache.cached(ask)] if cache is not None else []
    use = cache.use(kept, now) if cache is not None and kept else None
    unkept = [ask for ask in asks if ask not in kept]
    reads += windows.archived(asks, facts, now)  # every ask's, from memory or not
    reads += windows.reads(unkept, facts, now)
    if use is not None:
        reads += use.reads
    return AfterReads(reads, facts, bool(tournament_keys), use, originals)


def _links_read(named: dict[str, set[str]]) -> Read[dict[str, dict[str, str]]]:
    def make(rows: Sequence[Any]) -> dict[str, dict[str, str]]:
        found: dict[str, dict[str, str]] = {ladder: {} for ladder in named}
        for ladder, anon_id, account_id in rows:
            found[ladder][anon_id] = account_id
        return found

    pairs = [(ladder, pid) for ladder, ids in named.items() for pid in ids]
    return Read(_PG_LINKS, split(pairs), make)


def _existing_read(
    keys: Iterable[tuple[str, str]],
) -> Read[dict[tuple[str, str], str | None]]:
    return Read(_PG_EXISTING_EVENTS, split(keys), lambda rows: {(a, b): d for a, b, d in rows})


def _tournaments_read(keys: Iterable[tuple[str, str]]) -> Read[set[tuple[str, str]]]:
    return Read(_PG_TOURNAMENTS, split(keys), lambda rows: {(a, b) for a, b in rows})


def write_batch(
    conn: Connection,
    audit_rows: list[dict[str, Any]],
    change_rows: list[dict[str, Any]],
    dirty: Iterable[Player],
    link_rows: list[dict[str, Any]],
    tournament_rows: list[dict[str, Any]],
    *,
    seat_rows: Sequence[dict[str, Any]] = (),
    commit: bool = False,
    meanwhile: Callable[[], None] | None = None,
) -> dict[str, windowcache.Counted]:
    """Audit rows, ledger rows (in order: their ids keep each player's ledger sequence),
    new links and settled tournaments, the players of draws and team games (``seat_rows``,
    ``game_players``), then the changed players. ``commit``: end the transaction too, in the
    same round trip, where the writes go in one (the caller's own commit then finds nothing
    left to commit; elsewhere it commits as before). Each ladder of the audit rows counts one
    more write (``windowcache.count_writes``): its counts after it come back."""
    dirty = list(dirty)
    # Audit and ledger rows (and the players of draws and team games) by COPY in a large
    # batch (a round trip each), else in the one round trip that sends every other row as a
    # JSON document and ends the transaction.
    copied = len(audit_rows) + len(change_rows) >= COPY_ROWS
    if copied:
        _copy(conn, _COPY_AUDIT, audit_rows)
        _copy(conn, _COPY_LEDGER, change_rows)
        if seat_rows:  # a batch of seed ladders has none: no round trip for them
            _copy(conn, _COPY_SEATS, list(seat_rows))
    documents = (
        (_PG_INSERT_AUDIT, [] if copied else audit_rows),
        (_PG_INSERT_LEDGER, [] if copied else change_rows),
        (_PG_INSERT_SEATS, [] if copied else list(seat_rows)),
        (_PG_INSERT_LINKS, link_rows),
        (_PG_INSERT_TOURNAMENTS, tournament_rows),
        (_PG_WRITE_PLAYERS, [_values(p, "ladder", "player_id") for p in dirty]),
    )
    count = windowcache.count_writes(audit_rows)
    with pipeline(conn) as driver:
        for sql, rows in documents:
            if rows:
                driver.execute(sql, {"rows": compact(rows)})
        counted = driver.execute(count.sql, count.params) if count is not None else None
        if commit:
            driver.execute("COMMIT")
        if meanwhile is not None:
            sent(driver)
            meanwhile()
    return count.make(counted.fetchall()) if count is not None and counted is not None else {}


# From this many audit and ledger rows on, a batch writes them by COPY: PostgreSQL takes COPY's
# text rows for 60-80 % of what the same rows cost it in a JSON document (measured, 20 batches
# of 1,000 events: audit 32 -> 20 us a row, ledger 23 -> 18 us an event, commits included).
# COPY cannot go in a pipeline, so a small batch (the usual one at low rates, where a round trip
# weighs more than the rows) keeps the one-round-trip JSON insert (``worker.store.copying``:
# COPY's binary format).
COPY_ROWS = 200
_COPY_AUDIT = copy_into(events, AUDIT_COLUMNS)
_COPY_LEDGER = copy_into(rating_changes, LEDGER_COLUMNS)
_COPY_SEATS = copy_into(game_players, SEAT_COLUMNS)
_copy = copy_rows  # a name of this module's: the tests watch what write_batch copies


def _values(record: Player, ladder_key: str, id_key: str) -> dict[str, Any]:
    """A player's key (under the names given) and every stored column."""
    values = {ladder_key: record.ladder, id_key: record.player_id}
    values.update((c, getattr(record, c)) for c in PLAYER_COLUMNS)
    return values
