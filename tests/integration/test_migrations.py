"""The alembic migrations and the table metadata describe the same schema."""

from __future__ import annotations

import re
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Column, Integer, MetaData, Table

from worker.store.engines import make_engine
from worker.store.migrate import upgrade
from worker.store.tables import metadata


def _differences(database_url: str, tables: MetaData) -> list[Any]:
    engine = make_engine(database_url)
    try:
        upgrade(engine)
        with engine.connect() as conn:
            options = {"compare_type": True, "include_name": _not_a_partition}
            context = MigrationContext.configure(conn, opts=options)
            found = compare_metadata(context, tables)
    finally:
        engine.dispose()
    return [d for d in found if not _expected(d)]


def _not_a_partition(name: str | None, kind: str, _parent: Any) -> bool:
    """The monthly partitions of the audit log (``worker.store.partitions``) are made as time
    goes and described by their parent: left out of the comparison."""
    return not (
        kind == "table" and re.fullmatch(r"(events|rating_changes)_\d{4}_\d{2}", name or "")
    )


def _expected(difference: Any) -> bool:
    """The one difference the schema has on purpose: alembic's own bookkeeping table."""
    return bool(difference[0] == "remove_table" and difference[1].name == "alembic_version")


def test_a_freshly_migrated_schema_matches_the_table_metadata(database_url: str) -> None:
    """Every table, column, type and index the code describes is what the migrations create."""
    assert [] == _differences(database_url, metadata)


def test_the_comparison_sees_a_table_the_migrations_lack(database_url: str) -> None:
    """The check above can fail: metadata with one more table differs from the migrated schema."""
    extended = MetaData()
    for table in metadata.tables.values():
        table.to_metadata(extended)
    Table("not_migrated", extended, Column("id", Integer, primary_key=True))
    kinds = [d[0] for d in _differences(database_url, extended)]
    assert ["add_table"] == kinds


def test_the_schema_check_reads_the_same_heads_as_alembic(database_url: str) -> None:
    """``ladder`` checks the schema revision without loading alembic: the heads it reads from
    the migration files are alembic's, and a migrated database is at them."""
    from importlib import resources

    from alembic.script import ScriptDirectory

    from worker.store import migrate

    location = str(resources.files("worker.store").joinpath("migrations"))
    assert set(ScriptDirectory(location).get_heads()) == set(migrate.heads())
    engine = make_engine(database_url)
    try:
        with engine.connect() as conn:
            assert frozenset() == migrate.current_heads(conn)  # never migrated
        upgrade(engine)
        with engine.connect() as conn:
            assert migrate.heads() == migrate.current_heads(conn)
        migrate.require_current(engine)
    finally:
        engine.dispose()


def test_a_worker_starting_up_loads_no_alembic() -> None:
    """Start-up cost: the modules ``ladder worker`` loads before its first batch leave
    alembic out (only ``ladder migrate`` needs it)."""
    import subprocess
    import sys

    code = (
        "import sys, worker.entrypoints.cli.main, worker.bootstrap, worker.entrypoints.worker.runner, "
        "worker.store.migrate; print(sorted(m for m in sys.modules if m.startswith('alembic')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "[]" == done.stdout.strip()


def test_migration_0009_moves_the_rows_into_monthly_partitions_and_keeps_every_id(
    database_url: str,
) -> None:
    """An audit log written before partitioning keeps every row, its scoring numbers and
    ledger ids, each row in its month's partition; its ids go into ``event_ids``, so one
    sent again is refused by the store, and new rows are numbered after the old."""
    from datetime import UTC, datetime

    from sqlalchemy import text
    from sqlalchemy.exc import IntegrityError

    engine = make_engine(database_url)
    try:
        upgrade(engine, "0007")
        old = [datetime(2025, 3, 9, tzinfo=UTC), datetime(2026, 7, 1, tzinfo=UTC)]
        with engine.begin() as conn:
            for n, at in enumerate(old):
                conn.execute(
                    text(
                        "INSERT INTO events (ladder, event_id, type, outcome, ruleset, "
                        "ruleset_version, processed_at, payload, digest) VALUES ('fibs', :id, "
                        "'game.finished', 'rated', 'fibs', 'v1', :at, '{}', :digest)"
                    ),
                    {"id": f"old-{n}", "at": at, "digest": f"d{n}"},
                )
                conn.execute(
                    text(
                        "INSERT INTO rating_changes (ladder, player_id, event_id, kind, "
                        "rating_before, rating_after, delta, at) VALUES ('fibs', 'p', :id, "
                        "'game', 1500, 1501, 1, :at)"
                    ),
                    {"id": f"old-{n}", "at": at},
                )
            seqs = conn.execute(text("SELECT event_id, seq FROM events ORDER BY seq")).all()
        upgrade(engine)
        with engine.begin() as conn:
            assert seqs == conn.execute(text("SELECT event_id, seq FROM events ORDER BY seq")).all()
            assert conn.execute(text("SELECT count(*) FROM events_2025_03")).scalar_one() == 1
            assert conn.execute(text("SELECT count(*) FROM rating_changes_2026_07")).scalar() == 1
            ids = conn.execute(text("SELECT event_id, digest FROM event_ids ORDER BY 1")).all()
            assert [("old-0", "d0"), ("old-1", "d1")] == [tuple(r) for r in ids]
            conn.execute(
                text(
                    "INSERT INTO events (ladder, event_id, type, outcome, ruleset, "
                    "ruleset_version, processed_at, payload) VALUES ('fibs', 'new', "
                    "'game.finished', 'rated', 'fibs', 'v1', now(), '{}')"
                )
            )
            new_seq = conn.execute(text("SELECT seq FROM events WHERE event_id = 'new'"))
            assert new_seq.scalar_one() > max(s for _, s in seqs)
        with pytest.raises(IntegrityError), engine.begin() as conn:  # stored before, refused
            conn.execute(
                text(
                    "INSERT INTO events (ladder, event_id, type, outcome, ruleset, "
                    "ruleset_version, processed_at, payload) VALUES ('fibs', 'old-0', "
                    "'game.finished', 'rated', 'fibs', 'v1', now(), '{}')"
                )
            )
    finally:
        engine.dispose()
