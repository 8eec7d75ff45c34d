"""Seasons: the seasons of each ladder and the archived final standings of closed ones.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

Id = sa.String(128)
Ladder = sa.String(64)
When = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "seasons",
        sa.Column("ladder", Ladder, primary_key=True),
        sa.Column("number", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(64), nullable=True),
        sa.Column("opened_at", When, nullable=True),
        sa.Column("closed_at", When, nullable=True),
        sa.Column("reset", sa.String(16), nullable=True),
        sa.Column("fraction", sa.Float(53), nullable=True),
        sa.Column("players", sa.Integer, nullable=True),
        sa.UniqueConstraint("ladder", "name", name="seasons_name_once"),
    )
    op.create_table(
        "season_standings",
        sa.Column("ladder", Ladder, primary_key=True),
        sa.Column("season", sa.String(64), primary_key=True),
        sa.Column("player_id", Id, primary_key=True),
        sa.Column("rank", sa.Integer, nullable=False),
        sa.Column("rating", sa.Float(53), nullable=False),
        sa.Column("rated_games", sa.Integer, nullable=False),
        sa.Column("experience", sa.Integer, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("season_standings")
    op.drop_table("seasons")
