"""Schema migrations (alembic), run by ``ladder migrate``; safe to run again and again.

Every other command that needs the database checks first that it is at the newest revision
(:func:`require_current`), and stops with one line naming the database if it is not.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

from alembic import command
from alembic.config import Config as AlembicConfig
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Engine, make_url


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


def head() -> str | None:
    """The newest revision shipped."""
    return ScriptDirectory(_script_location()).get_current_head()


def current(engine: Engine) -> str | None:
    """The database's revision, or None when it has none (never migrated)."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> Migration:
    before = current(engine)
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", _script_location())
    with engine.begin() as connection:
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, revision)
    return Migration(before, current(engine))


def shown_url(engine: Engine) -> str:
    """The database URL as an operator wrote it, without a password."""
    url = make_url(str(engine.url)).render_as_string(hide_password=True)
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def require_current(engine: Engine) -> None:
    """Raise :class:`NotMigrated` unless the database is at the newest revision."""
    now, newest = current(engine), head()
    if now == newest:
        return
    state = "not migrated" if now is None else f"at revision {now}, not {newest}"
    raise NotMigrated(f"the database at {shown_url(engine)} is {state}: run `ladder migrate`")
