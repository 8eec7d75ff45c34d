"""Schema migrations (alembic), run by ``ladder migrate``; safe to run again and again."""

from __future__ import annotations

from importlib import resources

from alembic import command
from alembic.config import Config as AlembicConfig
from sqlalchemy.engine import Engine


def upgrade(engine: Engine, revision: str = "head") -> None:
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(resources.files("worker").joinpath("migrations")))
    with engine.begin() as connection:
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, revision)
