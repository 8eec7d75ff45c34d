"""Schema migrations (alembic), run by ``ladder migrate``; safe to run again and again.

Every other command that needs the database checks first that it is at the newest revision
(:func:`require_current`), and stops with one line naming the database if it is not.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from importlib import resources

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection, Engine, make_url

from worker.store import partitions

VERSION_TABLE = "alembic_version"


class NotMigrated(RuntimeError):
    """The database is not at the newest schema revision."""


@dataclass(frozen=True)
class Migration:
    """What ``upgrade`` did: ``before`` is None for a database that had no schema."""

    before: str | None
    after: str | None

    def describe(self) -> str:
        if self.before is None:
            return f"created the schema at revision {self.after}"
        if self.before != self.after:
            return f"upgraded the schema from revision {self.before} to {self.after}"
        return f"the schema is already at revision {self.after}"


def _script_location() -> str:
    return str(resources.files("worker.store").joinpath("migrations"))


@cache
def heads() -> frozenset[str]:
    """The newest revisions shipped (one, unless two migrations branch from one parent).

    Read from the migration files' ``revision`` and ``down_revision`` lines rather than
    through alembic, so a command that only checks the schema does not load alembic (a
    test pins this equal to alembic's own answer)."""
    revisions: set[str] = set()
    parents: set[str] = set()
    versions = resources.files("worker.store").joinpath("migrations", "versions")
    for entry in versions.iterdir():
        if not entry.name.endswith(".py") or entry.name.startswith("__"):
            continue
        for node in ast.parse(entry.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name) and isinstance(node.value, ast.Constant):
                    if target.id == "revision":
                        revisions.add(str(node.value.value))
                    elif target.id == "down_revision" and node.value.value is not None:
                        parents.add(str(node.value.value))
    return frozenset(revisions - parents)


def head() -> str | None:
    """The newest revision shipped."""
    newest = sorted(heads())
    return newest[-1] if newest else None


def current_heads(connection: Connection) -> frozenset[str]:
    """The revisions the database is at; empty when it was never migrated."""
    if not inspect(connection).has_table(VERSION_TABLE):
        return frozenset()
    rows = connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}"))
    return frozenset(str(row[0]) for row in rows)


def current(engine: Engine) -> str | None:
    """The database's revision, or None when it has none (never migrated)."""
    with engine.connect() as connection:
        now = sorted(current_heads(connection))
    return now[-1] if now else None


def upgrade(engine: Engine, revision: str = "head") -> Migration:
    from alembic import command
    from alembic.config import Config as AlembicConfig

    before = current(engine)
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", _script_location())
    with engine.begin() as connection:
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, revision)
    if current(engine) is not None and revision == "head":
        partitions.ensure_ahead(engine)  # this month's and the next ones', each run
    return Migration(before, current(engine))


def shown_url(engine: Engine) -> str:
    """The database URL as an operator wrote it, without a password."""
    url = make_url(str(engine.url)).render_as_string(hide_password=True)
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def require_current(engine: Engine) -> None:
    """Raise :class:`NotMigrated` unless the database is at the newest revision."""
    with engine.connect() as connection:
        at = current_heads(connection)
    if at == heads():
        partitions.ensure_ahead(engine)  # the months ahead of the audit log (checked once)
        return
    now, newest = (max(at) if at else None), head()
    state = "not migrated" if now is None else f"at revision {now}, not {newest}"
    raise NotMigrated(f"the database at {shown_url(engine)} is {state}: run `ladder migrate`")
