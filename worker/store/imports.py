"""PostgreSQL side of ``ladder import``: one file's players staged, checked and written in one
transaction.

``Staging`` holds one connection and its transaction. The file's lines go by ``COPY`` into a
temporary table (``load``), with the lines refused while parsing beside them (``refuse``); the
checks that need the store run as a few set-based statements over the whole file (``check``):
a player named on an earlier line of the file, a player the ladder already has, and a line
identical to what an earlier import of this player wrote (nothing to do: importing a file
twice changes nothing the second time). ``write`` then creates the players, their ledger rows
(kind ``import``) and the ``imported_players`` record with three ``INSERT ... SELECT``; nothing
goes through Python row by row but the ``COPY``. Leaving without ``commit`` rolls everything
back, the temporary tables included.

``create`` is the short way for the chunks of a file of new players: each chunk staged and its
three tables' rows inserted at once, with no check first (a savepoint around them); the
tables' unique keys refuse a player the ladder has or a player named twice, and then the
chunk is only staged and the rest of the file checked the usual way.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg
from sqlalchemy import select
from sqlalchemy.engine import Connection, Engine

from engine import Imported, LedgerKind
from engine.player import STORED_FIELDS
from worker.store import cursor, locks, marks
from worker.store.statements import PLAYER_ROW
from worker.store.tables import imported_players, players

LINE_COLUMNS = (
    "line",
    "player_id",
    "rating",
    "rated_games",
    "experience",
    "last_game_at",
    "email_verified",
    "display_name_chosen",
    "deviation",
    "volatility",
)
FETCH = 5000  # rows per fetch of a server-side cursor


@dataclass(frozen=True)
class Line:
    """One accepted line of an import file."""

    line: int
    player_id: str
    rating: float
    rated_games: int
    experience: int
    last_game_at: datetime | None
    email_verified: bool
    display_name_chosen: bool
    deviation: float | None = None  # where the ruleset keeps one (glicko2, openskill)
    volatility: float | None = None  # glicko2

    def copy_text(self) -> str:
        """The line in COPY's text format (ids hold no control characters: only a backslash
        needs escaping; ``repr`` of a float is the shortest text that reads back the same)."""
        last = r"\N" if self.last_game_at is None else self.last_game_at.isoformat()
        return (
            f"{self.line}\t{self.player_id.replace(chr(92), chr(92) * 2)}\t{self.rating!r}\t"
            f"{self.rated_games}\t{self.experience}\t{last}\t"
            f"{'t' if self.email_verified else 'f'}\t{'t' if self.display_name_chosen else 'f'}\t"
            f"{_copied(self.deviation)}\t{_copied(self.volatility)}\n"
        )

    def player_row(self, ladder: str, now: datetime) -> tuple[Any, ...]:
        """The ``players`` row (``PLAYER_ROW``) that ``create`` and ``write`` make of the line,
        as PostgreSQL hands it back (timestamps in UTC)."""
        last = None if self.last_game_at is None else self.last_game_at.astimezone(UTC)
        stored = {
            "ladder": ladder,
            "player_id": self.player_id,
            "rating": self.rating,
            "rated_games": self.rated_games,
            "experience": self.experience,
            "listed": True,
            "boosted_points": 0,
            "email_verified": self.email_verified,
            "display_name_chosen": self.display_name_chosen,
            "linked_to": None,
            "version": 1,
            "last_game_at": last,
            "updated_at": now.astimezone(UTC),
            "banned": False,
            "deviation": self.deviation,  # none given: the ruleset's start stands for it
            "volatility": self.volatility,
        }
        return tuple(stored[name] for name in STORED_FIELDS)


def _copied(value: float | None) -> str:
    return r"\N" if value is None else repr(value)


def _player_id(line: Line) -> str:
    return line.player_id


@dataclass(frozen=True)
class Counts:
    lines: int  # lines staged (parsed well)
    new: int  # players the file would create (besides those created already)
    same: int  # lines identical to an earlier import of the player: nothing to do
    refused: int  # lines refused, by parsing or by the checks
    created: int = 0  # players created already (``Staging.create``)


class Staging:
    def __init__(self, engine: Engine, ladder: str) -> None:
        self.engine = engine
        self.ladder = ladder
        self._conn: Connection | None = None

    def __enter__(self) -> Staging:
        self._conn = self.engine.connect()
        self._conn.begin()
        self._driver.execute(
            "CREATE TEMPORARY TABLE import_lines (line int8 PRIMARY KEY, player_id text NOT NULL,"
            " rating float8 NOT NULL, rated_games int4 NOT NULL, experience int4 NOT NULL,"
            " last_game_at timestamptz, email_verified bool NOT NULL,"
            " display_name_chosen bool NOT NULL, deviation float8, volatility float8,"
            " state text) ON COMMIT DROP"
        )
        self._driver.execute(
            "CREATE TEMPORARY TABLE import_refusals (line int8 NOT NULL, reason text NOT NULL)"
            " ON COMMIT DROP"
        )
        self._driver.execute(
            "CREATE TEMPORARY TABLE import_chunk (LIKE import_lines INCLUDING DEFAULTS)"
            " ON COMMIT DROP"
        )
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._conn is not None
        self._conn.close()  # rolls back unless committed
        self._conn = None

    @property
    def _driver(self) -> Any:
        assert self._conn is not None
        driver = self._conn.connection.driver_connection
        assert driver is not None
        return driver

    def load(self, lines: Sequence[Line]) -> None:
        """Stage these lines (one ``COPY``)."""
        if not lines:
            return
        with self._driver.cursor() as cursor:
            names = ", ".join(LINE_COLUMNS)
            with cursor.copy(f"COPY import_lines ({names}) FROM STDIN") as copy:
                copy.write("".join([line.copy_text() for line in lines]).encode("utf-8"))

    def create(self, lines: Sequence[Line], event_id: str, start: float, now: datetime) -> bool:
        """Stage these lines (as ``load``) and create their players at once, as ``write``
        would after ``check`` found nothing to refuse or to set aside: their ``players`` rows,
        ledger rows and import records. True when created: their staged lines are marked so,
        and ``check`` and ``write`` leave them alone. False, with nothing of them created (a
        savepoint), when any of them cannot be created so (a player the ladder or its import
        records already have, or one named twice): they are staged only, for ``check``.

        Called for a file's chunks in order until it says False (then ``load`` for the rest),
        the lines created are always a prefix of the file's: a later line naming the same
        player is refused by ``check`` as named again."""
        if not lines:
            return True
        params = {
            "ladder": self.ladder,
            "event_id": event_id,
            "start": start,
            "now": now,
            "kind": str(LedgerKind.IMPORT),
        }
        with self._driver.cursor() as cursor:
            self._stage_chunk(cursor, lines)
            cursor.execute("SAVEPOINT import_create")
            try:
                self._create(cursor, params)
            except psycopg.errors.UniqueViolation:
                cursor.execute("ROLLBACK TO SAVEPOINT import_create")
                created = False
            else:
                cursor.execute("RELEASE SAVEPOINT import_create")
                created = True
            names = ", ".join(LINE_COLUMNS)
            cursor.execute(
                f"INSERT INTO import_lines ({names}, state) SELECT {names}, %s FROM import_chunk",
                ("created" if created else None,),
            )
        return created

    def _stage_chunk(self, cursor: Any, lines: Sequence[Line]) -> None:
        cursor.execute("TRUNCATE import_chunk")
        names = ", ".join(LINE_COLUMNS)
        with cursor.copy(f"COPY import_chunk ({names}) FROM STDIN") as copy:
            # In player id order (the tables' index order: each index takes the chunk in
            # one pass), sorted here once rather than by PostgreSQL for each table: a table
            # just truncated and filled is scanned in the order written (only the speed
            # depends on it).
            ordered = sorted(lines, key=_player_id)
            copy.write("".join([line.copy_text() for line in ordered]).encode("utf-8"))

    def _create(self, cursor: Any, params: dict[str, Any]) -> None:
        cursor.execute(  # the rows of ``Line.player_row``
            "INSERT INTO players (ladder, player_id, rating, rated_games, experience,"
            " listed, boosted_points, email_verified, display_name_chosen, linked_to,"
            " version, last_game_at, updated_at, deviation, volatility)"
            " SELECT %(ladder)s, player_id, rating, rated_games, experience, true, 0,"
            " email_verified, display_name_chosen, NULL, 1, last_game_at, %(now)s,"
            " deviation, volatility FROM import_chunk",
            params,
        )
        cursor.execute(
            "INSERT INTO imported_players (ladder, player_id, event_id, rating, rated_games,"
            " experience, last_game_at, email_verified, display_name_chosen, imported_at,"
            " deviation, volatility)"
            " SELECT %(ladder)s, player_id, %(event_id)s, rating, rated_games, experience,"
            " last_game_at, email_verified, display_name_chosen, %(now)s, deviation, volatility"
            " FROM import_chunk",
            params,
        )
        cursor.execute(
            "INSERT INTO rating_changes (ladder, player_id, event_id, kind, rating_before,"
            " rating_after, delta, k, expected, at, deviation, volatility)"
            " SELECT %(ladder)s, player_id, %(event_id)s, %(kind)s, %(start)s, rating,"
            " rating - %(start)s, NULL, NULL, %(now)s, deviation, volatility"
            " FROM import_chunk",
            params,
        )

    def refuse(self, refusals: Sequence[tuple[int, str]]) -> None:
        """Record lines refused while parsing."""
        if not refusals:
            return
        with self._driver.cursor() as cursor:
            with cursor.copy("COPY import_refusals (line, reason) FROM STDIN") as copy:
                for refusal in refusals:
                    copy.write_row(refusal)

    def check(self) -> Counts:
        """Refuse repeated and existing players; set aside lines imported before as they are."""
        driver = self._driver
        with driver.cursor() as cursor:
            cursor.execute("ANALYZE import_lines")
            # A player named again: every line after the first that names them.
            cursor.execute(
                "WITH firsts AS (SELECT line, min(line) OVER (PARTITION BY player_id) AS first"
                " FROM import_lines), marked AS (UPDATE import_lines l SET state = 'refused'"
                " FROM firsts f WHERE f.line = l.line AND f.first <> l.line"
                " RETURNING l.line, f.first)"
                " INSERT INTO import_refusals (line, reason)"
                " SELECT line, 'player already named on line ' || first FROM marked"
            )
            # The same player with the same values as an earlier import: nothing to change.
            cursor.execute(
                "UPDATE import_lines l SET state = 'same' FROM imported_players i"
                " WHERE l.state IS NULL AND i.ladder = %s AND i.player_id = l.player_id"
                " AND i.rating = l.rating AND i.rated_games = l.rated_games"
                " AND i.experience = l.experience"
                " AND i.last_game_at IS NOT DISTINCT FROM l.last_game_at"
                " AND i.email_verified = l.email_verified"
                " AND i.display_name_chosen = l.display_name_chosen"
                " AND i.deviation IS NOT DISTINCT FROM l.deviation"
                " AND i.volatility IS NOT DISTINCT FROM l.volatility",
                (self.ladder,),
            )
            cursor.execute(
                "WITH marked AS (UPDATE import_lines l SET state = 'refused' FROM players p"
                " WHERE l.state IS NULL AND p.ladder = %s AND p.player_id = l.player_id"
                " RETURNING l.line)"
                " INSERT INTO import_refusals (line, reason)"
                " SELECT line, 'player already exists on the ladder' FROM marked",
                (self.ladder,),
            )
            cursor.execute(
                "SELECT count(*), count(*) FILTER (WHERE state IS NULL),"
                " count(*) FILTER (WHERE state = 'same'),"
                " (SELECT count(*) FROM import_refusals),"
                " count(*) FILTER (WHERE state = 'created') FROM import_lines"
            )
            staged, new, same, refused, created = cursor.fetchone()
        return Counts(int(staged), int(new), int(same), int(refused), int(created))

    def refusals(self) -> Iterator[tuple[int, str]]:
        """Every refused line with its reason, in line order (a server-side cursor)."""
        name = f"ladder_import_{uuid.uuid4().hex}"
        with self._driver.cursor(name=name) as cursor:
            cursor.execute("SELECT line, reason FROM import_refusals ORDER BY line")
            while part := cursor.fetchmany(FETCH):
                for line, reason in part:
                    yield int(line), str(reason)

    def write(self, event_id: str, start: float, now: datetime) -> int:
        """Create the players of every line still to import; returns how many."""
        params = {"ladder": self.ladder, "event_id": event_id, "start": start, "now": now}
        with self._driver.cursor() as cursor:
            # Each table takes its rows in its index order (player id), so every index grows
            # at its end instead of splitting pages all over; the sort stays in memory.
            cursor.execute("SET LOCAL work_mem = '256MB'")
            cursor.execute(
                "INSERT INTO players (ladder, player_id, rating, rated_games, experience,"
                " listed, boosted_points, email_verified, display_name_chosen, linked_to,"
                " version, last_game_at, updated_at, deviation, volatility)"
                " SELECT %(ladder)s, player_id, rating, rated_games, experience, true, 0,"
                " email_verified, display_name_chosen, NULL, 1, last_game_at, %(now)s,"
                " deviation, volatility FROM import_lines WHERE state IS NULL ORDER BY player_id",
                params,
            )
            created = int(cursor.rowcount)
            cursor.execute(
                "INSERT INTO rating_changes (ladder, player_id, event_id, kind, rating_before,"
                " rating_after, delta, k, expected, at, deviation, volatility)"
                " SELECT %(ladder)s, player_id, %(event_id)s, %(kind)s, %(start)s, rating,"
                " rating - %(start)s, NULL, NULL, %(now)s, deviation, volatility"
                " FROM import_lines WHERE state IS NULL ORDER BY player_id",
                {**params, "kind": str(LedgerKind.IMPORT)},
            )
            # An earlier import of a player the ladder no longer has (erased): replaced.
            cursor.execute(
                "DELETE FROM imported_players i USING import_lines l WHERE l.state IS NULL"
                " AND i.ladder = %(ladder)s AND i.player_id = l.player_id",
                params,
            )
            cursor.execute(
                "INSERT INTO imported_players (ladder, player_id, event_id, rating, rated_games,"
                " experience, last_game_at, email_verified, display_name_chosen, imported_at,"
                " deviation, volatility)"
                " SELECT %(ladder)s, player_id, %(event_id)s, rating, rated_games, experience,"
                " last_game_at, email_verified, display_name_chosen, %(now)s, deviation,"
                " volatility FROM import_lines WHERE state IS NULL ORDER BY player_id",
                params,
            )
        return created

    def commit(self, at: datetime) -> None:
        """Mark the ladder imported ``at`` (``worker.store.marks``), and commit; refused
        (``marks.ArchivedMeanwhile``, nothing committed) if it was archived after ``at``."""
        assert self._conn is not None
        self._driver.execute(locks.IMPORT_COMMIT, {"ladder": self.ladder})  # archives wait
        marks.refuse_archived(self._driver, at)
        self._driver.execute(marks.IMPORTED, {"ladder": self.ladder, "at": at})
        self._conn.commit()


def imported_rows(
    engine: Engine, ladder: str, event_id: str, at: datetime
) -> Iterator[list[Sequence[Any]]]:
    """The ``players`` rows (``PLAYER_ROW``) one import created, a chunk at a time."""
    query = (
        select(*PLAYER_ROW)
        .join(
            imported_players,
            (imported_players.c.ladder == players.c.ladder)
            & (imported_players.c.player_id == players.c.player_id),
        )
        .where(
            imported_players.c.ladder == ladder,
            imported_players.c.event_id == event_id,
            imported_players.c.imported_at == at,
        )
    )
    for part in cursor.chunks(engine, query, size=FETCH):
        yield list(part)


def profiles(source: Engine | Connection, ladder: str) -> dict[str, Imported]:
    """What each imported player of the ladder was imported with besides the rating (which
    their ``import`` ledger row holds): what a replay gives them at that row. Read on
    ``source``'s connection when it is one."""
    query = select(
        imported_players.c.player_id,
        imported_players.c.rated_games,
        imported_players.c.experience,
        imported_players.c.last_game_at,
        imported_players.c.email_verified,
        imported_players.c.display_name_chosen,
    ).where(imported_players.c.ladder == ladder)
    if isinstance(source, Engine):
        with source.connect() as conn:
            return profiles(conn, ladder)
    rows = source.execution_options(yield_per=FETCH).execute(query)
    return {
        pid: Imported(games, experience, last, email, name)
        for pid, games, experience, last, email, name in rows
    }
